//! The read cache: batches a shard's partitions wrote recently, kept in memory so that a
//! consumer close behind its producers is answered without touching the disk.
//!
//! A partition keeps its batches in its journal (`partition/state.rs`), in log order; this
//! module holds what the shard's partitions share: the byte budget, one queue of what is held
//! across all of them in the order it was written (the oldest is evicted first, whichever
//! partition holds it), and the counters `/metrics` shows. Bytes enter the cache when their
//! write completes; bytes not yet written (the memory-mode journal, batches waiting for their
//! round) are never evicted, because they are the only copy or about to be read by the writer.
//!
//! Every held batch carries a [`Charge`]: whatever removes it (eviction, retention, a deleted
//! or reopened partition) gives its bytes back by dropping it, so the accounting cannot drift.
//!
//! The cache keeps copies, not the buffers requests arrived in: a large batch is copied into a
//! buffer from the shard's [`RecycleBin`], which takes the buffer back when the last reference
//! to the batch goes (on whatever thread sent the last poll of it). Holding the arrival buffers
//! made every request allocate fresh memory, and the kernel zeroing fresh pages cost producers
//! three quarters of their throughput on a VM; a recycled buffer was zeroed once, long ago.
//! Small batches are copied into exact-size allocations, which the allocator recycles itself.

use crate::storage::read_ahead::{ReadAheadBudget, ReadAheadStats};
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Batches at least this large are copied into recycled buffers; smaller ones into exact-size
/// allocations.
pub(crate) const RECYCLED_FROM_BYTES: usize = 64 * 1024;
/// Recycled buffers come in 64 size classes per doubling (multiples of a sixty-fourth of the
/// size's power of two, at least a block), so batches of similar sizes share them and a
/// buffer wastes under 1.6% of its batch's size. A fixed 64 KiB step wasted 4.7% of a 1 MB
/// batch, which the budget counted: a 2 GiB cache held 1.9 GiB of messages.
const SIZE_CLASSES_PER_DOUBLING: usize = 64;
const MIN_GRANULE: usize = 4096;
/// The most idle buffer memory a shard's bin keeps (an eighth of its share, between these):
/// in steady state evictions hand buffers straight to the next batches, so little waits.
const MAX_IDLE_BYTES: u64 = 64 << 20;
const MIN_IDLE_BYTES: u64 = 1 << 20;
/// The most spare memory the warmer makes ahead for one bin (within its idle limit).
const WARM_AHEAD_BYTES: u64 = 16 << 20;

/// Idle buffers kept for the next cached batches, by size. Shared with the threads that may
/// drop a batch's last reference (a poll's reply is written by the connection's shard).
#[derive(Debug)]
pub struct RecycleBin {
    /// By capacity; each buffer empty (its length 0).
    free: Mutex<HashMap<usize, Vec<Vec<u8>>>>,
    idle_bytes: AtomicU64,
    max_idle_bytes: u64,
    /// Set while the warmer has been asked for spares and has not yet made them.
    warming: AtomicBool,
}

impl RecycleBin {
    pub fn new(max_idle_bytes: u64) -> Arc<RecycleBin> {
        Arc::new(RecycleBin {
            free: Mutex::new(HashMap::new()),
            idle_bytes: AtomicU64::new(0),
            max_idle_bytes,
            warming: AtomicBool::new(false),
        })
    }

    /// The memory a batch of `len` bytes takes: what the cache charges for it.
    pub(crate) fn footprint(len: usize) -> usize {
        if len < RECYCLED_FROM_BYTES {
            len
        } else {
            let power = 1usize << (usize::BITS - 1 - len.leading_zeros());
            len.next_multiple_of((power / SIZE_CLASSES_PER_DOUBLING).max(MIN_GRANULE))
        }
    }

