//! The command tree and global flags, named as in the official `iggy-cli` 0.13.0 so that its
//! scripts keep working. Additions are marked in their help text.

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the server answered with an error (the message names its code)
  2  invalid arguments or usage
  3  the server could not be reached (or a request timed out)
  4  authentication or permission failure (codes 40-55)
  5  the requested resource does not exist";

fn parse_protocol(text: &str) -> Result<rill_sdk::Protocol, String> {
    text.parse()
}

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

/// List output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ListMode {
    /// A table.
    #[default]
    Table,
    /// One `|`-separated line per item.
    List,
    /// JSON (addition to the official CLI).
    Json,
}

/// A list-mode option shared by list commands.
#[derive(Debug, Args, Clone)]
pub struct ListArgs {
    /// List mode (table or list)
    #[arg(short, long, value_enum, default_value_t = ListMode::Table)]
    pub list_mode: ListMode,
}

#[derive(Debug, Subcommand)]
pub enum StreamAction {
    /// Create stream with given name
    #[command(visible_alias = "c")]
    Create {
        /// Stream ID to create (ignored: the server assigns ids since 0.6.0)
        #[arg(short, long)]
        stream_id: Option<u32>,
        /// Name of the stream
        name: String,
    },
    /// Delete stream with given ID
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID to delete (name or ID)
        stream_id: String,
    },
    /// Update stream name for given stream ID
    #[command(visible_alias = "u")]
    Update {
        /// Stream ID to update (name or ID)
        stream_id: String,
        /// New name for the stream
        name: String,
    },
    /// Get details of a single stream with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Stream ID to get (name or ID)
        stream_id: String,
    },
    /// List all streams
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Purge all topics in given stream ID
    #[command(visible_alias = "p")]
    Purge {
        /// Stream ID to purge (name or ID)
        stream_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TopicAction {
    /// Create topic with given name, number of partitions, compression algorithm and expiry time
    /// for given stream ID
    #[command(visible_alias = "c")]
    Create {
        /// Topic ID to create (ignored: the server assigns ids since 0.6.0)
        #[arg(short, long)]
        topic_id: Option<u32>,
        /// Max topic size in human-readable format like "unlimited" or "15GB"
        #[arg(short, long, default_value = "server_default")]
        max_topic_size: String,
        /// Replication factor for the topic
        #[arg(short, long, default_value_t = 1)]
        replication_factor: u8,
        /// Stream ID to create topic (name or ID)
        stream_id: String,
        /// Name of the topic
        name: String,
        /// Number of partitions inside the topic
        partitions_count: u32,
        /// Compression algorithm for the topic, set to "none" for no compression
        compression_algorithm: String,
        /// Message expiry time in human-readable format like "unlimited" or "15days 2min 2s"
        #[arg(default_values_t = vec!["server_default".to_owned()])]
        message_expiry: Vec<String>,
    },
    /// Delete topic with given ID in given stream ID
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
    },
    /// Update topic name, compression algorithm and message expiry time for given topic ID in
    /// given stream ID
    #[command(visible_alias = "u")]
    Update {
        /// New max topic size in human-readable format like "unlimited" or "15GB"
        #[arg(short, long, default_value = "server_default")]
        max_topic_size: String,
        /// New replication factor for the topic
        #[arg(short, long, default_value_t = 1)]
        replication_factor: u8,
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// New name for the topic
        name: String,
        /// Compression algorithm for the topic, set to "none" for no compression
        compression_algorithm: String,
        /// New message expiry time in human-readable format like "unlimited" or "15days 2min 2s"
        #[arg(default_values_t = vec!["server_default".to_owned()])]
        message_expiry: Vec<String>,
    },
    /// Get topic detail for given topic ID and stream ID
    #[command(visible_alias = "g")]
    Get {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
    },
    /// List all topics in given stream ID
    #[command(visible_alias = "l")]
    List {
        /// Stream ID (name or ID)
        stream_id: String,
        #[command(flatten)]
        list: ListArgs,
    },
    /// Purge topic with given ID in given stream ID
    #[command(visible_alias = "p")]
    Purge {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PartitionAction {
    /// Create partitions for the specified topic ID and stream ID based on the given count.
    #[command(visible_alias = "c")]
    Create {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partitions count to be created
        partitions_count: u32,
    },
    /// Delete partitions for the specified topic ID and stream ID based on the given count.
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partitions count to be deleted
        partitions_count: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum SegmentAction {
    /// Delete segments for the specified topic ID, stream ID and partition ID based on the
    /// given count.
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partition ID to delete segments
        partition_id: u32,
        /// Segments count to be deleted
        segments_count: u32,
    },
}

#[derive(Debug, Args)]
pub struct PingArgs {
    /// Stop after sending count Ping packets
    #[arg(short, long, default_value_t = 1)]
    pub count: u32,
}

/// Stats output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsOutput {
    /// A table.
    Table,
    /// `|`-separated lines.
    List,
    /// JSON.
    Json,
    /// TOML.
    Toml,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// List mode (table, list, JSON, TOML)
    #[arg(short, long, value_enum, default_value_t = StatsOutput::Table)]
    pub output: StatsOutput,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Specify snapshot compression method (stored, deflated, bzip2, zstd, lzma, xz)
    #[arg(short, long)]
    pub compression: Option<String>,
    /// Specify types of snapshots to include (filesystem_overview, process_list,
    /// resource_usage, test, server_logs, server_config, all)
    #[arg(short, long, num_args = 1..)]
    pub snapshot_types: Option<Vec<String>>,
    /// Define the output directory for the snapshot file.
    #[arg(short, long)]
    pub out_dir: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PatAction {
    /// Create personal access token
    #[command(visible_alias = "c")]
    Create {
        /// Store token in the iggy home directory, usable later with -n/--token-name
        #[arg(short, long)]
        store_token: bool,
        /// Name of the personal access token
        name: String,
        /// Personal access token expiry time in human-readable format ("none" = never)
        expiry: Vec<String>,
    },
    /// Delete personal access token
    #[command(visible_alias = "d")]
    Delete {
        /// Personal access token name to delete
        name: String,
    },
    /// List all personal access tokens
    #[command(visible_alias = "l")]
    List(ListArgs),
}

/// User status values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UserStatusArg {
    /// Active.
    Active,
    /// Inactive.
    Inactive,
}

#[derive(Debug, Subcommand)]
pub enum UserAction {
    /// Create user with given username and password
    #[command(visible_alias = "c")]
    Create {
        /// Username (3..=50 characters)
        username: String,
        /// Password (3..=100 characters)
        password: String,
        /// User status
        #[arg(short, long, value_enum, default_value_t = UserStatusArg::Active)]
        user_status: UserStatusArg,
        /// Set global permissions, e.g. m_srv,r_srv,p_msg,s_msg
        #[arg(short, long)]
        global_permissions: Option<String>,
        /// Set stream permissions: STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]
        #[arg(short, long)]
        stream_permissions: Option<Vec<String>>,
    },
    /// Delete user with given ID
    #[command(visible_alias = "d")]
    Delete {
        /// User ID to delete (username or ID)
        user_id: String,
    },
    /// Get details of a single user with given ID
    #[command(visible_alias = "g")]
    Get {
        /// User ID to get (username or ID)
        user_id: String,
    },
    /// List all users
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Change username for user with given ID
    #[command(visible_alias = "n")]
    Name {
        /// User ID to update (username or ID)
        user_id: String,
        /// New username
        username: String,
    },
    /// Change status for user with given ID
    #[command(visible_alias = "s")]
    Status {
        /// User ID to update (username or ID)
        user_id: String,
        /// New status
        #[arg(value_enum)]
        status: UserStatusArg,
    },
    /// Change password for user with given ID
    #[command(visible_alias = "pwd")]
    Password {
        /// User ID to update (username or ID)
        user_id: String,
        /// Current password (prompted when omitted)
        current_password: Option<String>,
        /// New password (prompted when omitted)
        new_password: Option<String>,
    },
    /// Set permissions for user with given ID
    #[command(visible_alias = "p")]
    Permissions {
        /// User ID to update (username or ID)
        user_id: String,
        /// Set global permissions, e.g. m_srv,r_srv,p_msg,s_msg
        #[arg(short, long)]
        global_permissions: Option<String>,
        /// Set stream permissions: STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]
        #[arg(short, long)]
        stream_permissions: Option<Vec<String>>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ClientAction {
    /// Get details of a single client with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Client ID to get
        client_id: u32,
    },
    /// List all currently connected clients to iggy server
    #[command(visible_alias = "l")]
    List(ListArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClusterAction {
    /// Get cluster metadata
    #[command(visible_alias = "m")]
    Metadata(ListArgs),
}

#[derive(Debug, Subcommand)]
pub enum ConsumerGroupAction {
    /// Create consumer group with given ID and name for given stream ID and topic ID.
    #[command(visible_alias = "c")]
    Create {
        /// Consumer group ID to create (ignored: the server assigns ids since 0.6.0)
        #[arg(short, long)]
        group_id: Option<u32>,
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Consumer group name to create
        name: String,
    },
    /// Delete consumer group with given ID for given stream ID and topic ID
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Consumer group ID (name or ID)
        group_id: String,
    },
    /// Get details of a single consumer group with given ID for given stream ID and topic ID
    #[command(visible_alias = "g")]
    Get {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Consumer group ID (name or ID)
        group_id: String,
    },
    /// List all consumer groups for given stream ID and topic ID
    #[command(visible_alias = "l")]
    List {
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        #[command(flatten)]
        list: ListArgs,
    },
}

/// Consumer kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConsumerKindArg {
    /// `Consumer` represents a regular consumer
    Consumer,
    /// `ConsumerGroup` represents a consumer group
    ConsumerGroup,
}

#[derive(Debug, Subcommand)]
pub enum ConsumerOffsetAction {
    /// Retrieve the offset of a consumer for a given partition from the server
    #[command(visible_alias = "g")]
    Get {
        /// Consumer for which the offset is retrieved (name or ID)
        consumer_id: String,
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partitions ID for which consumer offset is retrieved
        partition_id: u32,
        /// Consumer kind
        #[arg(short, long, value_enum, default_value_t = ConsumerKindArg::Consumer)]
        kind: ConsumerKindArg,
    },
    /// Set the offset of a consumer for a given partition on the server
    #[command(visible_alias = "s")]
    Set {
        /// Consumer for which the offset is set (name or ID)
        consumer_id: String,
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partitions ID for which consumer offset is set
        partition_id: u32,
        /// Offset to set
        offset: u64,
        /// Consumer kind
        #[arg(short, long, value_enum, default_value_t = ConsumerKindArg::Consumer)]
        kind: ConsumerKindArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum MessageAction {
    /// Send messages to given topic ID and given stream ID
    #[command(visible_alias = "s")]
    Send(SendArgs),
    /// Poll messages from given topic ID and given stream ID
    #[command(visible_alias = "p")]
    Poll(PollArgs),
    /// Flush messages from given topic ID and given stream ID
    #[command(visible_alias = "f")]
    Flush {
        /// fsync flushed data to disk
        #[arg(short, long)]
        fsync: bool,
        /// Stream ID (name or ID)
        stream_id: String,
        /// Topic ID (name or ID)
        topic_id: String,
        /// Partition ID for which messages will be flushed
        partition_id: u32,
    },
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// ID of the partition to which the message will be sent
    #[arg(short, long, group = "partitioning")]
    pub partition_id: Option<u32>,
    /// Messages key which will be used to partition the messages
    #[arg(short, long, group = "partitioning")]
    pub message_key: Option<String>,
    /// Comma separated list of key:kind:value, sent as header with the message
    #[arg(short = 'H', long, value_delimiter = ',')]
    pub headers: Vec<String>,
    /// Input file with messages to be sent (binary format written by `poll --output-file`)
    #[arg(long, conflicts_with_all = ["messages", "payload_file"])]
    pub input_file: Option<String>,
    /// Send the whole content of a file as one message (addition to the official CLI)
    #[arg(long, conflicts_with = "messages")]
    pub payload_file: Option<String>,
    /// ID of the stream to which the message will be sent (name or ID)
    pub stream_id: String,
    /// ID of the topic to which the message will be sent (name or ID)
    pub topic_id: String,
    /// Messages to be sent; if none, each line of standard input is sent as a message
    pub messages: Vec<String>,
}

/// How payloads are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PayloadFormat {
    /// UTF-8 text (lossy).
    #[default]
    Text,
    /// Hexadecimal bytes.
    Hex,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("polling_strategy").required(true).args(["offset", "first", "last", "next"])))]
pub struct PollArgs {
    /// Number of messages to poll
    #[arg(short, long, default_value_t = 1)]
    pub message_count: u32,
    /// Auto commit offset
    #[arg(short, long)]
    pub auto_commit: bool,
    /// Polling strategy - offset to start polling messages from
    #[arg(short, long)]
    pub offset: Option<u64>,
    /// Polling strategy - start polling from the first message in the partition
    #[arg(short, long)]
    pub first: bool,
    /// Polling strategy - start polling from the last message in the partition
    #[arg(short, long)]
    pub last: bool,
    /// Polling strategy - start polling from the next message
    #[arg(short, long)]
    pub next: bool,
    /// Regular consumer which will poll messages (name or ID)
    #[arg(short, long, default_value = "0")]
    pub consumer: String,
    /// Include the message headers in the output
    #[arg(short, long)]
    pub show_headers: bool,
    /// Store polled message into file in binary format
    #[arg(long)]
    pub output_file: Option<String>,
    /// Payload display format (addition to the official CLI)
    #[arg(long, value_enum, default_value_t = PayloadFormat::Text)]
    pub format: PayloadFormat,
    /// Keep polling for new messages, like `tail -f` (addition to the official CLI)
    #[arg(short = 'F', long)]
    pub follow: bool,
    /// Wait between polls that return nothing while following, e.g. 500ms
    #[arg(long, default_value = "500ms")]
    pub follow_interval: String,
    /// ID of the stream from which message will be polled (name or ID)
    pub stream_id: String,
    /// ID of the topic from which message will be polled (name or ID)
    pub topic_id: String,
    /// Partition ID from which message will be polled
    pub partition_id: u32,
}

#[derive(Debug, Subcommand)]
pub enum ContextAction {
    /// List all contexts
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Set the active context
    #[command(visible_alias = "u")]
    Use {
        /// Name of the context to use
        context_name: String,
    },
    /// Create a new context
    #[command(visible_alias = "c")]
    Create(ContextCreateArgs),
    /// Delete an existing context
    #[command(visible_alias = "d")]
    Delete {
        /// Name of the context to delete
        context_name: String,
    },
}

#[derive(Debug, Args)]
pub struct ContextCreateArgs {
    /// Name of the context to create
    pub context_name: String,
    /// The transport to use
    #[arg(long)]
    pub transport: Option<String>,
    /// The server address for the TCP transport
    #[arg(long)]
    pub tcp_server_address: Option<String>,
    /// The API URL for the HTTP transport
    #[arg(long)]
    pub http_api_url: Option<String>,
    /// The server address for the QUIC transport
    #[arg(long)]
    pub quic_server_address: Option<String>,
    /// Flag to enable TLS for the TCP transport
    #[arg(long)]
    pub tcp_tls_enabled: Option<bool>,
    /// Iggy server username
    #[arg(short, long)]
    pub username: Option<String>,
    /// Iggy server password
    #[arg(short, long)]
    pub password: Option<String>,
    /// Iggy server personal access token
    #[arg(short, long)]
    pub token: Option<String>,
    /// Iggy server personal access token name
    #[arg(short = 'n', long)]
    pub token_name: Option<String>,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Login session expiry time in human-readable format (default 15minutes; "none" = never)
    pub expiry: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}
