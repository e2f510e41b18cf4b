//! User headers: the optional key/value blob carried after a message's payload (protocol.md 6.3).
//!
//! ```text
//! repeated: [key_kind u8][key_len u32][key bytes][value_kind u8][value_len u32][value bytes]
//! ```
//! Kinds are 1..=15; each field is 1..=255 bytes and fixed-size kinds have their natural size.
//! The server stores the blob opaquely; clients parse it on demand with [`parse`].

use crate::error::{DecodeError, ErrorCode};
use bytes::BufMut;

/// The largest user-header blob a message may carry.
pub const MAX_USER_HEADERS_BYTES: usize = 100_000;

/// Upstream's names of the kinds, by wire number (1-based).
const KIND_NAMES: [&str; 15] = [
    "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16",
    "uint32", "uint64", "uint128", "float32", "float64",
];

/// A header field's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum HeaderKind {
    Raw = 1,
    String = 2,
    Bool = 3,
    Int8 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    Int128 = 8,
    Uint8 = 9,
    Uint16 = 10,
    Uint32 = 11,
    Uint64 = 12,
    Uint128 = 13,
    Float32 = 14,
    Float64 = 15,
}

impl HeaderKind {
    pub fn from_u8(value: u8) -> Option<Self> {
        use HeaderKind::*;
        Some(match value {
            1 => Raw,
            2 => String,
            3 => Bool,
            4 => Int8,
            5 => Int16,
            6 => Int32,
            7 => Int64,
            8 => Int128,
            9 => Uint8,
            10 => Uint16,
            11 => Uint32,
            12 => Uint64,
            13 => Uint128,
            14 => Float32,
            15 => Float64,
            _ => return None,
        })
    }

    /// Upstream's name of the kind (its JSON and option catalog spelling): "raw", "uint32"...
    pub fn name(self) -> &'static str {
        KIND_NAMES[self as usize - 1]
    }

    /// The kind named `name` (see [`HeaderKind::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        let index = KIND_NAMES.iter().position(|known| *known == name)?;
        HeaderKind::from_u8(index as u8 + 1)
    }

    /// The exact size a value of this kind must have, or `None` for variable-length kinds.
    pub fn fixed_size(self) -> Option<usize> {
        use HeaderKind::*;
        match self {
            Raw | String => None,
            Bool | Int8 | Uint8 => Some(1),
            Int16 | Uint16 => Some(2),
            Int32 | Uint32 | Float32 => Some(4),
            Int64 | Uint64 | Float64 => Some(8),
            Int128 | Uint128 => Some(16),
        }
    }
}

/// One typed header field (a key or a value).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HeaderField {
    pub kind: HeaderKind,
    pub value: Vec<u8>,
}

impl HeaderField {
    pub fn string(value: &str) -> Self {
        HeaderField {
            kind: HeaderKind::String,
            value: value.as_bytes().to_vec(),
        }
    }

    /// Checks the length rules for this field.
    pub fn validate(&self, code: ErrorCode) -> Result<(), DecodeError> {
        let ok_len = match self.kind.fixed_size() {
            Some(size) => self.value.len() == size,
            None => (1..=255).contains(&self.value.len()),
        };
        if ok_len {
            Ok(())
        } else {
            Err(DecodeError::new(code, "user header length"))
        }
    }

    fn encoded_len(&self) -> usize {
        1 + 4 + self.value.len()
    }

    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u8(self.kind as u8);
        out.put_u32_le(self.value.len() as u32);
        out.put_slice(&self.value);
    }
}

/// Encodes key/value pairs into a blob (in the order given).
pub fn encode<B: BufMut>(headers: &[(HeaderField, HeaderField)], out: &mut B) {
    for (key, value) in headers {
        key.encode(out);
        value.encode(out);
    }
}

/// The blob size [`encode`] writes.
pub fn encoded_len(headers: &[(HeaderField, HeaderField)]) -> usize {
    headers
        .iter()
        .map(|(key, value)| key.encoded_len() + value.encoded_len())
        .sum()
}

/// Parses and validates a blob into key/value pairs.
pub fn parse(blob: &[u8]) -> Result<Vec<(HeaderField, HeaderField)>, DecodeError> {
    if blob.len() > MAX_USER_HEADERS_BYTES {
        return Err(DecodeError::new(
            ErrorCode::TooBigUserHeaders,
            "user headers",
        ));
    }
    let mut reader = crate::codec::Reader::new(blob);
    let mut pairs = Vec::new();
    while !reader.is_empty() {
        let key = read_field(&mut reader, ErrorCode::InvalidHeaderKey)?;
        if reader.is_empty() {
            return Err(DecodeError::new(
                ErrorCode::InvalidHeaderValue,
                "user header without value",
            ));
        }
        let value = read_field(&mut reader, ErrorCode::InvalidHeaderValue)?;
        pairs.push((key, value));
    }
    Ok(pairs)
}

fn read_field(
    reader: &mut crate::codec::Reader<'_>,
    code: ErrorCode,
) -> Result<HeaderField, DecodeError> {
    let kind = reader.u8("user header kind")?;
    let kind = HeaderKind::from_u8(kind).ok_or(DecodeError::new(
        ErrorCode::InvalidHeaderKind,
        "user header kind",
    ))?;
    let len = reader.u32("user header length")? as usize;
    let value = reader
        .take(len, "user header")
        .map_err(|_| DecodeError::new(code, "user header"))?;
    let field = HeaderField {
        kind,
        value: value.to_vec(),
    };
    field.validate(code)?;
    Ok(field)
}

#[cfg(test)]
mod tests {

    #[test]
    fn kind_names_round_trip() {
        for code in 1..=15u8 {
            let kind = HeaderKind::from_u8(code).unwrap();
            assert_eq!(HeaderKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(HeaderKind::Uint32.name(), "uint32");
        assert_eq!(HeaderKind::from_name("uint31"), None);
    }
    use super::*;

    #[test]
    fn string_pair_matches_protocol_example() {
        let pairs = vec![(HeaderField::string("k"), HeaderField::string("v"))];
        let mut blob = Vec::new();
        encode(&pairs, &mut blob);
        assert_eq!(blob, [0x02, 0x01, 0, 0, 0, 0x6b, 0x02, 0x01, 0, 0, 0, 0x76]);
        assert_eq!(encoded_len(&pairs), 12);
        assert_eq!(parse(&blob).unwrap(), pairs);
    }

    #[test]
    fn malformed_blobs_are_rejected() {
        // Odd number of fields.
        assert!(parse(&[2, 1, 0, 0, 0, b'k']).is_err());
        // Kind 0.
        assert!(parse(&[0, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v']).is_err());
        // A u32 value of 3 bytes.
        assert!(parse(&[2, 1, 0, 0, 0, b'k', 11, 3, 0, 0, 0, 1, 2, 3]).is_err());
        // Declared length past the end.
        assert!(parse(&[2, 0xff, 0xff, 0, 0, b'k']).is_err());
    }
}
