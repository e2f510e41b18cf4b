//! The broker daemon's library: everything `iggy-server` runs, importable by tests and benches.

pub mod storage;
