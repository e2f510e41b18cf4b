//! Memory for large direct-I/O buffers, carved from 2 MiB transparent huge pages.
//!
//! A direct read or write hands the device the buffer's physical pages, one segment per
//! physically contiguous run. In 4 KiB pages a 1 MB buffer is ~256 segments, and a virtio disk
//! takes at most 254 per request (`/sys/block/*/queue/max_segments`), so the kernel splits the
//! transfer and the device works through many small pieces: on this project's VM a 1 MB
//! O_DIRECT read ran at 0.4-1.4 GB/s from heap buffers and 1.8-2.0 GB/s from a huge page, at
//! any queue depth (bench/README.md, 2026-12-02). A buffer inside one huge page is one segment.
//!
//! Buffers of [`FROM_BYTES`] up to a page take whole 64 KiB granules of a 2 MiB page (a page
//! serves several at once); larger ones get a mapping of their own in whole pages. Each page is
//! mapped at a 2 MiB boundary and advised `MADV_HUGEPAGE`, which the kernel honours in its
//! default `madvise` mode; where it cannot (THP off, memory too fragmented) the pages are
//! ordinary ones and nothing else changes. Empty pages are kept for the next buffers up to
//! [`MAX_IDLE_BYTES`] (mapping, faulting and zeroing a page again costs more than the I/O it
//! speeds up); beyond that they go back to the kernel.
//!
//! Buffers are freed on whichever thread drops them (a read becomes `Bytes` sent by another
//! shard), so the state is one mutex: it is taken only when a buffer pool or a read misses,
//! never per message.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// A transparent huge page on x86_64 and aarch64 with 4 KiB base pages.
pub const PAGE_BYTES: usize = 2 << 20;
/// The unit buffers inside a page are handed out in.
const GRANULE_BYTES: usize = 64 << 10;
const GRANULES_PER_PAGE: u32 = (PAGE_BYTES / GRANULE_BYTES) as u32;
const _: () = assert!(GRANULES_PER_PAGE == u32::BITS);
/// Buffers at least this large come from huge pages; smaller ones are at most 16 segments.
pub const FROM_BYTES: usize = GRANULE_BYTES;
/// Empty memory kept mapped for the next buffers.
pub const MAX_IDLE_BYTES: usize = 16 * PAGE_BYTES;

static ENABLED: AtomicBool = AtomicBool::new(true);
static MAPPED_BYTES: AtomicU64 = AtomicU64::new(0);
static IN_USE_BYTES: AtomicU64 = AtomicU64::new(0);
static STATE: Mutex<Pages> = Mutex::new(Pages {
    shared: BTreeMap::new(),
    idle_runs: Vec::new(),
});

/// Turns huge-page buffers on or off for buffers allocated from now on (the server sets it
/// from `[system.buffers] huge_pages` before its shards start).
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// mimalloc's `mi_option_allow_thp` in the v3 sources bundled by libmimalloc-sys 0.1.49 (the
/// version Cargo.lock pins; its Rust bindings do not name the option). The integration test
/// `large_batches_and_polls_use_huge_page_buffers_unless_turned_off` fails if the heap gets
/// huge pages again, which is what a renumbered option would cause.
const MI_OPTION_ALLOW_THP: i32 = 43;
/// `prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED)`, Linux 6.18: no huge pages
/// but where `madvise` asked for them.
const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;

unsafe extern "C" {
    fn mi_option_set(option: i32, value: std::ffi::c_long);
}

/// Keeps transparent huge pages to the buffers this module maps; call first thing in `main`.
///
/// The heap must not have them: the read cache fills gigabytes of fresh heap memory, and
/// faulting it in as 2 MiB pages (zeroed, often after compaction) cost producers two thirds of
/// their throughput while it filled, against a third in 4 KiB pages, and the partly used pages
/// made the process ~13% larger than the cache's budget (measured on this project's VM). But
/// mimalloc advises its arenas `MADV_HUGEPAGE` itself, so the kernel's `madvise` mode alone
/// does not keep them out: mimalloc is told to stop, the advice on what it mapped before `main`
/// is taken back, and the process allows huge pages only where advised (Linux 6.18). On older
/// kernels, in `madvise` mode that is already so; in `always` mode the process gets no huge
/// pages at all, as before this module existed. Returns what holds, for the log.
#[allow(
    clippy::disallowed_methods,
    reason = "main's thread, before any shard or runtime starts"
)]
pub fn confine_to_io_buffers() -> &'static str {
    // SAFETY: sets an integer option; mimalloc reads it when it next maps memory.
    unsafe { mi_option_set(MI_OPTION_ALLOW_THP, 0) };
    if let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") {
        for (start, end) in advised_ranges(&smaps) {
            // SAFETY: the range is a mapping of this process; the advice changes no contents.
            unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_NOHUGEPAGE,
                )
            };
        }
    }
    // SAFETY: prctl with PR_SET_THP_DISABLE takes integer arguments and touches no memory.
    let flags = PR_THP_DISABLE_EXCEPT_ADVISED;
    if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, flags, 0, 0) } == 0 {
        return "for I/O buffers only";
    }
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if mode.contains("[always]") {
        // SAFETY: as above.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        "off (the kernel's mode is \"always\" and it cannot except advised memory before 6.18)"
    } else if mode.contains("[madvise]") {
        "for I/O buffers only"
    } else {
        "unavailable (the kernel's mode is not \"madvise\")"
    }
}

