//! The Apache Iggy 0.8.0 binary protocol, sans I/O.
//!
//! Everything the server, SDK, CLI and bench share about bytes on the wire: frames
//! ([`frame`]), the 47 commands' requests ([`requests`]) and responses ([`responses`]), the
//! shared encodings ([`primitives`]), messages with zero-copy views ([`message`]) and every
//! status code ([`ErrorCode`]). `../shared/docs/protocol.md` is the reference for every byte.
//!
//! This crate does no I/O and owns no runtime: it turns bytes into values and values into bytes.
//! Every decoder checks each length against the bytes present before reading or allocating, and
//! reports malformed input as a [`DecodeError`] carrying the status to answer with.

pub mod codec;
pub mod error;
pub mod frame;
pub mod hash;
pub mod message;
pub mod primitives;
pub mod requests;
pub mod responses;
pub mod units;
pub mod v09;

pub use codec::{Decode, Encode, Reader};
pub use error::{DecodeError, ErrorCode};
pub use requests::{Command, CommandCode, Request};
