//! Read-ahead: when a poll had to read the segment files (its messages were never in, or have
//! left, the read cache) and more messages follow, the partition reads the next poll's
//! messages at once, while this poll's reply is sent and the consumer's next request travels.
//! On this project's VM a 1 MB poll from the files spent half its time with the device idle
//! (its reply being sent, the next request on its way); with the next read already under way
//! the device stays busy and a cold consumer reads at the device's speed.
//!
//! A read ahead is an ordinary read (the same planning, checksums and watermark: it never
//! holds a message the poll could not have been shown), started early and kept in a [`Slot`]
//! until the poll that asks for exactly its start offset and count takes it. What slots hold
//! is charged to the shard's [`ReadAheadBudget`] (`[system.read_cache] read_ahead`, split
//! evenly between the shards): no read ahead starts while the budget is full, and a read
//! nobody took within [`STALE_AFTER`] is dropped to make room.
//!
//! Generic over what a read returns, so that this module depends on nothing of the partition.

use crate::storage::wait::WaitList;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

/// A read ahead nobody asked for within this long is dropped when another needs the room: the
/// consumer moved elsewhere, or is gone.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(1);
/// Reads ahead one partition keeps: two consumers reading the same partition at different
/// places each keep theirs.
pub(crate) const SLOTS_PER_PARTITION: usize = 2;

/// Counters for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadAheadStats {
    pub budget_bytes: u64,
    pub held_bytes: u64,
    /// Reads started ahead of a poll.
    pub started: u64,
    /// Polls answered by a read ahead.
    pub hits: u64,
    /// Reads ahead dropped without answering a poll (the consumer asked for something else,
    /// went away, or the budget needed the room).
    pub wasted: u64,
}

/// One shard's account of what its partitions have read ahead.
pub(crate) struct ReadAheadBudget {
    budget: u64,
    held: Cell<u64>,
    started: Cell<u64>,
    hits: Cell<u64>,
    wasted: Cell<u64>,
    /// Every live slot, oldest first: where room is found when the budget is full.
    slots: RefCell<VecDeque<Weak<dyn Discard>>>,
}

trait Discard {
    /// Drops what the slot holds if it was read more than `STALE_AFTER` before `now` and was
    /// not taken; whether it did (or the slot is spent already).
    fn discard_if_stale(&self, now: Instant) -> bool;
}

impl ReadAheadBudget {
    /// `budget` bytes for one shard (0: nothing is read ahead).
    pub(crate) fn new(budget: u64) -> Rc<ReadAheadBudget> {
        Rc::new(ReadAheadBudget {
            budget,
            held: Cell::new(0),
            started: Cell::new(0),
            hits: Cell::new(0),
            wasted: Cell::new(0),
            slots: RefCell::new(VecDeque::new()),
        })
    }

    pub(crate) fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// A slot for a read of `start`/`count` expected to take `estimate` bytes, or None when the
    /// budget has no room for it even after dropping stale reads.
    pub(crate) fn reserve<T: 'static>(
        self: &Rc<Self>,
        start: u64,
        count: u32,
        estimate: u64,
    ) -> Option<Rc<Slot<T>>> {
        if estimate > self.budget {
            return None;
        }
        if self.held.get() + estimate > self.budget {
            let now = Instant::now();
            let mut slots = self.slots.borrow_mut();
            // Spent slots leave their entries behind; stale ones are dropped, oldest first.
            slots.retain(|slot| {
                slot.upgrade()
                    .is_some_and(|slot| !slot.discard_if_stale(now))
            });
            if self.held.get() + estimate > self.budget {
                return None;
            }
        }
        let slot = Rc::new(Slot {
            start,
            count,
            state: RefCell::new(SlotState::Reading),
            ready: WaitList::default(),
            charged: Cell::new(0),
            read_at: Cell::new(None),
            claimed: Cell::new(false),
            taken: Cell::new(false),
            budget: Rc::clone(self),
        });
        slot.charge(estimate);
        self.started.set(self.started.get() + 1);
        let mut slots = self.slots.borrow_mut();
        if slots.len() > 4 * SLOTS_PER_PARTITION + 64 {
            slots.retain(|slot| slot.strong_count() > 0);
        }
        let weak: Weak<Slot<T>> = Rc::downgrade(&slot);
        slots.push_back(weak);
        Some(slot)
    }

    pub(crate) fn stats(&self) -> ReadAheadStats {
        ReadAheadStats {
            budget_bytes: self.budget,
            held_bytes: self.held.get(),
            started: self.started.get(),
            hits: self.hits.get(),
            wasted: self.wasted.get(),
        }
    }
}