    /// A copy of `bytes` the cache can hold.
    pub(crate) fn copy(self: &Arc<Self>, bytes: &[u8]) -> Bytes {
        if bytes.len() < RECYCLED_FROM_BYTES {
            return Bytes::copy_from_slice(bytes);
        }
        let size = Self::footprint(bytes.len());
        let reused = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&size)
            .and_then(Vec::pop);
        let mut data = match reused {
            Some(data) => {
                self.idle_bytes.fetch_sub(size as u64, Ordering::Relaxed);
                data
            }
            // Not zeroed: the copy writes what is read, the rest of the capacity is never read.
            None => {
                self.ask_for_spares(size);
                Vec::with_capacity(size)
            }
        };
        data.extend_from_slice(bytes);
        Bytes::from_owner(Recycled {
            data: Some(data),
            bin: Arc::clone(self),
        })
    }

    /// Asks the warmer for spare buffers of `size` (once at a time per bin).
    fn ask_for_spares(self: &Arc<Self>, size: usize) {
        if self.warming.swap(true, Ordering::AcqRel) {
            return;
        }
        let asked =
            warmer().is_some_and(|warmer| warmer.try_send((Arc::downgrade(self), size)).is_ok());
        if !asked {
            self.warming.store(false, Ordering::Release);
        }
    }

    /// Makes spares of `size` until the bin holds `WARM_AHEAD_BYTES` idle (or its limit).
    fn warm(&self, size: usize) {
        let target = WARM_AHEAD_BYTES.min(self.max_idle_bytes);
        while self.idle_bytes.load(Ordering::Relaxed) + size as u64 <= target {
            self.give_back(prefaulted(size));
        }
        self.warming.store(false, Ordering::Release);
    }

    fn give_back(&self, mut data: Vec<u8>) {
        data.clear();
        let size = data.capacity() as u64;
        if self.idle_bytes.load(Ordering::Relaxed) + size > self.max_idle_bytes {
            return;
        }
        self.idle_bytes.fetch_add(size, Ordering::Relaxed);
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(data.capacity())
            .or_default()
            .push(data);
    }

    #[cfg(test)]
    fn idle_bytes(&self) -> u64 {
        self.idle_bytes.load(Ordering::Relaxed)
    }
}

/// A bin asking for spares of a size.
type WarmRequest = (std::sync::Weak<RecycleBin>, usize);

/// The warmer: one thread at the lowest priority (`SCHED_IDLE`) that makes spare buffers for the
/// bins whose shards had to allocate, touching each page, so that the page faults of a growing
/// cache (each new page's first touch, which on a VM also faults in the hypervisor) run on
/// otherwise idle CPU time instead of in the shard while a producer waits for its ack. Measured
/// on `ppc`: a cache that never recycles during the run (the default 2 GiB against a 2 GB run)
/// cost the shards ~0.7 s of CPU per 2 GB in first touches (bench/README, 2026-12-03). None if
/// the thread cannot be started (the shards then allocate as before).
fn warmer() -> Option<&'static flume::Sender<WarmRequest>> {
    static WARMER: std::sync::OnceLock<Option<flume::Sender<WarmRequest>>> =
        std::sync::OnceLock::new();
    WARMER
        .get_or_init(|| {
            let (sender, receiver) = flume::bounded::<WarmRequest>(64);
            std::thread::Builder::new()
                .name("cache-warmer".into())
                .spawn(move || {
                    let idle = libc::sched_param { sched_priority: 0 };
                    // SAFETY: plain syscall on this thread, with a valid parameter struct.
                    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) };
                    for (bin, size) in receiver {
                        if let Some(bin) = bin.upgrade() {
                            bin.warm(size);
                        }
                    }
                })
                .ok()
                .map(|_| sender)
        })
        .as_ref()
}

/// An empty buffer of `capacity` whose pages are already faulted in.
fn prefaulted(capacity: usize) -> Vec<u8> {
    let mut data = Vec::<u8>::with_capacity(capacity);
    for page in data.spare_capacity_mut().chunks_mut(4096) {
        page[0].write(0);
    }
    data
}

/// A cached batch's buffer; returns to its bin when the batch's last reference goes.
struct Recycled {
    data: Option<Vec<u8>>,
    bin: Arc<RecycleBin>,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        self.data.as_ref().expect("present until dropped")
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        if let Some(data) = self.data.take() {
            self.bin.give_back(data);
        }
    }
}

/// What a partition answers when the cache asks it to drop one of its batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eviction {
    /// The batch was the partition's oldest cached one and is gone now.
    Evicted,
    /// The partition no longer holds it (retention or a purge removed it first).
    Gone,
    /// The partition is in the middle of a change; try again later.
    Busy,
}

/// A holder of cached batches: a partition, seen from the cache.
pub(crate) trait CacheOwner {
    /// Drops the batch numbered `seq` if it is the owner's oldest cached batch.
    fn evict(&self, seq: u64) -> Eviction;
    /// Whether the batch numbered `seq` may still be held (true when the owner cannot tell).
    fn may_hold(&self, seq: u64) -> bool;
}

struct Token {
    owner: Weak<dyn CacheOwner>,
    seq: u64,
}

