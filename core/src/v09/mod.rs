//! The Iggy 0.9 protocol (`../shared/docs/protocol-0.9.md`), spoken beside 0.8 on the same ports.
//!
//! A 0.9 connection starts with eight zero bytes (the first request header's checksum), which a
//! 0.8 frame never does: its length field is at least 4. [`is_v09_start`] is that rule; the
//! server applies it to the first eight bytes of every connection (after TLS) and of every QUIC
//! stream.
//!
//! Everything here turns 0.9 bytes into the 0.8 requests the server already handles and 0.8
//! results back into 0.9 bytes, so both generations share one store, one set of handlers and
//! one permission model: [`header`] frames, [`requests`] and [`responses`] bodies, [`options`]
//! the key-value options blocks, [`batch`] messages.

pub mod batch;
pub mod client;
pub mod header;
pub mod options;
pub mod requests;
pub mod responses;

/// The protocol version this server speaks, packed `major << 20 | minor << 10 | patch`: the
/// `iggy_binary_protocol` 0.11.0 that SDK 0.11.0 and apache-iggy 0.9.0 send.
pub const PROTOCOL_VERSION: u32 = 11 << 10;
/// The oldest client version accepted: the same minor line (protocol-0.9.md 3.3).
pub const PROTOCOL_VERSION_MIN: u32 = PROTOCOL_VERSION & !0x3FF;

/// How many bytes decide a connection's protocol.
pub const PROBE_LEN: usize = 8;

/// Whether a connection whose first bytes are `first` speaks 0.9.
pub fn is_v09_start(first: &[u8; PROBE_LEN]) -> bool {
    first.iter().all(|&byte| byte == 0)
}

/// Whether a client's protocol version is one this server accepts.
pub fn is_compatible(client: u32) -> bool {
    client >= PROTOCOL_VERSION_MIN && client >> 10 <= PROTOCOL_VERSION >> 10
}

/// Little-endian fields at fixed offsets of headers whose length the caller has checked.
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}
pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}
pub(crate) fn u128_at(bytes: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(bytes[at..at + 16].try_into().expect("16 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_eight_bytes_tell_the_generations_apart() {
        assert!(is_v09_start(&[0; 8]));
        // A 0.8 Ping and a 0.8 LoginUser.
        assert!(!is_v09_start(&[4, 0, 0, 0, 1, 0, 0, 0]));
        assert!(!is_v09_start(&[0x1c, 0, 0, 0, 0x26, 0, 0, 0]));
    }

    #[test]
    fn accepts_the_0_11_line_only() {
        assert_eq!(PROTOCOL_VERSION, 0x2C00);
        assert!(is_compatible(0x2C00) && is_compatible(0x2C05));
        assert!(!is_compatible(0x2800) && !is_compatible(0x3000) && !is_compatible(0));
    }
}
