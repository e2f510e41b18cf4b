//! `iggy message`: send, poll and flush messages.

use clap::{Args, Subcommand, ValueEnum};

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
