//! Encoding the series tables and the per-shard histograms through `prometheus-client`'s
//! `Collector` interface.

use super::super::{
    ACK_MODES, COMMAND_SLOTS, HistogramSnapshot, LATENCY_BOUNDS_MICROS, ROUND_BUCKETS,
    STATUS_SLOTS, TRANSPORTS, command_label, status_label,
};
use super::Scrape;
use super::series::{
    Kind, PARTITION_SERIES, PROCESS_SERIES, RING_SERIES, SHARD_SERIES, STORAGE_SERIES, Series,
    TRANSPORT_SERIES,
};
use crate::shard::table::PartitionKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::fmt::Error;

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

    /// Emits one family per table entry, one series per labelled item.
    fn encode_table<T, L: EncodeLabelSet + Clone>(
        encoder: &mut DescriptorEncoder,
        table: &[Series<T>],
        items: &[(L, &T)],
    ) -> Result<(), Error> {
        for series in table {
            let values = items
                .iter()
                .map(|(labels, item)| (labels.clone(), (series.value)(item)));
            match series.kind {
                Kind::Counter => counter(encoder, series.name, series.help, values)?,
                Kind::Gauge => gauge(encoder, series.name, series.help, values)?,
            }
        }
        Ok(())
    }

    fn encode_shards(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        let shards = &self.metrics.shards;
        let transports: Vec<_> = shards
            .iter()
            .enumerate()
            .flat_map(|(shard, figures)| {
                TRANSPORTS
                    .iter()
                    .zip(&figures.transports)
                    .map(move |(name, transport)| (transport_labels(shard, name), transport))
            })
            .collect();
        Self::encode_table(encoder, TRANSPORT_SERIES, &transports)?;
        let per_shard: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(shard, figures)| (shard_label(shard), figures))
            .collect();
        Self::encode_table(encoder, SHARD_SERIES, &per_shard)?;
        let forwards = shards.iter().enumerate().flat_map(|(shard, s)| {
            [("data", s.data_forwards), ("control", s.control_forwards)].map(|(kind, value)| {
                (
                    [("shard", shard.to_string()), ("kind", kind.to_string())],
                    value,
                )
            })
        });
        counter(
            encoder,
            "iggy_shard_forwards",
            "Requests a shard sent elsewhere: partition operations to the owning shard (data) and metadata changes to shard 0's control lane (control).",
            forwards,
        )?;
        let rings: Vec<_> = self
            .rings
            .iter()
            .enumerate()
            .filter_map(|(shard, ring)| ring.as_ref().map(|ring| (shard_label(shard), ring)))
            .collect();
        Self::encode_table(encoder, RING_SERIES, &rings)?;
        let storage: Vec<_> = self
            .storage
            .iter()
            .enumerate()
            .map(|(shard, figures)| (shard_label(shard), figures))
            .collect();
        Self::encode_table(encoder, STORAGE_SERIES, &storage)
    }

    fn encode_partitions(&self, encoder: &mut DescriptorEncoder) -> Result<(), Error> {
        let partitions: Vec<_> = self
            .top_partitions
            .iter()
            .map(|partition| (partition_labels(&partition.key), partition))
            .collect();
        Self::encode_table(encoder, PARTITION_SERIES, &partitions)
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
        for series in PROCESS_SERIES {
            let value = (series.value)(process);
            match series.kind {
                Kind::Counter => single_counter(encoder, series.name, series.help, value)?,
                Kind::Gauge => single_gauge(encoder, series.name, series.help, value)?,
            }
        }
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
            f64::from(self.stats.cpu_usage),
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
