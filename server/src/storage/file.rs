//! One segment file (`.log` or `.index`) opened for direct I/O through io_uring.
//!
//! Writes go to block-aligned file positions from aligned buffers and always cover whole
//! blocks; the caller tracks the logical length. Space is preallocated with `fallocate` ahead of
//! the writes, because on ext4 an O_DIRECT write that extends the file is partly handed to
//! io_uring's kernel worker threads (stealing another shard's core). Preallocated blocks are
//! unwritten extents: the first write into each still goes to a worker (measured: 799 of 3000
//! one-message writes, bench/README "The read path and small batches re-measured"); a rewrite
//! of a block already written completes inline. Initialising the blocks ahead did not make small
//! writes faster (bench/README "Small batches: two hypotheses tested"), so they stay unwritten.
//! If the filesystem refuses O_DIRECT (tmpfs, some network filesystems) the file is opened
//! buffered instead and one warning says so.

use super::error::{IoOperation, StorageError};
use super::fault::{self, FaultPoint};
use super::pool::{AlignedBuf, BLOCK_SIZE, PooledBuf, align_down, align_up};
use bytes::Bytes;
use compio::BufResult;
use compio::buf::{IntoInner, IoBuf};
use compio::fs::{File, OpenOptions};
use compio::io::{AsyncReadAt, AsyncWriteAt};
use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(test)]
thread_local! {
    /// Unit tests make this thread's opens behave like a filesystem without O_DIRECT (tmpfs
    /// accepts O_DIRECT since Linux 6.6, so it no longer exercises the fallback).
    pub(crate) static REFUSE_DIRECT_IO: Cell<bool> = const { Cell::new(false) };
    /// Fault injection: the log write after this many more succeeds fails with EIO.
    pub(crate) static FAIL_LOG_WRITE_AFTER: Cell<Option<u32>> = const { Cell::new(None) };
    /// Fault injection: the fdatasync after this many more succeeds fails with EIO.
    pub(crate) static FAIL_SYNC_AFTER: Cell<Option<u32>> = const { Cell::new(None) };
}

#[cfg(test)]
fn count_down(countdown: &Cell<Option<u32>>) -> bool {
    match countdown.get() {
        Some(0) => {
            countdown.set(None);
            true
        }
        Some(remaining) => {
            countdown.set(Some(remaining - 1));
            false
        }
        None => false,
    }
}

