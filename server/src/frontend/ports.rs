//! Probes run by the main thread before any listener binds: our sockets use SO_REUSEPORT, so
//! a port another process holds must be detected rather than silently shared.

use std::net::SocketAddr;
use std::time::Duration;

/// How long a port may look taken before the start gives up. A broker killed with SIGKILL
/// keeps its sockets for a moment after it is reaped (its io_uring, which holds them, is torn
/// down asynchronously), so a restart right after a crash must wait that out; a live broker
/// holds the port for good.
pub const PORT_PROBE_PATIENCE: Duration = Duration::from_secs(5);

/// Retries `taken` until it reports the port free or [`PORT_PROBE_PATIENCE`] runs out; returns
/// the last reason it was taken.
pub fn wait_for_free_port(mut taken: impl FnMut() -> Option<String>) -> Result<(), String> {
    let deadline = std::time::Instant::now() + PORT_PROBE_PATIENCE;
    loop {
        match taken() {
            None => return Ok(()),
            Some(reason) if std::time::Instant::now() >= deadline => return Err(reason),
            Some(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Our listeners use SO_REUSEPORT, which lets a second broker (same user) bind the same port
/// silently and take half its connections. A plain bind cannot tell that apart from the
/// connections a killed predecessor left in FIN_WAIT (which block it, yet must not block a
/// restart after a crash), so the probe asks whether anything accepts connections there.
pub fn refuse_taken_tcp_port(address: SocketAddr) -> Result<(), String> {
    if address.port() == 0 {
        return Ok(());
    }
    let mut target = address;
    if target.ip().is_unspecified() {
        target.set_ip(match address {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    wait_for_free_port(|| {
        std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200))
            .is_ok()
            .then(|| {
                format!(
                    "cannot listen on {address} (TCP): address in use: another process accepts connections there"
                )
            })
    })
}
