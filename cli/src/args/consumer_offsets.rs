//! `iggy consumer-offset`: stored offsets of consumers and consumer groups.

use clap::{Subcommand, ValueEnum};

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