enum SlotState<T> {
    Reading,
    Read(T),
    /// Taken, failed or discarded: holds nothing.
    Spent,
}

/// One read ahead: in flight, then read, until a poll takes it or it is dropped.
pub(crate) struct Slot<T> {
    start: u64,
    count: u32,
    state: RefCell<SlotState<T>>,
    ready: WaitList,
    charged: Cell<u64>,
    read_at: Cell<Option<Instant>>,
    /// A poll waits for it (it was claimed before its read finished, or since).
    claimed: Cell<bool>,
    taken: Cell<bool>,
    budget: Rc<ReadAheadBudget>,
}

impl<T> Slot<T> {
    fn charge(&self, bytes: u64) {
        let budget = &self.budget;
        budget
            .held
            .set(budget.held.get() - self.charged.get() + bytes);
        self.charged.set(bytes);
    }

    fn is_spent(&self) -> bool {
        matches!(*self.state.borrow(), SlotState::Spent)
    }

    /// Stores the read's result (`None` when it failed: the poll reads again and reports the
    /// error itself), charged at `bytes`, and wakes a poll waiting for it. A slot dropped
    /// meanwhile stays empty.
    pub(crate) fn finish(&self, result: Option<(T, u64)>) {
        if matches!(*self.state.borrow(), SlotState::Reading) {
            let (state, bytes) = match result {
                Some((value, bytes)) => (SlotState::Read(value), bytes),
                None => (SlotState::Spent, 0),
            };
            *self.state.borrow_mut() = state;
            self.charge(bytes);
        }
        self.read_at.set(Some(Instant::now()));
        self.ready.notify_all();
    }

    /// Whether a poll waits for this read: the consumer is faster than the files, and the read
    /// after this one should start as soon as this one is done, before its reply is sent.
    pub(crate) fn is_awaited(&self) -> bool {
        self.claimed.get()
    }

    /// Waits for the read and takes what it read (None when it failed or was dropped).
    pub(crate) async fn take(&self) -> Option<T> {
        self.ready
            .wait_until(|| !matches!(*self.state.borrow(), SlotState::Reading))
            .await;
        let state = std::mem::replace(&mut *self.state.borrow_mut(), SlotState::Spent);
        self.charge(0);
        match state {
            SlotState::Read(value) => {
                self.taken.set(true);
                self.budget.hits.set(self.budget.hits.get() + 1);
                Some(value)
            }
            _ => None,
        }
    }

    /// Drops what the slot holds (a newer read ahead of the same partition needs its place).
    fn discard(&self) {
        *self.state.borrow_mut() = SlotState::Spent;
        self.charge(0);
        self.ready.notify_all();
    }
}

impl<T> Discard for Slot<T> {
    fn discard_if_stale(&self, now: Instant) -> bool {
        if self.is_spent() {
            return true;
        }
        let stale = self
            .read_at
            .get()
            .is_some_and(|read_at| now.duration_since(read_at) >= STALE_AFTER);
        if stale {
            self.discard();
        }
        stale
    }
}

impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        self.charge(0);
        if !self.taken.get() {
            self.budget.wasted.set(self.budget.wasted.get() + 1);
        }
    }
}

/// A partition's reads ahead, at most [`SLOTS_PER_PARTITION`].
pub(crate) struct ReadAhead<T> {
    slots: RefCell<Vec<Rc<Slot<T>>>>,
}

impl<T> Default for ReadAhead<T> {
    fn default() -> Self {
        ReadAhead {
            slots: RefCell::new(Vec::new()),
        }
    }
}

impl<T> ReadAhead<T> {
    /// The read ahead of exactly `start`/`count`, removed from the partition's slots.
    pub(crate) fn claim(&self, start: u64, count: u32) -> Option<Rc<Slot<T>>> {
        let mut slots = self.slots.borrow_mut();
        slots.retain(|slot| !slot.is_spent());
        let found = slots
            .iter()
            .position(|slot| slot.start == start && slot.count == count)?;
        let slot = slots.remove(found);
        slot.claimed.set(true);
        Some(slot)
    }

    /// Whether a read of `start`/`count` is already ahead.
    pub(crate) fn has(&self, start: u64, count: u32) -> bool {
        self.slots
            .borrow()
            .iter()
            .any(|slot| slot.start == start && slot.count == count && !slot.is_spent())
    }

    /// Drops every read ahead (messages they hold were removed).
    pub(crate) fn clear(&self) {
        for slot in self.slots.borrow_mut().drain(..) {
            slot.discard();
        }
    }

