//! Consumer group and consumer offset records (protocol.md 7.7, 7.8).

use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use crate::primitives::Name;
use bytes::BufMut;

wire_struct! {
    /// A consumer group record (GetConsumerGroups, CreateConsumerGroup).
    pub struct ConsumerGroupInfo {
        pub id: u32,
        pub partitions_count: u32,
        pub members_count: u32,
        pub name: Name,
    }
}

/// A member of a group and the partitions it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    pub id: u32,
    pub partitions: Vec<u32>,
}

impl Encode for ConsumerGroupMember {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u32_le(self.id);
        out.put_u32_le(self.partitions.len() as u32);
        self.partitions.encode(out);
    }
    fn encoded_len(&self) -> usize {
        8 + 4 * self.partitions.len()
    }
}

impl Decode for ConsumerGroupMember {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let id = reader.u32("member id")?;
        let count = reader.u32("member partitions count")?;
        let mut partitions = Vec::new();
        for _ in 0..count {
            partitions.push(reader.u32("member partition")?);
        }
        Ok(ConsumerGroupMember { id, partitions })
    }
}

/// GetConsumerGroup response: the record followed by exactly `members_count` members.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupDetails {
    pub group: ConsumerGroupInfo,
    pub members: Vec<ConsumerGroupMember>,
}

impl Encode for ConsumerGroupDetails {
    fn encode<B: BufMut>(&self, out: &mut B) {
        ConsumerGroupInfo {
            members_count: self.members.len() as u32,
            ..self.group.clone()
        }
        .encode(out);
        self.members.encode(out);
    }
    fn encoded_len(&self) -> usize {
        self.group.encoded_len() + self.members.encoded_len()
    }
}

impl Decode for ConsumerGroupDetails {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let group = ConsumerGroupInfo::decode(reader)?;
        let mut members = Vec::new();
        for _ in 0..group.members_count {
            members.push(ConsumerGroupMember::decode(reader)?);
        }
        Ok(ConsumerGroupDetails { group, members })
    }
}

wire_struct! {
    /// GetConsumerOffset response (20 bytes).
    pub struct ConsumerOffsetInfo { pub partition_id: u32, pub current_offset: u64, pub stored_offset: u64 }
}
