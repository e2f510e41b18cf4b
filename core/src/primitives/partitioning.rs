use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use bytes::BufMut;

/// How SendMessages picks a partition (protocol.md 2.4): `[kind u8][length u8][value]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Partitioning {
    /// Server-side round robin over the topic's partitions.
    Balanced,
    /// An explicit 0-based partition id.
    PartitionId(u32),
    /// xxHash32 of the key, modulo the partition count. 1..=255 bytes.
    MessagesKey(Vec<u8>),
}

impl Partitioning {
    const BALANCED: u8 = 1;
    const PARTITION_ID: u8 = 2;
    const MESSAGES_KEY: u8 = 3;
    pub const MAX_KEY_LEN: usize = 255;

    /// A key partitioning; fails on an empty or over-long key.
    pub fn key(key: impl Into<Vec<u8>>) -> Result<Self, DecodeError> {
        let key = key.into();
        if key.is_empty() || key.len() > Self::MAX_KEY_LEN {
            return Err(DecodeError::format("messages key length"));
        }
        Ok(Partitioning::MessagesKey(key))
    }
}

impl Encode for Partitioning {
    fn encode<B: BufMut>(&self, out: &mut B) {
        match self {
            Partitioning::Balanced => {
                out.put_u8(Self::BALANCED);
                out.put_u8(0);
            }
            Partitioning::PartitionId(id) => {
                out.put_u8(Self::PARTITION_ID);
                out.put_u8(4);
                out.put_u32_le(*id);
            }
            Partitioning::MessagesKey(key) => {
                out.put_u8(Self::MESSAGES_KEY);
                out.put_u8(key.len() as u8);
                out.put_slice(key);
            }
        }
    }
    fn encoded_len(&self) -> usize {
        2 + match self {
            Partitioning::Balanced => 0,
            Partitioning::PartitionId(_) => 4,
            Partitioning::MessagesKey(key) => key.len(),
        }
    }
}

impl Decode for Partitioning {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let kind = reader.u8("partitioning kind")?;
        let len = reader.u8("partitioning length")? as usize;
        let value = reader.take(len, "partitioning value")?;
        match (kind, len) {
            (Self::BALANCED, 0) => Ok(Partitioning::Balanced),
            (Self::PARTITION_ID, 4) => Ok(Partitioning::PartitionId(u32::from_le_bytes(
                value.try_into().expect("4 bytes"),
            ))),
            (Self::MESSAGES_KEY, 1..) => Ok(Partitioning::MessagesKey(value.to_vec())),
            _ => Err(DecodeError::invalid("partitioning")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_protocol_examples() {
        assert_eq!(Partitioning::Balanced.to_bytes(), [1, 0]);
        assert_eq!(Partitioning::PartitionId(0).to_bytes(), [2, 4, 0, 0, 0, 0]);
        assert_eq!(
            Partitioning::key("ab").unwrap().to_bytes(),
            [3, 2, b'a', b'b']
        );
        assert!(Partitioning::from_bytes(&[2, 3, 0, 0, 0]).is_err());
        assert!(Partitioning::from_bytes(&[3, 0]).is_err());
        assert!(Partitioning::from_bytes(&[9, 0]).is_err());
    }
}
