//! Page-aligned buffers for O_DIRECT I/O and the per-shard pool that recycles them.
//!
//! O_DIRECT needs the memory address, the file offset and the length of every transfer to be
//! aligned to the device's logical block size (512 B here; we use 4096, which every device we
//! meet accepts). `AlignedBuf` is such memory; `BufferPool` keeps returned buffers in
//! power-of-two size classes from 4 KiB to 64 MiB so the write path allocates nothing once warm.
//! The pool belongs to one shard (`Rc`, `Cell`, `RefCell`, no locks).

use super::cache::ReadCache;
use super::huge_pages;
use compio::buf::{IoBuf, IoBufMut, SetLen};
use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, handle_alloc_error};
use std::cell::{Cell, RefCell};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::rc::Rc;

/// Alignment of addresses, file offsets and lengths for direct I/O.
pub const BLOCK_SIZE: usize = 4096;
/// The smallest size class.
pub const MIN_CLASS_BYTES: usize = BLOCK_SIZE;
/// The largest size class; larger requests are allocated exactly and freed on return.
pub const MAX_CLASS_BYTES: usize = 64 << 20;
const CLASS_COUNT: usize =
    (MAX_CLASS_BYTES.trailing_zeros() - MIN_CLASS_BYTES.trailing_zeros()) as usize + 1;
const _: () = assert!(MIN_CLASS_BYTES.is_power_of_two() && MAX_CLASS_BYTES.is_power_of_two());
const _: () = assert!(CLASS_COUNT == 15);

/// Rounds `value` down to a multiple of [`BLOCK_SIZE`].
pub const fn align_down(value: u64) -> u64 {
    value & !(BLOCK_SIZE as u64 - 1)
}

/// Rounds `value` up to a multiple of [`BLOCK_SIZE`].
pub const fn align_up(value: u64) -> u64 {
    align_down(value + BLOCK_SIZE as u64 - 1)
}

/// A buffer whose address and capacity are multiples of [`BLOCK_SIZE`]: from huge pages when
/// it is at least `huge_pages::FROM_BYTES` (one device segment per 2 MiB), else from the heap.
///
/// Bytes below `init` are initialised and only ever overwritten with initialised bytes; `len`
/// (at most `init`) marks how many are valid data. A buffer for writing is zeroed on allocation
/// (`init` is its capacity); one for reading is not (`init` starts at 0: zeroing a megabyte the
/// device is about to overwrite cost a tenth of a consumer's CPU), and grows as reads fill it.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    capacity: usize,
    len: usize,
    init: usize,
    /// Carved from huge pages (`huge_pages`) rather than the heap.
    huge: bool,
}

