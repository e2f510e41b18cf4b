//! The `/metrics` page: a [`Scrape`] (everything gathered at one instant, plain data) encoded
//! by `prometheus-client`'s text encoder (OpenMetrics text, which Prometheus reads) through its
//! `Collector` interface, so values come from our per-shard cells instead of the crate's own
//! metric types, whose shared atomics every shard would contend on.
//!
//! Metric names are listed in ARCHITECTURE.md ("Observability").

use super::{
    ACK_MODES, COMMAND_SLOTS, HistogramSnapshot, LATENCY_BOUNDS_MICROS, MetricsSnapshot,
    ROUND_BUCKETS, STATUS_SLOTS, command_label, status_label,
};
use crate::shard::SharedState;
use crate::shard::table::PartitionKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rill_core::responses::Stats;
use std::fmt::Error;

/// Storage figures of the partitions one shard owns (from the shards table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardStorage {
    pub partitions: u64,
    pub segments: u64,
    pub messages: u64,
    pub size_bytes: u64,
}

/// Activity of one partition since its owner opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionActivity {
    pub key: PartitionKey,
    pub appends: u64,
    pub appended_messages: u64,
    pub polls: u64,
    pub polled_messages: u64,
}

impl PartitionActivity {
    fn weight(&self) -> (u64, u64) {
        (
            self.appended_messages + self.polled_messages,
            self.appends + self.polls,
        )
    }
}

/// The `n` most active partitions (messages appended plus polled, then operations), busiest
/// first; ties broken by key so the selection is stable between scrapes.
pub fn top_partitions(mut all: Vec<PartitionActivity>, n: usize) -> Vec<PartitionActivity> {
    all.retain(|partition| partition.weight() != (0, 0));
    let order = |a: &PartitionActivity, b: &PartitionActivity| {
        b.weight().cmp(&a.weight()).then(a.key.cmp(&b.key))
    };
    if all.len() > n && n > 0 {
        all.select_nth_unstable_by(n - 1, order);
    }
    all.truncate(n);
    all.sort_by(order);
    all
}

/// Process figures from /proc.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessFigures {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub threads: u64,
    pub open_fds: u64,
    pub start_time_seconds: f64,
}

/// io_uring counters of one shard's ring, from /proc/self/fdinfo (kernel counters, extended
/// past their 32-bit wrap by [`IoUringTracker`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingCounters {
    pub submissions: u64,
    pub completions: u64,
}

/// Everything one scrape shows, gathered first and encoded afterwards.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub metrics: MetricsSnapshot,
    pub stats: Stats,
    pub storage: Vec<ShardStorage>,
    pub top_partitions: Vec<PartitionActivity>,
    /// Per shard; None where the kernel does not report ring heads and tails.
    pub rings: Vec<Option<RingCounters>>,
    pub process: ProcessFigures,
    /// The shards' I/O driver (`io_uring` or `polling`).
    pub io_driver: &'static str,
}

/// Reads the shards table: per-shard storage figures and the most active partitions.
pub fn gather_partitions(
    shared: &SharedState,
    top: usize,
) -> (Vec<ShardStorage>, Vec<PartitionActivity>) {
    let mut storage = vec![ShardStorage::default(); shared.shard_count as usize];
    let mut activity = Vec::new();
    shared.shards_table.for_each(|key, shard, counters| {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(figures) = storage.get_mut(shard as usize) {
            figures.partitions += 1;
            figures.segments += u64::from(counters.segments_count.load(Relaxed));
            figures.messages += counters.messages_count.load(Relaxed);
            figures.size_bytes += counters.size_bytes.load(Relaxed);
        }
        activity.push(PartitionActivity {
            key: *key,
            appends: counters.appends.get(),
            appended_messages: counters.appended_messages.get(),
            polls: counters.polls.get(),
            polled_messages: counters.polled_messages.get(),
        });
    });
    (storage, top_partitions(activity, top))
}

