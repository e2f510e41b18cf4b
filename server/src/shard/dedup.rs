//! Message deduplication (`[system.message_deduplication]`): the ids a partition stored
//! lately, so that a batch resent with the same ids (a producer's retry after a lost
//! acknowledgement) is stored once. One per partition, owned by the partition's shard, so no
//! lock; the partition checks a batch's ids before its append and remembers them once the
//! append is acknowledged (`LocalPartition::append`).
//!
//! Ids are kept in arrival order: the oldest leaves first when `max_entries` is reached, and
//! every id leaves once `expiry` has passed since it was remembered. Nothing is persisted; a
//! restart forgets every id, as upstream's in-memory cache does.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

pub struct Deduplicator {
    max_entries: usize,
    expiry: Option<Duration>,
    /// Each remembered id: the sequence number of its latest remembering, and when.
    ids: HashMap<u128, (u64, Instant)>,
    /// Remembering order, by sequence number; an entry whose number no longer matches `ids`
    /// (the id was remembered again later) is stale and skipped.
    order: VecDeque<(u128, u64)>,
    next: u64,
}

impl Deduplicator {
    /// `expiry` zero means no expiry. `max_entries` is at least 1 (checked with the config).
    pub fn new(max_entries: u64, expiry: Duration) -> Deduplicator {
        Deduplicator {
            max_entries: max_entries.max(1) as usize,
            expiry: (!expiry.is_zero()).then_some(expiry),
            ids: HashMap::new(),
            order: VecDeque::new(),
            next: 0,
        }
    }

    /// Whether `entry` of the order is an id's latest remembering; with when it was.
    fn live(&self, (id, sequence): (u128, u64)) -> Option<Instant> {
        match self.ids.get(&id) {
            Some(&(latest, at)) if latest == sequence => Some(at),
            _ => None,
        }
    }

    /// Whether `id` is remembered (and not expired at `now`).
    pub fn contains(&mut self, id: u128, now: Instant) -> bool {
        self.expire(now);
        self.ids.contains_key(&id)
    }

    /// Remembers `id` from `now` on (again, if it was already).
    pub fn remember(&mut self, id: u128, now: Instant) {
        self.expire(now);
        let sequence = self.next;
        self.next += 1;
        if self.ids.insert(id, (sequence, now)).is_none() {
            while self.ids.len() > self.max_entries {
                self.pop_oldest();
            }
        }
        self.order.push_back((id, sequence));
        self.compact();
    }

    /// Forgets everything (the partition was purged: its messages are gone).
    pub fn clear(&mut self) {
        self.ids.clear();
        self.order.clear();
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Drops, from the front of the order, stale entries and live ones older than the expiry;
    /// stops at the first live id still within it.
    fn expire(&mut self, now: Instant) {
        let Some(expiry) = self.expiry else { return };
        while let Some(&entry) = self.order.front() {
            let live = self.live(entry);
            if live.is_some_and(|at| now.duration_since(at) < expiry) {
                break;
            }
            self.order.pop_front();
            if live.is_some() {
                self.ids.remove(&entry.0);
            }
        }
    }

    /// Forgets the id remembered longest ago.
    fn pop_oldest(&mut self) {
        while let Some(entry) = self.order.pop_front() {
            if self.live(entry).is_some() {
                self.ids.remove(&entry.0);
                return;
            }
        }
    }

    /// Drops stale entries once they outnumber the live ones, bounding the queue.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.ids.len() + 64 {
            let ids = &self.ids;
            self.order
                .retain(|(id, sequence)| ids.get(id).is_some_and(|entry| entry.0 == *sequence));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_id_is_a_duplicate_until_it_expires() {
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        let mut dedup = Deduplicator::new(10, Duration::from_secs(60));
        assert!(!dedup.contains(1, start));
        dedup.remember(1, start);
        assert!(dedup.contains(1, at(59)));
        dedup.remember(2, at(30));
        // At 60 s id 1 expires, id 2 (30 s old) does not.
        assert!(!dedup.contains(1, at(60)));
        assert!(dedup.contains(2, at(60)));
        assert_eq!(dedup.len(), 1);
    }

    #[test]
    fn remembering_again_restarts_the_expiry_and_stale_entries_never_expire_live_ids() {
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        let mut dedup = Deduplicator::new(10, Duration::from_secs(60));
        dedup.remember(1, start);
        dedup.remember(2, at(10));
        dedup.remember(1, at(50)); // the entry at 0 s is now stale
        // At 61 s the stale entry of id 1 goes; id 2 (51 s) and id 1 (11 s) stay.
        assert!(dedup.contains(1, at(61)) && dedup.contains(2, at(61)));
        assert!(!dedup.contains(2, at(70)), "id 2 expires at 70 s");
        assert!(dedup.contains(1, at(109)) && !dedup.contains(1, at(110)));
    }

    #[test]
    fn the_oldest_ids_leave_first_when_full() {
        let now = Instant::now();
        let mut dedup = Deduplicator::new(3, Duration::ZERO);
        for id in 1..=3 {
            dedup.remember(id, now);
        }
        dedup.remember(4, now);
        assert_eq!(dedup.len(), 3);
        assert!(!dedup.contains(1, now), "1 was pushed out");
        assert!((2..=4).all(|id| dedup.contains(id, now)));
        dedup.remember(2, now); // refreshed: 3 is now the oldest
        dedup.remember(5, now);
        assert!(!dedup.contains(3, now) && dedup.contains(2, now));
    }

    #[test]
    fn stale_entries_stay_bounded_and_clear_forgets_all() {
        let now = Instant::now();
        let mut dedup = Deduplicator::new(10, Duration::ZERO);
        for _ in 0..1000 {
            dedup.remember(7, now);
        }
        assert_eq!(dedup.len(), 1);
        assert!(dedup.order.len() <= 2 + 64 + 1, "{}", dedup.order.len());
        dedup.clear();
        assert!(dedup.is_empty() && !dedup.contains(7, now));
    }
}
