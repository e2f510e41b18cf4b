//! Rust client library for the broker (and any Iggy 0.8.0 server).
//!
//! The protocol itself lives in `rill_core`; this crate will add the tokio transports, the
//! low-level client and the high-level producer and consumer (issue "Rust SDK and the iggy CLI").

pub use rill_core as protocol;