/// The address ranges of `/proc/self/smaps` whose flags include `hg` (advised for huge pages).
fn advised_ranges(smaps: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut current = None;
    for line in smaps.lines() {
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            if let Some(range) = current.take()
                && flags.split_whitespace().any(|flag| flag == "hg")
            {
                ranges.push(range);
            }
        } else if let Some((range, _)) = line.split_once(' ')
            && let Some((start, end)) = range.split_once('-')
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            current = Some((start, end));
        }
    }
    ranges
}

/// Huge-page memory counters for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HugePageStats {
    /// Bytes mapped for buffers (in use, partly used pages and idle pages).
    pub mapped: u64,
    /// Bytes of the buffers handed out (whole granules or pages).
    pub in_use: u64,
}

pub fn stats() -> HugePageStats {
    HugePageStats {
        mapped: MAPPED_BYTES.load(Ordering::Relaxed),
        in_use: IN_USE_BYTES.load(Ordering::Relaxed),
    }
}

struct Pages {
    /// Pages that serve buffers of up to a page, by address: a bit per granule in use.
    shared: BTreeMap<usize, u32>,
    /// Idle mappings of buffers larger than a page: (address, bytes).
    idle_runs: Vec<(usize, usize)>,
}

impl Pages {
    fn idle_bytes(&self) -> usize {
        let empty_pages = self.shared.values().filter(|&&used| used == 0).count();
        empty_pages * PAGE_BYTES + self.idle_runs.iter().map(|&(_, len)| len).sum::<usize>()
    }
}

/// The bytes a buffer of `len` takes here.
fn footprint(len: usize) -> usize {
    if len <= PAGE_BYTES {
        len.next_multiple_of(GRANULE_BYTES)
    } else {
        len.next_multiple_of(PAGE_BYTES)
    }
}

/// The mask of `count` granules starting at granule `first`.
fn run_mask(first: u32, count: u32) -> u32 {
    let ones = if count == u32::BITS {
        u32::MAX
    } else {
        (1 << count) - 1
    };
    ones << first
}

/// The first granule of a free run of `count` in a page whose used granules are `used`.
fn free_run(used: u32, count: u32) -> Option<u32> {
    (0..=GRANULES_PER_PAGE - count).find(|&first| used & run_mask(first, count) == 0)
}

/// Memory for a buffer of `len` bytes (`len >= FROM_BYTES`), at least 4 KiB aligned, not
/// zeroed. None when huge-page buffers are off or the kernel refuses a mapping (the caller
/// then uses the heap).
pub fn allocate(len: usize) -> Option<NonNull<u8>> {
    debug_assert!(len >= FROM_BYTES);
    if !enabled() {
        return None;
    }
    let size = footprint(len);
    let mut pages = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    let address = if len <= PAGE_BYTES {
        let count = (size / GRANULE_BYTES) as u32;
        // A page already in use first, so that empty pages stay whole for large buffers.
        let found = pages
            .shared
            .iter()
            .filter(|&(_, &used)| used != 0)
            .chain(pages.shared.iter().filter(|&(_, &used)| used == 0))
            .find_map(|(&page, &used)| free_run(used, count).map(|first| (page, first)));
        let (page, first) = match found {
            Some(found) => found,
            None => {
                let page = map_pages(PAGE_BYTES)?;
                pages.shared.insert(page, 0);
                (page, 0)
            }
        };
        let used = pages.shared.get_mut(&page).expect("page found above");
        *used |= run_mask(first, count);
        page + first as usize * GRANULE_BYTES
    } else {
        match pages.idle_runs.iter().position(|&(_, run)| run == size) {
            Some(index) => pages.idle_runs.swap_remove(index).0,
            None => map_pages(size)?,
        }
    };
    IN_USE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    NonNull::new(address as *mut u8)
}

/// Gives back a buffer [`allocate`] returned for the same `len`.
///
/// # Safety
/// `pointer` came from `allocate(len)` and is not used afterwards.
pub unsafe fn release(pointer: NonNull<u8>, len: usize) {
    let size = footprint(len);
    let address = pointer.as_ptr() as usize;
    IN_USE_BYTES.fetch_sub(size as u64, Ordering::Relaxed);
    let mut pages = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    if len <= PAGE_BYTES {
        let page = address & !(PAGE_BYTES - 1);
        let first = ((address - page) / GRANULE_BYTES) as u32;
        let count = (size / GRANULE_BYTES) as u32;
        let used = pages
            .shared
            .get_mut(&page)
            .expect("a huge-page buffer's page is mapped");
        debug_assert_eq!(*used & run_mask(first, count), run_mask(first, count));
        *used &= !run_mask(first, count);
        if *used == 0 && pages.idle_bytes() > MAX_IDLE_BYTES {
            pages.shared.remove(&page);
            unmap(page, PAGE_BYTES);
        }
    } else if pages.idle_bytes() + size <= MAX_IDLE_BYTES {
        pages.idle_runs.push((address, size));
    } else {
        unmap(address, size);
    }
}

