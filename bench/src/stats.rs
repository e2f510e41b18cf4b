//! What each actor measures and how measurements add up.
//!
//! Every actor owns a [`Recorder`]: an HDR histogram of batch latencies in nanoseconds (3
//! significant digits, 1 ns to 1 hour) and a time series of fixed-width buckets (the sampling
//! time, 10 ms by default) holding messages, bytes and latency sums. Nothing is shared while a
//! run is measured; results are merged afterwards:
//!
//! * per actor: throughput = bytes / (time of its last completed batch − start of measurement);
//! * per actor kind ("group"): total throughput = **sum of the actors' throughputs** (upstream
//!   iggy-bench's definition, so figures compare), plus the wall-clock figure (all bytes / the
//!   longest actor's time), and latency percentiles from the **merged** histogram (not an average
//!   of percentiles);
//! * time series: buckets added across actors, then coarsened to at most
//!   [`MAX_SERIES_POINTS`] points for reports and charts.

use crate::units::BYTES_PER_MEGABYTE;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Largest latency the histogram holds (1 hour, in ns); longer values are clamped.
const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits the histogram keeps.
const HISTOGRAM_SIGNIFICANT_DIGITS: u8 = 3;
/// Points a time series keeps in reports (buckets are merged beyond this).
pub const MAX_SERIES_POINTS: usize = 2000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, HISTOGRAM_SIGNIFICANT_DIGITS)
        .expect("valid histogram bounds")
}

/// One sampling interval of one actor (or of a group, after merging).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub messages: u64,
    pub batches: u64,
    pub bytes: u64,
    pub latency_sum_ns: u64,
    pub latency_max_ns: u64,
}

impl Bucket {
    fn add(&mut self, other: &Bucket) {
        self.messages += other.messages;
        self.batches += other.batches;
        self.bytes += other.bytes;
        self.latency_sum_ns += other.latency_sum_ns;
        self.latency_max_ns = self.latency_max_ns.max(other.latency_max_ns);
    }
}

/// Measurements of one actor while it runs. Recording allocates only when the run outgrows the
/// buckets reserved up front.
#[derive(Debug, Clone)]
pub struct Recorder {
    start: Instant,
    sampling_ns: u64,
    histogram: Histogram<u64>,
    buckets: Vec<Bucket>,
    messages: u64,
    batches: u64,
    bytes: u64,
    payload_bytes: u64,
    last_done_ns: u64,
}

impl Recorder {
    /// Starts measuring at `start`; `expected` is a hint of the run's length.
    pub fn new(start: Instant, sampling: Duration, expected: Duration) -> Self {
        let sampling_ns = sampling.as_nanos().max(1_000) as u64;
        let reserve = (expected.as_nanos() as u64 / sampling_ns).min(1_000_000) as usize + 1;
        Recorder {
            start,
            sampling_ns,
            histogram: new_histogram(),
            buckets: Vec::with_capacity(reserve),
            messages: 0,
            batches: 0,
            bytes: 0,
            payload_bytes: 0,
            last_done_ns: 0,
        }
    }

    /// Records one batch completed at `done` after `latency`.
    pub fn record(
        &mut self,
        done: Instant,
        latency: Duration,
        messages: u64,
        bytes: u64,
        payload_bytes: u64,
    ) {
        let latency_ns = (latency.as_nanos() as u64).clamp(1, HISTOGRAM_MAX_NS);
        self.histogram
            .record(latency_ns)
            .expect("latency clamped to the histogram's range");
        let done_ns = done.saturating_duration_since(self.start).as_nanos() as u64;
        let index = (done_ns / self.sampling_ns) as usize;
        if self.buckets.len() <= index {
            self.buckets.resize(index + 1, Bucket::default());
        }
        let bucket = &mut self.buckets[index];
        bucket.messages += messages;
        bucket.batches += 1;
        bucket.bytes += bytes;
        bucket.latency_sum_ns += latency_ns;
        bucket.latency_max_ns = bucket.latency_max_ns.max(latency_ns);
        self.messages += messages;
        self.batches += 1;
        self.bytes += bytes;
        self.payload_bytes += payload_bytes;
        self.last_done_ns = self.last_done_ns.max(done_ns);
    }

    pub fn messages(&self) -> u64 {
        self.messages
    }

