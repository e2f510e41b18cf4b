//! One-byte enumerations (protocol.md 2.6). An unknown value is status 3.

use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use bytes::BufMut;

macro_rules! byte_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($variant:ident = $value:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name { $($variant = $value),* }

        impl $name {
            pub const fn as_u8(self) -> u8 {
                self as u8
            }

            pub fn from_u8(value: u8) -> Result<Self, DecodeError> {
                match value {
                    $($value => Ok($name::$variant),)*
                    _ => Err(DecodeError::invalid($what)),
                }
            }
        }

        impl Encode for $name {
            fn encode<B: BufMut>(&self, out: &mut B) {
                out.put_u8(self.as_u8());
            }
            fn encoded_len(&self) -> usize {
                1
            }
        }

        impl Decode for $name {
            fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
                Self::from_u8(reader.u8($what)?)
            }
        }
    };
}
pub(crate) use byte_enum;

/// The names an enumeration has in JSON bodies, option values and printed tables, one table for
/// the server's HTTP API, the SDK's HTTP transport, the 0.9 options and the CLI.
macro_rules! names {
    ($name:ident { $($variant:ident => $label:literal),* $(,)? }) => {
        impl $name {
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $label,)*
                }
            }

            /// Reads a name in any letter case.
            pub fn from_name(text: &str) -> Option<Self> {
                $(if text.eq_ignore_ascii_case($label) {
                    return Some($name::$variant);
                })*
                None
            }
        }
    };
}

byte_enum!(
    /// How a topic's messages are compressed (stored, not applied, by the server).
    CompressionAlgorithm, "compression algorithm" { None = 1, Gzip = 2 }
);

byte_enum!(
    /// Whether a user may log in.
    UserStatus, "user status" { Active = 1, Inactive = 2 }
);

byte_enum!(
    /// The transport a client session arrived on (client records).
    Transport, "transport" { Tcp = 1, Quic = 2, Http = 3, WebSocket = 4 }
);

names!(CompressionAlgorithm { None => "none", Gzip => "gzip" });
names!(UserStatus { Active => "active", Inactive => "inactive" });
names!(Transport { Tcp => "TCP", Quic => "QUIC", Http => "HTTP", WebSocket => "WebSocket" });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_are_rejected() {
        assert_eq!(
            CompressionAlgorithm::from_u8(2).unwrap(),
            CompressionAlgorithm::Gzip
        );
        assert!(CompressionAlgorithm::from_u8(0).is_err());
        assert!(UserStatus::from_u8(3).is_err());
        assert_eq!(Transport::from_bytes(&[4]).unwrap(), Transport::WebSocket);
    }

    #[test]
    fn names_read_back_in_any_case() {
        for algorithm in [CompressionAlgorithm::None, CompressionAlgorithm::Gzip] {
            assert_eq!(
                CompressionAlgorithm::from_name(algorithm.name()),
                Some(algorithm)
            );
        }
        assert_eq!(
            CompressionAlgorithm::from_name("GZIP"),
            Some(CompressionAlgorithm::Gzip)
        );
        assert_eq!(
            UserStatus::from_name("Inactive"),
            Some(UserStatus::Inactive)
        );
        assert_eq!(
            Transport::from_name("websocket"),
            Some(Transport::WebSocket)
        );
        assert_eq!(Transport::Quic.name(), "QUIC");
        assert_eq!(CompressionAlgorithm::from_name("lz4"), None);
    }
}
