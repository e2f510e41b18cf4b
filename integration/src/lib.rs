//! Helpers for integration tests that start the real `iggy-server` binary (server core issue).

pub use rill_core as protocol;