// SAFETY: the buffer exclusively owns its allocation (like a `Vec<u8>`), so moving it to another
// thread is sound. This lets read results become `bytes::Bytes` (which needs `Send` owners).
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only give out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `capacity` bytes (rounded up to a whole block, at least one), zeroed.
    pub fn zeroed(capacity: usize) -> Self {
        Self::allocate(capacity, true)
    }

    /// Allocates `capacity` bytes (rounded up to a whole block, at least one) for a read to
    /// fill, without zeroing them first.
    pub fn for_read(capacity: usize) -> Self {
        Self::allocate(capacity, false)
    }

    fn allocate(capacity: usize, zeroed: bool) -> Self {
        let capacity = align_up(capacity.max(1) as u64) as usize;
        if capacity >= huge_pages::FROM_BYTES
            && let Some(ptr) = huge_pages::allocate(capacity)
        {
            let mut buf = AlignedBuf {
                ptr,
                capacity,
                len: 0,
                init: 0,
                huge: true,
            };
            // The granules may have held an earlier buffer's bytes.
            if zeroed {
                buf.initialise_all();
            }
            return buf;
        }
        let layout = Layout::from_size_align(capacity, BLOCK_SIZE).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe {
            if zeroed {
                alloc_zeroed(layout)
            } else {
                alloc(layout)
            }
        };
        let Some(ptr) = NonNull::new(ptr) else {
            handle_alloc_error(layout)
        };
        AlignedBuf {
            ptr,
            capacity,
            len: 0,
            init: if zeroed { capacity } else { 0 },
            huge: false,
        }
    }

    /// Zeroes the bytes no write has initialised yet, so the whole capacity may be handed out.
    fn initialise_all(&mut self) {
        if self.init < self.capacity {
            // SAFETY: `init..capacity` lies inside the allocation; writing zeroes initialises it.
            unsafe {
                self.ptr
                    .as_ptr()
                    .add(self.init)
                    .write_bytes(0, self.capacity - self.init);
            }
            self.init = self.capacity;
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes still free after `len`.
    pub fn remaining(&self) -> usize {
        self.capacity - self.len
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Sets the valid length (bytes no write reached read as zero).
    pub fn set_filled(&mut self, len: usize) {
        assert!(
            len <= self.capacity,
            "length {len} beyond capacity {}",
            self.capacity
        );
        if len > self.init {
            self.initialise_all();
        }
        self.len = len;
    }

    /// Appends `bytes`; the caller checked that they fit.
    pub fn append(&mut self, bytes: &[u8]) {
        assert!(bytes.len() <= self.remaining(), "aligned buffer overflow");
        // SAFETY: `len + bytes.len() <= capacity`, and `bytes` cannot overlap a buffer we hold
        // mutably. Everything below `len <= init` was initialised and the copy initialises the
        // rest up to the new length, so `init` may move there without zeroing anything first.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                bytes.len(),
            );
        }
        self.len += bytes.len();
        self.init = self.init.max(self.len);
    }

    /// Zero-fills from `len` to the next block boundary and extends `len` there, as direct I/O
    /// needs whole blocks. Returns the padded length.
    pub fn pad_to_block(&mut self) -> usize {
        let padded = align_up(self.len as u64) as usize;
        let len = self.len;
        self.whole_mut()[len..padded].fill(0);
        self.len = padded;
        padded
    }

    /// The valid bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len <= init`: these bytes are initialised (see the type's documentation).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The whole capacity, for filling in place.
    pub fn whole_mut(&mut self) -> &mut [u8] {
        self.initialise_all();
        // SAFETY: all `capacity` bytes are initialised now and we hold `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.capacity) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.huge {
            // SAFETY: allocated by `huge_pages::allocate(self.capacity)` and dropped once.
            unsafe { huge_pages::release(self.ptr, self.capacity) };
            return;
        }
        let layout = Layout::from_size_align(self.capacity, BLOCK_SIZE).expect("valid layout");
        // SAFETY: allocated in `allocate` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("capacity", &self.capacity)
            .field("len", &self.len)
            .finish()
    }
}

impl IoBuf for AlignedBuf {
    fn as_init(&self) -> &[u8] {
        self.as_slice()
    }
}

impl SetLen for AlignedBuf {
    /// Called by the runtime after I/O filled the buffer up to `len`.
    unsafe fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.capacity,
            "length {len} beyond capacity {}",
            self.capacity
        );
        // The caller guarantees the bytes up to `len` were written.
        self.init = self.init.max(len);
        self.len = len;
    }
}

impl IoBufMut for AlignedBuf {
    fn as_uninit(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: the allocation holds `capacity` bytes; `MaybeUninit<u8>` has the layout of
        // `u8` and may be uninitialised. Callers (the kernel) only store initialised bytes.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.as_ptr().cast::<MaybeUninit<u8>>(),
                self.capacity,
            )
        }
    }
}

/// Pool counters for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Bytes of buffer memory the pool currently owns (cached plus handed out).
    pub allocated: u64,
    /// Bytes currently handed out.
    pub in_use: u64,
    /// Acquisitions that found no cached buffer and had to allocate.
    pub misses: u64,
}

