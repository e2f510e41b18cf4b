//! The command line: the `Cli` parser, its global flags and the command tree (`Command`).
//!
//! Names follow the official `iggy-cli` 0.13.0 so that its scripts keep working. Additions
//! are marked in their help text. Each area's subcommands and their arguments live in a
//! module of their own below; everything is re-exported here.

mod completion;
mod consumer_groups;
mod consumer_offsets;
mod contexts;
mod messages;
mod partitions;
mod pats;
mod session;
mod shared;
mod streams;
mod system;
mod topics;
mod users;

pub use completion::CompletionArgs;
pub use consumer_groups::ConsumerGroupAction;
pub use consumer_offsets::{ConsumerKindArg, ConsumerOffsetAction};
pub use contexts::ContextAction;
pub use messages::{MessageAction, PayloadFormat, PollArgs, SendArgs};
pub use partitions::{PartitionAction, SegmentAction};
pub use pats::PatAction;
pub use session::LoginArgs;
pub use shared::{ListArgs, ListMode};
pub use streams::StreamAction;
pub use system::{ClientAction, ClusterAction, PingArgs, SnapshotArgs, StatsArgs, StatsOutput};
pub use topics::TopicAction;
pub use users::{UserAction, UserStatusArg};

use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;
use shared::parse_protocol;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the server answered with an error (the message names its code)
  2  invalid arguments or usage
  3  the server could not be reached (or a request timed out)
  4  authentication or permission failure (codes 40-55)
  5  the requested resource does not exist";

/// CLI for Iggy message streaming platform
#[derive(Debug, Parser)]
#[command(name = "iggy", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Global options (official names and defaults).
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// The transport to use. Valid values are `quic`, `http`, `tcp` and `ws`
    ///
    /// [default: tcp]
    #[arg(long)]
    pub transport: Option<String>,

    /// Wire protocol generation: `0.8` (SDK 0.10.0's) or `0.9` (SDK 0.11.0's); a rill server
    /// speaks both on the same ports (rill addition)
    ///
    /// [default: 0.8]
    #[arg(long, env = "IGGY_PROTOCOL", value_parser = parse_protocol)]
    pub protocol: Option<rill_sdk::Protocol>,

    /// Optional encryption key for the message payload used by the client
    #[arg(long)]
    pub encryption_key: Option<String>,

    /// Optional username for initial login
    #[arg(long)]
    pub credentials_username: Option<String>,

    /// Optional password for initial login
    #[arg(long)]
    pub credentials_password: Option<String>,

    /// The optional API URL for the HTTP transport
    ///
    /// [default: http://localhost:3000]
    #[arg(long)]
    pub http_api_url: Option<String>,

    /// The optional number of retries for the HTTP transport
    #[arg(long)]
    pub http_retries: Option<u32>,

    /// The optional client address for the TCP transport
    ///
    /// [default: 127.0.0.1:8090]
    #[arg(long)]
    pub tcp_server_address: Option<String>,

    /// The optional number of max reconnect retries for the TCP transport
    ///
    /// [default: 3]
    #[arg(long)]
    pub tcp_reconnection_max_retries: Option<u32>,

    /// The optional reconnect interval for the TCP transport
    ///
    /// [default: "1s"]
    #[arg(long)]
    pub tcp_reconnection_interval: Option<String>,

    /// Flag to enable TLS for the TCP transport
    #[arg(long)]
    pub tcp_tls_enabled: bool,

    /// The optional TLS domain for the TCP transport
    #[arg(long)]
    pub tcp_tls_domain: Option<String>,

    /// PEM file of CA certificates (or the server's own certificate) to trust for TLS over
    /// TCP instead of the built-in web PKI roots [rill addition; upstream SDK option
    /// `tls_ca_file`]
    #[arg(long, value_name = "PEM_FILE")]
    pub tcp_tls_ca_file: Option<String>,

    /// Whether to validate the server's TLS certificate over TCP [rill addition]
    ///
    /// `--tcp-tls-validate-certificate=false` accepts any certificate (for example the
    /// server's default self-signed one).
    ///
    /// [default: true]
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub tcp_tls_validate_certificate: Option<bool>,

    /// The optional client address for the QUIC transport
    #[arg(long)]
    pub quic_client_address: Option<String>,

    /// The optional server address for the QUIC transport
    ///
    /// [default: 127.0.0.1:8080]
    #[arg(long)]
    pub quic_server_address: Option<String>,

    /// The optional server name for the QUIC transport
    #[arg(long)]
    pub quic_server_name: Option<String>,

    /// QUIC reconnect retries
    #[arg(long)]
    pub quic_reconnection_max_retries: Option<u32>,

    /// QUIC reconnect interval
    #[arg(long)]
    pub quic_reconnection_interval: Option<String>,

    /// QUIC bidirectional streams
    #[arg(long)]
    pub quic_max_concurrent_bidi_streams: Option<u64>,

    /// QUIC datagram send buffer
    #[arg(long)]
    pub quic_datagram_send_buffer_size: Option<u64>,

    /// QUIC initial MTU
    #[arg(long)]
    pub quic_initial_mtu: Option<u16>,

    /// QUIC send window
    #[arg(long)]
    pub quic_send_window: Option<u64>,

    /// QUIC receive window
    #[arg(long)]
    pub quic_receive_window: Option<u64>,

    /// QUIC response buffer size
    #[arg(long)]
    pub quic_response_buffer_size: Option<u64>,

    /// QUIC keep alive interval
    #[arg(long)]
    pub quic_keep_alive_interval: Option<u64>,

    /// QUIC max idle timeout
    #[arg(long)]
    pub quic_max_idle_timeout: Option<u64>,

    /// Flag to enable certificate validation for QUIC
    #[arg(long)]
    pub quic_validate_certificate: bool,

    /// PEM file of CA certificates (or the server's own certificate) to trust with
    /// --quic-validate-certificate instead of the built-in web PKI roots [rill addition]
    #[arg(long, value_name = "PEM_FILE")]
    pub quic_ca_file: Option<String>,

    /// The optional server address for the WebSocket transport
    #[arg(long)]
    pub websocket_server_address: Option<String>,

    /// WebSocket reconnect retries
    #[arg(long)]
    pub websocket_reconnection_max_retries: Option<u32>,

    /// WebSocket reconnect interval
    #[arg(long)]
    pub websocket_reconnection_interval: Option<String>,

    /// Flag to enable TLS (wss) for the WebSocket transport [rill addition; upstream SDK option
    /// `tls`]
    #[arg(long)]
    pub websocket_tls_enabled: bool,

    /// Name to verify the WebSocket server's certificate against (default: the host of the
    /// address) [rill addition; upstream SDK option `tls_domain`]
    #[arg(long)]
    pub websocket_tls_domain: Option<String>,

    /// PEM file of CA certificates (or the server's own certificate) to trust for wss instead
    /// of the built-in web PKI roots [rill addition; upstream SDK option `tls_ca_file`]
    #[arg(long, value_name = "PEM_FILE")]
    pub websocket_tls_ca_file: Option<String>,

    /// Whether to validate the server's certificate over wss [rill addition]
    ///
    /// [default: false, as upstream's WebSocket client]
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub websocket_tls_validate_certificate: Option<bool>,

    /// Quiet mode (disabled stdout printing)
    #[arg(short, long)]
    pub quiet: bool,

    /// Debug mode (verbose printing to given file)
    #[arg(short, long)]
    pub debug: Option<String>,

    /// Iggy server username
    #[arg(short, long)]
    pub username: Option<String>,

    /// Iggy server password
    ///
    /// An optional parameter to specify the password for authentication.
    /// If not provided, user will be prompted interactively to enter the
    /// password securely.
    #[arg(short, long)]
    pub password: Option<String>,

    /// Iggy server personal access token
    #[arg(short, long)]
    pub token: Option<String>,

    /// Iggy server personal access token name
    ///
    /// A token created with `pat create --store-token` can be used by its name.
    #[arg(short = 'n', long)]
    pub token_name: Option<String>,

    /// Print machine-readable JSON instead of tables (addition to the official CLI)
    #[arg(long)]
    pub json: bool,

    /// Shell completion generator for iggy command
    ///
    /// Example: source <(iggy --generate bash)
    #[arg(long = "generate", value_name = "GENERATOR")]
    pub generator: Option<Shell>,
}

