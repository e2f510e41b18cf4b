use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use bytes::BufMut;
use std::fmt;

/// A `Name`: one length byte (1..=255) then that many bytes of UTF-8. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(String);

impl Name {
    pub const MAX_LEN: usize = 255;

    /// Validates `value` as a name: 1..=255 bytes (an empty or longer name is status 4).
    pub fn new(value: impl Into<String>) -> Result<Self, DecodeError> {
        let value = value.into();
        if value.is_empty() || value.len() > Self::MAX_LEN {
            return Err(DecodeError::format("name length"));
        }
        Ok(Name(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Encode for Name {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u8(self.0.len() as u8);
        out.put_slice(self.0.as_bytes());
    }
    fn encoded_len(&self) -> usize {
        1 + self.0.len()
    }
}

impl Decode for Name {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = reader.u8("name length")? as usize;
        if len == 0 {
            return Err(DecodeError::format("empty name"));
        }
        Ok(Name(reader.utf8(len, "name")?))
    }
}

/// A length-prefixed secret or short byte string (`u8` length + UTF-8), as used for passwords.
/// Unlike [`Name`] it may be empty on the wire; the server validates lengths itself.
#[derive(Clone, PartialEq, Eq)]
pub struct ShortString(pub String);

impl fmt::Debug for ShortString {
    // Passwords travel in this type: never print them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShortString(<{} bytes>)", self.0.len())
    }
}

impl ShortString {
    /// A string of at most 255 bytes (longer is status 4).
    pub fn new(value: impl Into<String>) -> Result<Self, DecodeError> {
        let value = value.into();
        if value.len() > 255 {
            return Err(DecodeError::format("string longer than 255 bytes"));
        }
        Ok(ShortString(value))
    }
}

impl Encode for ShortString {
    fn encode<B: BufMut>(&self, out: &mut B) {
        // A longer value would be cut to its low length byte and desynchronise the frame:
        // build values with `ShortString::new`.
        assert!(
            self.0.len() <= 255,
            "ShortString of {} bytes cannot be encoded",
            self.0.len()
        );
        out.put_u8(self.0.len() as u8);
        out.put_slice(self.0.as_bytes());
    }
    fn encoded_len(&self) -> usize {
        1 + self.0.len()
    }
}

impl Decode for ShortString {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = reader.u8("string length")? as usize;
        Ok(ShortString(reader.utf8(len, "string")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_name_is_invalid_format() {
        let err = Name::from_bytes(&[0]).unwrap_err();
        assert_eq!(err.code, crate::ErrorCode::InvalidFormat);
        assert_eq!(
            Name::new("").unwrap_err().code,
            crate::ErrorCode::InvalidFormat
        );
        assert!(Name::new("x".repeat(256)).is_err());
    }

    #[test]
    fn name_round_trips() {
        let name = Name::new("orders").unwrap();
        assert_eq!(name.to_bytes(), b"\x06orders");
        assert_eq!(Name::from_bytes(&name.to_bytes()).unwrap(), name);
    }
}