/// Counters for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub budget_bytes: u64,
    pub held_bytes: u64,
    /// Read pieces answered from memory (cached or not yet written batches).
    pub hits: u64,
    /// Read pieces that went to the segment files.
    pub misses: u64,
    pub evictions: u64,
    pub read_ahead: ReadAheadStats,
}

/// The budget all shards' caches share, and what they hold together.
#[derive(Debug)]
pub struct CacheBudget {
    total: u64,
    held: AtomicU64,
}

impl CacheBudget {
    pub fn new(total: u64) -> Arc<CacheBudget> {
        Arc::new(CacheBudget {
            total,
            held: AtomicU64::new(0),
        })
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

/// One shard's read cache. Single-threaded, like everything a shard owns.
///
/// Shards share one budget without locks: each may hold more than its share (the total split
/// evenly) while the shards together stay within the total, so a shard owning the busy
/// partitions gets the memory the idle ones do not use. Once the total is exceeded, every
/// shard above its share evicts its own oldest batches down to its share, at its next write or
/// within a second (`trim` also runs on the shard's metrics tick); a shard within its share
/// never has to, so each can always cache at least its share.
pub struct ReadCache {
    budget: Arc<CacheBudget>,
    share: u64,
    bin: Arc<RecycleBin>,
    held: Cell<u64>,
    batches: Cell<u64>,
    order: RefCell<VecDeque<Token>>,
    next_seq: Cell<u64>,
    hits: Cell<u64>,
    misses: Cell<u64>,
    evictions: Cell<u64>,
    /// What the shard's partitions read ahead of their consumers (storage/read_ahead.rs).
    read_ahead: Rc<ReadAheadBudget>,
}

/// The bytes one cached batch holds; given back when dropped.
pub(crate) struct Charge {
    cache: Rc<ReadCache>,
    bytes: u64,
    seq: u64,
}

impl Charge {
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let held = self.cache.held.get();
        assert!(
            held >= self.bytes,
            "the cache holds {held} bytes, a batch gives back {}",
            self.bytes
        );
        self.cache.held.set(held - self.bytes);
        self.cache
            .budget
            .held
            .fetch_sub(self.bytes, Ordering::Relaxed);
        self.cache.batches.set(self.cache.batches.get() - 1);
    }
}

impl ReadCache {
    /// A cache of its own that holds at most `budget` bytes of written batches (0: nothing
    /// is cached).
    pub fn new(budget: u64) -> ReadCache {
        ReadCache::sharing(CacheBudget::new(budget), budget)
    }

    /// One shard's cache under a budget all shards share, guaranteed `share` of it.
    pub fn sharing(budget: Arc<CacheBudget>, share: u64) -> ReadCache {
        ReadCache {
            bin: RecycleBin::new((share / 8).clamp(MIN_IDLE_BYTES, MAX_IDLE_BYTES)),
            budget,
            share,
            held: Cell::new(0),
            batches: Cell::new(0),
            order: RefCell::new(VecDeque::new()),
            next_seq: Cell::new(0),
            hits: Cell::new(0),
            misses: Cell::new(0),
            evictions: Cell::new(0),
            read_ahead: ReadAheadBudget::new(0),
        }
    }

    /// The same cache, with `bytes` for this shard's reads ahead (0: none).
    pub fn with_read_ahead(mut self, bytes: u64) -> ReadCache {
        self.read_ahead = ReadAheadBudget::new(bytes);
        self
    }

    pub(crate) fn read_ahead(&self) -> &Rc<ReadAheadBudget> {
        &self.read_ahead
    }

    pub fn enabled(&self) -> bool {
        self.budget.total > 0
    }

    /// Where the shard's cached batches get their memory.
    pub(crate) fn bin(&self) -> &Arc<RecycleBin> {
        &self.bin
    }

    /// Takes a written batch of `bytes` into the cache for `owner`, which keeps the returned
    /// charge with the batch. Call [`ReadCache::trim`] once no partition state is borrowed.
    pub(crate) fn admit(self: &Rc<Self>, owner: Weak<dyn CacheOwner>, bytes: u64) -> Charge {
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        self.held.set(self.held.get() + bytes);
        self.budget.held.fetch_add(bytes, Ordering::Relaxed);
        self.batches.set(self.batches.get() + 1);
        let mut order = self.order.borrow_mut();
        order.push_back(Token { owner, seq });
        // Batches removed by retention or deletion leave their tokens behind; drop those
        // before they outnumber the live ones.
        if order.len() as u64 > 2 * self.batches.get() + 1024 {
            order.retain(|token| {
                token
                    .owner
                    .upgrade()
                    .is_some_and(|owner| owner.may_hold(token.seq))
            });
        }
        Charge {
            cache: Rc::clone(self),
            bytes,
            seq,
        }
    }

