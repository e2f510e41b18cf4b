//! Metrics: per-shard cells written on the request path without locks, aggregated when scraped.
//!
//! Every shard has one [`ShardMetrics`] in [`Metrics::shards`]. Only that shard's thread writes
//! it; any thread may read it. So a counter is an `AtomicU64` updated with a relaxed load and a
//! relaxed store (a plain `mov` on x86-64, no locked read-modify-write), and no cache line is
//! written by two cores: the scraper (the HTTP thread, [`crate::http`]) only reads, and each
//! `ShardMetrics` is aligned to 128 bytes so neighbours never share a line. A reader may see a
//! histogram's buckets a few observations apart from its sum, which a scrape tolerates.
//!
//! [`Metrics::snapshot`] sums the shards into a [`MetricsSnapshot`] (plain numbers, tested on
//! its own); [`exposition`] turns a snapshot plus the scrape-time figures (shards table,
//! process, GetStats) into the Prometheus text format.
//!
//! Cardinality is bounded by construction: commands and statuses are the protocol's enums
//! (only series that moved are emitted), histograms have fixed buckets, per-shard series scale
//! with the shard count, and per-partition series are limited to the top N partitions.

pub mod exposition;

use rill_core::ErrorCode;
use rill_core::requests::CommandCode;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// A counter written by one thread (its shard) and read by any.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning shard's thread may call this: a load and a store are not one
    /// atomic step, which is what keeps this free of locked instructions.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A gauge written by one thread and read by any.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    #[inline]
    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds (µs) of the latency buckets: 10 µs to 10 s.
pub const LATENCY_BOUNDS_MICROS: [u64; 19] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
    500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// Buckets of the group-commit histogram: a round of `n` messages falls in bucket
/// ceil(log2(n)) (upper bound 2^k), the last one being +Inf; filled from the storage's
/// `WriteCounters::rounds_by_messages`, which has the same shape.
pub const ROUND_BUCKETS: usize = 18;

/// A histogram with fixed bounds: `buckets[i]` counts values `<= bounds[i]` and above the
/// previous bound; the last bucket is +Inf. Values are integers (µs, messages).
#[derive(Debug)]
pub struct Histogram<const N: usize> {
    buckets: [Counter; N],
    sum: Counter,
}

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| Counter::default()),
            sum: Counter::default(),
        }
    }
}

/// Latency histogram: [`LATENCY_BOUNDS_MICROS`] plus +Inf.
pub type LatencyHistogram = Histogram<{ LATENCY_BOUNDS_MICROS.len() + 1 }>;

impl<const N: usize> Histogram<N> {
    /// Records one value against `bounds` (N - 1 ascending upper bounds).
    #[inline]
    pub fn observe(&self, bounds: &[u64], value: u64) {
        debug_assert_eq!(bounds.len() + 1, N);
        let bucket = bounds.partition_point(|&bound| bound < value);
        self.buckets[bucket].inc();
        self.sum.add(value);
    }

    /// Adds pre-bucketed counts (as the storage reports them).
    pub fn add_bucketed(&self, counts: &[u64], sum: u64) {
        for (bucket, &count) in self.buckets.iter().zip(counts) {
            if count > 0 {
                bucket.add(count);
            }
        }
        self.sum.add(sum);
    }

    fn add_to(&self, snapshot: &mut HistogramSnapshot) {
        if snapshot.buckets.is_empty() {
            snapshot.buckets = vec![0; N];
        }
        for (total, bucket) in snapshot.buckets.iter_mut().zip(&self.buckets) {
            *total += bucket.get();
        }
        snapshot.sum += self.sum.get();
    }
}

/// A histogram summed over shards: per-bucket counts (not cumulative) and the sum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub buckets: Vec<u64>,
    pub sum: u64,
}

impl HistogramSnapshot {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// Slots for the request counters: every command plus one for frames with an unknown code.
pub const COMMAND_SLOTS: usize = CommandCode::ALL.len() + 1;
/// Slots for statuses: OK plus every error code.
pub const STATUS_SLOTS: usize = ErrorCode::ALL.len() + 1;

/// The slot of a command code (the last slot for codes the protocol does not define).
pub fn command_slot(code: u32) -> usize {
    CommandCode::ALL
        .binary_search_by_key(&code, |command| command.code())
        .unwrap_or(COMMAND_SLOTS - 1)
}

/// The label of a command slot: the upstream command name, or `Unknown`.
pub fn command_label(slot: usize) -> &'static str {
    CommandCode::ALL
        .get(slot)
        .map_or("Unknown", |command| command.name())
}