    /// Keeps `slot`, dropping the oldest one when the partition has as many as it may keep.
    pub(crate) fn add(&self, slot: Rc<Slot<T>>) {
        let mut slots = self.slots.borrow_mut();
        slots.retain(|slot| !slot.is_spent());
        if slots.len() >= SLOTS_PER_PARTITION {
            slots.remove(0).discard();
        }
        slots.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(future: impl std::future::Future<Output = ()>) {
        compio::runtime::Runtime::new().unwrap().block_on(future);
    }

    #[test]
    fn a_read_ahead_is_charged_until_taken_and_counted_as_a_hit() {
        run(async {
            let budget = ReadAheadBudget::new(1000);
            let partition = ReadAhead::<&str>::default();
            let slot = budget.reserve::<&str>(10, 5, 400).unwrap();
            partition.add(Rc::clone(&slot));
            assert_eq!(budget.stats().held_bytes, 400);
            assert!(partition.has(10, 5));
            assert!(
                partition.claim(10, 4).is_none(),
                "another count is another read"
            );
            assert!(!slot.is_awaited(), "no poll was waiting");
            slot.finish(Some(("read", 300)));
            assert_eq!(budget.stats().held_bytes, 300);
            let claimed = partition.claim(10, 5).unwrap();
            drop(slot);
            assert_eq!(claimed.take().await, Some("read"));
            assert_eq!(budget.stats().held_bytes, 0);
            drop(claimed);
            let stats = budget.stats();
            assert_eq!((stats.started, stats.hits, stats.wasted), (1, 1, 0));
            assert!(!partition.has(10, 5));
        });
    }

    #[test]
    fn a_poll_waits_for_a_read_still_in_flight() {
        run(async {
            let budget = ReadAheadBudget::new(1000);
            let partition = ReadAhead::<u32>::default();
            let slot = budget.reserve::<u32>(0, 1, 10).unwrap();
            partition.add(Rc::clone(&slot));
            let read = compio::runtime::spawn(async move {
                compio::time::sleep(Duration::from_millis(5)).await;
                let awaited = slot.is_awaited();
                slot.finish(Some((7, 10)));
                awaited
            });
            let claimed = partition.claim(0, 1).unwrap();
            assert_eq!(claimed.take().await, Some(7));
            assert!(
                read.await.unwrap(),
                "the poll was waiting when the read finished"
            );
            // A failed read answers nothing: the poll reads again itself.
            let failed = budget.reserve::<u32>(1, 1, 10).unwrap();
            failed.finish(None);
            assert_eq!(failed.take().await, None);
            assert_eq!(budget.stats().held_bytes, 0);
        });
    }

    #[test]
    fn the_budget_bounds_what_is_held_and_stale_reads_make_room() {
        run(async {
            let budget = ReadAheadBudget::new(1000);
            let first = budget.reserve::<u32>(0, 1, 600).unwrap();
            assert!(
                budget.reserve::<u32>(1, 1, 600).is_none(),
                "no room while the first is in flight"
            );
            assert!(
                budget.reserve::<u32>(1, 1, 2000).is_none(),
                "over the budget"
            );
            first.finish(Some((1, 600)));
            assert!(
                budget.reserve::<u32>(1, 1, 600).is_none(),
                "a fresh read is kept"
            );
            // Read long ago and never taken: dropped for the next one.
            first.read_at.set(Some(
                Instant::now() - STALE_AFTER - Duration::from_millis(1),
            ));
            let second = budget.reserve::<u32>(1, 1, 600).unwrap();
            assert_eq!(first.take().await, None, "the stale read was dropped");
            assert_eq!(budget.stats().held_bytes, 600);
            drop((first, second));
            let stats = budget.stats();
            assert_eq!(stats.held_bytes, 0);
            assert_eq!((stats.started, stats.hits, stats.wasted), (2, 0, 2));
        });
    }

    #[test]
    fn a_partition_keeps_its_newest_reads_ahead() {
        run(async {
            let budget = ReadAheadBudget::new(1000);
            let partition = ReadAhead::<u32>::default();
            for start in 0..3 {
                let slot = budget.reserve::<u32>(start, 1, 100).unwrap();
                slot.finish(Some((start as u32, 100)));
                partition.add(slot);
            }
            assert!(!partition.has(0, 1), "the oldest made room");
            assert!(partition.has(1, 1) && partition.has(2, 1));
            assert_eq!(budget.stats().held_bytes, 200);
            assert_eq!(budget.stats().wasted, 1);
        });
    }
}
