use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use crate::primitives::Identifier;
use crate::primitives::enums::byte_enum;
use bytes::BufMut;

byte_enum!(
    /// A plain consumer or a consumer group (protocol.md 2.2).
    ConsumerKind, "consumer kind" { Consumer = 1, ConsumerGroup = 2 }
);

/// Who is polling or storing an offset: `kind u8` followed by an [`Identifier`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Consumer {
    pub kind: ConsumerKind,
    pub id: Identifier,
}

impl Consumer {
    pub fn new(id: impl Into<Identifier>) -> Self {
        Consumer {
            kind: ConsumerKind::Consumer,
            id: id.into(),
        }
    }

    pub fn group(id: impl Into<Identifier>) -> Self {
        Consumer {
            kind: ConsumerKind::ConsumerGroup,
            id: id.into(),
        }
    }
}

impl Encode for Consumer {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.kind.encode(out);
        self.id.encode(out);
    }
    fn encoded_len(&self) -> usize {
        1 + self.id.encoded_len()
    }
}

impl Decode for Consumer {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Consumer {
            kind: ConsumerKind::decode(reader)?,
            id: Identifier::decode(reader)?,
        })
    }
}

/// An optional partition id, always 5 bytes: `flag u8` (1 = present) + `partition_id u32`
/// (written as 0 when absent) (protocol.md 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OptionalPartition(pub Option<u32>);

impl Encode for OptionalPartition {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u8(u8::from(self.0.is_some()));
        out.put_u32_le(self.0.unwrap_or(0));
    }
    fn encoded_len(&self) -> usize {
        5
    }
}

impl Decode for OptionalPartition {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let present = reader.u8("partition flag")? == 1;
        let id = reader.u32("partition id")?;
        Ok(OptionalPartition(present.then_some(id)))
    }
}

impl From<Option<u32>> for OptionalPartition {
    fn from(value: Option<u32>) -> Self {
        OptionalPartition(value)
    }
}