/// Whether unit-test fault injection makes this fdatasync fail (always false outside them).
fn injected_sync_failure() -> bool {
    #[cfg(test)]
    {
        FAIL_SYNC_AFTER.with(count_down)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Whether fault injection makes this write fail (always false outside unit tests).
fn injected_write_failure() -> bool {
    #[cfg(test)]
    {
        FAIL_LOG_WRITE_AFTER.with(count_down)
    }
    #[cfg(not(test))]
    {
        false
    }
}

fn refuse_direct_io_for_tests() -> bool {
    #[cfg(test)]
    {
        REFUSE_DIRECT_IO.with(Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Whether the buffered fallback has been announced (tests check it).
#[cfg(test)]
pub(crate) fn buffered_fallback_warned() -> bool {
    BUFFERED_FALLBACK_WARNED.load(Ordering::Relaxed)
}

/// Set once the buffered fallback has been announced, so the log says it once per process.
static BUFFERED_FALLBACK_WARNED: AtomicBool = AtomicBool::new(false);

/// A `.log` or `.index` file.
pub(crate) struct DirectFile {
    file: File,
    path: PathBuf,
    direct: bool,
    /// File size guaranteed by `fallocate` (or by the data already in the file).
    allocated_bytes: Cell<u64>,
    fallocate_supported: Cell<bool>,
}

impl DirectFile {
    /// Opens (and with `create`, creates and truncates) a segment file for reading and writing.
    pub(crate) async fn open(path: &Path, create: bool) -> Result<Self, StorageError> {
        let operation = if create {
            IoOperation::Create
        } else {
            IoOperation::Open
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if create {
            options.create(true).truncate(true);
        }
        let direct = if refuse_direct_io_for_tests() {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else {
            options
                .clone()
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .await
        };
        let (file, direct) = match direct {
            Ok(file) if direct_io_alignment_is_supported(&file) => (file, true),
            Ok(_) => {
                warn_buffered_fallback(path, "the device needs a direct-I/O alignment above 4096");
                (open_buffered(&options, path, operation).await?, false)
            }
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {
                warn_buffered_fallback(path, "the filesystem refuses O_DIRECT");
                (open_buffered(&options, path, operation).await?, false)
            }
            Err(error) => return Err(StorageError::io(operation, path, error)),
        };
        let file = DirectFile {
            file,
            path: path.to_path_buf(),
            direct,
            allocated_bytes: Cell::new(0),
            fallocate_supported: Cell::new(true),
        };
        let size = file.size().await?;
        file.allocated_bytes.set(size);
        Ok(file)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether writes bypass the page cache.
    pub(crate) fn is_direct(&self) -> bool {
        self.direct
    }

    pub(crate) async fn size(&self) -> Result<u64, StorageError> {
        let metadata = self
            .file
            .metadata()
            .await
            .map_err(|error| StorageError::io(IoOperation::Read, &self.path, error))?;
        Ok(metadata.len())
    }

    /// Makes sure the file is allocated up to `end`, growing by steps that double with the
    /// file (from one block-aligned chunk of 256 KiB up to `max_chunk_bytes`), never past
    /// `soft_limit_bytes` unless `end` itself is beyond it.
    ///
    /// `fallocate` is called synchronously: it only reserves extents (tens of microseconds even
    /// for 64 MiB on ext4), and through io_uring it would run on a kernel worker thread anyway.
    pub(crate) fn preallocate(
        &self,
        end: u64,
        max_chunk_bytes: u64,
        soft_limit_bytes: u64,
    ) -> Result<(), StorageError> {
        let allocated = self.allocated_bytes.get();
        if end <= allocated || !self.fallocate_supported.get() {
            return Ok(());
        }
        let max_step = max_chunk_bytes.max(BLOCK_SIZE as u64);
        let step = allocated.clamp((256 * 1024).min(max_step), max_step);
        let target = align_up((allocated + step).min(align_up(soft_limit_bytes)).max(end));
        let length = i64::try_from(target).expect("segment sizes fit in i64");
        if let Some(error) = fault::injected(FaultPoint::Write, &self.path) {
            return Err(StorageError::io(IoOperation::Write, &self.path, error));
        }
        // SAFETY: plain syscall on a descriptor we own.
        let result = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, 0, length) };
        if result == 0 {
            self.allocated_bytes.set(target);
            return Ok(());
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            // The filesystem cannot preallocate: writes extend the file instead (slower, still
            // correct).
            Some(libc::EOPNOTSUPP) => {
                tracing::debug!(path = %self.path.display(), "fallocate unsupported; not preallocating");
                self.fallocate_supported.set(false);
                Ok(())
            }
            _ => Err(StorageError::io(IoOperation::Write, &self.path, error)),
        }
    }

    /// Makes sure the file is allocated (and sized) up to `len` bytes at once, where the
    /// filesystem can reserve space; elsewhere writes allocate it.
    pub(crate) fn allocate(&self, len: u64) -> Result<(), StorageError> {
        self.preallocate(len, len.max(BLOCK_SIZE as u64), len)
    }

    /// Writes `buffers` back to back at `position`; all but the last must be whole blocks and
    /// the last must be padded to a block (checked). One vectored write per 512 buffers.
    pub(crate) async fn write_all_vectored(
        &self,
        mut buffers: Vec<PooledBuf>,
        position: u64,
    ) -> (Result<(), StorageError>, Vec<PooledBuf>) {
        assert_eq!(position % BLOCK_SIZE as u64, 0, "unaligned write position");
        assert!(
            buffers.iter().all(|buf| buf.len() % BLOCK_SIZE == 0),
            "write buffers must be whole blocks"
        );
        const MAX_IOVECS_PER_WRITE: usize = 512;
        if buffers.len() <= MAX_IOVECS_PER_WRITE {
            return self.write_group(buffers, position).await;
        }
        // Rare (a round larger than 512 buffers): write in groups, one after the other.
        let mut written = Vec::with_capacity(buffers.len());
        let mut position = position;
        while !buffers.is_empty() {
            let rest = buffers.split_off(buffers.len().min(MAX_IOVECS_PER_WRITE));
            let group_len: u64 = buffers.iter().map(|buf| buf.len() as u64).sum();
            let (result, group) = self.write_group(buffers, position).await;
            written.extend(group);
            if let Err(error) = result {
                written.extend(rest);
                return (Err(error), written);
            }
            position += group_len;
            buffers = rest;
        }
        (Ok(()), written)
    }

    async fn write_group(
        &self,
        buffers: Vec<PooledBuf>,
        position: u64,
    ) -> (Result<(), StorageError>, Vec<PooledBuf>) {
        let total: usize = buffers.iter().map(|buf| buf.len()).sum();
        let injected = if injected_write_failure() {
            Some(io::Error::from_raw_os_error(libc::EIO))
        } else {
            fault::injected(FaultPoint::Write, &self.path)
        };
        if let Some(error) = injected {
            return (
                Err(StorageError::io(IoOperation::Write, &self.path, error)),
                buffers,
            );
        }
        let mut file = &self.file;
        let BufResult(result, mut buffers) = file.write_vectored_at(buffers, position).await;
        let written = match result {
            Ok(written) => written,
            Err(error) => {
                return (
                    Err(StorageError::io(IoOperation::Write, &self.path, error)),
                    buffers,
                );
            }
        };
        if written == total {
            return (Ok(()), buffers);
        }
        // A short write: finish buffer by buffer. Direct I/O only stops at block boundaries.
        let mut skip = written;
        let mut at = position + written as u64;
        let mut result = Ok(());
        for slot in buffers.iter_mut() {
            let len = slot.len();
            if skip >= len {
                skip -= len;
                continue;
            }
            let placeholder = slot.pool().acquire(0);
            let buf = std::mem::replace(slot, placeholder);
            let (outcome, buf) = self.write_all_at(buf, skip, at).await;
            *slot = buf;
            at += (len - skip) as u64;
            skip = 0;
            if let Err(error) = outcome {
                result = Err(error);
                break;
            }
        }
        (result, buffers)
    }

    /// Writes `buf[from..]` at `position`, retrying short writes.
    pub(crate) async fn write_all_at(
        &self,
        buf: PooledBuf,
        from: usize,
        position: u64,
    ) -> (Result<(), StorageError>, PooledBuf) {
        if let Some(error) = fault::injected(FaultPoint::Write, &self.path) {
            return (
                Err(StorageError::io(IoOperation::Write, &self.path, error)),
                buf,
            );
        }
        let mut file = &self.file;
        let mut done = from;
        let mut buf = buf;
        let end = buf.len();
        while done < end {
            let BufResult(result, slice) = file
                .write_at(buf.slice(done..end), position + (done - from) as u64)
                .await;
            buf = slice.into_inner();
            match result {
                Ok(0) => {
                    let error = io::Error::new(io::ErrorKind::WriteZero, "write returned 0");
                    return (
                        Err(StorageError::io(IoOperation::Write, &self.path, error)),
                        buf,
                    );
                }
                Ok(n) => done += n,
                Err(error) => {
                    return (
                        Err(StorageError::io(IoOperation::Write, &self.path, error)),
                        buf,
                    );
                }
            }
        }
        (Ok(()), buf)
    }

    /// Reads `[start, end)` with aligned transfers into a fresh aligned buffer and returns the
    /// bytes as `Bytes` without copying. Fails if the file ends before `end`.
    pub(crate) async fn read_range(&self, start: u64, end: u64) -> Result<Bytes, StorageError> {
        assert!(start <= end);
        if start == end {
            return Ok(Bytes::new());
        }
        let aligned_start = align_down(start);
        let aligned_end = align_up(end);
        let buf = AlignedBuf::for_read((aligned_end - aligned_start) as usize);
        let (result, buf) = self.read_into(buf, aligned_start).await;
        let filled = result?;
        let head = (start - aligned_start) as usize;
        let len = (end - start) as usize;
        if filled < head + len {
            let error = io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("file ends before byte {end}"),
            );
            return Err(StorageError::io(IoOperation::Read, &self.path, error));
        }
        Ok(Bytes::slice(&Bytes::from_owner(buf), head..head + len))
    }

    /// Fills `buf` from the aligned `position` up to its capacity or the end of the file.
    /// Returns how many bytes were read.
    pub(crate) async fn read_into(
        &self,
        mut buf: AlignedBuf,
        position: u64,
    ) -> (Result<usize, StorageError>, AlignedBuf) {
        assert_eq!(position % BLOCK_SIZE as u64, 0, "unaligned read position");
        buf.clear();
        let capacity = buf.capacity();
        while buf.len() < capacity {
            let filled = buf.len();
            let BufResult(result, slice) = self
                .file
                .read_at(buf.slice(filled..), position + filled as u64)
                .await;
            buf = slice.into_inner();
            match result {
                Ok(0) => break,
                // Direct reads return whole blocks except at the end of the file.
                Ok(_) if !buf.len().is_multiple_of(BLOCK_SIZE) => break,
                Ok(_) => {}
                Err(error) => {
                    return (
                        Err(StorageError::io(IoOperation::Read, &self.path, error)),
                        buf,
                    );
                }
            }
        }
        let filled = buf.len();
        (Ok(filled), buf)
    }

    /// Cuts (or extends) the file to `len` bytes.
    pub(crate) async fn truncate(&self, len: u64) -> Result<(), StorageError> {
        self.file
            .set_len(len)
            .await
            .map_err(|error| StorageError::io(IoOperation::Truncate, &self.path, error))?;
        self.allocated_bytes.set(len);
        Ok(())
    }

    /// fdatasync: the data and the metadata needed to read it (size, extents).
    pub(crate) async fn sync_data(&self) -> Result<(), StorageError> {
        if injected_sync_failure() {
            let error = io::Error::from_raw_os_error(libc::EIO);
            return Err(StorageError::io(IoOperation::Sync, &self.path, error));
        }
        if let Some(error) = fault::injected(FaultPoint::Sync, &self.path) {
            return Err(StorageError::io(IoOperation::Sync, &self.path, error));
        }
        self.file
            .sync_data()
            .await
            .map_err(|error| StorageError::io(IoOperation::Sync, &self.path, error))
    }

    /// fsync.
    pub(crate) async fn sync_all(&self) -> Result<(), StorageError> {
        if let Some(error) = fault::injected(FaultPoint::Sync, &self.path) {
            return Err(StorageError::io(IoOperation::Sync, &self.path, error));
        }
        self.file
            .sync_all()
            .await
            .map_err(|error| StorageError::io(IoOperation::Sync, &self.path, error))
    }
}

async fn open_buffered(
    options: &OpenOptions,
    path: &Path,
    operation: IoOperation,
) -> Result<File, StorageError> {
    options
        .open(path)
        .await
        .map_err(|error| StorageError::io(operation, path, error))
}

fn warn_buffered_fallback(path: &Path, why: &str) {
    if !BUFFERED_FALLBACK_WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            path = %path.display(),
            "O_DIRECT is not available ({why}); segment files fall back to buffered writes \
             through the page cache, which costs a kernel worker thread's CPU and weakens \
             the `written` ack mode to \"in the page cache\". Put the data directory on a \
             filesystem that supports O_DIRECT (ext4, xfs)."
        );
    } else {
        tracing::debug!(path = %path.display(), "buffered fallback ({why})");
    }
}

/// Whether 4096-byte alignment satisfies the file's direct-I/O requirements, asked with
/// `statx(STATX_DIOALIGN)`. Kernels or filesystems that do not report it are assumed fine (a
/// misaligned write would then fail loudly with EINVAL, never silently).
fn direct_io_alignment_is_supported(file: &File) -> bool {
    // SAFETY: statx writes into the zeroed struct we pass; the path is empty with
    // AT_EMPTY_PATH, so it describes the descriptor itself.
    let mut stat: libc::statx = unsafe { std::mem::zeroed() };
    let result = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stat,
        )
    };
    if result != 0 || stat.stx_mask & libc::STATX_DIOALIGN == 0 {
        return true;
    }
    let offset_align = stat.stx_dio_offset_align as usize;
    let memory_align = stat.stx_dio_mem_align as usize;
    offset_align != 0
        && offset_align <= BLOCK_SIZE
        && memory_align <= BLOCK_SIZE
        && BLOCK_SIZE.is_multiple_of(offset_align)
}

/// fsyncs a directory so that files created or removed in it stay so after a power loss.
pub(crate) async fn sync_directory(path: &Path) -> Result<(), StorageError> {
    if let Some(error) = fault::injected(FaultPoint::Sync, path) {
        return Err(StorageError::io(IoOperation::Sync, path, error));
    }
    let directory = File::open(path)
        .await
        .map_err(|error| StorageError::io(IoOperation::Directory, path, error))?;
    directory
        .sync_all()
        .await
        .map_err(|error| StorageError::io(IoOperation::Sync, path, error))
}