/// The slot of a status: 0 for OK, else 1 + the code's position in `ErrorCode::ALL`.
pub fn status_slot(status: Option<ErrorCode>) -> usize {
    match status {
        None => 0,
        Some(code) => ErrorCode::ALL
            .binary_search_by_key(&code.code(), |known| known.code())
            .map_or(STATUS_SLOTS - 1, |index| index + 1),
    }
}

/// The label of a status slot: `ok` or the upstream error name, e.g. `StreamIdNotFound`.
pub fn status_label(slot: usize) -> &'static str {
    match slot {
        0 => "ok",
        _ => ErrorCode::ALL
            .get(slot - 1)
            .map_or("Unknown", |code| code.name()),
    }
}

/// The storage's ack modes, in label order.
pub const ACK_MODES: [&str; 3] = ["memory", "written", "fsync"];

pub fn ack_mode_slot(mode: crate::storage::AckMode) -> usize {
    use crate::storage::AckMode;
    match mode {
        AckMode::Memory => 0,
        AckMode::Written => 1,
        AckMode::Fsync => 2,
    }
}

/// The transports with their own series, in [`ShardMetrics::transports`] order.
pub const TRANSPORTS: [&str; 3] = ["tcp", "quic", "websocket"];

/// One transport's connections and bytes on one shard.
#[derive(Debug, Default)]
pub struct TransportMetrics {
    pub connections: Gauge,
    pub accepted: Counter,
    pub received_bytes: Counter,
    pub sent_bytes: Counter,
}

impl TransportMetrics {
    pub fn connected(&self) {
        self.accepted.inc();
        self.connections.set(self.connections.get() + 1);
    }

    /// A connection another shard handed over: counted in `connections`, not in `accepted`.
    pub fn adopted(&self) {
        self.connections.set(self.connections.get() + 1);
    }

    pub fn disconnected(&self) {
        let open = self.connections.get();
        debug_assert!(open > 0, "a connection counted out twice");
        self.connections.set(open.saturating_sub(1));
    }

    fn snapshot(&self) -> TransportSnapshot {
        TransportSnapshot {
            connections: self.connections.get(),
            accepted: self.accepted.get(),
            received_bytes: self.received_bytes.get(),
            sent_bytes: self.sent_bytes.get(),
        }
    }
}

/// [`TransportMetrics`] at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportSnapshot {
    pub connections: u64,
    pub accepted: u64,
    pub received_bytes: u64,
    pub sent_bytes: u64,
}

impl ShardMetrics {
    /// This shard's figures for `transport` (HTTP has its own thread and metrics: it counts as TCP).
    pub fn transport(&self, transport: rill_core::primitives::Transport) -> &TransportMetrics {
        match transport {
            rill_core::primitives::Transport::Quic => &self.transports[1],
            rill_core::primitives::Transport::WebSocket => &self.transports[2],
            _ => &self.transports[0],
        }
    }
}

/// One shard's metrics. Written only by that shard's thread.
#[derive(Debug)]
#[repr(align(128))]
pub struct ShardMetrics {
    /// `[command slot * STATUS_SLOTS + status slot]`.
    requests: Box<[Counter]>,
    /// Per command slot, µs from decode to response.
    latency: Box<[LatencyHistogram]>,
    /// Per command slot.
    slow_requests: Box<[Counter]>,
    /// Connections and bytes by transport ([`TRANSPORTS`]; TLS counts as TCP).
    pub transports: [TransportMetrics; 3],
    /// Messages accepted from SendMessages on this shard's connections, and their stored size.
    pub messages_in: Counter,
    pub messages_in_bytes: Counter,
    /// Messages returned by PollMessages on this shard's connections.
    pub messages_out: Counter,
    pub messages_out_bytes: Counter,
    /// Data-plane operations executed on the partitions this shard owns.
    pub appends: Counter,
    pub appended_messages: Counter,
    /// Messages dropped as duplicates (`[system.message_deduplication]`).
    pub deduplicated_messages: Counter,
    /// Stored messages found not to match their checksum (refused polls, the boot scan).
    pub checksum_mismatches: Counter,
    pub polls: Counter,
    pub polled_messages: Counter,
    /// µs until an append was acknowledged, by ack mode ([`ACK_MODES`]).
    pub ack_latency: [LatencyHistogram; 3],
    /// Group commit: rounds by messages per round; sum = messages written.
    pub write_rounds: Histogram<ROUND_BUCKETS>,
    pub written_bytes: Counter,
    pub syncs: Counter,
    pub pool_allocated_bytes: Gauge,
    pub pool_in_use_bytes: Gauge,
    pub pool_misses: Gauge,
    /// The read cache's figures, published every second like the pool's.
    pub read_cache_budget_bytes: Gauge,
    pub read_cache_held_bytes: Gauge,
    pub read_cache_hits: Gauge,
    pub read_cache_misses: Gauge,
    pub read_cache_evictions: Gauge,
    pub read_ahead_budget_bytes: Gauge,
    pub read_ahead_held_bytes: Gauge,
    pub read_ahead_started: Gauge,
    pub read_ahead_hits: Gauge,
    pub read_ahead_wasted: Gauge,
    pub wal_writes: Gauge,
    pub wal_records: Gauge,
    pub wal_bytes: Gauge,
    pub wal_refused: Gauge,
    pub wal_used_bytes: Gauge,
    /// Partition operations sent to another shard's inbox.
    pub data_forwards: Counter,
    /// Metadata changes sent to shard 0's control lane.
    pub control_forwards: Counter,
    /// TCP connections handed over to the shard owning their partitions.
    pub connections_moved: Counter,
    /// Messages this shard's inbox delivered (work from other shards and the control lane).
    pub inbox_messages: Counter,
    /// Shard 0 only: the metadata log.
    pub metadata_log_bytes: Gauge,
    pub metadata_log_appends: Counter,
    pub metadata_snapshots: Counter,
    /// The shard's io_uring file descriptor (-1 until the runtime is built).
    pub ring_fd: AtomicI32,
    /// Debug builds: the one thread that writes these cells through a handle.
    #[cfg(debug_assertions)]
    writer: std::sync::OnceLock<std::thread::ThreadId>,
}

