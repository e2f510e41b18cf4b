//! The command line, shaped like upstream `iggy-bench` 0.5.0:
//!
//! ```text
//! iggy-bench [GLOBAL OPTIONS] <benchmark> [BENCHMARK OPTIONS] <transport> [TRANSPORT OPTIONS] [output [OUTPUT OPTIONS]]
//! iggy-bench baseline [OPTIONS]
//! iggy-bench compare --a ADDR --b ADDR [--rounds N] -- [GLOBAL OPTIONS] <benchmark> ... <transport> ...
//! ```
//!
//! Names, aliases, short flags and defaults follow upstream where upstream has them; additions
//! (`-d/--duration`, `--ack-mode`, `--server-pid`, `--baseline`, `--baseline-file`, `--quiet`)
//! are long options that upstream lacks. [`Cli::into_plan`] turns a parsed command line into a
//! validated [`Plan`].

#[cfg(test)]
mod tests;
mod tools;
mod transport;
mod workloads;

use crate::client::Endpoint;
use crate::error::{Error, Result};
use crate::plan::{DEFAULT_OUTPUT_DIR, Finish, OutputArgs, Plan, WorkloadKind};
use crate::procfs::AckMode;
use crate::units::{ByteSize, NumericParam, parse_duration};
use clap::{Args, Parser, Subcommand};
use rill_sdk::Protocol;
use std::path::PathBuf;
use std::time::Duration;
pub use tools::{BaselineArgs, CompareArgs, LoopbackSinkArgs};
use transport::TransportChoice;

pub(crate) fn parse_protocol(text: &str) -> std::result::Result<Protocol, String> {
    text.parse()
}
pub use transport::{
    DEFAULT_HTTP_ADDRESS, DEFAULT_QUIC_ADDRESS, DEFAULT_TCP_ADDRESS, DEFAULT_WEBSOCKET_ADDRESS,
    HttpArgs, OutputCommand, QuicArgs, TcpArgs, TransportCommand,
};
pub use workloads::{
    BalancedConsumerGroupArgs, BalancedProducerAndConsumerGroupArgs, BalancedProducerArgs,
    EndToEndProducingConsumerArgs, PinnedConsumerArgs, PinnedProducerAndConsumerArgs,
    PinnedProducerArgs,
};

