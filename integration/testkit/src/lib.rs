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

/// A port for a server that must know its port before it starts (a cluster's roster), free
/// for TCP and UDP right now and never handed out twice in this test process. It lies below
/// the kernel's ephemeral range, where no port-0 bind or outgoing connection of the other
/// tests running meanwhile can take it before the server binds it; each process starts at
/// its own place there so that concurrent test processes do not meet.
pub fn listen_port() -> u16 {
    static NEXT: std::sync::Mutex<Option<u16>> = std::sync::Mutex::new(None);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    const LOW: u16 = 10_000;
    if ephemeral_low <= LOW + 1000 {
        return free_port();
    }
    let span = u32::from(ephemeral_low - LOW);
    let mut next = NEXT.lock().unwrap_or_else(|e| e.into_inner());
    let mut port = next.unwrap_or_else(|| LOW + (std::process::id() * 97 % span) as u16);
    for _ in 0..span {
        let candidate = port;
        port = if port + 1 >= ephemeral_low {
            LOW
        } else {
            port + 1
        };
        let free = std::net::TcpListener::bind(("127.0.0.1", candidate)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", candidate)).is_ok();
        if free {
            *next = Some(port);
            return candidate;
        }
    }
    free_port()
}

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
