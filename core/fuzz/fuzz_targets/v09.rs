//! Fuzzes the 0.9 protocol's decoders (rill_core::v09): the first byte picks one, the rest is
//! its input. Request headers, Register bodies, every command body (the next two bytes pick the
//! command code), send bodies with batches, 0.8 reply payloads translated to 0.9, and stored
//! messages rewritten as 0.9 poll batches, and 0.9 replies read back by our clients. Must never
//! panic; a rejection carries a protocol status; a send that is accepted keeps every message;
//! polled batches decode back with valid checksums, and our clients read them back.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rill_core::ErrorCode;
use rill_core::v09::{batch, client, header, requests, responses};

/// Command codes a 0.9 client can name.
const CODES: [u32; 40] = [
    1, 10, 11, 12, 13, 20, 21, 22, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 100, 101, 102, 120, 121,
    122, 200, 201, 202, 203, 204, 205, 300, 301, 302, 303, 304, 305, 402, 503, 604, 606,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 7 {
        0 => {
            let mut bytes = [0u8; header::HEADER_SIZE];
            let len = rest.len().min(header::HEADER_SIZE);
            bytes[..len].copy_from_slice(&rest[..len]);
            if let Ok(parsed) = header::RequestHeader::parse(&bytes, 1 << 20) {
                assert!(parsed.size as usize >= header::HEADER_SIZE);
                let again = header::RequestHeader::parse(&parsed.encode(), 1 << 20);
                assert_eq!(again, Ok(parsed));
            }
        }
        1 => {
            let _ = requests::decode_login(rest);
        }
        2 => {
            let Some((code, body)) = rest.split_first_chunk::<2>() else {
                return;
            };
            let code = CODES[usize::from(u16::from_le_bytes(*code)) % CODES.len()];
            if let Err(error) = requests::decode(code, BytesMut::from(body)) {
                assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code));
            }
        }
        3 => {
            if let Ok(send) = batch::decode_send(rest) {
                assert!(send.batch.count() >= 1);
            }
        }
        4 => {
            let Some((code, payload)) = rest.split_first() else {
                return;
            };
            let code = [200, 201, 202, 300, 301, 302, 31, 32, 33, 10][usize::from(*code) % 10];
            // Topics of odd ids chose their segment size, even ones did not; id 0 has none.
            let size = |topic: u32| {
                (topic != 0).then_some(responses::SegmentSize {
                    bytes: 1 << 20,
                    explicit: topic % 2 == 1,
                })
            };
            let _ = responses::translate(code, payload, &size);
        }
        5 => {
            let Some((code, payload)) = rest.split_first() else {
                return;
            };
            let code =
                [100, 101, 200, 201, 202, 300, 301, 302, 31, 32, 33][usize::from(*code) % 11];
            let _ = client::translate_reply(code, payload);
            if let Some(head) = payload.first_chunk::<{ header::HEADER_SIZE }>() {
                let _ = client::read_reply_header(head);
            }
        }
        _ => {
            let mut head = [0u8; 16];
            head[12..16].copy_from_slice(&1u32.to_le_bytes());
            if let Ok(body) = batch::encode_polled(&head, rest) {
                batch::decode_polled(&body).expect("polled batches decode with valid checksums");
                client::translate_reply(100, &body).expect("our clients read polled batches");
            }
        }
    }
});
