//! The one test kit: starts the real `iggy-server` binary for the tests of every crate.
//!
//! - [`binary`]: the server binary (built once per test process, with test-only fault
//!   injection), and runs that must be refused.
//! - [`server`]: [`TestServer`], a running server on loopback ports with a temporary data
//!   directory, its log, restarts, `kill -9` and graceful stops.
//! - [`slots`]: bounds how many servers the tests of one process run at once.
//! - [`cluster`]: [`TestCluster`], several servers as one cluster; [`links`] puts their
//!   replica connections through proxies that can cut the network between them.

pub mod binary;
pub mod cluster;
pub mod links;
pub mod server;
pub mod slots;

pub use cluster::TestCluster;
pub use server::{ServerOptions, TestServer};

/// A port nothing listens on right now, never the same twice in this test process (for tests of
/// unreachable servers; servers themselves bind port 0).
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("address")
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}
