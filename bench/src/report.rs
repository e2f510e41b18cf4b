//! The report of a run: a JSON document, a table on the terminal and the results directory.
//!
//! ```text
//! <output dir>/<workload>_<YYYYMMDD-HHMMSS>[_<remark>]/
//!     report.json                 everything below, machine-readable
//!     throughput.svg              MB/s over time per actor kind (moving average)
//!     latency.svg                 batch latency over time per actor kind (mean and max per interval)
//!     latency_distribution.svg    latency by percentile per actor kind
//! ```
//!
//! Throughput is quoted against the machine's ceilings when a baseline is known: producers (and
//! producing consumers) against the lower of the O_DIRECT write and loopback TCP figures, as the
//! data must cross both; consumers against loopback TCP, and against O_DIRECT read, which bounds
//! them when the server reads from the device rather than from memory.

use crate::baseline::Baseline;
use crate::plan::{Finish, Plan, WorkloadKind};
use crate::procfs::{AckMode, DetectedAckMode, ServerUsage};
use crate::stats::{ActorKind, ActorResult, GroupSummary, LatencySummary};
use crate::units::{compact_utc, format_duration, iso8601_utc};
use rill_core::responses::Stats;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::SystemTime;

/// What the server says about itself (GetStats).
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub version: String,
    pub process_id: u32,
    pub hostname: String,
    pub os: String,
    pub kernel_version: String,
    pub threads: u32,
}

impl ServerInfo {
    pub fn from_stats(stats: Stats) -> Self {
        ServerInfo {
            version: stats.iggy_server_version,
            process_id: stats.process_id,
            hostname: stats.hostname,
            os: format!("{} {}", stats.os_name, stats.os_version),
            kernel_version: stats.kernel_version,
            threads: stats.threads_count,
        }
    }
}