impl Default for ShardMetrics {
    fn default() -> Self {
        ShardMetrics {
            requests: (0..COMMAND_SLOTS * STATUS_SLOTS)
                .map(|_| Counter::default())
                .collect(),
            latency: (0..COMMAND_SLOTS)
                .map(|_| LatencyHistogram::default())
                .collect(),
            slow_requests: (0..COMMAND_SLOTS).map(|_| Counter::default()).collect(),
            transports: Default::default(),
            messages_in: Counter::default(),
            messages_in_bytes: Counter::default(),
            messages_out: Counter::default(),
            messages_out_bytes: Counter::default(),
            appends: Counter::default(),
            appended_messages: Counter::default(),
            deduplicated_messages: Counter::default(),
            checksum_mismatches: Counter::default(),
            polls: Counter::default(),
            polled_messages: Counter::default(),
            ack_latency: Default::default(),
            write_rounds: Histogram::default(),
            written_bytes: Counter::default(),
            syncs: Counter::default(),
            pool_allocated_bytes: Gauge::default(),
            pool_in_use_bytes: Gauge::default(),
            pool_misses: Gauge::default(),
            read_cache_budget_bytes: Gauge::default(),
            read_cache_held_bytes: Gauge::default(),
            read_cache_hits: Gauge::default(),
            read_cache_misses: Gauge::default(),
            read_cache_evictions: Gauge::default(),
            read_ahead_budget_bytes: Gauge::default(),
            read_ahead_held_bytes: Gauge::default(),
            read_ahead_started: Gauge::default(),
            read_ahead_hits: Gauge::default(),
            read_ahead_wasted: Gauge::default(),
            wal_writes: Gauge::default(),
            wal_records: Gauge::default(),
            wal_bytes: Gauge::default(),
            wal_refused: Gauge::default(),
            wal_used_bytes: Gauge::default(),
            data_forwards: Counter::default(),
            control_forwards: Counter::default(),
            connections_moved: Counter::default(),
            inbox_messages: Counter::default(),
            metadata_log_bytes: Gauge::default(),
            metadata_log_appends: Counter::default(),
            metadata_snapshots: Counter::default(),
            ring_fd: AtomicI32::new(-1),
            #[cfg(debug_assertions)]
            writer: std::sync::OnceLock::new(),
        }
    }
}

impl ShardMetrics {
    /// Counts one handled request and its latency.
    #[inline]
    pub fn record_request(
        &self,
        command_slot: usize,
        status: Option<ErrorCode>,
        elapsed: Duration,
        slow: bool,
    ) {
        let command_slot = command_slot.min(COMMAND_SLOTS - 1);
        self.requests[command_slot * STATUS_SLOTS + status_slot(status)].inc();
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.latency[command_slot].observe(&LATENCY_BOUNDS_MICROS, micros);
        if slow {
            self.slow_requests[command_slot].inc();
        }
    }

    pub fn record_ack(&self, mode: crate::storage::AckMode, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.ack_latency[ack_mode_slot(mode)].observe(&LATENCY_BOUNDS_MICROS, micros);
    }