    /// Whether this shard must give memory back: the shards together hold more than the
    /// total and this one more than its share.
    fn over_budget(&self) -> bool {
        let held = self.held.get();
        held > self.budget.total
            || (held > self.share && self.budget.held.load(Ordering::Relaxed) > self.budget.total)
    }

    /// Evicts the oldest batches, whichever of the shard's partitions holds them, while the
    /// cache is over budget (see the type). Must not run while a partition's state is borrowed
    /// (it would be `Busy`).
    pub fn trim(&self) {
        while self.over_budget() {
            let Some(token) = self.order.borrow_mut().pop_front() else {
                return;
            };
            let Some(owner) = token.owner.upgrade() else {
                continue;
            };
            match owner.evict(token.seq) {
                Eviction::Evicted => self.evictions.set(self.evictions.get() + 1),
                Eviction::Gone => {}
                Eviction::Busy => {
                    self.order.borrow_mut().push_front(token);
                    return;
                }
            }
        }
    }

    /// Counts where the pieces of one read came from.
    pub(crate) fn record_read(&self, hits: u64, misses: u64) {
        self.hits.set(self.hits.get() + hits);
        self.misses.set(self.misses.get() + misses);
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            budget_bytes: self.share,
            held_bytes: self.held.get(),
            hits: self.hits.get(),
            misses: self.misses.get(),
            evictions: self.evictions.get(),
            read_ahead: self.read_ahead.stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An owner holding a queue of charged batches, like a partition's journal.
    struct Owner {
        held: RefCell<VecDeque<Charge>>,
        busy: Cell<bool>,
    }

    impl CacheOwner for Owner {
        fn evict(&self, seq: u64) -> Eviction {
            if self.busy.get() {
                return Eviction::Busy;
            }
            let mut held = self.held.borrow_mut();
            match held.front() {
                Some(front) if front.seq() == seq => {
                    held.pop_front();
                    Eviction::Evicted
                }
                _ => Eviction::Gone,
            }
        }

        fn may_hold(&self, seq: u64) -> bool {
            self.held.borrow().iter().any(|charge| charge.seq() == seq)
        }
    }

    fn owner() -> Rc<Owner> {
        Rc::new(Owner {
            held: RefCell::new(VecDeque::new()),
            busy: Cell::new(false),
        })
    }

    fn admit(cache: &Rc<ReadCache>, owner: &Rc<Owner>, bytes: u64) {
        let weak: Weak<dyn CacheOwner> = Rc::downgrade(&(Rc::clone(owner) as Rc<dyn CacheOwner>));
        let charge = cache.admit(weak, bytes);
        owner.held.borrow_mut().push_back(charge);
    }

    #[test]
    fn evicts_the_oldest_batches_across_owners_down_to_the_budget() {
        let cache = Rc::new(ReadCache::new(100));
        let (a, b) = (owner(), owner());
        admit(&cache, &a, 40);
        admit(&cache, &b, 40);
        admit(&cache, &a, 40);
        cache.trim();
        // a's first batch was the oldest: it goes, b's stays.
        assert_eq!(cache.stats().held_bytes, 80);
        assert_eq!(a.held.borrow().len(), 1);
        assert_eq!(b.held.borrow().len(), 1);
        assert_eq!(cache.stats().evictions, 1);
        admit(&cache, &b, 100);
        cache.trim();
        assert_eq!(cache.stats().held_bytes, 100);
        assert!(a.held.borrow().is_empty());
        assert_eq!(b.held.borrow().len(), 1);
    }

    #[test]
    fn removal_outside_the_cache_gives_bytes_back_and_leaves_no_live_token_behind() {
        let cache = Rc::new(ReadCache::new(1000));
        let a = owner();
        for _ in 0..10 {
            admit(&cache, &a, 10);
        }
        a.held.borrow_mut().drain(..5);
        assert_eq!(cache.stats().held_bytes, 50);
        drop(a);
        assert_eq!(cache.stats().held_bytes, 0);
        // Thousands of stale tokens are compacted away as new batches arrive.
        let b = owner();
        for _ in 0..5000 {
            admit(&cache, &b, 1);
            b.held.borrow_mut().pop_front();
        }
        assert!(cache.order.borrow().len() <= 1024 + 2);
    }

    #[test]
    fn a_busy_owner_keeps_its_token_for_the_next_trim() {
        let cache = Rc::new(ReadCache::new(10));
        let a = owner();
        admit(&cache, &a, 20);
        a.busy.set(true);
        cache.trim();
        assert_eq!(cache.stats().held_bytes, 20);
        a.busy.set(false);
        cache.trim();
        assert_eq!(cache.stats().held_bytes, 0);
        assert_eq!(cache.stats().evictions, 1);
    }

    #[test]
    fn shards_borrow_what_others_leave_and_shed_down_to_their_share() {
        let budget = CacheBudget::new(100);
        let one = Rc::new(ReadCache::sharing(budget.clone(), 50));
        let two = Rc::new(ReadCache::sharing(budget.clone(), 50));
        let (a, b) = (owner(), owner());
        // Shard one holds 90 of 100 while shard two holds nothing: no eviction.
        for _ in 0..9 {
            admit(&one, &a, 10);
        }
        one.trim();
        assert_eq!(one.stats().held_bytes, 90);
        // Shard two writes 40: together 130. Two is within its share and keeps what it has;
        // one sheds down to its share at its next trim.
        for _ in 0..4 {
            admit(&two, &b, 10);
        }
        two.trim();
        assert_eq!(two.stats().held_bytes, 40);
        one.trim();
        assert_eq!(one.stats().held_bytes, 60);
        assert_eq!(budget.held.load(Ordering::Relaxed), 100);
        // Dropping everything gives the shared account back too.
        drop((a, b));
        assert_eq!(budget.held.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn large_copies_reuse_returned_buffers_and_small_ones_are_exact() {
        let bin = RecycleBin::new(1 << 20);
        let batch: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let first = bin.copy(&batch);
        assert_eq!(&first[..], &batch[..]);
        let address = first.as_ptr();
        assert_eq!(bin.idle_bytes(), 0);
        // A slice outliving the batch keeps the buffer; the last reference returns it.
        let slice = first.slice(10..20);
        drop(first);
        assert_eq!(bin.idle_bytes(), 0);
        drop(slice);
        assert_eq!(bin.idle_bytes(), 25 * 4096);
        // The next batch of that size class gets the same memory back.
        let other: Vec<u8> = vec![9; 99_000];
        let second = bin.copy(&other);
        assert_eq!(second.as_ptr(), address);
        assert_eq!(&second[..], &other[..]);
        assert_eq!(bin.idle_bytes(), 0);
        // Small batches are plain exact copies.
        assert_eq!(RecycleBin::footprint(1000), 1000);
        assert_eq!(RecycleBin::footprint(100_000), 25 * 4096);
        assert_eq!(RecycleBin::footprint(1_064_000), 65 * 16 * 1024);
        assert_eq!(RecycleBin::footprint(1 << 20), 1 << 20);
        assert_eq!(RecycleBin::footprint((1 << 20) + 1), (1 << 20) + 16 * 1024);
        assert_eq!(&bin.copy(b"small")[..], b"small");
        // Beyond the idle limit buffers are freed, not kept.
        let tiny = RecycleBin::new(64 * 1024);
        drop((tiny.copy(&batch), tiny.copy(&batch)));
        assert_eq!(tiny.idle_bytes(), 0);
    }

    #[test]
    fn a_bin_that_had_to_allocate_gets_spares_made_ahead_of_need() {
        let bin = RecycleBin::new(8 << 20);
        let batch = vec![1u8; 100_000];
        let size = RecycleBin::footprint(batch.len()) as u64;
        let first = bin.copy(&batch);
        // The warmer runs at the lowest priority: give it time on a busy machine.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while bin.warming.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let idle = bin.idle_bytes();
        assert!(idle >= size, "spares were made: {idle} bytes idle");
        assert!(
            idle <= WARM_AHEAD_BYTES.min(8 << 20),
            "within the bin's limits: {idle}"
        );
        // The next batches of that size take spares instead of allocating.
        let second = bin.copy(&batch);
        assert_eq!(bin.idle_bytes(), idle - size);
        assert_eq!(&second[..], &batch[..]);
        drop((first, second));
    }

    #[test]
    fn a_zero_budget_is_disabled() {
        assert!(!ReadCache::new(0).enabled());
        assert!(ReadCache::new(1).enabled());
    }
}
