//! Reliability under hostile and broken network peers (issue 10): a fuzzer sends random and
//! mutated frames while a well-behaved client produces and consumes, and abusive clients (never
//! reading responses, never sending, dripping bytes) must neither grow the server's memory
//! without bound nor starve anyone else.
//!
//! Environment:
//! - `RILL_FUZZ_SECONDS`: how long the network fuzzer runs (default 20).
//! - `RILL_FUZZ_SEED`: the fuzzer's seed (default: from the clock; always printed, so a failing
//!   run can be replayed with the same sequence of cases per worker).

#[path = "../support/mod.rs"]
mod support;

mod abusive_clients;
mod fuzzer;
mod helpers;
mod network_fuzzing;
