//! The series `/metrics` shows, as tables (name, kind, help, value). `encode.rs` writes them out.

use super::super::{ShardSnapshot, TransportSnapshot};
use super::{PartitionActivity, ProcessFigures, RingCounters, ShardStorage};

/// Counter or gauge.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Counter,
    Gauge,
}

/// One series family: its name, kind, help text, and how to read its value from `T`.
pub(super) struct Series<T: ?Sized, V = u64> {
    pub(super) name: &'static str,
    pub(super) kind: Kind,
    pub(super) help: &'static str,
    pub(super) value: fn(&T) -> V,
}

const fn counter_of<T: ?Sized>(
    name: &'static str,
    help: &'static str,
    value: fn(&T) -> u64,
) -> Series<T> {
    Series {
        name,
        kind: Kind::Counter,
        help,
        value,
    }
}

const fn gauge_of<T: ?Sized>(
    name: &'static str,
    help: &'static str,
    value: fn(&T) -> u64,
) -> Series<T> {
    Series {
        name,
        kind: Kind::Gauge,
        help,
        value,
    }
}

/// Per shard and transport (`shard`, `transport` labels).
pub(super) const TRANSPORT_SERIES: &[Series<TransportSnapshot>] = &[
    gauge_of(
        "iggy_connections",
        "Open client connections, by shard and transport.",
        |t| t.connections,
    ),
    counter_of(
        "iggy_connections_accepted",
        "Client connections accepted, by shard and transport.",
        |t| t.accepted,
    ),
    counter_of(
        "iggy_received_bytes",
        "Request bytes received (frame headers included), by shard and transport.",
        |t| t.received_bytes,
    ),
    counter_of(
        "iggy_sent_bytes",
        "Response bytes sent (frame headers included), by shard and transport.",
        |t| t.sent_bytes,
    ),
];

/// Per shard (`shard` label).
pub(super) const SHARD_SERIES: &[Series<ShardSnapshot>] = &[
    counter_of(
        "iggy_messages_in",
        "Messages accepted by SendMessages, by the shard that received the request.",
        |s| s.messages_in,
    ),
    counter_of(
        "iggy_messages_in_bytes",
        "Stored size of the messages accepted by SendMessages (64-byte headers included).",
        |s| s.messages_in_bytes,
    ),
    counter_of(
        "iggy_messages_out",
        "Messages returned by PollMessages, by the shard that received the request.",
        |s| s.messages_out,
    ),
    counter_of(
        "iggy_messages_out_bytes",
        "Stored size of the messages returned by PollMessages.",
        |s| s.messages_out_bytes,
    ),
    counter_of(
        "iggy_appends",
        "Appends executed on the partitions a shard owns.",
        |s| s.appends,
    ),
    counter_of(
        "iggy_appended_messages",
        "Messages appended to the partitions a shard owns.",
        |s| s.appended_messages,
    ),
    counter_of(
        "iggy_deduplicated_messages",
        "Messages dropped as duplicates of an id the partition received lately ([system.message_deduplication]), on the partitions a shard owns.",
        |s| s.deduplicated_messages,
    ),
    counter_of(
        "iggy_checksum_mismatches",
        "Stored messages that did not match their checksum ([system.partition] verify_checksums_on_read and verify_checksums_at_boot): refused polls and messages found by the boot scan, on the partitions a shard owns.",
        |s| s.checksum_mismatches,
    ),
    counter_of(
        "iggy_polls",
        "Polls executed on the partitions a shard owns.",
        |s| s.polls,
    ),
    counter_of(
        "iggy_polled_messages",
        "Messages read by polls from the partitions a shard owns.",
        |s| s.polled_messages,
    ),
    counter_of(
        "iggy_storage_written_bytes",
        "Message bytes written by the storage's write rounds, by owning shard.",
        |s| s.written_bytes,
    ),
    counter_of(
        "iggy_storage_syncs",
        "fdatasync rounds issued by the storage (fsync ack mode, flushes with fsync, seals excluded).",
        |s| s.syncs,
    ),
    gauge_of(
        "iggy_buffer_pool_allocated_bytes",
        "Aligned buffer memory a shard's pool owns (cached and in use); published every second.",
        |s| s.pool_allocated_bytes,
    ),
    gauge_of(
        "iggy_buffer_pool_in_use_bytes",
        "Aligned buffer memory handed out by a shard's pool; published every second.",
        |s| s.pool_in_use_bytes,
    ),
    counter_of(
        "iggy_buffer_pool_misses",
        "Buffer acquisitions that found no cached buffer and allocated; published every second.",
        |s| s.pool_misses,
    ),
    gauge_of(
        "iggy_read_cache_budget_bytes",
        "A shard's guaranteed share of [system.read_cache] size (a shard may hold more while the shards together stay within the size).",
        |s| s.read_cache_budget_bytes,
    ),
    gauge_of(
        "iggy_read_cache_held_bytes",
        "Written message bytes a shard's read cache holds; published every second.",
        |s| s.read_cache_held_bytes,
    ),
    counter_of(
        "iggy_read_cache_hits",
        "Pieces of reads answered from memory (the read cache, or batches not written yet); published every second.",
        |s| s.read_cache_hits,
    ),
    counter_of(
        "iggy_read_cache_misses",
        "Pieces of reads that went to the segment files; published every second.",
        |s| s.read_cache_misses,
    ),
    counter_of(
        "iggy_read_cache_evictions",
        "Batches the read cache dropped to stay within its budget (oldest first); published every second.",
        |s| s.read_cache_evictions,
    ),
    gauge_of(
        "iggy_read_ahead_budget_bytes",
        "A shard's share of [system.read_cache] read_ahead: memory for polls read from the segment files before they are asked for.",
        |s| s.read_ahead_budget_bytes,
    ),
    gauge_of(
        "iggy_read_ahead_held_bytes",
        "Bytes a shard's reads ahead hold (in flight or waiting for their poll); published every second.",
        |s| s.read_ahead_held_bytes,
    ),
    counter_of(
        "iggy_read_ahead_started",
        "Reads of a consumer's next poll started while its previous poll, read from the segment files, was answered; published every second.",
        |s| s.read_ahead_started,
    ),
    counter_of(
        "iggy_read_ahead_hits",
        "Polls answered by a read ahead; published every second.",
        |s| s.read_ahead_hits,
    ),
    counter_of(
        "iggy_read_ahead_wasted",
        "Reads ahead dropped without answering a poll (the consumer asked for other messages, went away, or the budget needed the room); published every second.",
        |s| s.read_ahead_wasted,
    ),
    counter_of(
        "iggy_wal_writes",
        "Writes of a shard's write-ahead log ([system.wal]), each carrying the records of one or more partitions; published every second.",
        |s| s.wal_writes,
    ),
    counter_of(
        "iggy_wal_records",
        "Rounds of `written` appends acknowledged from a shard's write-ahead log; published every second.",
        |s| s.wal_records,
    ),
    counter_of(
        "iggy_wal_bytes",
        "Bytes written to a shard's write-ahead log (records padded to 4 KiB blocks); published every second.",
        |s| s.wal_bytes,
    ),
    counter_of(
        "iggy_wal_refused",
        "Records a shard's write-ahead log refused (full, starting or off): their rounds went to the segment files; published every second.",
        |s| s.wal_refused,
    ),
    gauge_of(
        "iggy_wal_used_bytes",
        "Bytes of a shard's write-ahead log still needed (records whose messages are not in their segment files yet); published every second.",
        |s| s.wal_used_bytes,
    ),
    counter_of(
        "iggy_shard_inbox_messages",
        "Messages delivered by a shard's inbox (operations forwarded by other shards, partition opens and closes).",
        |s| s.inbox_messages,
    ),
    counter_of(
        "iggy_shard_connections_moved",
        "TCP connections a shard handed over to the shard owning the partitions they use.",
        |s| s.connections_moved,
    ),
];

