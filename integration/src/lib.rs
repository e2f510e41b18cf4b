//! Harness for the end-to-end tests in `integration/tests/`: each test starts the real
//! `iggy-server` binary on 127.0.0.1 with a fresh temporary data directory and talks to it over
//! TCP or QUIC, either with the official Apache Iggy SDK (`iggy` 0.10.0) or with raw frames.
//!
//! The server binary is built on first use with `cargo build -p rill-server --bin iggy-server`
//! (once per test process), so `cargo test --workspace` works from a clean checkout. Set
//! `IGGY_SERVER_BIN` to test a binary built elsewhere (the build step is then skipped).
//!
//! Environment variables understood by the harness and tests:
//! - `IGGY_SERVER_BIN`: server binary to test instead of building `target/debug/iggy-server`.
//! - `IGGY_TEST_MAX_SERVERS`: how many servers one test process runs at once (default 2).
//! - `IGGY_TEST_SHOW_LOG`: print each server's log when its test ends, even if it passed.
//! - `RILL_TEST_IO_DRIVER`: every server runs on this `system.io_driver` (`polling` exercises the
//!   fallback used where io_uring is refused).
//! - `RILL_PYTHON_V09`: a Python with apache-iggy 0.9.0 (default: a venv under the target
//!   directory, created on first use).
//! - `IGGY_CLI_BIN` / `IGGY_CLI_V014_BIN`: the official CLI 0.13.0 / 0.14.0 for
//!   `tests/official_cli*.rs` (default `$CARGO_HOME/bin/iggy` /
//!   `$CARGO_HOME/iggy-cli-0.14.0/bin/iggy`, installed by `scripts/install-iggy-cli.sh`).
//!
//! Every `IGGY_*` variable is removed from the server's environment before the harness sets its
//! own, so these never reach the server.
//!
//! Code map:
//! - [`binary`]: finds (and builds) the server binary.
//! - [`crash_cycles`]: kill -9 cycles under load and the checks after each restart (the
//!   `crash-cycles` binary and `tests/reliability_crash_cycles.rs`).
//! - [`server`]: [`TestServer`], one server process with its own port and data directory.
//! - [`slots`]: a process-wide limit on how many servers run at once.
//! - [`sdk`]: official SDK clients connected to a [`TestServer`].
//! - [`sdk_v011`]: the official 0.9-generation clients (Rust SDK 0.11.0, Python 0.9.0).
//! - [`raw`]: a blocking raw-frame TCP client for malformed-input and pre-login cases.
//! - [`raw_v09`]: the same for the 0.9 protocol (golden bytes, duplicates, hostile frames).
//! - [`fixtures`]: test messages and comparisons of what was sent with what was polled.
//! - [`official_cli`]: runs the official `iggy` CLI (0.13.0 or 0.14.0) against a [`TestServer`]
//!   over TCP, QUIC or HTTP.

pub mod crash_cycles;
pub mod fixtures;
pub mod http;
pub mod official_cli;
pub mod raw;
pub mod raw_v09;
pub mod sdk;
pub mod sdk_v011;

// The server harness lives in the test kit that every crate's tests share.
pub use rill_testkit::{ServerOptions, TestCluster, TestServer, binary, server, slots};
