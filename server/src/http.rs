//! The operators' HTTP endpoint: `GET /metrics` (Prometheus text), `GET /ping`, `GET /stats`
//! (the GetStats figures as JSON).
//!
//! Why a dedicated thread with blocking `std::net` rather than a task on a shard: a scrape walks
//! every shard's cells, the shards table and /proc, which is milliseconds of work that would
//! otherwise stall that shard's connections and partitions (and shard 0 also runs the control
//! lane). A scrape every few seconds does not need io_uring, and a blocking accept loop on its
//! own thread needs no runtime, cannot starve a shard, and reads the shards' metric cells
//! without touching their threads (they are written with relaxed stores and read here).
//! Each connection is served on a short-lived thread (at most [`MAX_CONNECTIONS`] at once, with
//! read and write timeouts) so a stalled client cannot block the next scrape. A request head
//! must arrive within `http.request_head_timeout` in all, and when every slot is taken a new
//! connection replaces the one whose head has been arriving longest: slow clients (slowloris)
//! cannot keep a scraper out. The protocol is the minimal HTTP/1.1 a scraper or curl needs: one
//! GET or HEAD per connection, answered with `Connection: close`. `/stats` needs a user with
//! read_servers (HTTP Basic, or a personal access token as a Bearer token) unless
//! `http.public_stats` opens it.

use crate::metadata::Metadata;
use crate::metrics::exposition::{self, IoUringTracker, Scrape};
use crate::shard::SharedState;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once; more are refused with 503.
const MAX_CONNECTIONS: usize = 8;
/// Longest request head accepted.
const MAX_REQUEST_BYTES: usize = 8 * 1024;
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

struct Endpoint {
    shared: Arc<SharedState>,
    rings: Mutex<IoUringTracker>,
    active: AtomicUsize,
    /// Connections whose head is still arriving: id, start, a handle to cut them off.
    heads: Mutex<Vec<(u64, Instant, TcpStream)>>,
    next_id: AtomicU64,
}

impl Endpoint {
    /// Cuts off the connection whose head has been arriving longest; false if there is none.
    fn evict_slowest_head(&self) -> bool {
        let Ok(heads) = self.heads.lock() else {
            return false;
        };
        let Some((_, started, stream)) = heads.iter().min_by_key(|(_, started, _)| *started) else {
            return false;
        };
        tracing::debug!(waited = ?started.elapsed(), "HTTP: dropping the slowest request head for a new connection");
        // Its thread's read fails at once and the thread ends, freeing the slot.
        let _ = stream.shutdown(std::net::Shutdown::Both);
        true
    }
}

/// Binds `http.address` and serves it on a new thread. Returns the bound address.
pub fn start(shared: Arc<SharedState>) -> Result<SocketAddr, String> {
    let address = shared.config.http.address;
    let listener = TcpListener::bind(address)
        .map_err(|error| format!("cannot listen for HTTP on {address}: {error}"))?;
    let bound = listener.local_addr().map_err(|error| error.to_string())?;
    let _ = shared.http_address.set(bound);
    let endpoint = Arc::new(Endpoint {
        shared,
        rings: Mutex::new(IoUringTracker::default()),
        active: AtomicUsize::new(0),
        heads: Mutex::new(Vec::new()),
        next_id: AtomicU64::new(0),
    });
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || accept_loop(endpoint, listener))
        .map_err(|error| format!("cannot start the HTTP thread: {error}"))?;
    Ok(bound)
}