    pub fn publish_pool(&self, stats: crate::storage::PoolStats) {
        self.pool_allocated_bytes.set(stats.allocated);
        self.pool_in_use_bytes.set(stats.in_use);
        self.pool_misses.set(stats.misses);
    }

    pub fn publish_read_cache(&self, stats: crate::storage::CacheStats) {
        self.read_cache_budget_bytes.set(stats.budget_bytes);
        self.read_cache_held_bytes.set(stats.held_bytes);
        self.read_cache_hits.set(stats.hits);
        self.read_cache_misses.set(stats.misses);
        self.read_cache_evictions.set(stats.evictions);
        self.read_ahead_budget_bytes
            .set(stats.read_ahead.budget_bytes);
        self.read_ahead_held_bytes.set(stats.read_ahead.held_bytes);
        self.read_ahead_started.set(stats.read_ahead.started);
        self.read_ahead_hits.set(stats.read_ahead.hits);
        self.read_ahead_wasted.set(stats.read_ahead.wasted);
    }

    pub fn publish_wal(&self, stats: crate::storage::WalStats) {
        self.wal_writes.set(stats.writes);
        self.wal_records.set(stats.records);
        self.wal_bytes.set(stats.bytes);
        self.wal_refused.set(stats.refused);
        self.wal_used_bytes.set(stats.used_bytes);
    }
}

/// Every shard's metrics, shared by the shards (each writing its own) and the scraper.
#[derive(Debug)]
pub struct Metrics {
    pub shards: Box<[ShardMetrics]>,
}

impl Metrics {
    pub fn new(shard_count: u16) -> Self {
        Metrics {
            shards: (0..shard_count).map(|_| ShardMetrics::default()).collect(),
        }
    }

    /// Sums the shards' cells (reads only; never blocks a shard).
    pub fn snapshot(&self) -> MetricsSnapshot {
        let mut snapshot = MetricsSnapshot {
            requests: vec![0; COMMAND_SLOTS * STATUS_SLOTS],
            latency: vec![HistogramSnapshot::default(); COMMAND_SLOTS],
            slow_requests: vec![0; COMMAND_SLOTS],
            ack_latency: vec![HistogramSnapshot::default(); ACK_MODES.len()],
            write_rounds: HistogramSnapshot::default(),
            shards: Vec::with_capacity(self.shards.len()),
            metadata_log_bytes: 0,
            metadata_log_appends: 0,
            metadata_snapshots: 0,
        };
        for shard in self.shards.iter() {
            for (total, counter) in snapshot.requests.iter_mut().zip(shard.requests.iter()) {
                *total += counter.get();
            }
            for (total, histogram) in snapshot.latency.iter_mut().zip(shard.latency.iter()) {
                histogram.add_to(total);
            }
            for (total, counter) in snapshot
                .slow_requests
                .iter_mut()
                .zip(shard.slow_requests.iter())
            {
                *total += counter.get();
            }
            for (total, histogram) in snapshot.ack_latency.iter_mut().zip(&shard.ack_latency) {
                histogram.add_to(total);
            }
            shard.write_rounds.add_to(&mut snapshot.write_rounds);
            snapshot.metadata_log_bytes += shard.metadata_log_bytes.get();
            snapshot.metadata_log_appends += shard.metadata_log_appends.get();
            snapshot.metadata_snapshots += shard.metadata_snapshots.get();
            snapshot.shards.push(ShardSnapshot {
                transports: shard.transports.each_ref().map(TransportMetrics::snapshot),
                messages_in: shard.messages_in.get(),
                messages_in_bytes: shard.messages_in_bytes.get(),
                messages_out: shard.messages_out.get(),
                messages_out_bytes: shard.messages_out_bytes.get(),
                appends: shard.appends.get(),
                appended_messages: shard.appended_messages.get(),
                deduplicated_messages: shard.deduplicated_messages.get(),
                checksum_mismatches: shard.checksum_mismatches.get(),
                polls: shard.polls.get(),
                polled_messages: shard.polled_messages.get(),
                written_bytes: shard.written_bytes.get(),
                syncs: shard.syncs.get(),
                pool_allocated_bytes: shard.pool_allocated_bytes.get(),
                pool_in_use_bytes: shard.pool_in_use_bytes.get(),
                pool_misses: shard.pool_misses.get(),
                read_cache_budget_bytes: shard.read_cache_budget_bytes.get(),
                read_cache_held_bytes: shard.read_cache_held_bytes.get(),
                read_cache_hits: shard.read_cache_hits.get(),
                read_cache_misses: shard.read_cache_misses.get(),
                read_cache_evictions: shard.read_cache_evictions.get(),
                read_ahead_budget_bytes: shard.read_ahead_budget_bytes.get(),
                read_ahead_held_bytes: shard.read_ahead_held_bytes.get(),
                read_ahead_started: shard.read_ahead_started.get(),
                read_ahead_hits: shard.read_ahead_hits.get(),
                read_ahead_wasted: shard.read_ahead_wasted.get(),
                wal_writes: shard.wal_writes.get(),
                wal_records: shard.wal_records.get(),
                wal_bytes: shard.wal_bytes.get(),
                wal_refused: shard.wal_refused.get(),
                wal_used_bytes: shard.wal_used_bytes.get(),
                data_forwards: shard.data_forwards.get(),
                control_forwards: shard.control_forwards.get(),
                connections_moved: shard.connections_moved.get(),
                inbox_messages: shard.inbox_messages.get(),
                ring_fd: shard.ring_fd.load(Ordering::Relaxed),
            });
        }
        snapshot
    }
}