/// Maps `len` bytes (a multiple of [`PAGE_BYTES`]) at a huge-page boundary, advised for huge
/// pages.
fn map_pages(len: usize) -> Option<usize> {
    let span = len + PAGE_BYTES;
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw as usize;
    let start = raw.next_multiple_of(PAGE_BYTES);
    // The slack before and after the aligned range goes back at once.
    if start > raw {
        unmap_raw(raw, start - raw);
    }
    let tail = raw + span - (start + len);
    if tail > 0 {
        unmap_raw(start + len, tail);
    }
    // SAFETY: the range is the mapping made above. Failure only means ordinary pages.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    MAPPED_BYTES.fetch_add(len as u64, Ordering::Relaxed);
    Some(start)
}

fn unmap(address: usize, len: usize) {
    MAPPED_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
    unmap_raw(address, len);
}

fn unmap_raw(address: usize, len: usize) {
    // SAFETY: the range is part of a mapping made by `map_pages` that nothing uses any more.
    let result = unsafe { libc::munmap(address as *mut libc::c_void, len) };
    debug_assert_eq!(result, 0, "munmap of our own mapping");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_ranges_are_read_from_smaps() {
        let smaps = "7f00000000-7f00200000 rw-p 00000000 00:00 0 \n\
                     Size:               2048 kB\n\
                     VmFlags: rd wr mr mw me ac hg \n\
                     7f00200000-7f00400000 rw-p 00000000 00:00 0 \n\
                     AnonHugePages:         0 kB\n\
                     VmFlags: rd wr mr mw me nh \n\
                     55aa000000-55aa001000 r-xp 00001000 fe:01 42   /usr/bin/x\n\
                     VmFlags: rd ex mr mw me hg \n";
        assert_eq!(
            advised_ranges(smaps),
            vec![
                (0x7f_0000_0000, 0x7f_0020_0000),
                (0x55_aa00_0000, 0x55_aa00_1000)
            ]
        );
    }

    #[test]
    fn runs_are_found_in_the_free_granules() {
        assert_eq!(free_run(0, 32), Some(0));
        assert_eq!(free_run(1, 31), Some(1));
        assert_eq!(free_run(1, 32), None);
        assert_eq!(free_run(0b1011, 1), Some(2));
        assert_eq!(free_run(0b1011, 2), Some(4));
        assert_eq!(free_run(u32::MAX, 1), None);
        assert_eq!(free_run(0x8000_0000, 31), Some(0));
        assert_eq!(run_mask(0, 32), u32::MAX);
        assert_eq!(run_mask(3, 2), 0b11000);
        assert_eq!(footprint(FROM_BYTES), GRANULE_BYTES);
        assert_eq!(footprint(1_064_960), 17 * GRANULE_BYTES);
        assert_eq!(footprint(PAGE_BYTES + 1), 2 * PAGE_BYTES);
    }

    #[test]
    fn buffers_share_pages_without_overlapping_and_come_back() {
        // Other tests allocate from the same pages concurrently, so this checks only what it
        // holds itself.
        let sizes = [
            FROM_BYTES,
            1_064_960,
            300_000,
            PAGE_BYTES,
            5 << 20,
            128 << 10,
        ];
        let held: Vec<(NonNull<u8>, usize)> = sizes
            .iter()
            .map(|&len| (allocate(len).expect("mapping"), len))
            .collect();
        for (index, &(pointer, len)) in held.iter().enumerate() {
            assert_eq!(pointer.as_ptr() as usize % 4096, 0);
            if len >= PAGE_BYTES {
                assert_eq!(pointer.as_ptr() as usize % PAGE_BYTES, 0);
            } else {
                let start = pointer.as_ptr() as usize;
                let page = start & !(PAGE_BYTES - 1);
                assert!(start + len <= page + PAGE_BYTES, "within one page");
            }
            // SAFETY: the buffer is `len` bytes of our mapping, ours alone.
            unsafe { pointer.as_ptr().write_bytes(index as u8 + 1, len) };
        }
        for (index, &(pointer, len)) in held.iter().enumerate() {
            // SAFETY: as above; nobody else wrote it if the buffers do not overlap.
            let bytes = unsafe { std::slice::from_raw_parts(pointer.as_ptr(), len) };
            assert!(
                bytes.iter().all(|&b| b == index as u8 + 1),
                "buffer {index}"
            );
        }
        let before = stats();
        assert!(before.in_use >= sizes.iter().map(|&len| footprint(len) as u64).sum::<u64>());
        assert!(before.mapped >= before.in_use);
        for (pointer, len) in held {
            // SAFETY: from `allocate(len)` above, used no more.
            unsafe { release(pointer, len) };
        }
    }
}