fn accept_loop(endpoint: Arc<Endpoint>, listener: TcpListener) {
    for stream in listener.incoming() {
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "HTTP accept failed");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if endpoint.active.load(Ordering::Acquire) >= MAX_CONNECTIONS
            && endpoint.evict_slowest_head()
        {
            // Give the cut-off thread a moment to leave its slot.
            for _ in 0..50 {
                if endpoint.active.load(Ordering::Acquire) < MAX_CONNECTIONS {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        if endpoint.active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            endpoint.active.fetch_sub(1, Ordering::AcqRel);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let _ = respond(
                &mut stream,
                Reply::text(503, "Service Unavailable", "busy\n"),
                false,
            );
            continue;
        }
        let served = endpoint.clone();
        let spawned = std::thread::Builder::new()
            .name("http-conn".into())
            .spawn(move || {
                serve(&served, stream);
                served.active.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(error) = spawned {
            endpoint.active.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(%error, "cannot start an HTTP connection thread");
        }
    }
}

struct Reply {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
}

impl Reply {
    fn text(status: u16, reason: &'static str, body: &str) -> Reply {
        Reply {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            body: body.as_bytes().to_vec(),
        }
    }
}

fn serve(endpoint: &Endpoint, mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let id = endpoint.next_id.fetch_add(1, Ordering::Relaxed);
    let deadline = Instant::now() + endpoint.shared.config.http.request_head_timeout.0;
    if let (Ok(handle), Ok(mut heads)) = (stream.try_clone(), endpoint.heads.lock()) {
        heads.push((id, Instant::now(), handle));
    }
    let head = read_head(&mut stream, deadline);
    if let Ok(mut heads) = endpoint.heads.lock() {
        heads.retain(|(other, _, _)| *other != id);
    }
    let head = match head {
        Ok(Some(head)) => head,
        Ok(None) => {
            let _ = respond(
                &mut stream,
                Reply::text(400, "Bad Request", "bad request\n"),
                false,
            );
            return;
        }
        Err(_) => return,
    };
    let (method, path) = match parse_request_line(&head) {
        Some(parsed) => parsed,
        None => {
            let _ = respond(
                &mut stream,
                Reply::text(400, "Bad Request", "bad request\n"),
                false,
            );
            return;
        }
    };
    let head_only = method == "HEAD";
    let reply = if method != "GET" && !head_only {
        Reply::text(405, "Method Not Allowed", "only GET and HEAD\n")
    } else {
        route(endpoint, path, &head)
    };
    let _ = respond(&mut stream, reply, head_only);
}

/// Reads up to the blank line ending the request head, by `deadline`. None if it is too long
/// or malformed; an error if it does not arrive in time.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Option<String>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&chunk[..read]);
        if let Some(end) = head.windows(4).position(|window| window == b"\r\n\r\n") {
            head.truncate(end);
            return Ok(String::from_utf8(head).ok());
        }
        if head.len() > MAX_REQUEST_BYTES {
            return Ok(None);
        }
    }
}

/// (method, path without query) from `METHOD /path?query HTTP/1.x`.
fn parse_request_line(head: &str) -> Option<(&str, &str)> {
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") || parts.next().is_some() || !target.starts_with('/') {
        return None;
    }
    Some((method, target.split('?').next().unwrap_or(target)))
}

fn route(endpoint: &Endpoint, path: &str, head: &str) -> Reply {
    match path {
        "/ping" => Reply::text(200, "OK", "pong"),
        "/metrics" => Reply {
            status: 200,
            reason: "OK",
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            body: metrics_page(endpoint).into_bytes(),
        },
        "/stats" if !endpoint.shared.config.http.public_stats && !may_read_stats(endpoint, head) => {
            Reply {
                status: 401,
                reason: "Unauthorized",
                content_type: "text/plain; charset=utf-8",
                body: b"credentials of a user with read_servers needed (Basic, or Bearer <personal access token>)\n".to_vec(),
            }
        }
        "/stats" => match current_stats(&endpoint.shared) {
            Some(stats) => Reply {
                status: 200,
                reason: "OK",
                content_type: "application/json",
                body: {
                    let mut json = crate::stats::stats_json(&stats);
                    json["io_driver"] = io_driver(&endpoint.shared).into();
                    json.to_string().into_bytes()
                },
            },
            None => Reply::text(503, "Service Unavailable", "shutting down\n"),
        },
        _ => Reply::text(404, "Not Found", "not found: try /metrics, /ping, /stats\n"),
    }
}

