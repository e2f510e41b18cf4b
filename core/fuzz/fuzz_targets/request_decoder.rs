//! Fuzzes the request decoder: the first 4 bytes are the command code (u32 LE), the rest is the
//! payload, fed through `Request::decode` exactly as a server would after reading a frame.
//! Must never panic; a rejection must carry a protocol status code; an accepted request must
//! re-encode to `payload_len()` bytes that decode to the same request.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rill_core::{CommandCode, ErrorCode, Request};

fuzz_target!(|data: &[u8]| {
    let Some((code, payload)) = data.split_first_chunk::<4>() else {
        return;
    };
    let code = u32::from_le_bytes(*code);
    match Request::decode(code, BytesMut::from(payload)) {
        Ok(request) => {
            assert_eq!(Some(request.command()), CommandCode::from_code(code));
            let mut encoded = Vec::new();
            request.encode_payload(&mut encoded);
            assert_eq!(encoded.len(), request.payload_len());
            let again = Request::decode(code, BytesMut::from(&encoded[..]))
                .expect("a re-encoded request decodes");
            assert_eq!(again, request);
        }
        Err(error) => {
            assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code));
            if CommandCode::from_code(code).is_none() {
                assert_eq!(error.code, ErrorCode::InvalidCommand);
            }
        }
    }
});