/// Reads the process's figures from /proc.
pub fn process_figures(started_at_micros: u64) -> ProcessFigures {
    let info = crate::system_info::process();
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |entries| entries.count() as u64);
    ProcessFigures {
        cpu_seconds: info.cpu_seconds,
        resident_bytes: info.resident_bytes,
        virtual_bytes: info.virtual_bytes,
        threads: u64::from(info.threads),
        open_fds,
        start_time_seconds: started_at_micros as f64 / 1e6,
    }
}

/// Keeps each ring's counters monotonic across the kernel's u32 wrap. Lives on the scraping
/// thread; a wrap is detected as long as scrapes are less than 2^32 operations apart.
#[derive(Debug, Default)]
pub struct IoUringTracker {
    last: Vec<(i32, u32, u32)>,
    totals: Vec<RingCounters>,
}

impl IoUringTracker {
    /// Reads every shard's ring (by its fd) and returns the extended counters.
    pub fn read(&mut self, ring_fds: &[i32]) -> Vec<Option<RingCounters>> {
        ring_fds
            .iter()
            .enumerate()
            .map(|(shard, &fd)| {
                if fd < 0 {
                    return None;
                }
                let reading = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
                    .ok()
                    .and_then(|text| parse_ring_fdinfo(&text));
                match reading {
                    Some((submitted, completed)) => {
                        Some(self.update(shard, fd, submitted, completed))
                    }
                    // A read that fails once (seen under load) keeps the ring's last figures,
                    // so its counter series neither vanish nor go back between scrapes.
                    None => self
                        .last
                        .get(shard)
                        .filter(|(last_fd, _, _)| *last_fd == fd)
                        .map(|_| self.totals[shard]),
                }
            })
            .collect()
    }

    fn update(&mut self, shard: usize, fd: i32, submitted: u32, completed: u32) -> RingCounters {
        if self.last.len() <= shard {
            self.last.resize(shard + 1, (-1, 0, 0));
            self.totals.resize(shard + 1, RingCounters::default());
        }
        let (last_fd, last_submitted, last_completed) = self.last[shard];
        let (base_submitted, base_completed) = if last_fd == fd {
            (last_submitted, last_completed)
        } else {
            // A ring counts from 0 when it is created.
            self.totals[shard] = RingCounters::default();
            (0, 0)
        };
        let totals = &mut self.totals[shard];
        totals.submissions += u64::from(submitted.wrapping_sub(base_submitted));
        totals.completions += u64::from(completed.wrapping_sub(base_completed));
        self.last[shard] = (fd, submitted, completed);
        *totals
    }
}

/// (SQEs consumed by the kernel, CQEs posted) from an io_uring fdinfo: `SqHead` and `CqTail`,
/// printed by Linux 5.18 and later. None for anything else (another kind of fd, older kernels).
pub fn parse_ring_fdinfo(text: &str) -> Option<(u32, u32)> {
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().parse::<u32>().ok())?
        })
    };
    Some((field("SqHead")?, field("CqTail")?))
}

/// Encodes a scrape in the text exposition format (ends with `# EOF`).
pub fn encode(scrape: Scrape) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut text = String::with_capacity(64 * 1024);
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (impl EncodeLabelSet, u64)>,
) -> Result<(), Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        family
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// A counter without labels.
fn single_counter<V: prometheus_client::encoding::EncodeCounterValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: V,
) -> Result<(), Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, _, u64>(&value, None)
}

/// A gauge without labels.
fn single_gauge<V: prometheus_client::encoding::EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: V,
) -> Result<(), Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

fn gauge<V: prometheus_client::encoding::EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (impl EncodeLabelSet, V)>,
) -> Result<(), Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        family.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

/// A histogram whose bounds and sum are divided by `divisor` when exposed (1e6 for µs shown as
/// seconds; a division keeps 10 µs exactly `1e-5`). `bounds` has one entry fewer than the
/// snapshot's buckets (the last is +Inf).
fn histogram<'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    bounds: &[f64],
    series: impl IntoIterator<Item = (Option<impl EncodeLabelSet>, &'a HistogramSnapshot)>,
    divisor: f64,
) -> Result<(), Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, snapshot) in series {
        let buckets: Vec<(f64, u64)> = bounds
            .iter()
            .map(|bound| bound / divisor)
            .chain([f64::MAX])
            .zip(snapshot.buckets.iter().copied())
            .collect();
        let sum = snapshot.sum as f64 / divisor;
        match labels {
            Some(labels) => family
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(sum, snapshot.count(), &buckets, None)?,
            None => family.encode_histogram::<NoLabelSet>(sum, snapshot.count(), &buckets, None)?,
        }
    }
    Ok(())
}