    pub fn batches(&self) -> u64 {
        self.batches
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The actor's result; its measured time runs from the start of measurement to its last
    /// completed batch.
    pub fn finish(self, actor: ActorInfo, warmup_messages: u64) -> ActorResult {
        let elapsed_s = self.last_done_ns as f64 / 1e9;
        ActorResult {
            kind: actor.kind,
            id: actor.id,
            stream: actor.stream,
            messages: self.messages,
            batches: self.batches,
            bytes: self.bytes,
            payload_bytes: self.payload_bytes,
            warmup_messages,
            elapsed_s,
            throughput_mb_s: rate(self.bytes as f64 / BYTES_PER_MEGABYTE, elapsed_s),
            throughput_msgs_s: rate(self.messages as f64, elapsed_s),
            latency: LatencySummary::from_histogram(&self.histogram),
            histogram: self.histogram,
            buckets: self.buckets,
            sampling_ns: self.sampling_ns,
        }
    }
}

/// `amount / seconds`, 0 for an empty interval.
pub fn rate(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { amount / seconds } else { 0.0 }
}

/// What an actor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    Producer,
    Consumer,
    ProducingConsumer,
}

impl ActorKind {
    pub fn label(self) -> &'static str {
        match self {
            ActorKind::Producer => "producers",
            ActorKind::Consumer => "consumers",
            ActorKind::ProducingConsumer => "producing consumers",
        }
    }
}

/// Who an actor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActorInfo {
    pub kind: ActorKind,
    /// 1-based within its kind.
    pub id: u32,
    /// 1-based stream number (`bench-stream-N`).
    pub stream: u32,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub samples: u64,
    pub avg_ms: f64,
    pub std_dev_ms: f64,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub p9999_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    pub fn from_histogram(histogram: &Histogram<u64>) -> Self {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        let at = |quantile: f64| ms(histogram.value_at_quantile(quantile));
        LatencySummary {
            samples: histogram.len(),
            avg_ms: histogram.mean() / 1e6,
            std_dev_ms: histogram.stdev() / 1e6,
            min_ms: ms(histogram.min()),
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            p999_ms: at(0.999),
            p9999_ms: at(0.9999),
            max_ms: ms(histogram.max()),
        }
    }
}

/// One actor's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ActorResult {
    pub kind: ActorKind,
    pub id: u32,
    pub stream: u32,
    pub messages: u64,
    pub batches: u64,
    /// Bytes of messages including their 64-byte headers.
    pub bytes: u64,
    pub payload_bytes: u64,
    /// Messages sent or read during the warm-up (not measured).
    pub warmup_messages: u64,
    pub elapsed_s: f64,
    pub throughput_mb_s: f64,
    pub throughput_msgs_s: f64,
    pub latency: LatencySummary,
    #[serde(skip)]
    pub histogram: Histogram<u64>,
    #[serde(skip)]
    pub buckets: Vec<Bucket>,
    #[serde(skip)]
    pub sampling_ns: u64,
}

/// A point of a group's time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// End of the interval, seconds since the start of measurement.
    pub time_s: f64,
    pub throughput_mb_s: f64,
    pub throughput_msgs_s: f64,
    /// Mean and largest batch latency completed in the interval (0 when none completed).
    pub latency_avg_ms: f64,
    pub latency_max_ms: f64,
}

/// The figures of all actors of one kind.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub kind: ActorKind,
    pub actors: u32,
    pub messages: u64,
    pub batches: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub warmup_messages: u64,
    /// Sum of the actors' throughputs (upstream's "total throughput").
    pub total_throughput_mb_s: f64,
    pub total_throughput_msgs_s: f64,
    /// All bytes over the longest actor's time.
    pub wall_throughput_mb_s: f64,
    pub wall_throughput_msgs_s: f64,
    pub avg_throughput_per_actor_mb_s: f64,
    pub longest_elapsed_s: f64,
    /// Percentiles of every batch of every actor of this kind.
    pub latency: LatencySummary,
    pub series_interval_s: f64,
    pub series: Vec<SeriesPoint>,
}