/// Messages in a stream's topic before and after the run (GetTopic).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamCount {
    pub stream: String,
    pub messages_before: u64,
    pub messages_after: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Params {
    pub transport: &'static str,
    pub server_address: String,
    pub username: String,
    pub producers: u32,
    pub consumers: u32,
    pub streams: u32,
    pub partitions: u32,
    pub consumer_groups: u32,
    pub message_size: String,
    pub messages_per_batch: String,
    pub finish: Finish,
    pub total_data: Option<String>,
    pub warmup_s: f64,
    pub sampling_s: f64,
    pub rate_limit_bytes_per_second: Option<u64>,
    pub reuse_streams: bool,
    pub identifier: Option<String>,
    pub remark: Option<String>,
    pub extra_info: Option<String>,
    pub gitref: Option<String>,
    pub gitref_date: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AckModeReport {
    /// `--ack-mode`, as declared on the command line.
    pub required: Option<AckMode>,
    /// Read from the server's configuration through /proc (needs --server-pid).
    pub detected: Option<DetectedAckMode>,
}

/// A group's throughput as a fraction of a ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingFraction {
    pub kind: ActorKind,
    pub ceiling: &'static str,
    pub ceiling_mb_s: f64,
    pub throughput_mb_s: f64,
    pub fraction: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ceilings {
    pub baseline: Baseline,
    pub fractions: Vec<CeilingFraction>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: String,
    pub workload: WorkloadKind,
    pub started_at: String,
    #[serde(skip)]
    pub started: Option<SystemTime>,
    pub params: Params,
    pub ack_mode: AckModeReport,
    pub server: Option<ServerInfo>,
    pub client_hostname: String,
    pub groups: Vec<GroupSummary>,
    pub actors: Vec<ActorResult>,
    pub streams: Vec<StreamCount>,
    pub server_usage: Option<ServerUsage>,
    /// CPU used by iggy-bench itself (all actors) per second of the run: near 1 core per actor
    /// would mean the client, not the server, limits the figures.
    pub client_cpu_cores: f64,
    pub ceilings: Option<Ceilings>,
    #[serde(skip)]
    pub moving_average_window: u32,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &Plan,
        started: SystemTime,
        server: Option<ServerInfo>,
        detected_ack_mode: Option<DetectedAckMode>,
        actors: Vec<ActorResult>,
        groups: Vec<GroupSummary>,
        streams: Vec<StreamCount>,
        server_usage: Option<ServerUsage>,
        baseline: Option<Baseline>,
    ) -> Report {
        let ceilings = baseline.map(|baseline| Ceilings {
            fractions: ceiling_fractions(&baseline, &groups),
            baseline,
        });
        Report {
            tool: format!("iggy-bench {} (rill)", env!("CARGO_PKG_VERSION")),
            workload: plan.kind,
            started_at: iso8601_utc(started),
            started: Some(started),
            params: Params {
                transport: plan.endpoint.transport.name(),
                server_address: plan.endpoint.address.clone(),
                username: plan.endpoint.username.clone(),
                producers: plan.producers,
                consumers: plan.consumers,
                streams: plan.streams,
                partitions: plan.partitions,
                consumer_groups: plan.groups,
                message_size: plan.message_size.to_string(),
                messages_per_batch: plan.messages_per_batch.to_string(),
                finish: plan.finish,
                total_data: plan.total_data.map(|total| total.to_string()),
                warmup_s: plan.warmup.as_secs_f64(),
                sampling_s: plan.sampling.as_secs_f64(),
                rate_limit_bytes_per_second: plan.rate_limit_bytes_per_second,
                reuse_streams: plan.reuse_streams,
                identifier: plan.output.identifier.clone(),
                remark: plan.output.remark.clone(),
                extra_info: plan.output.extra_info.clone(),
                gitref: plan.output.gitref.clone(),
                gitref_date: plan.output.gitref_date.clone(),
            },
            ack_mode: AckModeReport {
                required: plan.required_ack_mode,
                detected: detected_ack_mode,
            },
            server,
            client_hostname: crate::baseline::hostname(),
            groups,
            actors,
            streams,
            server_usage,
            client_cpu_cores: 0.0,
            ceilings,
            moving_average_window: plan.moving_average_window,
        }
    }

    pub fn group(&self, kind: ActorKind) -> Option<&GroupSummary> {
        self.groups.iter().find(|group| group.kind == kind)
    }

    /// The ack mode to print: detected if known, else declared.
    pub fn ack_mode_label(&self) -> String {
        match (&self.ack_mode.detected, self.ack_mode.required) {
            (Some(detected), _) => format!("{} (from {})", detected.mode.name(), detected.source),
            (None, Some(required)) => format!("{} (declared, not verified)", required.name()),
            (None, None) => "not given (use --ack-mode, and --server-pid to verify)".into(),
        }
    }

    /// The directory name: workload, UTC timestamp, and the remark if any.
    pub fn directory_name(&self) -> String {
        let stamp = compact_utc(self.started.unwrap_or_else(SystemTime::now));
        let mut name = format!("{}_{stamp}", self.workload.name());
        if let Some(remark) = &self.params.remark {
            name.push('_');
            name.push_str(&sanitise(remark));
        }
        name
    }

    /// The terminal summary.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let p = &self.params;
        let finish = match p.finish {
            Finish::Batches(batches) => format!("{batches} batches per actor"),
            Finish::Duration(duration) => format!("{} per actor", format_duration(duration)),
        };
        let _ = writeln!(
            out,
            "\n{} over {} {} — {} B messages × {} per batch, {}{}",
            self.workload.name(),
            p.transport,
            p.server_address,
            p.message_size,
            p.messages_per_batch,
            finish,
            p.total_data
                .as_ref()
                .map(|total| format!(" ({total} in total)"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "producers {}, consumers {}, streams {}, partitions {}, consumer groups {}; warm-up {:.1} s; ack mode: {}",
            p.producers,
            p.consumers,
            p.streams,
            p.partitions,
            p.consumer_groups,
            p.warmup_s,
            self.ack_mode_label()
        );
        if let Some(server) = &self.server {
            let _ = writeln!(
                out,
                "server: {} (pid {}) on {}",
                server.version, server.process_id, server.hostname
            );
        }
        let _ = writeln!(
            out,
            "\n{:<22} {:>10} {:>9} {:>9} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "actor",
            "messages",
            "MB",
            "MB/s",
            "msgs/s",
            "avg",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "p99.99",
            "max"
        );
        let row = |out: &mut String,
                   label: &str,
                   messages: u64,
                   bytes: u64,
                   mb_s: f64,
                   msgs_s: f64,
                   latency: &LatencySummary| {
            let _ = writeln!(
                out,
                "{:<22} {:>10} {:>9.1} {:>9.1} {:>10.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
                label,
                messages,
                bytes as f64 / 1e6,
                mb_s,
                msgs_s,
                latency.avg_ms,
                latency.p50_ms,
                latency.p90_ms,
                latency.p95_ms,
                latency.p99_ms,
                latency.p999_ms,
                latency.p9999_ms,
                latency.max_ms
            );
        };
        for actor in &self.actors {
            let label = format!(
                "{} {} (stream {})",
                singular(actor.kind),
                actor.id,
                actor.stream
            );
            row(
                &mut out,
                &label,
                actor.messages,
                actor.bytes,
                actor.throughput_mb_s,
                actor.throughput_msgs_s,
                &actor.latency,
            );
        }
        for group in &self.groups {
            row(
                &mut out,
                &format!("{} (total)", group.kind.label()),
                group.messages,
                group.bytes,
                group.total_throughput_mb_s,
                group.total_throughput_msgs_s,
                &group.latency,
            );
        }
        let _ = writeln!(
            out,
            "latency in ms per batch; MB = 10^6 bytes of messages (64-byte headers included); totals sum the actors' throughputs"
        );
        for group in &self.groups {
            let _ = writeln!(
                out,
                "{}: {:.1} MB/s by wall clock ({} messages in {:.2} s), payload {:.1} MB",
                group.kind.label(),
                group.wall_throughput_mb_s,
                group.messages,
                group.longest_elapsed_s,
                group.payload_bytes as f64 / 1e6
            );
        }
        if let Some(ceilings) = &self.ceilings {
            let _ = writeln!(
                out,
                "\nceilings (baseline {}): {}",
                ceilings.baseline.measured_at,
                ceilings.baseline.summary()
            );
            for fraction in &ceilings.fractions {
                let _ = writeln!(
                    out,
                    "  {} {:.1} MB/s = {:.1}% of {} ({:.0} MB/s)",
                    fraction.kind.label(),
                    fraction.throughput_mb_s,
                    fraction.fraction * 100.0,
                    fraction.ceiling,
                    fraction.ceiling_mb_s
                );
            }
        } else {
            let _ = writeln!(
                out,
                "\nno baseline: run `iggy-bench baseline` once (or pass --baseline) to see throughput as a fraction of the machine's ceilings"
            );
        }
        let _ = writeln!(
            out,
            "iggy-bench itself used {:.2} cores on average",
            self.client_cpu_cores
        );
        if let Some(usage) = &self.server_usage {
            let _ = writeln!(
                out,
                "server pid {}: RSS at start {:.1} MiB, max {:.1} MiB, end {:.1} MiB (spread {:.1}% while measured); CPU {:.2} s user + {:.2} s system, {:.2} cores on average",
                usage.pid,
                usage.rss_start_mib,
                usage.rss_max_mib,
                usage.rss_end_mib,
                usage.rss_spread_percent,
                usage.cpu_user_s,
                usage.cpu_system_s,
                usage.cpu_cores_avg
            );
        }
        out
    }
}

fn singular(kind: ActorKind) -> &'static str {
    match kind {
        ActorKind::Producer => "producer",
        ActorKind::Consumer => "consumer",
        ActorKind::ProducingConsumer => "prod.-consumer",
    }
}

