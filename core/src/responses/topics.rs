//! Topic and partition records (protocol.md 7.5, 7.6).

use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use crate::primitives::{CompressionAlgorithm, Name};
use bytes::BufMut;

wire_struct! {
    /// A topic header (GetTopics, inside StreamDetails). Expiry and max size are resolved:
    /// u64::MAX = never / unlimited.
    pub struct TopicInfo {
        pub id: u32,
        pub created_at: u64,
        pub partitions_count: u32,
        pub message_expiry: u64,
        pub compression_algorithm: CompressionAlgorithm,
        pub max_topic_size: u64,
        pub replication_factor: u8,
        pub size_bytes: u64,
        pub messages_count: u64,
        pub name: Name,
    }
}

wire_struct! {
    /// A partition record (40 bytes).
    pub struct PartitionInfo {
        pub id: u32,
        pub created_at: u64,
        pub segments_count: u32,
        pub current_offset: u64,
        pub size_bytes: u64,
        pub messages_count: u64,
    }
}

/// GetTopic / CreateTopic response: the header followed by exactly `partitions_count` records.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicDetails {
    pub topic: TopicInfo,
    pub partitions: Vec<PartitionInfo>,
}

impl Encode for TopicDetails {
    fn encode<B: BufMut>(&self, out: &mut B) {
        TopicInfo {
            partitions_count: self.partitions.len() as u32,
            ..self.topic.clone()
        }
        .encode(out);
        self.partitions.encode(out);
    }
    fn encoded_len(&self) -> usize {
        self.topic.encoded_len() + 40 * self.partitions.len()
    }
}

impl Decode for TopicDetails {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let topic = TopicInfo::decode(reader)?;
        let mut partitions = Vec::new();
        for _ in 0..topic.partitions_count {
            partitions.push(PartitionInfo::decode(reader)?);
        }
        Ok(TopicDetails { topic, partitions })
    }
}
