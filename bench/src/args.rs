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

use crate::client::{Endpoint, Transport};
use crate::error::{Error, Result};
use crate::plan::{DEFAULT_OUTPUT_DIR, Finish, OutputArgs, Plan, WorkloadKind};
use crate::procfs::AckMode;
use crate::units::{ByteSize, NumericParam, parse_duration};
use clap::{Args, Parser, Subcommand};
use rill_sdk::config::{DEFAULT_QUIC_RESPONSE_BUFFER_SIZE, DEFAULT_QUIC_SERVER_NAME};
use rill_sdk::{QuicOptions, TlsOptions};
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_TCP_ADDRESS: &str = "127.0.0.1:8090";
pub const DEFAULT_QUIC_ADDRESS: &str = "127.0.0.1:8080";
pub const DEFAULT_HTTP_ADDRESS: &str = "127.0.0.1:3000";
pub const DEFAULT_WEBSOCKET_ADDRESS: &str = "127.0.0.1:8092";
const DEFAULT_ACTORS: u32 = 8;
const DEFAULT_BALANCED_PARTITIONS: u32 = 24;
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

#[derive(Args, Debug, Clone)]
pub struct PinnedProducerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
    /// Message expiry, e.g. 1h (default: server default)
    #[arg(long, short = 'e', value_parser = parse_duration)]
    pub message_expiry: Option<Duration>,
}

#[derive(Args, Debug, Clone)]
pub struct PinnedConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of consumers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
}

#[derive(Args, Debug, Clone)]
pub struct PinnedProducerAndConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of partitions (must be 1 for pinned workloads)
    #[arg(long, short = 'a', default_value_t = 1)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedProducerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
    /// Message expiry, e.g. 1h (default: server default)
    #[arg(long, short = 'e', value_parser = parse_duration)]
    pub message_expiry: Option<Duration>,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedConsumerGroupArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic (used when the topic is created here)
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Consumer groups per stream
    #[arg(long, short = 'g', default_value_t = 1)]
    pub consumer_groups: u32,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedProducerAndConsumerGroupArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Consumer groups per stream
    #[arg(long, short = 'g', default_value_t = 1)]
    pub consumer_groups: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
}

#[derive(Args, Debug, Clone)]
pub struct EndToEndProducingConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producing consumers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of producing consumers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
}

#[derive(Subcommand, Debug, Clone)]
pub enum TransportCommand {
    /// Binary protocol over TCP (optionally TLS)
    Tcp(TcpArgs),
    /// Binary protocol over QUIC
    Quic(QuicArgs),
    /// HTTP REST API (not supported)
    Http(OtherTransportArgs),
    /// WebSocket (not supported)
    #[command(visible_alias = "ws")]
    WebSocket(OtherTransportArgs),
}

#[derive(Args, Debug, Clone)]
pub struct TcpArgs {
    /// Address of the server
    #[arg(long, default_value = DEFAULT_TCP_ADDRESS)]
    pub server_address: String,
    /// Accepted for compatibility: TCP_NODELAY is always set (each frame leaves in one write)
    #[arg(long)]
    pub nodelay: bool,
    /// TLS over TCP (the server needs [tcp.tls] enabled)
    #[arg(long)]
    pub tls: bool,
    /// Name to verify the certificate against (default: the host of --server-address)
    #[arg(long, requires = "tls")]
    pub tls_domain: Option<String>,
    /// Validate the server's certificate (off by default, as upstream's iggy-bench: servers
    /// use a self-signed certificate unless configured otherwise)
    #[arg(long, requires = "tls")]
    pub tls_validate_certificate: bool,
    /// PEM file of CA certificates (or the server's own certificate) to trust when validating
    #[arg(long, requires = "tls_validate_certificate")]
    pub tls_ca_file: Option<String>,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Args, Debug, Clone)]
pub struct QuicArgs {
    /// Address of the server
    #[arg(long, default_value = DEFAULT_QUIC_ADDRESS)]
    pub server_address: String,
    /// Local UDP address to bind (default: the unspecified address, port chosen by the system,
    /// so that remote servers are reachable; upstream binds 127.0.0.1:0)
    #[arg(long)]
    pub client_address: Option<String>,
    /// Name for SNI and certificate validation
    #[arg(long, default_value = DEFAULT_QUIC_SERVER_NAME)]
    pub server_name: String,
    /// Validate the server's certificate (off by default, as upstream)
    #[arg(long)]
    pub validate_certificate: bool,
    /// PEM file of CA certificates (or the server's own certificate) to trust when validating
    /// [rill addition]
    #[arg(long, requires = "validate_certificate")]
    pub ca_file: Option<String>,
    /// Largest response accepted, in bytes: raise it when one poll returns more
    /// (messages per batch × message size) [rill addition]
    #[arg(long, default_value_t = DEFAULT_QUIC_RESPONSE_BUFFER_SIZE)]
    pub response_buffer_size: usize,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Args, Debug, Clone)]