/// Each group's total throughput over the ceilings that bound it.
pub fn ceiling_fractions(baseline: &Baseline, groups: &[GroupSummary]) -> Vec<CeilingFraction> {
    let mut fractions = Vec::new();
    for group in groups {
        let mut push = |ceiling: &'static str, ceiling_mb_s: Option<f64>| {
            if let Some(ceiling_mb_s) = ceiling_mb_s.filter(|value| *value > 0.0) {
                fractions.push(CeilingFraction {
                    kind: group.kind,
                    ceiling,
                    ceiling_mb_s,
                    throughput_mb_s: group.total_throughput_mb_s,
                    fraction: group.total_throughput_mb_s / ceiling_mb_s,
                });
            }
        };
        let loopback = baseline.loopback_mb_s();
        match group.kind {
            ActorKind::Producer | ActorKind::ProducingConsumer => {
                let write = baseline.disk_write_mb_s();
                let lower = match (write, loopback) {
                    (Some(write), Some(loopback)) => Some(write.min(loopback)),
                    _ => None,
                };
                push("the lower of O_DIRECT write and loopback TCP", lower);
                push("O_DIRECT write", write);
                push("loopback TCP", loopback);
            }
            ActorKind::Consumer => {
                push("loopback TCP", loopback);
                // When the server reads with O_DIRECT (rill does, for data no longer in
                // memory), the device's read speed bounds consumers too.
                push("O_DIRECT read", baseline.disk_read_mb_s());
            }
        }
    }
    fractions
}

fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::{DiskBaseline, LoopbackBaseline};

    fn group(kind: ActorKind, mb_s: f64) -> GroupSummary {
        GroupSummary {
            kind,
            actors: 1,
            messages: 0,
            batches: 0,
            bytes: 0,
            payload_bytes: 0,
            warmup_messages: 0,
            total_throughput_mb_s: mb_s,
            total_throughput_msgs_s: 0.0,
            wall_throughput_mb_s: 0.0,
            wall_throughput_msgs_s: 0.0,
            avg_throughput_per_actor_mb_s: 0.0,
            longest_elapsed_s: 0.0,
            latency: LatencySummary::default(),
            series_interval_s: 0.01,
            series: Vec::new(),
        }
    }

    #[test]
    fn producers_are_held_to_the_lower_ceiling_and_consumers_to_loopback() {
        let baseline = Baseline {
            measured_at: "now".into(),
            hostname: "h".into(),
            disk: Some(DiskBaseline {
                dir: "d".into(),
                bytes: 1,
                block_size: 1,
                write_mb_s: 4000.0,
                read_mb_s: 6000.0,
                read_parallel_mb_s: None,
                depths: Vec::new(),
                write_4k_latency_us: None,
            }),
            loopback: Some(LoopbackBaseline {
                bytes_per_connection: 1,
                single_mb_s: 5000.0,
                dual_mb_s: 3000.0,
            }),
        };
        let fractions = ceiling_fractions(
            &baseline,
            &[
                group(ActorKind::Producer, 2000.0),
                group(ActorKind::Consumer, 2500.0),
            ],
        );
        let producer_lower = &fractions[0];
        assert_eq!(producer_lower.kind, ActorKind::Producer);
        assert_eq!(producer_lower.ceiling_mb_s, 4000.0);
        assert!((producer_lower.fraction - 0.5).abs() < 1e-12);
        let consumer = fractions
            .iter()
            .find(|f| f.kind == ActorKind::Consumer)
            .unwrap();
        assert_eq!(consumer.ceiling_mb_s, 5000.0);
        assert!((consumer.fraction - 0.5).abs() < 1e-12);
        // Without a disk figure, producers are compared with loopback only.
        let no_disk = Baseline {
            disk: None,
            ..baseline
        };
        let fractions = ceiling_fractions(&no_disk, &[group(ActorKind::Producer, 1000.0)]);
        assert_eq!(fractions.len(), 1);
        assert_eq!(fractions[0].ceiling, "loopback TCP");
    }

    #[test]
    fn names_are_safe() {
        assert_eq!(sanitise("a b/c"), "a_b_c");
    }
}