const DEFAULT_MESSAGE_BATCHES: u64 = 1000;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "iggy-bench",
    version,
    about = "Throughput and latency benchmark for servers speaking the Iggy 0.8.0 protocol",
    after_help = "Examples:\n  iggy-bench -m 1000 -P 1000 -T 2GB pinned-producer -p 2 tcp\n  iggy-bench -T 2GB --reuse-streams pinned-consumer -c 2 tcp\n  iggy-bench -P 1 -d 20s pinned-producer -p 1 tcp --server-address 127.0.0.1:8090\n  iggy-bench baseline --dir ./local_data\n  iggy-bench compare --a 127.0.0.1:8090 --b 127.0.0.1:8091 --rounds 3 -- -T 1GB pinned-producer -p 2 tcp"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Message payload size in bytes: a value or a range such as 100..1000
    #[arg(long, short = 'm', default_value = "1000")]
    pub message_size: NumericParam,

    /// Messages per batch: a value or a range
    #[arg(long, short = 'P', default_value = "1000")]
    pub messages_per_batch: NumericParam,

    /// Batches per actor (default 1000 unless -T or -d is given)
    #[arg(long, short = 'b', group = "data_to_process")]
    pub message_batches: Option<u64>,

    /// Total payload to process, all actors together, e.g. 2GB (split evenly between actors)
    #[arg(long, short = 'T', group = "data_to_process")]
    pub total_data: Option<ByteSize>,

    /// Run each actor for this long instead, e.g. 30s or 5m
    #[arg(long, short = 'd', group = "data_to_process", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Rate limit for all actors together, e.g. 50MB (per second)
    #[arg(long, short = 'r')]
    pub rate_limit: Option<ByteSize>,

    /// Warm-up time before measuring, e.g. 2s
    #[arg(long, short = 'w', default_value = "0s", value_parser = parse_duration)]
    pub warmup_time: Duration,

    /// Sampling interval of the time series (and bucket width of the charts)
    #[arg(long, short = 't', default_value = "10ms", value_parser = parse_duration)]
    pub sampling_time: Duration,

    /// Moving-average window (points) applied to the throughput charts
    #[arg(long, short = 'W', default_value_t = 20)]
    pub moving_average_window: u32,

    /// Use the high-level producer/consumer API (not implemented: the low-level one is used)
    #[arg(long, short = 'H')]
    pub high_level_api: bool,

    /// Username to log in with
    #[arg(long, short = 'u', default_value = "iggy")]
    pub username: String,

    /// Password to log in with
    #[arg(long, short = 'p', default_value = "iggy")]
    pub password: String,

    /// Wire protocol generation: 0.8 (SDK 0.10.0's) or 0.9 (SDK 0.11.0's); a rill server speaks
    /// both on the same ports
    #[arg(long, default_value = "0.8", value_parser = parse_protocol)]
    pub protocol: Protocol,

    /// Accepted for compatibility; the summary table is always printed
    #[arg(long)]
    pub pretty: bool,

    /// Keep existing bench-stream-N streams (and their messages) instead of recreating them
    #[arg(long)]
    pub reuse_streams: bool,

    /// The topic ack mode this run requires (memory, written, fsync). The server decides it from
    /// its configuration; with --server-pid the bench reads that configuration and refuses to run
    /// on a mismatch, otherwise the value is recorded in the report as declared
    #[arg(long, value_enum)]
    pub ack_mode: Option<AckMode>,

    /// Pid of the server: sample its RSS and CPU time from /proc during the run
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Measure the machine's ceilings (disk, loopback) before the run
    #[arg(long)]
    pub baseline: bool,

    /// Read the ceilings from a saved `iggy-bench baseline` JSON (default: <output dir>/baseline.json if present)
    #[arg(long)]
    pub baseline_file: Option<PathBuf>,

    /// Directory whose disk --baseline measures (default: $IGGY_SYSTEM_PATH or ./local_data)
    #[arg(long)]
    pub data_dir: Option<PathBuf>,

    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// N producers, each sending to its own stream (one partition)
    #[command(visible_alias = "pp")]
    PinnedProducer(PinnedProducerArgs),
    /// N consumers, each reading its own stream (filled first when short of data)
    #[command(visible_alias = "pc")]
    PinnedConsumer(PinnedConsumerArgs),
    /// Pinned producers and pinned consumers at the same time
    #[command(visible_alias = "ppc")]
    PinnedProducerAndConsumer(PinnedProducerAndConsumerArgs),
    /// N producers with balanced partitioning over the partitions of K streams
    #[command(visible_alias = "bp")]
    BalancedProducer(BalancedProducerArgs),
    /// N consumers in G consumer groups per stream (streams filled first when short of data)
    #[command(visible_alias = "bcg")]
    BalancedConsumerGroup(BalancedConsumerGroupArgs),
    /// Balanced producers and consumer groups at the same time
    #[command(visible_alias = "bpcg")]
    BalancedProducerAndConsumerGroup(BalancedProducerAndConsumerGroupArgs),
    /// Each actor sends a batch, then polls it back; latency is send → last message received
    #[command(visible_alias = "e2e")]
    EndToEndProducingConsumer(EndToEndProducingConsumerArgs),
    /// Print usage examples
    #[command(visible_alias = "e")]
    Examples,
    /// Measure the machine's ceilings: O_DIRECT disk bandwidth and loopback TCP bandwidth
    Baseline(BaselineArgs),
    /// Run the same workload against two servers, alternating A B A B, and compare medians
    Compare(CompareArgs),
    /// Internal: the receiving side of the loopback baseline (spawned by `baseline`)
    #[command(hide = true)]
    LoopbackSink(LoopbackSinkArgs),
}

/// The actor counts and topology a benchmark subcommand asks for.
struct Shape {
    kind: WorkloadKind,
    transport: TransportChoice,
    streams: u32,
    partitions: u32,
    producers: u32,
    consumers: u32,
    groups: u32,
    max_topic_size: Option<ByteSize>,
    message_expiry: Option<Duration>,
}