fn shard_label(shard: usize) -> [(&'static str, String); 1] {
    [("shard", shard.to_string())]
}

fn transport_labels(shard: usize, transport: &str) -> [(&'static str, String); 2] {
    [
        ("shard", shard.to_string()),
        ("transport", transport.to_string()),
    ]
}

fn partition_labels(key: &PartitionKey) -> [(&'static str, String); 3] {
    [
        ("stream_id", key.stream_id.to_string()),
        ("topic_id", key.topic_id.to_string()),
        ("partition_id", key.partition_id.to_string()),
    ]
}

impl Scrape {
    fn per_shard<'a, V: 'a>(
        &'a self,
        value: impl Fn(&super::ShardSnapshot) -> V + 'a,
    ) -> impl Iterator<Item = ([(&'static str, String); 1], V)> + 'a {
        self.metrics
            .shards
            .iter()
            .enumerate()
            .map(move |(shard, figures)| (shard_label(shard), value(figures)))
    }

    fn per_shard_transport<'a>(
        &'a self,
        value: impl Fn(&super::TransportSnapshot) -> u64 + Copy + 'a,
    ) -> impl Iterator<Item = ([(&'static str, String); 2], u64)> + 'a {
        self.metrics
            .shards
            .iter()
            .enumerate()
            .flat_map(move |(shard, figures)| {
                super::TRANSPORTS
                    .iter()
                    .zip(&figures.transports)
                    .map(move |(name, transport)| (transport_labels(shard, name), value(transport)))
            })
    }

    fn encode_requests(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        let metrics = &self.metrics;
        let requests = (0..COMMAND_SLOTS).flat_map(|command| {
            (0..STATUS_SLOTS).filter_map(move |status| {
                let value = metrics.requests[command * STATUS_SLOTS + status];
                (value > 0).then(|| {
                    (
                        [
                            ("command", command_label(command)),
                            ("status", status_label(status)),
                        ],
                        value,
                    )
                })
            })
        });
        counter(
            encoder,
            "iggy_requests",
            "Requests handled, by command and status (ok or the error name), all transports and shards.",
            requests,
        )?;
        let latency_bounds: Vec<f64> = LATENCY_BOUNDS_MICROS.iter().map(|&b| b as f64).collect();
        histogram(
            encoder,
            "iggy_request_duration_seconds",
            "Time from a decoded request to its response, by command.",
            &latency_bounds,
            (0..COMMAND_SLOTS)
                .filter(|&command| metrics.latency[command].count() > 0)
                .map(|command| {
                    (
                        Some([("command", command_label(command))]),
                        &metrics.latency[command],
                    )
                }),
            1e6,
        )?;
        counter(
            encoder,
            "iggy_slow_requests",
            "Requests slower than logging.slow_request_threshold (each is logged), by command.",
            (0..COMMAND_SLOTS)
                .filter(|&command| metrics.slow_requests[command] > 0)
                .map(|command| {
                    (
                        [("command", command_label(command))],
                        metrics.slow_requests[command],
                    )
                }),
        )?;
        histogram(
            encoder,
            "iggy_append_ack_duration_seconds",
            "Time until an append is acknowledged by the storage (its ack mode satisfied: accepted, written, or fsynced), by ack mode.",
            &latency_bounds,
            ACK_MODES
                .iter()
                .zip(&metrics.ack_latency)
                .map(|(mode, snapshot)| (Some([("ack_mode", *mode)]), snapshot)),
            1e6,
        )?;
        let round_bounds: Vec<f64> = (0..ROUND_BUCKETS - 1).map(|k| (1u64 << k) as f64).collect();
        histogram(
            encoder,
            "iggy_group_commit_messages",
            "Messages per storage write round: appends that arrive while a write or fsync is in flight share the next round.",
            &round_bounds,
            [(None::<NoLabelSet>, &metrics.write_rounds)],
            1.0,
        )
    }

    fn encode_shards(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        gauge(
            encoder,
            "iggy_connections",
            "Open client connections, by shard and transport.",
            self.per_shard_transport(|t| t.connections),
        )?;
        counter(
            encoder,
            "iggy_connections_accepted",
            "Client connections accepted, by shard and transport.",
            self.per_shard_transport(|t| t.accepted),
        )?;
        counter(
            encoder,
            "iggy_received_bytes",
            "Request bytes received (frame headers included), by shard and transport.",
            self.per_shard_transport(|t| t.received_bytes),
        )?;
        counter(
            encoder,
            "iggy_sent_bytes",
            "Response bytes sent (frame headers included), by shard and transport.",
            self.per_shard_transport(|t| t.sent_bytes),
        )?;
        counter(
            encoder,
            "iggy_messages_in",
            "Messages accepted by SendMessages, by the shard that received the request.",
            self.per_shard(|s| s.messages_in),
        )?;
        counter(
            encoder,
            "iggy_messages_in_bytes",
            "Stored size of the messages accepted by SendMessages (64-byte headers included).",
            self.per_shard(|s| s.messages_in_bytes),
        )?;
        counter(
            encoder,
            "iggy_messages_out",
            "Messages returned by PollMessages, by the shard that received the request.",
            self.per_shard(|s| s.messages_out),
        )?;
        counter(
            encoder,
            "iggy_messages_out_bytes",
            "Stored size of the messages returned by PollMessages.",
            self.per_shard(|s| s.messages_out_bytes),
        )?;
        counter(
            encoder,
            "iggy_appends",
            "Appends executed on the partitions a shard owns.",
            self.per_shard(|s| s.appends),
        )?;
        counter(
            encoder,
            "iggy_appended_messages",
            "Messages appended to the partitions a shard owns.",
            self.per_shard(|s| s.appended_messages),
        )?;
        counter(
            encoder,
            "iggy_polls",
            "Polls executed on the partitions a shard owns.",
            self.per_shard(|s| s.polls),
        )?;
        counter(
            encoder,
            "iggy_polled_messages",
            "Messages read by polls from the partitions a shard owns.",
            self.per_shard(|s| s.polled_messages),
        )?;
        counter(
            encoder,
            "iggy_storage_written_bytes",
            "Message bytes written by the storage's write rounds, by owning shard.",
            self.per_shard(|s| s.written_bytes),
        )?;
        counter(
            encoder,
            "iggy_storage_syncs",
            "fdatasync rounds issued by the storage (fsync ack mode, flushes with fsync, seals excluded).",
            self.per_shard(|s| s.syncs),
        )?;
        gauge(
            encoder,
            "iggy_buffer_pool_allocated_bytes",
            "Aligned buffer memory a shard's pool owns (cached and in use); published every second.",
            self.per_shard(|s| s.pool_allocated_bytes),
        )?;
        gauge(
            encoder,
            "iggy_buffer_pool_in_use_bytes",
            "Aligned buffer memory handed out by a shard's pool; published every second.",
            self.per_shard(|s| s.pool_in_use_bytes),
        )?;
        counter(
            encoder,
            "iggy_buffer_pool_misses",
            "Buffer acquisitions that found no cached buffer and allocated; published every second.",
            self.per_shard(|s| s.pool_misses),
        )?;
        let forwards = self
            .metrics
            .shards
            .iter()
            .enumerate()
            .flat_map(|(shard, s)| {
                [
                    (
                        [("shard", shard.to_string()), ("kind", "data".to_string())],
                        s.data_forwards,
                    ),
                    (
                        [
                            ("shard", shard.to_string()),
                            ("kind", "control".to_string()),
                        ],
                        s.control_forwards,
                    ),
                ]
            });
        counter(
            encoder,
            "iggy_shard_forwards",
            "Requests a shard sent elsewhere: partition operations to the owning shard (data) and metadata changes to shard 0's control lane (control).",
            forwards,
        )?;
        counter(
            encoder,
            "iggy_shard_inbox_messages",
            "Messages delivered by a shard's inbox (operations forwarded by other shards, partition opens and closes).",
            self.per_shard(|s| s.inbox_messages),
        )?;
        counter(
            encoder,
            "iggy_shard_connections_moved",
            "TCP connections a shard handed over to the shard owning the partitions they use.",
            self.per_shard(|s| s.connections_moved),
        )?;
        let rings: Vec<_> = self
            .rings
            .iter()
            .enumerate()
            .filter_map(|(shard, ring)| ring.map(|ring| (shard, ring)))
            .collect();
        counter(
            encoder,
            "iggy_io_uring_submissions",
            "Submission queue entries consumed by the kernel on a shard's io_uring (SqHead in /proc fdinfo).",
            rings
                .iter()
                .map(|(shard, ring)| (shard_label(*shard), ring.submissions)),
        )?;
        counter(
            encoder,
            "iggy_io_uring_completions",
            "Completion queue entries posted by the kernel on a shard's io_uring (CqTail in /proc fdinfo).",
            rings
                .iter()
                .map(|(shard, ring)| (shard_label(*shard), ring.completions)),
        )?;
        let storage = |value: fn(&ShardStorage) -> u64| {
            self.storage
                .iter()
                .enumerate()
                .map(move |(shard, figures)| (shard_label(shard), value(figures)))
        };
        gauge(
            encoder,
            "iggy_partitions",
            "Partitions, by owning shard.",
            storage(|s| s.partitions),
        )?;
        gauge(
            encoder,
            "iggy_segments",
            "Segments of the partitions a shard owns.",
            storage(|s| s.segments),
        )?;
        gauge(
            encoder,
            "iggy_stored_messages",
            "Messages stored in the partitions a shard owns.",
            storage(|s| s.messages),
        )?;
        gauge(
            encoder,
            "iggy_stored_bytes",
            "Bytes of messages stored in the partitions a shard owns.",
            storage(|s| s.size_bytes),
        )
    }

    fn encode_partitions(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        let top = &self.top_partitions;
        let series = |value: fn(&PartitionActivity) -> u64| {
            top.iter()
                .map(move |partition| (partition_labels(&partition.key), value(partition)))
        };
        counter(
            encoder,
            "iggy_partition_appends",
            "Appends to each of the most active partitions (http.metrics_top_partitions; others are in iggy_appends).",
            series(|p| p.appends),
        )?;
        counter(
            encoder,
            "iggy_partition_appended_messages",
            "Messages appended to each of the most active partitions.",
            series(|p| p.appended_messages),
        )?;
        counter(
            encoder,
            "iggy_partition_polls",
            "Polls of each of the most active partitions.",
            series(|p| p.polls),
        )?;
        counter(
            encoder,
            "iggy_partition_polled_messages",
            "Messages polled from each of the most active partitions.",
            series(|p| p.polled_messages),
        )
    }

    fn encode_server(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        let stats = &self.stats;
        gauge(
            encoder,
            "iggy_info",
            "Always 1; labels carry the protocol version served and the shards' I/O driver.",
            [(
                [
                    ("version", stats.iggy_server_version.as_str()),
                    ("io_driver", self.io_driver),
                ],
                1u64,
            )],
        )?;
        // The GetStats figures (same names as its fields), so `iggy stats` and dashboards agree.
        for (name, help, value) in [
            (
                "iggy_streams",
                "Streams (GetStats streams_count).",
                u64::from(stats.streams_count),
            ),
            (
                "iggy_topics",
                "Topics (GetStats topics_count).",
                u64::from(stats.topics_count),
            ),
            (
                "iggy_messages",
                "Messages stored (GetStats messages_count).",
                stats.messages_count,
            ),
            (
                "iggy_messages_size_bytes",
                "Bytes of messages stored (GetStats messages_size_bytes).",
                stats.messages_size_bytes,
            ),
            (
                "iggy_clients",
                "Connected clients (GetStats clients_count).",
                u64::from(stats.clients_count),
            ),
            (
                "iggy_consumer_groups",
                "Consumer groups (GetStats consumer_groups_count).",
                u64::from(stats.consumer_groups_count),
            ),
            (
                "iggy_free_disk_bytes",
                "Free space on the data directory's filesystem (GetStats free_disk_space).",
                stats.free_disk_space,
            ),
            (
                "iggy_total_disk_bytes",
                "Size of the data directory's filesystem (GetStats total_disk_space).",
                stats.total_disk_space,
            ),
            (
                "iggy_metadata_log_bytes",
                "Size of the metadata log (state/metadata.log) since the last snapshot.",
                self.metrics.metadata_log_bytes,
            ),
        ] {
            single_gauge(encoder, name, help, value)?;
        }
        single_counter(
            encoder,
            "iggy_metadata_log_appends",
            "Records appended (and fsynced) to the metadata log since start.",
            self.metrics.metadata_log_appends,
        )?;
        single_counter(
            encoder,
            "iggy_metadata_snapshots",
            "Metadata log compactions into a snapshot since start.",
            self.metrics.metadata_snapshots,
        )?;
        let process = &self.process;
        single_counter(
            encoder,
            "process_cpu_seconds",
            "User and system CPU time of the process.",
            process.cpu_seconds,
        )?;
        single_gauge(
            encoder,
            "process_resident_memory_bytes",
            "Resident set size (GetStats memory_usage).",
            process.resident_bytes,
        )?;
        single_gauge(
            encoder,
            "process_virtual_memory_bytes",
            "Virtual memory size.",
            process.virtual_bytes,
        )?;
        single_gauge(
            encoder,
            "process_threads",
            "OS threads (GetStats threads_count).",
            process.threads,
        )?;
        single_gauge(
            encoder,
            "process_open_fds",
            "Open file descriptors.",
            process.open_fds,
        )?;
        single_gauge(
            encoder,
            "process_start_time_seconds",
            "Start time of the server, seconds since the Unix epoch (GetStats start_time).",
            process.start_time_seconds,
        )?;
        single_gauge(
            encoder,
            "process_cpu_usage_percent",
            "Average CPU use since start, percent of one core (GetStats cpu_usage).",
            f64::from(stats.cpu_usage),
        )
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), Error> {
        self.encode_requests(&mut encoder)?;
        self.encode_shards(&mut encoder)?;
        self.encode_partitions(&mut encoder)?;
        self.encode_server(&mut encoder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metrics, command_slot};
    use rill_core::ErrorCode;
    use rill_core::requests::CommandCode;
    use std::time::Duration;

    fn activity(partition_id: u32, appended: u64, polled: u64) -> PartitionActivity {
        PartitionActivity {
            key: PartitionKey::new(1, 1, partition_id),
            appends: appended.min(1),
            appended_messages: appended,
            polls: polled.min(1),
            polled_messages: polled,
        }
    }

    #[test]
    fn top_partitions_keeps_the_busiest_in_order() {
        let all = vec![
            activity(1, 10, 0),
            activity(2, 0, 0),
            activity(3, 5, 50),
            activity(4, 20, 0),
            activity(5, 20, 0),
        ];
        let top = top_partitions(all.clone(), 3);
        let ids: Vec<u32> = top.iter().map(|p| p.key.partition_id).collect();
        assert_eq!(ids, [3, 4, 5]);
        assert!(top_partitions(all.clone(), 0).is_empty());
        // Idle partitions are never listed.
        assert_eq!(top_partitions(all, 10).len(), 4);
    }

    #[test]
    fn ring_fdinfo_parses_heads_and_tails() {
        let text = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t1057\nSqMask:\t0xfff\nSqHead:\t4242\nSqTail:\t4243\nCachedSqHead:\t4243\nCqMask:\t0x1fff\nCqHead:\t4200\nCqTail:\t4241\nCachedCqTail:\t4241\n";
        assert_eq!(parse_ring_fdinfo(text), Some((4242, 4241)));
        assert_eq!(parse_ring_fdinfo("pos:\t0\nflags:\t02\n"), None);
    }

    #[test]
    fn ring_counters_survive_the_u32_wrap() {
        let mut tracker = IoUringTracker::default();
        assert_eq!(
            tracker.update(0, 7, u32::MAX - 1, 10),
            RingCounters {
                submissions: u64::from(u32::MAX - 1),
                completions: 10
            }
        );
        let after = tracker.update(0, 7, 3, 20);
        assert_eq!(after.submissions, u64::from(u32::MAX) + 4);
        assert_eq!(after.completions, 20);
        // A new ring (another fd) starts again from its own counters.
        assert_eq!(tracker.update(0, 9, 5, 5).submissions, 5);
    }

    fn scrape() -> Scrape {
        let metrics = Metrics::new(2);
        let ping = command_slot(CommandCode::Ping.code());
        metrics.shards[0].record_request(ping, None, Duration::from_micros(30), false);
        metrics.shards[1].record_request(
            ping,
            Some(ErrorCode::Unauthenticated),
            Duration::from_micros(30),
            false,
        );
        metrics.shards[1].messages_in.add(3);
        metrics.shards[1]
            .write_rounds
            .add_bucketed(&[1, 1, 0, 0, 1], 19);
        Scrape {
            metrics: metrics.snapshot(),
            stats: Stats {
                process_id: 1,
                cpu_usage: 1.5,
                total_cpu_usage: 0.0,
                memory_usage: 0,
                total_memory: 0,
                available_memory: 0,
                run_time: 0,
                start_time: 0,
                read_bytes: 0,
                written_bytes: 0,
                messages_size_bytes: 640,
                streams_count: 1,
                topics_count: 2,
                partitions_count: 3,
                segments_count: 3,
                messages_count: 10,
                clients_count: 1,
                consumer_groups_count: 0,
                hostname: String::new(),
                os_name: String::new(),
                os_version: String::new(),
                kernel_version: String::new(),
                iggy_server_version: "0.8.0".into(),
                iggy_server_semver: 8000,
                cache_metrics: Vec::new(),
                threads_count: 4,
                free_disk_space: 0,
                total_disk_space: 0,
            },
            storage: vec![ShardStorage::default(); 2],
            top_partitions: vec![activity(7, 3, 1)],
            rings: vec![
                Some(RingCounters {
                    submissions: 5,
                    completions: 4,
                }),
                None,
            ],
            process: ProcessFigures::default(),
            io_driver: "io_uring",
        }
    }

    #[test]
    fn exposition_has_the_expected_series() {
        let text = encode(scrape());
        for line in [
            "iggy_requests_total{command=\"Ping\",status=\"ok\"} 1",
            "iggy_requests_total{command=\"Ping\",status=\"Unauthenticated\"} 1",
            "iggy_request_duration_seconds_count{command=\"Ping\"} 2",
            "iggy_messages_in_total{shard=\"1\"} 3",
            "iggy_group_commit_messages_count 3",
            "iggy_group_commit_messages_sum 19.0",
            "iggy_group_commit_messages_bucket{le=\"1.0\"} 1",
            "iggy_group_commit_messages_bucket{le=\"2.0\"} 2",
            "iggy_group_commit_messages_bucket{le=\"+Inf\"} 3",
            "iggy_io_uring_submissions_total{shard=\"0\"} 5",
            "iggy_partition_appended_messages_total{stream_id=\"1\",topic_id=\"1\",partition_id=\"7\"} 3",
            "iggy_streams 1",
            "iggy_messages 10",
            "iggy_info{version=\"0.8.0\",io_driver=\"io_uring\"} 1",
        ] {
            assert!(
                text.lines().any(|candidate| candidate == line),
                "missing `{line}` in:\n{text}"
            );
        }
        assert!(!text.contains("iggy_io_uring_submissions_total{shard=\"1\"}"));
        assert!(text.ends_with("# EOF\n"));
        // Every family is declared once with HELP and TYPE.
        let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
        assert_eq!(types, helps);
    }
}
