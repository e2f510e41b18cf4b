//! The storage engine: one segmented log per partition, written with O_DIRECT through io_uring
//! from pooled aligned buffers, with crash recovery.
//!
//! # Bird's-eye view
//!
//! A [`Partition`] is owned by one shard and used through `Rc<Partition>`; every method takes
//! `&self`. It runs inside that shard's single-threaded compio runtime: no locks, state in one
//! `RefCell` that is never borrowed across an `.await`. Appends do their CPU work synchronously
//! (assign offsets, stamp, index, copy into aligned staging buffers) and then wait on a
//! watermark; one writer task per partition does every file write, fsync, truncation and file
//! creation; reads plan under a short borrow and then do their own I/O. So an append never
//! waits for another partition, a read never waits for any append's I/O, and appends that
//! arrive while a write is in flight share the next one.
//!
//! | file | what |
//! |---|---|
//! | `partition/` | `Partition` (`mod.rs`: the type, figures, flush): `state` (segments, staging, watermarks), `lifecycle` (create, open and recovery, close, reopen after a failure, delete), `append` (stamping, staging, backpressure, rotation), `writer` (the writer task: rounds, group commit, sealing, shutdown), `read` (read planning and aligned reads, checksum verification, offsets by timestamp), `scan` (the opt-in boot-time checksum scan), `retention` (oldest segments, purge, expiry), `outcome` (what operations report) |
//! | `segment.rs` | segment file names, the clean-shutdown marker, open-time checks and crash recovery |
//! | `file.rs` | one O_DIRECT segment file: preallocation, aligned vectored writes, aligned reads, buffered fallback |
//! | `index.rs` | the 16-byte index entry and the in-memory index of unsealed segments |
//! | `pool.rs` | `AlignedBuf`, `BufferPool` (per shard, power-of-two classes 4 KiB..=64 MiB, and the shard's read cache), `PooledBuf` |
//! | `cache.rs` | `ReadCache`: the shard's budget for written batches kept for reads, eviction order, counters |
//! | `config.rs` | `AckMode`, `ChecksumReads`, `PartitionConfig` and limits |
//! | `error.rs` | `StorageError` and its wire status code |
//! | `fault.rs` | fault injection for tests of the real binary (`RILL_STORAGE_FAULT_FILE`, with the `fault-injection` feature only) |
//! | `wait.rs` | single-threaded wait lists and a two-future join |
//! | `wal/` | the shard's write-ahead log for `written` mode (`mod.rs`: the ring, group commit across partitions, space), `record` (the record format), `recovery` (the boot scan and reading records back), `incarnation` (`wal_id`) |
//!
//! # On-disk layout
//!
//! The caller gives each partition a directory
//! (`<data>/streams/<stream>/topics/<topic>/partitions/<partition>/`). In it:
//!
//! ```text
//! 00000000000000000000.log     segment starting at offset 0 (20-digit zero-padded start offset)
//! 00000000000000000000.index
//! 00000000000000001000.log     next segment, starting at offset 1000
//! 00000000000000001000.index
//! clean_shutdown               only between a clean close and the next open (see below)
//! wal_id                       this log's incarnation: 8 random bytes and their XXH3-64 (see
//!                              `wal/incarnation.rs`), named by every write-ahead log record
//! ```
//! Beside the partitions, `<data>/wal/shard-<n>.wal` is shard n's write-ahead log (a ring of
//! block-aligned records, format in `wal/record.rs`); `shard-<n>.kept-<nanoseconds>-<attempt>.wal`
//! is one set aside because a partition could not be opened at that start.
//! Anything else in the directory (the server's `offsets/`) is left alone, except by
//! [`Partition::delete`], which removes the directory.
//!
//! ## `.log`: messages back to back, exactly as on the wire (protocol.md section 6)
//!
//! No file header, no per-batch header, no padding between messages: a poll is answered by
//! slicing stored bytes. All integers little-endian.
//!
//! ```text
//! offset size field
//!      0    8 checksum            u64  XXH3-64 (seed 0) of bytes 8..end of this message
//!      8   16 id                  u128 client's id, or a random non-zero id if it sent 0
//!     24    8 offset              u64  absolute partition offset (dense, +1 per message)
//!     32    8 timestamp           u64  server time in µs, one value per batch, never decreasing
//!     40    8 origin_timestamp    u64  client's, stored verbatim
//!     48    4 user_headers_length u32
//!     52    4 payload_length      u32
//!     56    8 reserved            u64  0
//!     64    payload_length bytes of payload
//!      …    user_headers_length bytes of user headers
//! ```
//! While a segment is active its file is preallocated beyond the data (zeros), so the file
//! size is not the log's length; sealing and a clean close truncate it to the logical length.
//!
//! ## `.index`: 16 bytes per message, no file header
//!
//! ```text
//! offset size field
//!      0    4 relative_offset u32  message offset - segment start offset (= entry number)
//!      4    4 end_position    u32  byte position in the .log just after the message
//!      8    8 timestamp       u64  the message's server timestamp, µs
//! ```
//! Message `i` occupies `[end_position(i-1), end_position(i))`, with `end_position(-1) = 0`.
//! Positions are u32, so a segment (at most 1 GiB, plus one batch of at most 1 GiB) stays
//! below 4 GiB. Timestamp lookups binary-search this file (one 4 KiB page per probe).
//!
//! ## `clean_shutdown`: 24 bytes
//!
//! ```text
//! offset size field
//!      0    8 start offset of the active segment  u64 LE
//!      8    8 logical length of its .log          u64 LE
//!     16    8 number of its messages              u64 LE
//! ```
//! Written and fsynced by [`Partition::close`] after the files are truncated and synced;
//! removed by [`Partition::open`] before anything can be written.
//!
//! # Write path
//!
//! 1. `append` stamps the batch in place (offsets, one timestamp clamped to be non-decreasing,
//!    random ids for id 0, checksums), pushes one index entry per message into the in-memory
//!    index, and copies the bytes into staging buffers: pooled, 4 KiB-aligned, each covering
//!    the file from a block boundary. A new staging buffer begins with the partial last block
//!    already written (the *tail block*), so every write covers whole blocks and the rewritten
//!    prefix is byte-identical: a torn rewrite cannot damage acknowledged bytes. Buffers grow
//!    geometrically (64 KiB up to `write_buffer_bytes`) and fill completely before the next
//!    one starts, so only the last one of a round ends mid-block (zero-padded).
//! 2. The writer takes all staged buffers of the oldest segment (a *round*), preallocates the
//!    files ahead (`fallocate`, growing in doubling steps up to `preallocate_chunk_bytes`: on
//!    ext4 an O_DIRECT write that extends a file is partly handed to io_uring worker threads,
//!    which steal another shard's core; the first write into a preallocated block is still
//!    handed to them, a rewrite of a written block completes inline),
//!    and issues, concurrently, one vectored O_DIRECT write of the buffers and, in fsync mode,
//!    the fdatasync of the previous round. Rounds of one partition are sequential (each
//!    rewrites the previous round's tail block); partitions are independent. The index
//!    entries of an unsealed segment stay in memory (reads use them there) and are written
//!    when the segment is sealed or the partition closed: writing them every round cost a
//!    second write and a second extent conversion per round, and after a crash recovery
//!    validates the whole active segment and rebuilds its index anyway.
//! 3. When a segment reaches `segment_size_bytes` an append rotates to a new segment first
//!    (a batch never spans segments). The writer creates the new files (and fsyncs the
//!    directory), writes the old segment's remaining data, then seals it: truncate both files
//!    to their logical lengths, fsync, drop the in-memory index. Sealed segments are
//!    immutable.
//! 4. If the filesystem refuses O_DIRECT (or needs an alignment above 4 KiB), files are opened
//!    buffered and one warning says so; the same code path then writes through the page cache.
//!
//! No allocation per write after warm-up: staging and index buffers come from the shard's
//! [`BufferPool`] and go back to it; the in-memory index grows in pooled 64 KiB chunks; the
//! vectors that carry buffers to the kernel are reused. (compio boxes each submitted
//! operation internally.)
//!
//! # Ack modes and the visibility watermark
//!
//! | mode | `append` returns when | readers see offsets below |
//! |---|---|---|
//! | `memory` | the batch is accepted; written when `memory_flush_messages` / `memory_flush_bytes` is crossed, on `flush`, or under backpressure | the accepted end |
//! | `written` (default) | its round's O_DIRECT write completed, to the segment files or, for a small round, to the shard's write-ahead log: survives a process crash | the end of completed writes, to either |
//! | `fsync` | an fdatasync that started after its write completed has finished | the end of durable data |
//!
//! A consumer is never shown a message that a crash (of the kind the mode protects against)
//! could take away, so nothing downstream runs ahead of the log. Group commit: appends that
//! arrive while a write or fsync is in flight are written together in the next round, and a
//! round's write runs concurrently with the previous round's fdatasync, so durable throughput
//! grows with concurrency. Appends wait (backpressure) while more than `max_unwritten_bytes`
//! are accepted but not written.
//!
//! **The write-ahead log** (`wal/`, `written` mode, off in a cluster): a round of at most
//! `max_record_bytes` is copied from the journal into one record of the shard's log instead of
//! being written to the segment file; the records of all the shard's partitions that ask while
//! the log's previous write is in flight go out in one vectored write, and the appends are
//! acknowledged when it completes (`logged_end`). The partition then keeps every batch not yet
//! in its segment files in its journal and writes the files as memory mode does (thresholds,
//! flush, the message saver, rotation, backpressure, close), and when the log, half full, asks.
//! A round the log refuses (too large, starting, full, off after an error) is written to the
//! segment files as before.
//!
//! # Reads
//!
//! By offset: the segment is found by binary search; unsealed segments have their index in
//! memory, sealed ones read the needed index entries from disk (one small aligned read), then
//! exactly the message bytes (one aligned O_DIRECT read into a fresh aligned buffer, returned
//! as `Bytes` without a copy). Bytes still in memory are sliced from the accepted batches the
//! partition keeps (its journal): those not yet written (memory mode, or waiting for their
//! round) and those the shard's read cache holds (`cache.rs`: written batches kept until the
//! shard's budget is used, then evicted oldest first across the shard's partitions). A read never passes the watermark, is cut at
//! `max_read_bytes` (but returns at least one message), spans segments, starts at the first
//! stored message when asked for an older offset, and checks that the bytes it read carry the
//! expected offsets. With `PartitionConfig::checksum_reads` (`Disk` by default) it also checks
//! every message's checksum (bytes from files, or all): a read ends before the first message that
//! fails, and fails with `ChecksumMismatch` when that is the first one asked for, so a flipped
//! bit is never served. By timestamp: the first visible message with a timestamp at or after the
//! given one (binary search of the index, in memory or page by page on disk).
//!
//! # Recovery (`open`)
//!
//! Segments are listed by name. Every non-last segment gets a cheap check (index is whole
//! entries, its last entry ends exactly at the end of the log, the last message validates);
//! a segment that fails it (for example one whose sealing a crash interrupted) is validated
//! in full. The last segment is trusted as it is only after a clean close (marker present and
//! files agreeing); otherwise every message in it is validated, because the blocks of a torn
//! direct write can land in any order. Validation checks header sanity, the expected offset,
//! a non-zero id (the server never stores id 0, so zero-filled space never passes), the
//! checksum, and non-decreasing timestamps. The log is truncated at the first invalid byte,
//! the index is rewritten from the first entry that disagrees (a missing index is rebuilt),
//! the repaired files are fsynced, and one log line reports what was cut
//! ([`RecoveryReport`]). Then the records the write-ahead logs held at boot for this directory
//! and incarnation ([`WalRecovery`], scanned before the shards start) give back what the
//! segments lack: each record's messages from the recovered end on are appended as a
//! replica's are (offsets must continue the log, checksums hold) and written and fsynced to the
//! segment files; a record that cannot follow (a gap, a failed check) is left, and the log takes
//! a new incarnation so it never applies. The result is always a prefix of what was appended,
//! containing everything that was acknowledged in `written` or `fsync` mode.
//!
//! # Retention, purge, deletion
//!
//! [`Partition::apply_retention`] deletes sealed segments whose newest message is older than
//! `message_expiry`, then the oldest sealed segments while the partition is larger than
//! `max_size_bytes`; [`Partition::delete_oldest_segments`] deletes the N oldest sealed ones.
//! The active segment is never deleted. [`Partition::purge`] removes every message; offsets
//! keep increasing from where they were (upstream Iggy restarts at 0 and clears consumer
//! offsets; we keep offsets monotonic so an offset never names two different messages, and
//! the server clears the consumer offsets it keeps). The server's PurgeStream/PurgeTopic do
//! not use it: for upstream compatibility they close the log, delete its files and create a
//! fresh one starting at offset 0 (`shard/partitions/`). Readers holding a deleted segment's
//! files finish on the unlinked inodes.
//!
//! # Write and sync failures
//!
//! A failed write, preallocation (ENOSPC), file creation, truncation or fsync stops the writer:
//! the appends waiting on it fail, later appends are refused, reads keep serving what the
//! watermark covers (it never moves past what was written, or in `fsync` mode synced).
//! [`Partition::reopen_after_failure`] then cuts the files back to the acknowledgement
//! watermark (in `written` mode the end of the segment files, after which the batches the
//! write-ahead log acknowledged are appended again from memory, written and fsynced, and the
//! log takes a new incarnation; in `fsync` mode the durable end: data a failed fsync should have covered is
//! never assumed durable, it is removed and its appends, which got an error, can be retried)
//! and opens the partition again from disk. The server calls it on the next append or flush
//! (`shard/partitions/`), so writes resume once the fault clears; while it persists the
//! reopen fails (the cut needs a truncate and an fsync) and appends get 4010.
//!
//! # Invariants
//!
//! * Only the writer task writes, truncates, syncs or creates segment files.
//! * Offsets within a segment are dense; the staged data of a segment is contiguous from a
//!   block boundary; a round covers all of its segment's accepted data.
//! * Bytes below a segment's written length never change (rewrites of the tail block are
//!   byte-identical); sealed segments never change.
//! * No `RefCell` borrow is held across an `.await`.
//! * A write-ahead log record is needed until its partition's segment files hold its messages;
//!   no log is written at boot before every partition has replayed its records; a record
//!   applies only to the log (directory and incarnation) that wrote it, and whatever lets a
//!   log's offsets name other messages (a cut, a reopen after a failure, a record left
//!   unapplied, a new log in the directory) first takes a new incarnation.

pub mod blocking;
mod cache;
mod config;
mod error;
mod fault;
mod file;
pub mod huge_pages;
mod index;
mod partition;
mod pool;
mod read_ahead;
mod segment;
mod wait;
pub mod wal;

pub use cache::{CacheBudget, CacheStats, ReadCache};
pub use config::{
    AckMode, ChecksumReads, MAX_BATCH_BYTES, MAX_SEGMENT_SIZE_BYTES, PartitionConfig,
};
pub use error::{IoOperation, StorageError};
pub use fault::FAULT_FILE_ENV;
pub use index::{INDEX_ENTRY_SIZE, IndexEntry};
pub use partition::{
    AppendOutcome, ChecksumScan, Mismatch, Partition, PartitionStats, ReadOutcome, RecoveryReport,
    RetentionOutcome, random_message_id,
};
pub use pool::{
    AlignedBuf, BLOCK_SIZE, BufferPool, MAX_CLASS_BYTES, MIN_CLASS_BYTES, PoolStats, PooledBuf,
};
pub use read_ahead::ReadAheadStats;
pub(crate) use wait::WaitList;
pub use wal::{Wal, WalConfig, WalLink, WalRecovery, WalStats};

#[cfg(test)]
mod tests;
