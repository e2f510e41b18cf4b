//! `iggy topic`: create, delete, update, get, list and purge topics of a stream.

use super::shared::ListArgs;
use clap::Subcommand;

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
