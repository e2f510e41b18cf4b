//! Fuzzes framing: the input is a byte stream as a TCP connection delivers it, cut into request
//! frames exactly as the server's read loop does (8-byte header, `RequestHeader::payload_len`
//! against the limits, payload, `Request::decode`), and the same bytes as a stream of response
//! frames as a client reads them (`ResponseHeader::parse`/`result`). Must never panic; a header
//! too large ends the stream (the server closes the connection), a length below 4 is skipped.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rill_core::frame::{
    FrameError, MAX_CONTROL_PAYLOAD_BYTES, REQUEST_HEADER_SIZE, RESPONSE_HEADER_SIZE,
    RequestHeader, ResponseHeader,
};
use rill_core::{ErrorCode, Request};

/// The server's default `tcp.max_send_messages_size` (64 MiB).
const MAX_SEND_BYTES: usize = 64 << 20;

fn requests(mut stream: &[u8]) {
    while let Some((header, rest)) = stream.split_first_chunk::<REQUEST_HEADER_SIZE>() {
        let header = RequestHeader::parse(*header);
        assert_eq!(RequestHeader::parse(header.to_bytes()), header);
        match header.payload_len(MAX_SEND_BYTES) {
            Ok(len) => {
                assert!(len <= MAX_SEND_BYTES.max(MAX_CONTROL_PAYLOAD_BYTES));
                let Some((payload, rest)) = rest.split_at_checked(len) else {
                    return; // truncated frame: the server waits for the rest, then times out
                };
                if let Err(error) = Request::decode(header.code, BytesMut::from(payload)) {
                    assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code));
                }
                stream = rest;
            }
            Err(error @ FrameError::LengthTooSmall) => {
                assert!(header.length < 4 && !error.closes_connection());
                stream = rest;
            }
            Err(error @ FrameError::TooLarge { .. }) => {
                assert!(error.closes_connection());
                return;
            }
        }
    }
}

fn responses(mut stream: &[u8]) {
    while let Some((header, rest)) = stream.split_first_chunk::<RESPONSE_HEADER_SIZE>() {
        let header = ResponseHeader::parse(*header);
        assert_eq!(ResponseHeader::parse(header.to_bytes()), header);
        match header.result() {
            Ok(len) => match rest.split_at_checked(len) {
                Some((_, rest)) => stream = rest,
                None => return,
            },
            Err(code) => {
                assert_eq!(ErrorCode::from_code(code.code()), Some(code));
                stream = rest;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    requests(data);
    responses(data);
});
