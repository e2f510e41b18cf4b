//! Hostile-input tests: every decoder the server or a client runs on bytes from the network
//! must never panic (nor allocate beyond the input), and every rejection must carry one of the
//! protocol's status codes appropriate to that decoder (protocol.md 1.3 and 8).
//!
//! How: proptest feeds (a) arbitrary byte strings, biased towards the small values that make
//! identifiers, lengths and flags look plausible, and (b) valid encodings with random mutations
//! (bit flips, byte overwrites, truncation, extension, insertion, removal, u32 fields set to
//! extreme values) to `Request::decode` for every command code and random codes,
//! `SendMessages::decode_owned` (and stamping what it accepts), `PolledMessages::decode_bytes`,
//! `MessageView::parse` / `MessageIter` / `MessageBatch::from_stored`,
//! `primitives::user_headers::parse`, every response type's `from_bytes`, and the frame
//! headers. Whatever a decoder *accepts* must re-encode to bytes of the reported length that
//! decode again to the same bytes (so accepted garbage is still a well-formed value).

mod arbitrary_bytes;
#[path = "../common/mod.rs"]
mod common;
mod edge_cases;
mod helpers;
mod mutations;