impl GroupSummary {
    /// Summarises `actors`, which must all be of `kind`.
    pub fn from_actors(kind: ActorKind, actors: &[&ActorResult]) -> Self {
        assert!(actors.iter().all(|actor| actor.kind == kind));
        let mut histogram = new_histogram();
        for actor in actors {
            histogram
                .add(&actor.histogram)
                .expect("histograms share bounds");
        }
        let sum_u64 = |field: fn(&ActorResult) -> u64| actors.iter().map(|a| field(a)).sum::<u64>();
        let sum_f64 = |field: fn(&ActorResult) -> f64| actors.iter().map(|a| field(a)).sum::<f64>();
        let bytes = sum_u64(|a| a.bytes);
        let messages = sum_u64(|a| a.messages);
        let longest_elapsed_s = actors.iter().map(|a| a.elapsed_s).fold(0.0, f64::max);
        let total_throughput_mb_s = sum_f64(|a| a.throughput_mb_s);
        let sampling_ns = actors.first().map_or(10_000_000, |a| a.sampling_ns);
        let merged = merge_buckets(actors.iter().map(|a| a.buckets.as_slice()));
        let factor = merged.len().div_ceil(MAX_SERIES_POINTS).max(1);
        let coarse = coarsen(&merged, factor);
        let interval_ns = sampling_ns * factor as u64;
        GroupSummary {
            kind,
            actors: actors.len() as u32,
            messages,
            batches: sum_u64(|a| a.batches),
            bytes,
            payload_bytes: sum_u64(|a| a.payload_bytes),
            warmup_messages: sum_u64(|a| a.warmup_messages),
            total_throughput_mb_s,
            total_throughput_msgs_s: sum_f64(|a| a.throughput_msgs_s),
            wall_throughput_mb_s: rate(bytes as f64 / BYTES_PER_MEGABYTE, longest_elapsed_s),
            wall_throughput_msgs_s: rate(messages as f64, longest_elapsed_s),
            avg_throughput_per_actor_mb_s: rate(total_throughput_mb_s, actors.len() as f64),
            longest_elapsed_s,
            latency: LatencySummary::from_histogram(&histogram),
            series_interval_s: interval_ns as f64 / 1e9,
            series: series_points(&coarse, interval_ns),
        }
    }
}

/// Adds bucket series position by position.
pub fn merge_buckets<'a>(series: impl Iterator<Item = &'a [Bucket]>) -> Vec<Bucket> {
    let mut merged: Vec<Bucket> = Vec::new();
    for buckets in series {
        if merged.len() < buckets.len() {
            merged.resize(buckets.len(), Bucket::default());
        }
        for (total, bucket) in merged.iter_mut().zip(buckets) {
            total.add(bucket);
        }
    }
    merged
}

/// Merges every `factor` consecutive buckets into one.
pub fn coarsen(buckets: &[Bucket], factor: usize) -> Vec<Bucket> {
    assert!(factor >= 1);
    buckets
        .chunks(factor)
        .map(|chunk| {
            let mut total = Bucket::default();
            for bucket in chunk {
                total.add(bucket);
            }
            total
        })
        .collect()
}

/// Turns buckets of `interval_ns` into rates.
pub fn series_points(buckets: &[Bucket], interval_ns: u64) -> Vec<SeriesPoint> {
    let interval_s = interval_ns as f64 / 1e9;
    buckets
        .iter()
        .enumerate()
        .map(|(i, bucket)| SeriesPoint {
            time_s: (i + 1) as f64 * interval_s,
            throughput_mb_s: rate(bucket.bytes as f64 / BYTES_PER_MEGABYTE, interval_s),
            throughput_msgs_s: rate(bucket.messages as f64, interval_s),
            latency_avg_ms: rate(bucket.latency_sum_ns as f64 / 1e6, bucket.batches as f64),
            latency_max_ms: bucket.latency_max_ns as f64 / 1e6,
        })
        .collect()
}

/// The median of `values` (mean of the two middle ones for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    })
}

