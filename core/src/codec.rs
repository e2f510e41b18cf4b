//! Byte-level reading and writing shared by every encoding in the crate.
//!
//! All integers are little-endian (protocol.md conventions). [`Reader`] checks every length
//! against the bytes actually present before touching them, so decoders built on it cannot panic
//! or allocate more than the input holds.

use crate::error::DecodeError;
use bytes::BufMut;

/// Something that can be written to the wire.
pub trait Encode {
    /// Appends the encoded bytes to `out`.
    fn encode<B: BufMut>(&self, out: &mut B);

    /// The exact number of bytes [`Encode::encode`] writes.
    fn encoded_len(&self) -> usize;

    /// Encodes into a new vector of exactly the right capacity.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out);
        debug_assert_eq!(out.len(), self.encoded_len());
        out
    }
}

/// Something that can be read from the wire.
pub trait Decode: Sized {
    /// Reads one value, advancing the reader past it.
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes a whole payload. Trailing bytes are ignored, as upstream does (protocol.md 1.3).
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(&mut Reader::new(bytes))
    }
}

/// A cursor over a byte slice whose every read is bounds-checked.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, position: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// How many bytes have been read.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Takes the next `len` bytes, or fails with status 3 naming `what`.
    pub fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if len > self.remaining() {
            return Err(DecodeError::truncated(what));
        }
        let slice = &self.bytes[self.position..self.position + len];
        self.position += len;
        Ok(slice)
    }

    /// The bytes not read yet, without reading them.
    pub fn unread(&self) -> &'a [u8] {
        &self.bytes[self.position..]
    }

    /// Takes everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let slice = &self.bytes[self.position..];
        self.position = self.bytes.len();
        slice
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let slice = self.take(N, what)?;
        let mut array = [0u8; N];
        array.copy_from_slice(slice);
        Ok(array)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    pub fn u128(&mut self, what: &'static str) -> Result<u128, DecodeError> {
        self.array(what).map(u128::from_le_bytes)
    }

    pub fn f32(&mut self, what: &'static str) -> Result<f32, DecodeError> {
        self.array(what).map(f32::from_le_bytes)
    }

    /// A one-byte boolean: any non-zero value is true (protocol.md 2.7).
    pub fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        Ok(self.u8(what)? != 0)
    }

    /// UTF-8 text of `len` bytes (bad UTF-8 is status 3).
    pub fn utf8(&mut self, len: usize, what: &'static str) -> Result<String, DecodeError> {
        let bytes = self.take(len, what)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| DecodeError::invalid(what))
    }

    /// A `Str32`: u32 length then UTF-8 (may be empty). The length is checked against the bytes
    /// present before anything is allocated.
    pub fn str32(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let len = self.u32(what)? as usize;
        self.utf8(len, what)
    }
}

/// Writes a `Str32` (u32 length + bytes).
pub fn put_str32<B: BufMut>(out: &mut B, value: &str) {
    out.put_u32_le(value.len() as u32);
    out.put_slice(value.as_bytes());
}

/// Writes a one-byte boolean.
pub fn put_bool<B: BufMut>(out: &mut B, value: bool) {
    out.put_u8(u8::from(value));
}

macro_rules! impl_integer {
    ($($ty:ty => $read:ident, $put:ident;)*) => {$(
        impl Encode for $ty {
            fn encode<B: BufMut>(&self, out: &mut B) {
                out.$put(*self);
            }
            fn encoded_len(&self) -> usize {
                std::mem::size_of::<$ty>()
            }
        }
        impl Decode for $ty {
            fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
                reader.$read(stringify!($ty))
            }
        }
    )*};
}

impl_integer! {
    u8 => u8, put_u8;
    u16 => u16, put_u16_le;
    u32 => u32, put_u32_le;
    u64 => u64, put_u64_le;
    u128 => u128, put_u128_le;
    f32 => f32, put_f32_le;
}

impl Encode for bool {
    fn encode<B: BufMut>(&self, out: &mut B) {
        put_bool(out, *self);
    }
    fn encoded_len(&self) -> usize {
        1
    }
}

impl Decode for bool {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.bool("bool")
    }
}

/// Declares a struct whose wire form is its fields encoded one after another, in order, and
/// implements [`Encode`] and [`Decode`] for it. Most commands and records have this shape.
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($(#[$field_meta:meta])* pub $field:ident : $ty:ty),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name { $($(#[$field_meta])* pub $field: $ty,)* }

        impl $crate::codec::Encode for $name {
            #[allow(unused_variables)]
            fn encode<B: bytes::BufMut>(&self, out: &mut B) {
                $($crate::codec::Encode::encode(&self.$field, out);)*
            }
            fn encoded_len(&self) -> usize {
                0 $(+ $crate::codec::Encode::encoded_len(&self.$field))*
            }
        }

        impl $crate::codec::Decode for $name {
            #[allow(unused_variables)]
            fn decode(
                reader: &mut $crate::codec::Reader<'_>,
            ) -> Result<Self, $crate::error::DecodeError> {
                Ok($name { $($field: $crate::codec::Decode::decode(reader)?,)* })
            }
        }
    };
}
pub(crate) use wire_struct;

/// Implements [`Encode`]/[`Decode`] for a record list (`X*` in protocol.md): records concatenated
/// with no count; the decoder loops until the payload ends, and a truncated record is an error.
impl<T: Encode> Encode for Vec<T> {
    fn encode<B: BufMut>(&self, out: &mut B) {
        for item in self {
            item.encode(out);
        }
    }
    fn encoded_len(&self) -> usize {
        self.iter().map(Encode::encoded_len).sum()
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut items = Vec::new();
        while !reader.is_empty() {
            let before = reader.remaining();
            items.push(T::decode(reader)?);
            // A record always consumes at least one byte; this guards the loop regardless.
            if reader.remaining() == before {
                return Err(DecodeError::invalid("record list"));
            }
        }
        Ok(items)
    }
}

/// `String` travels as a `Str32`: u32 length + UTF-8.
impl Encode for String {
    fn encode<B: BufMut>(&self, out: &mut B) {
        put_str32(out, self);
    }
    fn encoded_len(&self) -> usize {
        4 + self.len()
    }
}

impl Decode for String {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.str32("string")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_refuses_to_read_past_the_end() {
        let mut reader = Reader::new(&[1, 2, 3]);
        assert_eq!(reader.u16("a").unwrap(), 0x0201);
        assert_eq!(reader.u16("b").unwrap_err(), DecodeError::truncated("b"));
        assert_eq!(reader.u8("c").unwrap(), 3);
        assert!(reader.is_empty());
    }

    #[test]
    fn str32_with_huge_declared_length_fails_without_allocating() {
        let mut reader = Reader::new(&[0xff, 0xff, 0xff, 0xff, b'a']);
        assert!(reader.str32("s").is_err());
    }

    #[test]
    fn invalid_utf8_is_status_3() {
        let err = Reader::new(&[1, 0, 0, 0, 0xff]).str32("s").unwrap_err();
        assert_eq!(err.code, crate::ErrorCode::InvalidCommand);
    }
}
