//! The broker daemon's library: everything `iggy-server` runs, importable by tests and benches.
//!
//! Map: [`config`] (TOML + env), [`server`] (boot, threads, signals, shutdown), [`shard`]
//! (per-core runtime, shards table, cross-shard messages, owned partitions), [`control`]
//! (shard 0's metadata writer), [`metadata`] (model, log, snapshot), [`frontend`] (transports),
//! [`handlers`] (one function per command), [`storage`] (segmented logs on O_DIRECT io_uring),
//! [`metrics`] (per-shard cells, Prometheus exposition), [`http`] (the operators' endpoint),
//! [`logging`] (text/JSON lines, rotated files), [`stats`] (the GetStats figures), [`limits`]
//! (RLIMIT_NOFILE raised at start).

pub mod admission;
pub mod auth;
pub mod clients;
pub mod cluster;
pub mod config;
pub mod control;
pub mod encryption;
pub mod frontend;
pub mod groups;
pub mod handlers;
pub mod http;
pub mod io_driver;
pub mod layout;
pub mod limits;
pub mod logging;
pub mod maintenance;
pub mod metadata;
pub mod metrics;
pub mod permissions;
pub mod server;
pub mod session;
pub mod shard;
pub mod stats;
pub mod storage;
pub mod system_info;
pub mod telemetry;
pub mod time;
pub mod tls;
pub mod views;