/// A centred moving average over `window` points (the chart smoothing of upstream's `-W`).
pub fn moving_average(values: &[f64], window: usize) -> Vec<f64> {
    if window <= 1 || values.is_empty() {
        return values.to_vec();
    }
    let half = window / 2;
    (0..values.len())
        .map(|i| {
            let from = i.saturating_sub(half);
            let to = (i + half + 1).min(values.len());
            values[from..to].iter().sum::<f64>() / (to - from) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder_with(latencies_us: &[u64], start: Instant) -> Recorder {
        let mut recorder = Recorder::new(start, Duration::from_millis(10), Duration::from_secs(1));
        for (i, &latency) in latencies_us.iter().enumerate() {
            // One batch of 10 messages of 100 bytes every 5 ms.
            let done = start + Duration::from_millis(5 * (i as u64 + 1));
            recorder.record(done, Duration::from_micros(latency), 10, 1000, 900);
        }
        recorder
    }

    fn actor(kind: ActorKind, id: u32) -> ActorInfo {
        ActorInfo {
            kind,
            id,
            stream: id,
        }
    }

    #[test]
    fn percentiles_come_from_the_histogram_within_its_precision() {
        let mut histogram = new_histogram();
        for value_us in 1..=10_000u64 {
            histogram.record(value_us * 1000).unwrap();
        }
        let summary = LatencySummary::from_histogram(&histogram);
        let close = |actual: f64, expected: f64| (actual - expected).abs() <= expected * 0.001;
        assert_eq!(summary.samples, 10_000);
        assert!(close(summary.p50_ms, 5.0), "{}", summary.p50_ms);
        assert!(close(summary.p90_ms, 9.0), "{}", summary.p90_ms);
        assert!(close(summary.p99_ms, 9.9), "{}", summary.p99_ms);
        assert!(close(summary.p999_ms, 9.99), "{}", summary.p999_ms);
        assert!(close(summary.max_ms, 10.0), "{}", summary.max_ms);
        assert!(close(summary.min_ms, 0.001), "{}", summary.min_ms);
        assert!(close(summary.avg_ms, 5.0005), "{}", summary.avg_ms);
        assert_eq!(
            LatencySummary::from_histogram(&new_histogram()),
            LatencySummary::default()
        );
    }

    #[test]
    fn actor_throughput_is_bytes_over_time_to_last_batch() {
        let start = Instant::now();
        // 4 batches, the last done at 20 ms: 4000 bytes / 0.02 s = 0.2 MB/s, 40 msgs / 0.02 s.
        let result =
            recorder_with(&[100, 200, 300, 400], start).finish(actor(ActorKind::Producer, 1), 7);
        assert_eq!(result.messages, 40);
        assert_eq!(result.batches, 4);
        assert_eq!(result.bytes, 4000);
        assert_eq!(result.payload_bytes, 3600);
        assert_eq!(result.warmup_messages, 7);
        assert!((result.elapsed_s - 0.02).abs() < 1e-9);
        assert!((result.throughput_mb_s - 0.2).abs() < 1e-9);
        assert!((result.throughput_msgs_s - 2000.0).abs() < 1e-6);
        // Batches done at 5, 10, 15, 20 ms land in buckets 0, 1, 1, 2 of 10 ms.
        let batches: Vec<_> = result.buckets.iter().map(|b| b.batches).collect();
        assert_eq!(batches, [1, 2, 1]);
        assert_eq!(result.buckets[1].latency_sum_ns, 500_000);
        assert_eq!(result.buckets[1].latency_max_ns, 300_000);
    }

    #[test]
    fn groups_sum_throughputs_and_merge_histograms() {
        let start = Instant::now();
        let fast = recorder_with(&[100; 4], start).finish(actor(ActorKind::Producer, 1), 0);
        let slow = recorder_with(&[1000; 2], start).finish(actor(ActorKind::Producer, 2), 0);
        let group = GroupSummary::from_actors(ActorKind::Producer, &[&fast, &slow]);
        assert_eq!(group.actors, 2);
        assert_eq!(group.messages, 60);
        assert_eq!(group.bytes, 6000);
        // 0.2 MB/s + (2000 B / 0.01 s = 0.2 MB/s).
        assert!((group.total_throughput_mb_s - 0.4).abs() < 1e-9);
        assert!((group.avg_throughput_per_actor_mb_s - 0.2).abs() < 1e-9);
        // Wall clock: 6000 B over the longest actor's 20 ms.
        assert!((group.wall_throughput_mb_s - 0.3).abs() < 1e-9);
        // Merged: 4 samples of 0.1 ms and 2 of 1 ms; p50 is 0.1 ms, max 1 ms.
        assert_eq!(group.latency.samples, 6);
        assert!((group.latency.p50_ms - 0.1).abs() < 1e-3);
        assert!((group.latency.max_ms - 1.0).abs() < 1e-3);
        assert!((group.latency.avg_ms - 0.4).abs() < 1e-3);
        // Series: 10 ms buckets; the first holds one batch of each actor.
        assert_eq!(group.series.len(), 3);
        let first = group.series[0];
        assert!((first.time_s - 0.01).abs() < 1e-12);
        assert!((first.throughput_mb_s - 0.2).abs() < 1e-9);
        assert!((first.latency_avg_ms - 0.55).abs() < 1e-9);
        assert!((first.latency_max_ms - 1.0).abs() < 1e-9);
    }

    #[test]
    fn series_are_coarsened_and_merged_position_by_position() {
        let bucket = |bytes| Bucket {
            bytes,
            batches: 1,
            messages: 1,
            latency_sum_ns: 10,
            latency_max_ns: 10,
        };
        let merged = merge_buckets([&[bucket(1), bucket(2)][..], &[bucket(10)][..]].into_iter());
        assert_eq!(merged[0].bytes, 11);
        assert_eq!(merged[1].bytes, 2);
        let coarse = coarsen(&[bucket(1), bucket(2), bucket(3)], 2);
        assert_eq!(coarse.len(), 2);
        assert_eq!(coarse[0].bytes, 3);
        assert_eq!(coarse[0].batches, 2);
        assert_eq!(coarse[1].bytes, 3);
    }

    #[test]
    fn medians_and_moving_averages() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(
            moving_average(&[1.0, 2.0, 3.0, 4.0, 5.0], 3),
            [1.5, 2.0, 3.0, 4.0, 4.5]
        );
        assert_eq!(moving_average(&[1.0, 2.0], 1), [1.0, 2.0]);
    }
}
