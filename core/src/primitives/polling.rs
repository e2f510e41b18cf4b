use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use crate::primitives::enums::byte_enum;
use bytes::BufMut;

byte_enum!(
    /// Where a poll starts (protocol.md 2.5 and 5.3).
    PollingKind, "polling kind" { Offset = 1, Timestamp = 2, First = 3, Last = 4, Next = 5 }
);

/// A polling strategy: always 9 bytes, `kind u8` + `value u64` (ignored for First/Last/Next).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PollingStrategy {
    pub kind: PollingKind,
    pub value: u64,
}

impl PollingStrategy {
    pub fn offset(offset: u64) -> Self {
        PollingStrategy {
            kind: PollingKind::Offset,
            value: offset,
        }
    }
    pub fn timestamp(timestamp_micros: u64) -> Self {
        PollingStrategy {
            kind: PollingKind::Timestamp,
            value: timestamp_micros,
        }
    }
    pub fn first() -> Self {
        PollingStrategy {
            kind: PollingKind::First,
            value: 0,
        }
    }
    pub fn last() -> Self {
        PollingStrategy {
            kind: PollingKind::Last,
            value: 0,
        }
    }
    pub fn next() -> Self {
        PollingStrategy {
            kind: PollingKind::Next,
            value: 0,
        }
    }
}

impl Encode for PollingStrategy {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.kind.encode(out);
        out.put_u64_le(self.value);
    }
    fn encoded_len(&self) -> usize {
        9
    }
}

impl Decode for PollingStrategy {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(PollingStrategy {
            kind: PollingKind::decode(reader)?,
            value: reader.u64("polling value")?,
        })
    }
}
