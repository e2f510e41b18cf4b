//! What a benchmark is: the workload, its actors and streams, when it stops and where its
//! results go. [`crate::args`] builds a [`Plan`] from the command line; [`crate::workload`]
//! runs it.

use crate::client::Endpoint;
use crate::procfs::AckMode;
use crate::units::{ByteSize, NumericParam};
use clap::Args;
use rill_core::primitives::Identifier;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

pub const DEFAULT_OUTPUT_DIR: &str = "performance_results";

/// Name of the topic in every bench stream.
pub const TOPIC_NAME: &str = "topic-1";
/// Batches per stream written before a consumer-only workload that runs for a duration.
pub const DURATION_PREFILL_BATCHES: u64 = 100;

pub fn stream_name(stream: u32) -> String {
    format!("bench-stream-{stream}")
}

pub fn group_name(group: u32) -> String {
    format!("cg-{group}")
}

/// The benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    PinnedProducer,
    PinnedConsumer,
    PinnedProducerAndConsumer,
    BalancedProducer,
    BalancedConsumerGroup,
    BalancedProducerAndConsumerGroup,
    EndToEndProducingConsumer,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 7] = [
        WorkloadKind::PinnedProducer,
        WorkloadKind::PinnedConsumer,
        WorkloadKind::PinnedProducerAndConsumer,
        WorkloadKind::BalancedProducer,
        WorkloadKind::BalancedConsumerGroup,
        WorkloadKind::BalancedProducerAndConsumerGroup,
        WorkloadKind::EndToEndProducingConsumer,
    ];

    /// The subcommand name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::PinnedProducer => "pinned-producer",
            WorkloadKind::PinnedConsumer => "pinned-consumer",
            WorkloadKind::PinnedProducerAndConsumer => "pinned-producer-and-consumer",
            WorkloadKind::BalancedProducer => "balanced-producer",
            WorkloadKind::BalancedConsumerGroup => "balanced-consumer-group",
            WorkloadKind::BalancedProducerAndConsumerGroup => {
                "balanced-producer-and-consumer-group"
            }
            WorkloadKind::EndToEndProducingConsumer => "end-to-end-producing-consumer",
        }
    }

    /// Upstream's short alias.
    pub fn alias(self) -> &'static str {
        match self {
            WorkloadKind::PinnedProducer => "pp",
            WorkloadKind::PinnedConsumer => "pc",
            WorkloadKind::PinnedProducerAndConsumer => "ppc",
            WorkloadKind::BalancedProducer => "bp",
            WorkloadKind::BalancedConsumerGroup => "bcg",
            WorkloadKind::BalancedProducerAndConsumerGroup => "bpcg",
            WorkloadKind::EndToEndProducingConsumer => "e2e",
        }
    }

    pub fn has_producers(self) -> bool {
        !matches!(
            self,
            WorkloadKind::PinnedConsumer | WorkloadKind::BalancedConsumerGroup
        )
    }

    pub fn has_consumers(self) -> bool {
        matches!(
            self,
            WorkloadKind::PinnedConsumer
                | WorkloadKind::PinnedProducerAndConsumer
                | WorkloadKind::BalancedConsumerGroup
                | WorkloadKind::BalancedProducerAndConsumerGroup
        )
    }

    pub fn is_pinned(self) -> bool {
        matches!(
            self,
            WorkloadKind::PinnedProducer
                | WorkloadKind::PinnedConsumer
                | WorkloadKind::PinnedProducerAndConsumer
                | WorkloadKind::EndToEndProducingConsumer
        )
    }

    pub fn uses_groups(self) -> bool {
        matches!(
            self,
            WorkloadKind::BalancedConsumerGroup | WorkloadKind::BalancedProducerAndConsumerGroup
        )
    }

    /// Whether consumers read data written before the run rather than by the run's producers.
    pub fn is_consumer_only(self) -> bool {
        self.has_consumers() && !self.has_producers()
    }

    /// The actors a `-T` total is split between.
    pub fn quota_actors(self, producers: u32, consumers: u32) -> u32 {
        if self.is_consumer_only() {
            consumers.max(1)
        } else {
            producers.max(1)
        }
    }
}

/// When an actor stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// This many batches per actor (consumers: the same number of messages' worth).
    Batches(u64),
    /// Measure for this long.
    #[serde(serialize_with = "serialize_seconds")]
    Duration(Duration),
}

