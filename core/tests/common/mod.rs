//! Shared proptest generators and helpers for the protocol test suites.
//!
//! Every generator produces *valid* values only (names 1..=255 bytes, passwords ≤ 255 bytes,
//! known enum values, finite floats, counts consistent with the records that follow), so that
//! a round trip through the wire must reproduce them exactly. Text mixes ASCII with arbitrary
//! Unicode scalars (1- to 4-byte UTF-8) and hits the 255-byte limits on purpose.

#![allow(dead_code)]

mod assertions;
mod messages;
mod primitives;
mod requests;
mod responses;

// Each test binary uses its own part of the helpers.
#[allow(unused_imports)]
pub use self::{assertions::*, messages::*, primitives::*, requests::*, responses::*};
