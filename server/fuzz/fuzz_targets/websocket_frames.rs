//! Fuzzes the WebSocket front-end's parsers (`frontend::websocket`): the frame decoder over an
//! arbitrary client byte stream, which must never panic or allocate beyond a control frame's
//! 125 bytes, and must reach the same payload, events and verdict however the stream is split
//! into reads; and the opening handshake's request check, which must never panic.
//!
//! Input: byte 0 picks the limits (bit 0: accept unmasked frames; bits 1-2: frame and message
//! limits), bytes 1..4 the read sizes, the rest is the stream (and, whole, the handshake head).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rill_server::frontend::websocket::{frame, handshake};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (pieces, stream) = rest.split_at(rest.len().min(4));
    let limits = frame::Limits {
        accept_unmasked: flags & 1 != 0,
        max_frame: (flags & 2 != 0).then_some(64),
        max_message: (flags & 4 != 0).then_some(200),
    };
    let pieces: Vec<usize> = pieces.iter().map(|&size| usize::from(size)).collect();
    let whole = frame::decode_all(limits, stream, &[]);
    let split = frame::decode_all(limits, stream, &pieces);
    assert_eq!(
        whole, split,
        "the outcome depends on how the stream is split"
    );
    if let Some(end) = handshake::head_end(stream) {
        let _ = handshake::check_request(&stream[..end]);
    }
});