fn serialize_seconds<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// A validated benchmark.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: WorkloadKind,
    pub endpoint: Endpoint,
    pub producers: u32,
    pub consumers: u32,
    pub streams: u32,
    pub partitions: u32,
    /// Consumer groups per stream.
    pub groups: u32,
    pub message_size: NumericParam,
    pub messages_per_batch: NumericParam,
    pub finish: Finish,
    pub total_data: Option<ByteSize>,
    pub warmup: Duration,
    pub sampling: Duration,
    pub moving_average_window: u32,
    pub rate_limit_bytes_per_second: Option<u64>,
    pub reuse_streams: bool,
    pub max_topic_size_bytes: u64,
    pub message_expiry_micros: u64,
    pub required_ack_mode: Option<AckMode>,
    pub server_pid: Option<u32>,
    pub progress: bool,
    pub output: OutputArgs,
}

impl Plan {
    /// The actors' stream (1-based) for actor `index` (0-based) of a kind.
    pub fn stream_of(&self, index: u32) -> u32 {
        index % self.streams + 1
    }

    /// The (stream, group) of consumer `index` in group workloads: consumers are dealt round
    /// robin over streams, then over the groups of that stream.
    pub fn group_of(&self, index: u32) -> (u32, u32) {
        let stream = index % self.streams + 1;
        let group = (index / self.streams) % self.groups + 1;
        (stream, group)
    }

    /// Producers writing to `stream`.
    pub fn producers_on(&self, stream: u32) -> u32 {
        (0..self.producers)
            .filter(|&index| self.stream_of(index) == stream)
            .count() as u32
    }

    /// How many consumers are in (stream, group).
    pub fn members_of(&self, stream: u32, group: u32) -> u32 {
        (0..self.consumers)
            .filter(|&index| self.group_of(index) == (stream, group))
            .count() as u32
    }

    /// Messages one consumer of a consumer-only workload reads (its batches' worth).
    pub fn consumer_quota_messages(&self) -> u64 {
        let batches = match self.finish {
            Finish::Batches(batches) => batches,
            Finish::Duration(_) => DURATION_PREFILL_BATCHES,
        };
        (batches as f64 * self.messages_per_batch.mean()).ceil() as u64
    }

    /// Messages a consumer-only workload needs in `stream` before it starts.
    pub fn prefill_messages(&self, stream: u32) -> u64 {
        let per_actor = self.consumer_quota_messages();
        let readers = if self.kind.uses_groups() {
            (1..=self.groups)
                .map(|group| self.members_of(stream, group))
                .max()
                .unwrap_or(0)
        } else {
            // Each pinned consumer reads the stream from the start: it needs its own quota.
            1
        };
        per_actor * u64::from(readers)
    }

    /// A rough length of the run, for sizing buffers and the progress bar.
    pub fn expected_messages(&self) -> Option<u64> {
        let Finish::Batches(batches) = self.finish else {
            return None;
        };
        let per_actor = (batches as f64 * self.messages_per_batch.mean()) as u64;
        let actors = match self.kind {
            kind if kind.is_consumer_only() => self.consumers,
            WorkloadKind::PinnedProducerAndConsumer
            | WorkloadKind::BalancedProducerAndConsumerGroup => self.producers * 2,
            _ => self.producers,
        };
        Some(per_actor * u64::from(actors))
    }
}

/// Counters the progress bar reads.
#[derive(Debug, Default)]
pub struct Progress {
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
}

/// A bench stream as the server numbers it.
#[derive(Debug, Clone)]
pub struct BenchStream {
    /// 1-based, as in `bench-stream-N`.
    pub number: u32,
    pub name: String,
    /// Numeric identifiers resolved once (the hot path sends no names).
    pub stream_id: Identifier,
    pub topic_id: Identifier,
    /// Server ids of the consumer groups cg-1..cg-G.
    pub group_ids: Vec<Identifier>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Parent directory of the results directory
    #[arg(long, short = 'o', default_value = DEFAULT_OUTPUT_DIR)]
    pub output_dir: PathBuf,
    /// Identifier of this machine or setup (default: hostname)
    #[arg(long)]
    pub identifier: Option<String>,
    /// A remark stored in the report and appended to the directory name
    #[arg(long)]
    pub remark: Option<String>,
    /// Free text stored in the report
    #[arg(long)]
    pub extra_info: Option<String>,
    /// Git reference of the server under test
    #[arg(long)]
    pub gitref: Option<String>,
    /// Date of that git reference
    #[arg(long)]
    pub gitref_date: Option<String>,
    /// Accepted for compatibility (charts are SVG files in the results directory)
    #[arg(long, short = 'c')]
    pub open_charts: bool,
}