/// All commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// stream operations
    #[command(subcommand, visible_alias = "s")]
    Stream(StreamAction),
    /// topic operations
    #[command(subcommand, visible_alias = "t")]
    Topic(TopicAction),
    /// partition operations
    #[command(subcommand, visible_alias = "p")]
    Partition(PartitionAction),
    /// segments operations
    #[command(subcommand, visible_alias = "seg")]
    Segment(SegmentAction),
    /// ping iggy server
    ///
    /// Check if iggy server is up and running and what's the response ping response time
    Ping(PingArgs),
    /// get current client info
    ///
    /// Command connects to Iggy server and collects client info like client ID, user ID
    /// server address and protocol type.
    Me,
    /// get iggy server statistics
    ///
    /// Collect basic Iggy server statistics like number of streams, topics, partitions, etc.
    /// Server OS name, version, etc. are also collected.
    Stats(StatsArgs),
    /// collect iggy server troubleshooting data
    Snapshot(SnapshotArgs),
    /// personal access token operations
    #[command(subcommand)]
    Pat(PatAction),
    /// user operations
    #[command(subcommand, visible_alias = "u")]
    User(UserAction),
    /// client operations
    #[command(subcommand, visible_alias = "c")]
    Client(ClientAction),
    /// cluster operations
    #[command(subcommand, visible_alias = "cl")]
    Cluster(ClusterAction),
    /// consumer group operations
    #[command(subcommand, visible_alias = "g")]
    ConsumerGroup(ConsumerGroupAction),
    /// consumer offset operations
    #[command(subcommand, visible_alias = "o")]
    ConsumerOffset(ConsumerOffsetAction),
    /// message operations
    #[command(subcommand, visible_alias = "m")]
    Message(MessageAction),
    /// context operations
    #[command(subcommand, visible_alias = "ctx")]
    Context(ContextAction),
    /// login to Iggy server
    ///
    /// Command logs in to Iggy server using provided credentials and stores session token
    /// (a personal access token) in the iggy home directory. Session token is used for
    /// authentication in subsequent commands until logout command is executed.
    #[command(visible_alias = "li")]
    Login(LoginArgs),
    /// logout from Iggy server
    #[command(visible_alias = "lo")]
    Logout,
    /// print shell completions (addition; same as --generate)
    Completion(CompletionArgs),
}
