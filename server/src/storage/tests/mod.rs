//! Unit tests of the partition paths: appends and reads in every ack mode, visibility, rotation,
//! on-disk formats, reopen, timestamps, retention, purge, flush, limits, errors, the pool on the
//! hot path, and the buffered fallback. Model and crash tests are in `server/tests/`.

#![allow(clippy::disallowed_methods, reason = "tests and benchmarks may block")]

mod appends;
mod checksums;
mod direct_io;
mod failures;
mod helpers;
mod hot_path;
mod read_ahead;
mod reopen;
mod replicas;
mod retention;
mod wal;
