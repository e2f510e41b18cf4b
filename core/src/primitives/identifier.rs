use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use crate::primitives::Name;
use bytes::BufMut;
use std::fmt;

/// Names a stream, topic, consumer group, user or consumer (protocol.md 2.1).
///
/// ```text
/// [kind u8: 1 numeric, 2 string][length u8][value: u32 LE, or `length` UTF-8 bytes]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identifier {
    Numeric(u32),
    String(Name),
}

impl Identifier {
    const NUMERIC: u8 = 1;
    const STRING: u8 = 2;

    pub fn numeric(id: u32) -> Self {
        Identifier::Numeric(id)
    }

    /// A string identifier; fails (status 4) on an empty or over-long name.
    pub fn named(name: &str) -> Result<Self, DecodeError> {
        Name::new(name).map(Identifier::String)
    }
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identifier::Numeric(id) => write!(f, "{id}"),
            Identifier::String(name) => write!(f, "{name}"),
        }
    }
}

impl From<u32> for Identifier {
    fn from(id: u32) -> Self {
        Identifier::Numeric(id)
    }
}

impl Encode for Identifier {
    fn encode<B: BufMut>(&self, out: &mut B) {
        match self {
            Identifier::Numeric(id) => {
                out.put_u8(Self::NUMERIC);
                out.put_u8(4);
                out.put_u32_le(*id);
            }
            Identifier::String(name) => {
                out.put_u8(Self::STRING);
                name.encode(out);
            }
        }
    }
    fn encoded_len(&self) -> usize {
        match self {
            Identifier::Numeric(_) => 6,
            Identifier::String(name) => 1 + name.encoded_len(),
        }
    }
}

impl Decode for Identifier {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let kind = reader.u8("identifier kind")?;
        match kind {
            Self::NUMERIC => {
                let len = reader.u8("identifier length")?;
                if len != 4 {
                    return Err(DecodeError::format("numeric identifier length"));
                }
                Ok(Identifier::Numeric(reader.u32("identifier value")?))
            }
            Self::STRING => Name::decode(reader).map(Identifier::String),
            _ => Err(DecodeError::invalid("identifier kind")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn encodes_as_protocol_examples() {
        assert_eq!(Identifier::numeric(0).to_bytes(), [1, 4, 0, 0, 0, 0]);
        assert_eq!(Identifier::numeric(1).to_bytes(), [1, 4, 1, 0, 0, 0]);
        assert_eq!(Identifier::named("s").unwrap().to_bytes(), [2, 1, 0x73]);
    }

    #[test]
    fn rejects_malformed_identifiers_with_protocol_codes() {
        let code = |bytes: &[u8]| Identifier::from_bytes(bytes).unwrap_err().code;
        assert_eq!(code(&[1, 3, 0, 0, 0]), ErrorCode::InvalidFormat);
        assert_eq!(code(&[2, 0]), ErrorCode::InvalidFormat);
        assert_eq!(code(&[3, 4, 0, 0, 0, 0]), ErrorCode::InvalidCommand);
        assert_eq!(code(&[1, 4, 0]), ErrorCode::InvalidCommand);
        assert_eq!(code(&[2, 2, 0xff, 0xfe]), ErrorCode::InvalidCommand);
    }
}
