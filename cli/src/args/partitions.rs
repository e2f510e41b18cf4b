//! `iggy partition` and `iggy segment`: a topic's partitions and a partition's segments.

use clap::Subcommand;

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
