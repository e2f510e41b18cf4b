//! Stream records (protocol.md 7.4).

use super::topics::TopicInfo;
use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use crate::primitives::Name;
use bytes::BufMut;

wire_struct! {
    /// A stream record (GetStreams, CreateStream).
    pub struct StreamInfo {
        pub id: u32,
        pub created_at: u64,
        pub topics_count: u32,
        pub size_bytes: u64,
        pub messages_count: u64,
        pub name: Name,
    }
}

/// GetStream response: the stream record followed by exactly `topics_count` topic headers.
/// Encoding writes `topics_count` from `topics`, so the two cannot disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamDetails {
    pub stream: StreamInfo,
    pub topics: Vec<TopicInfo>,
}

impl Encode for StreamDetails {
    fn encode<B: BufMut>(&self, out: &mut B) {
        StreamInfo {
            topics_count: self.topics.len() as u32,
            ..self.stream.clone()
        }
        .encode(out);
        self.topics.encode(out);
    }
    fn encoded_len(&self) -> usize {
        self.stream.encoded_len() + self.topics.encoded_len()
    }
}

impl Decode for StreamDetails {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let stream = StreamInfo::decode(reader)?;
        let mut topics = Vec::new();
        for _ in 0..stream.topics_count {
            topics.push(TopicInfo::decode(reader)?);
        }
        Ok(StreamDetails { stream, topics })
    }
}
