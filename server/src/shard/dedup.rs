//! Message deduplication (`[system.message_deduplication]`): the ids a partition received
//! lately, so that a batch resent with the same ids (a producer's retry after a lost
//! acknowledgement) is stored once. One per partition, owned by the partition's shard, so no
//! lock: admitting a batch's ids is synchronous, and two appends racing on one partition see
//! each other's ids.
//!
//! Ids are kept in arrival order: the oldest leaves first when `max_entries` is reached, and
//! every id leaves once `expiry` has passed since it arrived. Nothing is persisted; a restart
//! forgets every id, as upstream's in-memory cache does.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

pub struct Deduplicator {
    max_entries: usize,
    expiry: Option<Duration>,
    /// Each remembered id and when it arrived.
    ids: HashMap<u128, Instant>,
    /// Arrival order; an entry whose time no longer matches `ids` is stale and skipped.
    order: VecDeque<(u128, Instant)>,
}

impl Deduplicator {
    /// `expiry` zero means no expiry. `max_entries` is at least 1 (checked with the config).
    pub fn new(max_entries: u64, expiry: Duration) -> Deduplicator {
        Deduplicator {
            max_entries: max_entries.max(1) as usize,
            expiry: (!expiry.is_zero()).then_some(expiry),
            ids: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Remembers `id` and returns true, or returns false if it is remembered already.
    pub fn admit(&mut self, id: u128, now: Instant) -> bool {
        self.expire(now);
        if self.ids.contains_key(&id) {
            return false;
        }
        while self.ids.len() >= self.max_entries {
            self.pop_oldest();
        }
        self.ids.insert(id, now);
        self.order.push_back((id, now));
        true
    }

    /// Forgets ids admitted for a batch that was then not stored, so that its retry is.
    pub fn forget(&mut self, ids: &[u128]) {
        for id in ids {
            self.ids.remove(id);
        }
        // Their `order` entries are now stale and skipped when reached.
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

    fn expire(&mut self, now: Instant) {
        let Some(expiry) = self.expiry else { return };
        while let Some(&(_, arrived)) = self.order.front() {
            if now.duration_since(arrived) < expiry {
                break;
            }
            self.pop_oldest();
        }
    }

    fn pop_oldest(&mut self) {
        while let Some((id, arrived)) = self.order.pop_front() {
            if self.ids.get(&id) == Some(&arrived) {
                self.ids.remove(&id);
                return;
            }
        }
    }

    /// Drops stale `order` entries once they outnumber the live ones, bounding the queue.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.ids.len() + 64 {
            let ids = &self.ids;
            self.order
                .retain(|(id, arrived)| ids.get(id) == Some(arrived));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_id_is_refused_until_it_expires() {
        let start = Instant::now();
        let mut dedup = Deduplicator::new(10, Duration::from_secs(60));
        assert!(dedup.admit(1, start));
        assert!(!dedup.admit(1, start + Duration::from_secs(59)));
        assert!(dedup.admit(2, start + Duration::from_secs(30)));
        // At 60 s id 1 expires, id 2 (30 s old) does not.
        assert!(dedup.admit(1, start + Duration::from_secs(60)));
        assert!(!dedup.admit(2, start + Duration::from_secs(60)));
        assert_eq!(dedup.len(), 2);
    }

    #[test]
    fn the_oldest_ids_leave_first_when_full() {
        let now = Instant::now();
        let mut dedup = Deduplicator::new(3, Duration::ZERO);
        for id in 1..=3 {
            assert!(dedup.admit(id, now));
        }
        assert!(dedup.admit(4, now), "1 is pushed out");
        assert_eq!(dedup.len(), 3);
        assert!(dedup.admit(1, now), "1 was forgotten; 2 is pushed out now");
        assert!(!dedup.admit(3, now) && !dedup.admit(4, now));
        assert!(dedup.admit(2, now));
    }

    #[test]
    fn forgotten_ids_are_admitted_again_and_stale_entries_stay_bounded() {
        let now = Instant::now();
        let mut dedup = Deduplicator::new(1000, Duration::ZERO);
        for round in 0..100u128 {
            let ids: Vec<u128> = (0..10).map(|i| round * 10 + i).collect();
            assert!(ids.iter().all(|&id| dedup.admit(id, now)));
            dedup.forget(&ids);
            assert!(
                ids.iter().all(|&id| dedup.admit(id, now)),
                "a failed batch's retry"
            );
            dedup.forget(&ids);
        }
        assert!(dedup.is_empty());
        assert!(dedup.order.len() <= 64 + 20, "{}", dedup.order.len());
        dedup.admit(7, now);
        dedup.clear();
        assert!(dedup.admit(7, now));
    }
}
