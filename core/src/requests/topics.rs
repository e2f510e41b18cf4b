//! Topic commands (protocol.md 4.5).

use crate::codec::wire_struct;
use crate::primitives::{CompressionAlgorithm, Identifier, Name};

wire_struct! {
    /// GetTopic (300).
    pub struct GetTopic { pub stream_id: Identifier, pub topic_id: Identifier }
}
wire_struct! {
    /// GetTopics (301).
    pub struct GetTopics { pub stream_id: Identifier }
}
wire_struct! {
    /// CreateTopic (302): the server assigns the id. `message_expiry` and `max_topic_size`:
    /// 0 = server default, u64::MAX = never / unlimited.
    pub struct CreateTopic {
        pub stream_id: Identifier,
        pub partitions_count: u32,
        pub compression_algorithm: CompressionAlgorithm,
        pub message_expiry: u64,
        pub max_topic_size: u64,
        pub replication_factor: u8,
        pub name: Name,
    }
}
wire_struct! {
    /// DeleteTopic (303).
    pub struct DeleteTopic { pub stream_id: Identifier, pub topic_id: Identifier }
}
wire_struct! {
    /// UpdateTopic (304).
    pub struct UpdateTopic {
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub compression_algorithm: CompressionAlgorithm,
        pub message_expiry: u64,
        pub max_topic_size: u64,
        pub replication_factor: u8,
        pub name: Name,
    }
}
wire_struct! {
    /// PurgeTopic (305).
    pub struct PurgeTopic { pub stream_id: Identifier, pub topic_id: Identifier }
}
