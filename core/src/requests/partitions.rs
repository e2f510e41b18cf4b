//! Partition and segment commands (protocol.md 4.6).

use crate::codec::wire_struct;
use crate::primitives::Identifier;

wire_struct! {
    /// CreatePartitions (402): appends `partitions_count` partitions.
    pub struct CreatePartitions { pub stream_id: Identifier, pub topic_id: Identifier, pub partitions_count: u32 }
}
wire_struct! {
    /// DeletePartitions (403): removes the last `partitions_count` partitions.
    pub struct DeletePartitions { pub stream_id: Identifier, pub topic_id: Identifier, pub partitions_count: u32 }
}
wire_struct! {
    /// DeleteSegments (503): deletes up to `segments_count` of the oldest sealed segments.
    pub struct DeleteSegments {
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: u32,
        pub segments_count: u32,
    }
}