/// A per-shard pool of aligned buffers in power-of-two size classes.
pub struct BufferPool {
    free: [RefCell<Vec<AlignedBuf>>; CLASS_COUNT],
    /// Returned buffers beyond this many cached bytes are freed rather than kept.
    max_cached_bytes: u64,
    cached_bytes: Cell<u64>,
    allocated_bytes: Cell<u64>,
    in_use_bytes: Cell<u64>,
    misses: Cell<u64>,
    /// The shard's read cache lives beside its buffers: one place sets a shard's storage memory.
    read_cache: Rc<ReadCache>,
}

impl BufferPool {
    /// Idle buffers a pool keeps by default.
    pub const DEFAULT_MAX_CACHED_BYTES: u64 = 1 << 30;
    /// The read cache a pool gets unless told otherwise (the server sets it from its config).
    pub const DEFAULT_READ_CACHE_BYTES: u64 = 256 << 20;

    /// A pool that keeps up to [`Self::DEFAULT_MAX_CACHED_BYTES`] of idle buffers.
    pub fn new() -> Self {
        Self::with_max_cached_bytes(Self::DEFAULT_MAX_CACHED_BYTES)
    }

    /// A pool that keeps at most `max_cached_bytes` of idle buffers.
    pub fn with_max_cached_bytes(max_cached_bytes: u64) -> Self {
        BufferPool {
            free: std::array::from_fn(|_| RefCell::new(Vec::new())),
            max_cached_bytes,
            cached_bytes: Cell::new(0),
            allocated_bytes: Cell::new(0),
            in_use_bytes: Cell::new(0),
            misses: Cell::new(0),
            read_cache: Rc::new(ReadCache::new(Self::DEFAULT_READ_CACHE_BYTES)),
        }
    }

    /// The same pool with a read cache of its own of `budget` bytes (0 turns caching off).
    pub fn with_read_cache_bytes(self, budget: u64) -> Self {
        self.with_read_cache(ReadCache::new(budget))
    }

    /// The same pool with `cache` (a shard's share of the server's budget).
    pub fn with_read_cache(mut self, cache: ReadCache) -> Self {
        self.read_cache = Rc::new(cache);
        self
    }

    /// Recently written batches kept for reads, shared by the shard's partitions.
    pub fn read_cache(&self) -> &Rc<ReadCache> {
        &self.read_cache
    }

    /// The size class index for a request, or None when it is larger than the largest class.
    fn class_of(len: usize) -> Option<usize> {
        let size = len.max(MIN_CLASS_BYTES).checked_next_power_of_two()?;
        (size <= MAX_CLASS_BYTES)
            .then(|| (size.trailing_zeros() - MIN_CLASS_BYTES.trailing_zeros()) as usize)
    }

    fn class_bytes(class: usize) -> usize {
        MIN_CLASS_BYTES << class
    }

    /// A buffer with capacity of at least `min_len` (the size class, a power of two), empty.
    pub fn acquire(self: &Rc<Self>, min_len: usize) -> PooledBuf {
        let class = Self::class_of(min_len);
        let cached = class.and_then(|class| self.free[class].borrow_mut().pop());
        let buf = match cached {
            Some(mut buf) => {
                self.cached_bytes
                    .set(self.cached_bytes.get() - buf.capacity() as u64);
                buf.clear();
                buf
            }
            None => {
                self.misses.set(self.misses.get() + 1);
                let capacity = class.map_or(min_len, Self::class_bytes);
                let buf = AlignedBuf::zeroed(capacity);
                self.allocated_bytes
                    .set(self.allocated_bytes.get() + buf.capacity() as u64);
                buf
            }
        };
        self.in_use_bytes
            .set(self.in_use_bytes.get() + buf.capacity() as u64);
        PooledBuf {
            buf: Some(buf),
            pool: Rc::clone(self),
        }
    }

