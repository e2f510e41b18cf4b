//! The GetStats figures, computed the same way for the binary protocol (GetStats), the HTTP
//! `/stats` page (JSON) and `/metrics` (gauges named after the fields).

use crate::metadata::Metadata;
use crate::shard::SharedState;
use rill_core::responses::Stats;

/// The protocol version we answer as (Iggy server 0.8.0).
pub const SERVER_VERSION: &str = "0.8.0";
pub const SERVER_SEMVER: u32 = 8000;

/// Streams, topics and partitions in the metadata.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataCounts {
    pub streams: u32,
    pub topics: u32,
    pub partitions: u32,
}

/// Counts the metadata's namespace. Cheap; call it inside a metadata read.
pub fn metadata_counts(metadata: &Metadata) -> MetadataCounts {
    let topics = metadata
        .streams
        .values()
        .map(|s| s.topics.len())
        .sum::<usize>();
    let partitions = metadata
        .streams
        .values()
        .flat_map(|s| s.topics.values())
        .map(|t| t.partitions.len())
        .sum::<usize>();
    MetadataCounts {
        streams: metadata.streams.len() as u32,
        topics: topics as u32,
        partitions: partitions as u32,
    }
}

/// Everything GetStats reports. Reads /proc and statvfs: call it outside metadata reads.
pub fn server_stats(shared: &SharedState, counts: MetadataCounts) -> Stats {
    let (messages_count, messages_size_bytes, segments_count) =
        shared.shards_table.totals(|_| true);
    let process = crate::system_info::process();
    let machine = crate::system_info::machine(&shared.config.system.path);
    let now = crate::time::now_micros();
    Stats {
        process_id: std::process::id(),
        cpu_usage: process.cpu_usage_percent,
        total_cpu_usage: machine.cpu_usage_percent,
        memory_usage: process.resident_bytes,
        total_memory: machine.total_memory_bytes,
        available_memory: machine.available_memory_bytes,
        run_time: now.saturating_sub(shared.started_at_micros),
        start_time: shared.started_at_micros,
        // Message bytes polled and sent over the wire since the start, as `iggy stats` labels
        // them ("Read/Written Bytes"); the process's disk counters would also count segment
        // I/O, the metadata log and whatever the kernel reads ahead.
        read_bytes: shared
            .metrics
            .shards
            .iter()
            .map(|shard| shard.messages_out_bytes.get())
            .sum(),
        written_bytes: shared
            .metrics
            .shards
            .iter()
            .map(|shard| shard.messages_in_bytes.get())
            .sum(),
        messages_size_bytes,
        streams_count: counts.streams,
        topics_count: counts.topics,
        partitions_count: counts.partitions,
        segments_count,
        messages_count,
        clients_count: shared.clients.len() as u32,
        consumer_groups_count: shared.groups.len() as u32,
        hostname: machine.hostname,
        os_name: machine.os_name,
        os_version: machine.os_version,
        kernel_version: machine.kernel_version,
        iggy_server_version: SERVER_VERSION.into(),
        iggy_server_semver: SERVER_SEMVER,
        cache_metrics: Vec::new(),
        threads_count: process.threads,
        free_disk_space: machine.free_disk_bytes,
        total_disk_space: machine.total_disk_bytes,
    }
}