/// [`Metrics`] summed over shards where per-shard series would only multiply cardinality
/// (requests, latencies), and kept per shard otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// `[command slot * STATUS_SLOTS + status slot]`.
    pub requests: Vec<u64>,
    pub latency: Vec<HistogramSnapshot>,
    pub slow_requests: Vec<u64>,
    pub ack_latency: Vec<HistogramSnapshot>,
    pub write_rounds: HistogramSnapshot,
    pub shards: Vec<ShardSnapshot>,
    pub metadata_log_bytes: u64,
    pub metadata_log_appends: u64,
    pub metadata_snapshots: u64,
}

impl MetricsSnapshot {
    /// Requests of one command with one status (None = OK), over all shards.
    pub fn requests(&self, command: CommandCode, status: Option<ErrorCode>) -> u64 {
        self.requests[command_slot(command.code()) * STATUS_SLOTS + status_slot(status)]
    }
}

/// One shard's figures at scrape time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardSnapshot {
    /// By [`TRANSPORTS`].
    pub transports: [TransportSnapshot; 3],
    pub messages_in: u64,
    pub messages_in_bytes: u64,
    pub messages_out: u64,
    pub messages_out_bytes: u64,
    pub appends: u64,
    pub appended_messages: u64,
    pub deduplicated_messages: u64,
    pub checksum_mismatches: u64,
    pub polls: u64,
    pub polled_messages: u64,
    pub written_bytes: u64,
    pub syncs: u64,
    pub pool_allocated_bytes: u64,
    pub pool_in_use_bytes: u64,
    pub pool_misses: u64,
    pub read_cache_budget_bytes: u64,
    pub read_cache_held_bytes: u64,
    pub read_cache_hits: u64,
    pub read_cache_misses: u64,
    pub read_cache_evictions: u64,
    pub read_ahead_budget_bytes: u64,
    pub read_ahead_held_bytes: u64,
    pub read_ahead_started: u64,
    pub read_ahead_hits: u64,
    pub read_ahead_wasted: u64,
    pub wal_writes: u64,
    pub wal_records: u64,
    pub wal_bytes: u64,
    pub wal_refused: u64,
    pub wal_used_bytes: u64,
    pub data_forwards: u64,
    pub control_forwards: u64,
    pub connections_moved: u64,
    pub inbox_messages: u64,
    pub ring_fd: i32,
}

/// A shard's own metrics: the shared [`Metrics`] and the shard's index in it. Cheap to clone,
/// handed to what the shard owns (its partitions).
#[derive(Debug, Clone)]
pub struct ShardMetricsHandle {
    metrics: Arc<Metrics>,
    shard: usize,
}

impl ShardMetricsHandle {
    pub fn new(metrics: Arc<Metrics>, shard: u16) -> Self {
        assert!((shard as usize) < metrics.shards.len());
        ShardMetricsHandle {
            metrics,
            shard: shard as usize,
        }
    }
}

impl Deref for ShardMetricsHandle {
    type Target = ShardMetrics;

    fn deref(&self) -> &ShardMetrics {
        let cells = &self.metrics.shards[self.shard];
        // The cells' relaxed load-and-store updates are correct only with one writer: in debug
        // builds, the first thread to write a shard's cells is the only one allowed to.
        #[cfg(debug_assertions)]
        {
            let me = std::thread::current().id();
            let writer = *cells.writer.get_or_init(|| me);
            assert_eq!(
                writer, me,
                "shard {}'s metric cells are written by one thread only",
                self.shard
            );
        }
        cells
    }
}

#[cfg(test)]
mod tests;