pub struct OtherTransportArgs {
    /// Address of the server
    #[arg(long)]
    pub server_address: Option<String>,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Subcommand, Debug, Clone)]
pub enum OutputCommand {
    /// Where and how to write the results
    Output(OutputArgs),
}

#[derive(Args, Debug, Clone)]
pub struct BaselineArgs {
    /// Directory on the disk to measure (default: $IGGY_SYSTEM_PATH or ./local_data)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Bytes written then read with O_DIRECT
    #[arg(long, default_value = "1GiB")]
    pub disk_size: ByteSize,
    /// Size of each O_DIRECT write and read
    #[arg(long, default_value = "1MiB")]
    pub block_size: ByteSize,
    /// Bytes sent over each loopback connection
    #[arg(long, default_value = "2GiB")]
    pub loopback_size: ByteSize,
    /// Where to save the baseline JSON (default: <output dir>/baseline.json)
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// Parent directory of the default save path
    #[arg(long, short = 'o', default_value = DEFAULT_OUTPUT_DIR)]
    pub output_dir: PathBuf,
    /// Skip the disk measurement
    #[arg(long)]
    pub no_disk: bool,
    /// Skip the loopback measurement
    #[arg(long)]
    pub no_loopback: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Address of server A
    #[arg(long)]
    pub a: String,
    /// Address of server B
    #[arg(long)]
    pub b: String,
    /// Rounds (each runs A then B)
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Pid of server A (RSS and CPU)
    #[arg(long)]
    pub a_pid: Option<u32>,
    /// Pid of server B (RSS and CPU)
    #[arg(long)]
    pub b_pid: Option<u32>,
    /// Label of server A in the output
    #[arg(long, default_value = "A")]
    pub a_name: String,
    /// Label of server B in the output
    #[arg(long, default_value = "B")]
    pub b_name: String,
    /// Parent directory of the comparison's results directory
    #[arg(long, short = 'o', default_value = DEFAULT_OUTPUT_DIR)]
    pub output_dir: PathBuf,
    /// The workload: the usual command line without the program name, e.g.
    /// `-- -T 1GB pinned-producer -p 2 tcp` (its --server-address is replaced by --a / --b)
    #[arg(last = true, required = true, num_args = 1..)]
    pub workload: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct LoopbackSinkArgs {
    /// Address of the parent's listener
    #[arg(long)]
    pub connect: String,
    /// Connections to open
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
}

/// What a transport subcommand says.
struct TransportChoice {
    transport: Transport,
    address: String,
    tls: Option<TlsOptions>,
    quic: QuicOptions,
    output: Option<OutputArgs>,
}

impl TransportCommand {
    fn choice(&self) -> TransportChoice {
        let output = |output: &Option<OutputCommand>| {
            output
                .as_ref()
                .map(|OutputCommand::Output(args)| args.clone())
        };
        match self {
            TransportCommand::Tcp(args) => TransportChoice {
                transport: Transport::Tcp,
                address: args.server_address.clone(),
                tls: args.tls.then(|| TlsOptions {
                    domain: args.tls_domain.clone(),
                    ca_file: args.tls_ca_file.clone(),
                    validate_certificate: args.tls_validate_certificate,
                }),
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
            TransportCommand::Quic(args) => TransportChoice {
                transport: Transport::Quic,
                address: args.server_address.clone(),
                tls: None,
                quic: QuicOptions {
                    server_name: args.server_name.clone(),
                    client_address: args.client_address.clone(),
                    validate_certificate: args.validate_certificate,
                    ca_file: args.ca_file.clone(),
                    response_buffer_size: args.response_buffer_size,
                    ..QuicOptions::default()
                },
                output: output(&args.output),
            },
            TransportCommand::Http(args) => TransportChoice {
                transport: Transport::Http,
                address: args
                    .server_address
                    .clone()
                    .unwrap_or_else(|| DEFAULT_HTTP_ADDRESS.into()),
                tls: None,
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
            TransportCommand::WebSocket(args) => TransportChoice {
                transport: Transport::WebSocket,
                address: args
                    .server_address
                    .clone()
                    .unwrap_or_else(|| DEFAULT_WEBSOCKET_ADDRESS.into()),
                tls: None,
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
        }
    }
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
        shape.transport.transport.ensure_supported()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(args: &str) -> Plan {
        Cli::parse_from_args(std::iter::once("iggy-bench").chain(args.split_whitespace()))
            .unwrap()
            .into_plan()
            .unwrap()
    }

    #[test]
    fn consumers_are_dealt_over_streams_then_groups() {
        let plan = plan_of("bcg -s 2 -g 2 -c 5 -a 3 tcp");
        let assignments: Vec<_> = (0..5).map(|index| plan.group_of(index)).collect();
        assert_eq!(assignments, [(1, 1), (2, 1), (1, 2), (2, 2), (1, 1)]);
        assert_eq!(plan.members_of(1, 1), 2);
        assert_eq!(plan.members_of(2, 2), 1);
    }

    #[test]
    fn prefill_covers_what_consumers_read() {
        // 2 members in group 1 of stream 1 each read 10 batches of 100 messages.
        let groups = plan_of("-b 10 -P 100 bcg -s 2 -g 2 -c 5 -a 3 tcp");
        assert_eq!(groups.prefill_messages(1), 2000);
        assert_eq!(groups.prefill_messages(2), 1000);
        let pinned = plan_of("-b 10 -P 100 pc -c 2 tcp");
        assert_eq!(pinned.prefill_messages(1), 1000);
        let timed = plan_of("-d 1s -P 10 pc -c 1 tcp");
        assert_eq!(
            timed.prefill_messages(1),
            crate::plan::DURATION_PREFILL_BATCHES * 10
        );
    }

    #[test]
    fn producers_are_counted_per_stream() {
        let plan = plan_of("bp -p 5 -s 2 tcp");
        assert_eq!(plan.producers_on(1), 3);
        assert_eq!(plan.producers_on(2), 2);
        assert_eq!(plan.expected_messages(), Some(5 * 1000 * 1000));
    }

    fn plan(args: &str) -> Result<Plan> {
        let cli =
            Cli::parse_from_args(std::iter::once("iggy-bench").chain(args.split_whitespace()))
                .map_err(|error| Error::Usage(error.to_string()))?;
        cli.into_plan()
    }

    #[test]
    fn upstream_command_lines_parse_with_upstream_defaults() {
        let plan =
            plan("-m 1000 -P 100 -b 10 pinned-producer -p 2 tcp --server-address 10.0.0.5:8090")
                .unwrap();
        assert_eq!(plan.kind, WorkloadKind::PinnedProducer);
        assert_eq!(plan.producers, 2);
        assert_eq!(plan.streams, 2);
        assert_eq!(plan.partitions, 1);
        assert_eq!(plan.consumers, 0);
        assert_eq!(plan.message_size, NumericParam::fixed(1000));
        assert_eq!(plan.messages_per_batch, NumericParam::fixed(100));
        assert_eq!(plan.finish, Finish::Batches(10));
        assert_eq!(plan.endpoint.address, "10.0.0.5:8090");
        assert_eq!(plan.endpoint.username, "iggy");
        assert_eq!(plan.sampling, Duration::from_millis(10));

        let defaults = plan_ok("bp tcp");
        assert_eq!(defaults.producers, 8);
        assert_eq!(defaults.partitions, 24);
        assert_eq!(defaults.streams, 1);
        assert_eq!(defaults.finish, Finish::Batches(1000));
        assert_eq!(defaults.endpoint.address, DEFAULT_TCP_ADDRESS);

        let groups = plan_ok("bpcg -p 2 -c 4 -g 2 -a 4 tcp");
        assert_eq!(
            (groups.producers, groups.consumers, groups.groups),
            (2, 4, 2)
        );
        let e2e = plan_ok("e2e -p 3 tcp");
        assert_eq!((e2e.producers, e2e.streams), (3, 3));
    }

    fn plan_ok(args: &str) -> Plan {
        plan(args).unwrap_or_else(|error| panic!("{args}: {error}"))
    }

    #[test]
    fn total_data_is_split_between_actors_in_whole_batches() {
        // 2 GB of 1000-byte payloads in batches of 1000 over 2 producers: 1000 batches each.
        let plan = plan_ok("-m 1000 -P 1000 -T 2GB pinned-producer -p 2 tcp");
        assert_eq!(plan.finish, Finish::Batches(1000));
        // Consumers split it the same way.
        let plan = plan_ok("-T 2GB pc -c 4 tcp");
        assert_eq!(plan.finish, Finish::Batches(500));
        // Rounded up: 1.5 MB per producer of 1 MB batches.
        let plan = plan_ok("-T 3MB pp -p 2 tcp");
        assert_eq!(plan.finish, Finish::Batches(2));
        let plan = plan_ok("-d 30s pp -p 1 tcp");
        assert_eq!(plan.finish, Finish::Duration(Duration::from_secs(30)));
    }

    #[test]
    fn ranges_and_extra_options_parse() {
        let plan = plan_ok(
            "-m 100..1000 -P 10..20 -w 2s -r 50MB --ack-mode memory --server-pid 42 -q pp -p 1 tcp output -o /tmp/x --remark hello",
        );
        assert_eq!(
            plan.message_size,
            NumericParam {
                min: 100,
                max: 1000
            }
        );
        assert_eq!(plan.messages_per_batch, NumericParam { min: 10, max: 20 });
        assert_eq!(plan.warmup, Duration::from_secs(2));
        assert_eq!(plan.rate_limit_bytes_per_second, Some(50_000_000));
        assert_eq!(plan.required_ack_mode, Some(AckMode::Memory));
        assert_eq!(plan.server_pid, Some(42));
        assert!(!plan.progress);
        assert_eq!(plan.output.output_dir, PathBuf::from("/tmp/x"));
        assert_eq!(plan.output.remark.as_deref(), Some("hello"));
    }

    #[test]
    fn tls_and_quic_flags_reach_the_endpoint() {
        let p = plan(
            "pp tcp --server-address 10.0.0.5:8090 --tls --tls-domain localhost \
             --tls-validate-certificate --tls-ca-file /ca.pem",
        )
        .unwrap();
        assert_eq!(p.endpoint.transport, Transport::Tcp);
        assert_eq!(
            p.endpoint.tls,
            Some(TlsOptions {
                domain: Some("localhost".into()),
                ca_file: Some("/ca.pem".into()),
                validate_certificate: true,
            })
        );
        let p = plan("pp tcp --tls").unwrap();
        assert_eq!(
            p.endpoint.tls.map(|tls| tls.validate_certificate),
            Some(false)
        );

        let p = plan("pp quic").unwrap();
        assert_eq!(p.endpoint.transport, Transport::Quic);
        assert_eq!(p.endpoint.address, DEFAULT_QUIC_ADDRESS);
        assert_eq!(p.endpoint.quic, QuicOptions::default());
        assert_eq!(p.endpoint.tls, None);
        let p = plan(
            "pp quic --server-address 10.0.0.5:8080 --client-address 0.0.0.0:0 \
             --server-name broker --validate-certificate --ca-file /ca.pem \
             --response-buffer-size 50000000",
        )
        .unwrap();
        let quic = p.endpoint.quic;
        assert_eq!(p.endpoint.address, "10.0.0.5:8080");
        assert_eq!(quic.client_address.as_deref(), Some("0.0.0.0:0"));
        assert_eq!(quic.server_name, "broker");
        assert!(quic.validate_certificate);
        assert_eq!(quic.ca_file.as_deref(), Some("/ca.pem"));
        assert_eq!(quic.response_buffer_size, 50_000_000);
    }

    #[test]
    fn conflicts_and_unsupported_choices_are_refused() {
        // -b, -T and -d exclude each other (clap).
        assert!(plan("-b 10 -T 1GB pp tcp").is_err());
        assert!(plan("-b 10 -d 1s pp tcp").is_err());
        // Pinned producers need one stream each and one partition.
        assert!(plan("pp -p 2 -s 3 tcp").is_err());
        assert!(plan("ppc -a 2 tcp").is_err());
        // Every consumer group needs a member.
        assert!(plan("bcg -c 1 -g 2 tcp").is_err());
        assert!(plan("-T 1000 -m 1000 pp tcp").is_err());
        assert!(plan("-m 0 pp tcp").is_err());
        let http = plan("pp http").unwrap_err().to_string();
        assert!(http.contains("not supported"), "{http}");
        // TLS options need --tls; a CA file is only read when validating.
        assert!(plan("pp tcp --tls-domain x").is_err());
        assert!(plan("pp tcp --tls --tls-ca-file /ca.pem").is_err());
        assert!(plan("-H pp tcp").is_err());
    }

    #[test]
    fn compare_takes_the_workload_after_a_separator() {
        let cli = Cli::parse_from_args([
            "iggy-bench",
            "compare",
            "--a",
            "127.0.0.1:1",
            "--b",
            "127.0.0.1:2",
            "--rounds",
            "5",
            "--",
            "-T",
            "1GB",
            "pp",
            "-p",
            "2",
            "tcp",
        ])
        .unwrap();
        let Command::Compare(compare) = cli.command else {
            panic!("not compare")
        };
        assert_eq!(compare.rounds, 5);
        assert_eq!(compare.workload, ["-T", "1GB", "pp", "-p", "2", "tcp"]);
    }
}