    fn release(&self, buf: AlignedBuf) {
        let capacity = buf.capacity() as u64;
        self.in_use_bytes.set(self.in_use_bytes.get() - capacity);
        let class = Self::class_of(buf.capacity())
            .filter(|&class| Self::class_bytes(class) == buf.capacity());
        match class {
            Some(class) if self.cached_bytes.get() + capacity <= self.max_cached_bytes => {
                self.cached_bytes.set(self.cached_bytes.get() + capacity);
                self.free[class].borrow_mut().push(buf);
            }
            _ => {
                self.allocated_bytes
                    .set(self.allocated_bytes.get() - capacity);
                drop(buf);
            }
        }
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocated: self.allocated_bytes.get(),
            in_use: self.in_use_bytes.get(),
            misses: self.misses.get(),
        }
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        BufferPool::new()
    }
}

/// A buffer on loan from a [`BufferPool`]; goes back to it when dropped.
pub struct PooledBuf {
    buf: Option<AlignedBuf>,
    pool: Rc<BufferPool>,
}

impl PooledBuf {
    /// The pool this buffer returns to.
    pub(crate) fn pool(&self) -> &Rc<BufferPool> {
        &self.pool
    }

    fn inner(&self) -> &AlignedBuf {
        self.buf.as_ref().expect("present until dropped")
    }

    fn inner_mut(&mut self) -> &mut AlignedBuf {
        self.buf.as_mut().expect("present until dropped")
    }
}

impl std::ops::Deref for PooledBuf {
    type Target = AlignedBuf;
    fn deref(&self) -> &AlignedBuf {
        self.inner()
    }
}

impl std::ops::DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut AlignedBuf {
        self.inner_mut()
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.pool.release(buf);
        }
    }
}

impl IoBuf for PooledBuf {
    fn as_init(&self) -> &[u8] {
        self.inner().as_slice()
    }
}

impl SetLen for PooledBuf {
    unsafe fn set_len(&mut self, len: usize) {
        self.inner_mut().set_filled(len);
    }
}