impl Cli {
    /// Parses a command line (program name first); errors carry clap's message.
    pub fn parse_from_args<I, T>(args: I) -> std::result::Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Cli::try_parse_from(args)
    }

    fn shape(&self) -> Option<Shape> {
        let shape = |kind, transport: &TransportCommand| Shape {
            kind,
            transport: transport.choice(),
            streams: 1,
            partitions: 1,
            producers: 0,
            consumers: 0,
            groups: 0,
            max_topic_size: None,
            message_expiry: None,
        };
        Some(match &self.command {
            Command::PinnedProducer(args) => Shape {
                streams: args.streams.unwrap_or(args.producers),
                producers: args.producers,
                max_topic_size: args.max_topic_size,
                message_expiry: args.message_expiry,
                ..shape(WorkloadKind::PinnedProducer, &args.transport)
            },
            Command::PinnedConsumer(args) => Shape {
                streams: args.streams.unwrap_or(args.consumers),
                consumers: args.consumers,
                ..shape(WorkloadKind::PinnedConsumer, &args.transport)
            },
            Command::PinnedProducerAndConsumer(args) => Shape {
                streams: args.streams.unwrap_or(args.producers),
                partitions: args.partitions,
                producers: args.producers,
                consumers: args.consumers,
                max_topic_size: args.max_topic_size,
                ..shape(WorkloadKind::PinnedProducerAndConsumer, &args.transport)
            },
            Command::BalancedProducer(args) => Shape {
                streams: args.streams,
                partitions: args.partitions,
                producers: args.producers,
                max_topic_size: args.max_topic_size,
                message_expiry: args.message_expiry,
                ..shape(WorkloadKind::BalancedProducer, &args.transport)
            },
            Command::BalancedConsumerGroup(args) => Shape {
                streams: args.streams,
                partitions: args.partitions,
                consumers: args.consumers,
                groups: args.consumer_groups,
                ..shape(WorkloadKind::BalancedConsumerGroup, &args.transport)
            },
            Command::BalancedProducerAndConsumerGroup(args) => Shape {
                streams: args.streams,
                partitions: args.partitions,
                producers: args.producers,
                consumers: args.consumers,
                groups: args.consumer_groups,
                max_topic_size: args.max_topic_size,
                ..shape(
                    WorkloadKind::BalancedProducerAndConsumerGroup,
                    &args.transport,
                )
            },
            Command::EndToEndProducingConsumer(args) => Shape {
                streams: args.streams.unwrap_or(args.producers),
                producers: args.producers,
                ..shape(WorkloadKind::EndToEndProducingConsumer, &args.transport)
            },
            Command::Examples
            | Command::Baseline(_)
            | Command::Compare(_)
            | Command::LoopbackSink(_) => return None,
        })
    }

    /// The validated plan of a benchmark subcommand.
    pub fn into_plan(&self) -> Result<Plan> {
        let shape = self
            .shape()
            .ok_or_else(|| Error::Usage("not a benchmark subcommand".into()))?;
        let global = &self.global;
        let usage = |message: String| Err(Error::Usage(message));
        if global.high_level_api {
            return Err(Error::Unsupported(
                "--high-level-api is not supported: iggy-bench drives the low-level protocol only"
                    .into(),
            ));
        }
        shape
            .transport
            .transport
            .ensure_supported(global.protocol)?;
        let kind = shape.kind;
        if shape.streams == 0 || shape.partitions == 0 {
            return usage("streams and partitions must be at least 1".into());
        }
        if kind.has_producers() && shape.producers == 0 {
            return usage("at least one producer is needed".into());
        }
        if kind.has_consumers() && shape.consumers == 0 {
            return usage("at least one consumer is needed".into());
        }
        if kind.is_pinned() {
            if shape.partitions != 1 {
                return usage(format!(
                    "pinned workloads use one partition per stream, got -a {}",
                    shape.partitions
                ));
            }
            if kind.has_producers() && shape.streams != shape.producers {
                return usage(format!(
                    "in {} the number of producers ({}) must equal the number of streams ({})",
                    kind.name(),
                    shape.producers,
                    shape.streams
                ));
            }
        }
        if kind.uses_groups() {
            if shape.groups == 0 {
                return usage("at least one consumer group is needed".into());
            }
            if shape.consumers < shape.streams * shape.groups {
                return usage(format!(
                    "{} consumers cannot cover {} stream(s) × {} group(s): every group needs a member",
                    shape.consumers, shape.streams, shape.groups
                ));
            }
        }
        if let Some(total) = global.total_data
            && total.0 < 2 * u64::from(global.message_size.min)
        {
            return usage("--total-data must be at least twice the message size".into());
        }
        if global.message_size.max as usize > rill_core::message::MAX_PAYLOAD_BYTES {
            return usage("message size exceeds the protocol's 64 000 000-byte limit".into());
        }
        if global.sampling_time.is_zero() {
            return usage("--sampling-time must be positive".into());
        }
        let actors = kind.quota_actors(shape.producers, shape.consumers);
        let finish = match (global.message_batches, global.total_data, global.duration) {
            (_, _, Some(duration)) => {
                if duration.is_zero() {
                    return usage("--duration must be positive".into());
                }
                Finish::Duration(duration)
            }
            (_, Some(total), None) => {
                let per_actor = total.0 / u64::from(actors);
                let per_batch = global.messages_per_batch.mean() * global.message_size.mean();
                Finish::Batches(((per_actor as f64 / per_batch).ceil() as u64).max(1))
            }
            (Some(0), None, None) => return usage("--message-batches must be at least 1".into()),
            (Some(batches), None, None) => Finish::Batches(batches),
            (None, None, None) => Finish::Batches(DEFAULT_MESSAGE_BATCHES),
        };
        Ok(Plan {
            kind,
            endpoint: Endpoint {
                transport: shape.transport.transport,
                address: shape.transport.address,
                username: global.username.clone(),
                password: global.password.clone(),
                nodelay: true,
                tls: shape.transport.tls,
                quic: shape.transport.quic,
                protocol: global.protocol,
            },
            producers: if kind.has_producers() {
                shape.producers
            } else {
                0
            },
            consumers: if kind.has_consumers() {
                shape.consumers
            } else {
                0
            },
            streams: shape.streams,
            partitions: shape.partitions,
            groups: if kind.uses_groups() { shape.groups } else { 0 },
            message_size: global.message_size,
            messages_per_batch: global.messages_per_batch,
            finish,
            total_data: global.total_data,
            warmup: global.warmup_time,
            sampling: global.sampling_time,
            moving_average_window: global.moving_average_window.max(1),
            rate_limit_bytes_per_second: global.rate_limit.map(|rate| rate.0),
            reuse_streams: global.reuse_streams,
            max_topic_size_bytes: shape.max_topic_size.map_or(0, |size| size.0),
            message_expiry_micros: shape
                .message_expiry
                .map_or(0, |expiry| expiry.as_micros() as u64),
            required_ack_mode: global.ack_mode,
            server_pid: global.server_pid,
            progress: !global.quiet,
            output: shape.transport.output.unwrap_or_else(|| OutputArgs {
                output_dir: PathBuf::from(DEFAULT_OUTPUT_DIR),
                ..OutputArgs::default()
            }),
        })
    }
}