/// Per shard's io_uring (`shard` label), where the kernel reports its counters.
pub(super) const RING_SERIES: &[Series<RingCounters>] = &[
    counter_of(
        "iggy_io_uring_submissions",
        "Submission queue entries consumed by the kernel on a shard's io_uring (SqHead in /proc fdinfo).",
        |r| r.submissions,
    ),
    counter_of(
        "iggy_io_uring_completions",
        "Completion queue entries posted by the kernel on a shard's io_uring (CqTail in /proc fdinfo).",
        |r| r.completions,
    ),
];

/// Per owning shard, from the shards table (`shard` label).
pub(super) const STORAGE_SERIES: &[Series<ShardStorage>] = &[
    gauge_of("iggy_partitions", "Partitions, by owning shard.", |s| {
        s.partitions
    }),
    gauge_of(
        "iggy_segments",
        "Segments of the partitions a shard owns.",
        |s| s.segments,
    ),
    gauge_of(
        "iggy_stored_messages",
        "Messages stored in the partitions a shard owns.",
        |s| s.messages,
    ),
    gauge_of(
        "iggy_stored_bytes",
        "Bytes of messages stored in the partitions a shard owns.",
        |s| s.size_bytes,
    ),
];

/// Per partition, for the most active ones (`stream_id`, `topic_id`, `partition_id` labels).
pub(super) const PARTITION_SERIES: &[Series<PartitionActivity>] = &[
    counter_of(
        "iggy_partition_appends",
        "Appends to each of the most active partitions (http.metrics_top_partitions; others are in iggy_appends).",
        |p| p.appends,
    ),
    counter_of(
        "iggy_partition_appended_messages",
        "Messages appended to each of the most active partitions.",
        |p| p.appended_messages,
    ),
    counter_of(
        "iggy_partition_deduplicated_messages",
        "Messages dropped as duplicates by each of the most active partitions.",
        |p| p.deduplicated_messages,
    ),
    counter_of(
        "iggy_partition_polls",
        "Polls of each of the most active partitions.",
        |p| p.polls,
    ),
    counter_of(
        "iggy_partition_polled_messages",
        "Messages polled from each of the most active partitions.",
        |p| p.polled_messages,
    ),
];

/// The process, without labels (from /proc).
pub(super) const PROCESS_SERIES: &[Series<ProcessFigures>] = &[
    gauge_of(
        "process_resident_memory_bytes",
        "Resident set size (GetStats memory_usage).",
        |p| p.resident_bytes,
    ),
    gauge_of(
        "process_virtual_memory_bytes",
        "Virtual memory size.",
        |p| p.virtual_bytes,
    ),
    gauge_of(
        "process_threads",
        "OS threads (GetStats threads_count).",
        |p| p.threads,
    ),
    gauge_of("process_open_fds", "Open file descriptors.", |p| p.open_fds),
    gauge_of(
        "iggy_huge_page_buffers_mapped_bytes",
        "Memory mapped in 2 MiB huge pages for I/O buffers ([system.buffers] huge_pages): in use, partly used and idle pages.",
        |p| p.huge_page_mapped_bytes,
    ),
    gauge_of(
        "iggy_huge_page_buffers_in_use_bytes",
        "Bytes of the I/O buffers currently handed out of huge pages.",
        |p| p.huge_page_in_use_bytes,
    ),
];
