//! `iggy consumer-group`: consumer groups of a topic.

use super::shared::ListArgs;
use clap::Subcommand;

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