/// The examples printed by `iggy-bench examples`.
pub const EXAMPLES: &str = "\
Examples (start the server first, e.g. `iggy-server --with-default-root-credentials`):

  # 2 producers, 1000 B messages, 1000 per batch, 2 GB in total, server on the default address
  iggy-bench -m 1000 -P 1000 -T 2GB pinned-producer -p 2 tcp

  # 2 consumers reading that data back (--reuse-streams keeps what the producers wrote)
  iggy-bench -m 1000 -P 1000 -T 2GB --reuse-streams pinned-consumer -c 2 tcp

  # latency of single-message batches for 20 seconds, with server RSS/CPU
  iggy-bench -P 1 -d 20s --server-pid $(pidof iggy-server) pinned-producer -p 1 tcp

  # producers and consumer groups at once, results under ./results
  iggy-bench -b 500 balanced-producer-and-consumer-group -p 4 -c 4 -a 8 tcp output -o results

  # send-then-read-back latency
  iggy-bench -P 100 -b 1000 end-to-end-producing-consumer -p 2 tcp

  # the machine's ceilings, saved for later reports
  iggy-bench baseline --dir ./local_data

  # A/B: same workload against two servers, alternated over 5 rounds
  iggy-bench compare --a 127.0.0.1:8090 --b 127.0.0.1:8091 --rounds 5 -- -T 1GB pinned-producer -p 2 tcp
";