impl IoBufMut for PooledBuf {
    fn as_uninit(&mut self) -> &mut [MaybeUninit<u8>] {
        self.inner_mut().as_uninit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_sized_by_class() {
        let pool = Rc::new(BufferPool::with_max_cached_bytes(1 << 30));
        for (request, class) in [
            (1, 4096),
            (4096, 4096),
            (4097, 8192),
            (1 << 20, 1 << 20),
            (MAX_CLASS_BYTES, MAX_CLASS_BYTES),
        ] {
            let buf = pool.acquire(request);
            assert_eq!(buf.capacity(), class);
            assert_eq!(buf.as_slice().as_ptr() as usize % BLOCK_SIZE, 0);
            assert!(buf.is_empty());
        }
        // Larger than the largest class: exact (block-rounded) and not cached.
        let big = pool.acquire(MAX_CLASS_BYTES + 1);
        assert_eq!(big.capacity(), MAX_CLASS_BYTES + BLOCK_SIZE);
        drop(big);
        assert_eq!(pool.stats().in_use, 0);
    }

    #[test]
    fn returned_buffers_are_reused_without_misses() {
        let pool = Rc::new(BufferPool::with_max_cached_bytes(1 << 30));
        let mut buf = pool.acquire(10_000);
        buf.append(b"hello");
        assert_eq!(pool.stats().misses, 1);
        assert_eq!(pool.stats().in_use, 16384);
        drop(buf);
        assert_eq!(
            pool.stats(),
            PoolStats {
                allocated: 16384,
                in_use: 0,
                misses: 1
            }
        );
        let buf = pool.acquire(16384);
        assert!(buf.is_empty(), "a reused buffer starts empty");
        assert_eq!(pool.stats().misses, 1);
        assert_eq!(pool.stats().allocated, 16384);
    }

    #[test]
    fn the_cache_limit_frees_surplus_buffers() {
        let pool = Rc::new(BufferPool::with_max_cached_bytes(8192));
        let a = pool.acquire(8192);
        let b = pool.acquire(8192);
        drop(a);
        drop(b);
        assert_eq!(
            pool.stats().allocated,
            8192,
            "only one buffer fits the cache"
        );
    }

    #[test]
    fn a_read_buffer_exposes_only_what_was_filled_and_zeroes_the_rest_on_demand() {
        let mut buf = AlignedBuf::for_read(3 * BLOCK_SIZE);
        assert_eq!(buf.capacity(), 3 * BLOCK_SIZE);
        assert_eq!(buf.as_uninit().as_ptr() as usize % BLOCK_SIZE, 0);
        // What a read does: write through the uninitialised view, then set the length.
        for byte in &mut buf.as_uninit()[..BLOCK_SIZE] {
            byte.write(7);
        }
        // SAFETY: the first block was just written.
        unsafe { buf.set_len(BLOCK_SIZE) };
        assert!(buf.as_slice().iter().all(|&b| b == 7));
        // A length past what any read filled reads zeroes, never stale memory.
        buf.set_filled(2 * BLOCK_SIZE);
        assert!(buf.as_slice()[BLOCK_SIZE..].iter().all(|&b| b == 0));
        assert!(buf.as_slice()[..BLOCK_SIZE].iter().all(|&b| b == 7));
        buf.clear();
        assert!(buf.whole_mut()[2 * BLOCK_SIZE..].iter().all(|&b| b == 0));
    }

    #[test]
    fn large_buffers_come_from_huge_pages_and_zeroed_ones_are_zero_again() {
        let small = AlignedBuf::zeroed(huge_pages::FROM_BYTES - BLOCK_SIZE);
        assert!(!small.huge, "below the threshold: the heap");
        let mut dirty = AlignedBuf::zeroed(huge_pages::FROM_BYTES);
        assert!(dirty.huge);
        dirty.whole_mut().fill(0xEE);
        let address = dirty.as_uninit().as_ptr() as usize;
        drop(dirty);
        // Whichever granules it gets (perhaps the ones just freed), a zeroed buffer reads zero.
        let mut again = AlignedBuf::zeroed(huge_pages::FROM_BYTES);
        assert!(again.huge);
        assert!(
            again.whole_mut().iter().all(|&b| b == 0),
            "reused at {address:#x}"
        );
        // A read buffer over reused granules still shows only what reads filled.
        let mut read = AlignedBuf::for_read(1_064_960);
        assert!(read.huge);
        read.set_filled(BLOCK_SIZE);
        assert!(read.as_slice().iter().all(|&b| b == 0));
    }

    #[test]
    fn appending_to_a_read_buffer_initialises_only_what_it_copies() {
        let mut buf = AlignedBuf::for_read(2 * BLOCK_SIZE);
        buf.append(b"abc");
        buf.append(b"de");
        assert_eq!(buf.as_slice(), b"abcde");
        // Past what was appended, a longer length reads zeroes, never what the memory held.
        buf.set_filled(BLOCK_SIZE);
        assert_eq!(&buf.as_slice()[..5], b"abcde");
        assert!(buf.as_slice()[5..].iter().all(|&b| b == 0));
        buf.clear();
        buf.append(&[9; 10]);
        assert_eq!(buf.as_slice(), &[9; 10]);
    }

    #[test]
    fn padding_zero_fills_to_the_block() {
        let pool = Rc::new(BufferPool::with_max_cached_bytes(1 << 20));
        let mut buf = pool.acquire(8192);
        buf.whole_mut().fill(0xAB);
        buf.set_filled(0);
        buf.append(&[1, 2, 3]);
        assert_eq!(buf.pad_to_block(), BLOCK_SIZE);
        assert_eq!(&buf.as_slice()[..4], &[1, 2, 3, 0]);
        assert!(buf.as_slice()[3..].iter().all(|&b| b == 0));
        assert_eq!(align_down(4097), 4096);
        assert_eq!(align_up(4097), 8192);
        assert_eq!(align_up(0), 0);
    }
}
