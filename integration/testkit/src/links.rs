//! [`ReplicaLinks`]: the replica connections of a [`crate::TestCluster`] through small TCP
//! proxies, one per ordered pair of nodes, so that a test can cut the network between processes
//! that go on running (a partition), then heal it.
//!
//! Node `i` dials node `j` at proxy `(i, j)`, which forwards to `j`'s replica listener: each
//! node is given a roster in which the other nodes' replica ports are its own proxies (the
//! roster's ids and client ports stay the same everywhere, which is all the nodes compare).
//! Cutting a pair closes its open connections in both directions and refuses new ones until it
//! is healed, as a peer behind a firewall that rejects packets would look.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

/// One direction's proxy: what node `from` dials to reach node `to`.
#[derive(Debug)]
struct Link {
    from: usize,
    to: usize,
    port: u16,
    cut: Arc<AtomicBool>,
    /// Both sockets of every forwarded connection, to close them when cut.
    open: Arc<Mutex<Vec<TcpStream>>>,
}

/// The proxies between the nodes of one cluster. Dropping it stops accepting (the threads of
/// connections still open end with them).
#[derive(Debug)]
pub struct ReplicaLinks {
    links: Vec<Link>,
    stop: Arc<AtomicBool>,
}

impl ReplicaLinks {
    /// Proxies between `count` nodes whose replica listeners are on `replica_ports`.
    pub fn start(replica_ports: &[u16]) -> ReplicaLinks {
        let stop = Arc::new(AtomicBool::new(false));
        let mut links = Vec::new();
        for (from, _) in replica_ports.iter().enumerate() {
            for (to, &port) in replica_ports.iter().enumerate() {
                if from != to {
                    let target = SocketAddr::from(([127, 0, 0, 1], port));
                    links.push(Link::start(from, to, target, Arc::clone(&stop)));
                }
            }
        }
        ReplicaLinks { links, stop }
    }

    /// The port node `from` dials to reach node `to`.
    pub fn port(&self, from: usize, to: usize) -> u16 {
        self.link(from, to).port
    }

    /// Cuts node `a` off from node `b`, both ways.
    pub fn cut(&self, a: usize, b: usize) {
        self.link(a, b).set_cut(true);
        self.link(b, a).set_cut(true);
    }

    /// Cuts node `node` off from every other node.
    pub fn isolate(&self, node: usize) {
        for link in &self.links {
            if link.from == node || link.to == node {
                link.set_cut(true);
            }
        }
    }

    /// Restores every link.
    pub fn heal(&self) {
        for link in &self.links {
            link.set_cut(false);
        }
    }

    fn link(&self, from: usize, to: usize) -> &Link {
        self.links
            .iter()
            .find(|link| link.from == from && link.to == to)
            .unwrap_or_else(|| panic!("no link from node {from} to node {to}"))
    }
}

impl Drop for ReplicaLinks {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for link in &self.links {
            link.close_all();
        }
    }
}

impl Link {
    fn start(from: usize, to: usize, target: SocketAddr, stop: Arc<AtomicBool>) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy");
        let port = listener.local_addr().expect("proxy address").port();
        // Polled, so that the thread sees `stop`.
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let cut = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (accept_cut, accept_open) = (Arc::clone(&cut), Arc::clone(&open));
        thread::Builder::new()
            .name(format!("proxy-{from}-{to}"))
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            if accept_cut.load(Ordering::Relaxed) {
                                continue; // dropped: the dialer sees the connection closed
                            }
                            if let Err(error) = forward(client, target, &accept_open) {
                                eprintln!("proxy {from}->{to}: {error}");
                            }
                        }
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(5));
                        }
                        Err(error) => eprintln!("proxy {from}->{to} accept: {error}"),
                    }
                }
            })
            .expect("spawn a proxy thread");
        Link {
            from,
            to,
            port,
            cut,
            open,
        }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::Relaxed);
        if cut {
            self.close_all();
        }
    }

    fn close_all(&self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap_or_else(PoisonError::into_inner));
        for socket in open {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// Connects to `target` and copies bytes both ways on two threads until either side closes.
fn forward(
    client: TcpStream,
    target: SocketAddr,
    open: &Arc<Mutex<Vec<TcpStream>>>,
) -> io::Result<()> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect_timeout(&target, Duration::from_secs(1))?;
    for socket in [&client, &server] {
        socket.set_nodelay(true)?;
    }
    open.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend([client.try_clone()?, server.try_clone()?]);
    let pipe = |mut from: TcpStream, mut to: TcpStream| {
        move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match from.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if to.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    };
    thread::spawn(pipe(client.try_clone()?, server.try_clone()?));
    thread::spawn(pipe(server, client));
    Ok(())
}
