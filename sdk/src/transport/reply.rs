//! A whole reply from one buffer: for transports whose unit is a message (WebSocket), where
//! the reply's bytes arrive together and the stream readers of `mod.rs` do not apply.

use super::{MAX_RESPONSE_BYTES, RawResponse};
use crate::config::Protocol;
use bytes::Bytes;
use rill_core::frame::{RESPONSE_HEADER_SIZE, ResponseHeader};
use rill_core::v09;
use std::io;

/// Parses `message` as one complete reply of `protocol`: a 0.8 response (8-byte header, then
/// the payload for status 0) or a 0.9 reply or eviction (256-byte header, then the body). The
/// payload is a slice of `message`, not a copy. Anything but exactly one reply is an error:
/// bytes missing or left over mean the two sides no longer agree on where replies start.
pub fn parse_reply(protocol: Protocol, message: Bytes) -> io::Result<RawResponse> {
    let (header_size, length, status) = match protocol {
        Protocol::V08 => {
            let header: [u8; RESPONSE_HEADER_SIZE] = message
                .get(..RESPONSE_HEADER_SIZE)
                .and_then(|head| head.try_into().ok())
                .ok_or_else(|| short(&message, RESPONSE_HEADER_SIZE))?;
            let header = ResponseHeader::parse(header);
            // An error carries no payload (protocol.md 1.2), whatever its length field says;
            // the TCP reader does not read one either.
            if header.status != 0 {
                return Ok(RawResponse {
                    status: header.status,
                    payload: Bytes::new(),
                });
            }
            (RESPONSE_HEADER_SIZE, header.length as usize, 0)
        }
        Protocol::V09 => {
            let header: &[u8; v09::header::HEADER_SIZE] = message
                .get(..v09::header::HEADER_SIZE)
                .and_then(|head| head.try_into().ok())
                .ok_or_else(|| short(&message, v09::header::HEADER_SIZE))?;
            let (length, status) = v09::client::read_reply_header(header)
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.to_string()))?;
            (v09::header::HEADER_SIZE, length, status)
        }
    };
    if length > MAX_RESPONSE_BYTES {
        return Err(super::too_large(length));
    }
    let body = message.len() - header_size;
    if body != length {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "a reply message of {} bytes declares a {length}-byte body but carries {body}",
                message.len()
            ),
        ));
    }
    Ok(RawResponse {
        status,
        payload: message.slice(header_size..),
    })
}

fn short(message: &[u8], header_size: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "a reply message of {} bytes is shorter than the {header_size}-byte reply header",
            message.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v08(status: u32, payload: &[u8]) -> Bytes {
        let mut bytes = status.to_le_bytes().to_vec();
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(payload);
        Bytes::from(bytes)
    }

    #[test]
    fn v08_replies_need_exactly_their_payload() {
        let ok = parse_reply(Protocol::V08, v08(0, &[7, 8, 9])).unwrap();
        assert_eq!((ok.status, &ok.payload[..]), (0, &[7u8, 8, 9][..]));
        let error = parse_reply(Protocol::V08, v08(40, &[])).unwrap();
        assert_eq!((error.status, error.payload.len()), (40, 0));
        let mut truncated = v08(0, &[1, 2, 3]).to_vec();
        truncated.pop();
        assert!(parse_reply(Protocol::V08, truncated.into()).is_err());
        let mut extra = v08(0, &[1]).to_vec();
        extra.push(0);
        assert!(parse_reply(Protocol::V08, extra.into()).is_err());
        assert!(parse_reply(Protocol::V08, Bytes::from_static(&[0, 0, 0])).is_err());
    }

    #[test]
    fn v09_replies_and_evictions() {
        let mut reply = vec![0u8; 256];
        reply[48..52].copy_from_slice(&258u32.to_le_bytes());
        reply[60] = 8;
        reply.extend_from_slice(&[5, 6]);
        let ok = parse_reply(Protocol::V09, reply.clone().into()).unwrap();
        assert_eq!((ok.status, &ok.payload[..]), (0, &[5u8, 6][..]));
        reply.pop();
        assert!(parse_reply(Protocol::V09, reply.into()).is_err());

        let mut eviction = vec![0u8; 256];
        eviction[48..52].copy_from_slice(&256u32.to_le_bytes());
        eviction[60] = 13;
        eviction[255] = 13;
        let evicted = parse_reply(Protocol::V09, eviction.into()).unwrap();
        assert_eq!(evicted.status, 30, "stale client");
        assert!(parse_reply(Protocol::V09, vec![0u8; 100].into()).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            v09 in any::<bool>(),
        ) {
            let protocol = if v09 { Protocol::V09 } else { Protocol::V08 };
            if let Ok(reply) = parse_reply(protocol, Bytes::from(bytes.clone())) {
                prop_assert!(reply.payload.len() <= bytes.len());
            }
        }

        #[test]
        fn any_v08_reply_round_trips(status in 0u32..3, payload in proptest::collection::vec(any::<u8>(), 0..300)) {
            let reply = parse_reply(Protocol::V08, v08(status, &payload)).unwrap();
            prop_assert_eq!(reply.status, status);
            let expected: &[u8] = if status == 0 { &payload } else { &[] };
            prop_assert_eq!(&reply.payload[..], expected);
        }
    }
}