/// Whether the request's `Authorization` header names a user allowed to read server figures:
/// HTTP Basic (username and password, checked like a login) or a personal access token as a
/// Bearer token.
fn may_read_stats(endpoint: &Endpoint, head: &str) -> bool {
    use base64::Engine;
    let Some(value) = head.lines().skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| value.trim())
    }) else {
        return false;
    };
    let metadata: left_right::ReadHandle<Metadata> = endpoint.shared.metadata.handle();
    let allowed = |user: &crate::metadata::User| {
        user.status == rill_core::primitives::UserStatus::Active
            && crate::permissions::allowed(user, crate::permissions::Action::ReadServers)
    };
    if let Some(token) = value.strip_prefix("Bearer ") {
        let hash = crate::auth::token_hash(token.trim());
        let now = crate::time::now_micros();
        return metadata.enter().is_some_and(|metadata| {
            metadata.tokens.get(&hash).is_some_and(|token| {
                token.expiry_at.is_none_or(|expiry| expiry > now)
                    && metadata.users.get(&token.user_id).is_some_and(allowed)
            })
        });
    }
    let Some(encoded) = value.strip_prefix("Basic ") else {
        return false;
    };
    let Some(credentials) = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return false;
    };
    let Some((username, password)) = credentials.split_once(':') else {
        return false;
    };
    let user = metadata.enter().and_then(|metadata| {
        metadata
            .users
            .values()
            .find(|user| user.username == username)
            .cloned()
    });
    // An unknown user costs a password check too, as a binary login does.
    let hash = user
        .as_ref()
        .map_or(crate::auth::dummy_password_hash(), |user| {
            user.password_hash.as_str()
        });
    crate::auth::verify_password(password, hash) && user.as_ref().is_some_and(allowed)
}

fn respond(stream: &mut TcpStream, reply: Reply, head_only: bool) -> std::io::Result<()> {
    let challenge = if reply.status == 401 {
        "WWW-Authenticate: Basic realm=\"iggy\"\r\n"
    } else {
        ""
    };
    let mut response = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{challenge}Connection: close\r\n\r\n",
        reply.status,
        reply.reason,
        reply.content_type,
        reply.body.len()
    )
    .into_bytes();
    if !head_only {
        response.extend_from_slice(&reply.body);
    }
    stream.write_all(&response)?;
    stream.flush()
}

/// GetStats as shard connections answer it (without the permission check: the endpoint is
/// for operators, as upstream's /metrics). None once the metadata is gone (shutdown).
fn current_stats(shared: &SharedState) -> Option<rill_core::responses::Stats> {
    let metadata: left_right::ReadHandle<Metadata> = shared.metadata.handle();
    let counts = crate::stats::metadata_counts(&*metadata.enter()?);
    Some(crate::stats::server_stats(shared, counts))
}

fn metrics_page(endpoint: &Endpoint) -> String {
    let shared = &endpoint.shared;
    let Some(stats) = current_stats(shared) else {
        return prometheus_client_eof();
    };
    let metrics = shared.metrics.snapshot();
    let ring_fds: Vec<i32> = metrics.shards.iter().map(|shard| shard.ring_fd).collect();
    let rings = endpoint
        .rings
        .lock()
        .map(|mut tracker| tracker.read(&ring_fds))
        .unwrap_or_default();
    let (storage, top_partitions) =
        exposition::gather_partitions(shared, shared.config.http.metrics_top_partitions);
    exposition::encode(Scrape {
        metrics,
        stats,
        storage,
        top_partitions,
        rings,
        process: exposition::process_figures(shared.started_at_micros),
        io_driver: io_driver(shared),
    })
}

/// The driver the shards run on (the planned one until a shard has started).
fn io_driver(shared: &SharedState) -> &'static str {
    shared
        .io_driver
        .get()
        .copied()
        .unwrap_or(shared.io_plan.driver)
        .name()
}

fn prometheus_client_eof() -> String {
    "# EOF\n".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_parsed_strictly() {
        assert_eq!(
            parse_request_line("GET /metrics HTTP/1.1\r\nHost: x"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(
            parse_request_line("HEAD /stats?pretty=1 HTTP/1.0"),
            Some(("HEAD", "/stats"))
        );
        assert_eq!(parse_request_line("GET /metrics"), None);
        assert_eq!(parse_request_line("GET metrics HTTP/1.1"), None);
        assert_eq!(parse_request_line("GET /a b HTTP/1.1"), None);
        assert_eq!(parse_request_line(""), None);
    }
}
