//! Assertions: the round-trip check, and hex as written in protocol.md.

use rill_core::codec::{Decode, Encode};
use std::fmt::Debug;

/// Encodes `value`, checks the length it reports, decodes the bytes and checks the result
/// equals `value`; returns the bytes.
pub fn assert_round_trip<T: Encode + Decode + PartialEq + Debug>(value: &T) -> Vec<u8> {
    let bytes = value.to_bytes();
    assert_eq!(
        value.encoded_len(),
        bytes.len(),
        "encoded_len disagrees with the bytes written for {value:?}"
    );
    let decoded = T::from_bytes(&bytes)
        .unwrap_or_else(|error| panic!("cannot decode {value:?} from {bytes:02x?}: {error}"));
    assert_eq!(&decoded, value, "round trip changed the value");
    bytes
}

/// Parses hex with arbitrary whitespace and `|` separators, as written in protocol.md.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| byte.is_ascii_hexdigit())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}
