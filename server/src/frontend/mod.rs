//! Transport front-ends. Every transport turns bytes into (code, payload) frames and hands them
//! to [`process_frame`], which decodes, authenticates, routes and encodes the response the same
//! way for all of them; a transport only moves bytes.

pub mod ports;
pub mod quic;
pub mod tcp;

use crate::clients::ClientEntry;
use crate::handlers::{self, Response};
use crate::metrics;
use crate::session::Session;
use crate::shard::Shard;
use bytes::{Bytes, BytesMut};
use rill_core::frame::ResponseHeader;
use rill_core::primitives::Transport;
use rill_core::{ErrorCode, Request};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long shutdown waits for connections to finish their current request.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest request payload accepted before login: logins are a few hundred bytes, and nothing
/// else may be sent before one.
pub const MAX_UNAUTHENTICATED_PAYLOAD: usize = 64 * 1024;

/// One client session's registration: in the clients table (GetClients/GetMe) and in the
/// shard's connection count (shutdown waits for it to reach zero). Dropping it undoes both and
/// takes the client out of its consumer groups, however the connection ended.
pub struct Registration {
    shard: Rc<Shard>,
    client_id: u32,
    transport: Transport,
    /// Handed over to another shard, which registered it there: dropping this one only
    /// undoes this shard's counts.
    handed_over: bool,
}

impl Registration {
    pub fn new(shard: &Rc<Shard>, peer: SocketAddr, transport: Transport) -> (Self, Session) {
        let client_id = rill_core::hash::client_id(&peer.to_string());
        shard.shared.clients.register(ClientEntry {
            client_id,
            address: peer.to_string(),
            transport,
            user_id: None,
            groups: Vec::new(),
            shard: shard.id,
        });
        shard.connections.set(shard.connections.get() + 1);
        shard.metrics.transport(transport).connected();
        tracing::debug!(shard = shard.id, client_id, %peer, ?transport, "client connected");
        let session = Session::new(client_id, peer, transport);
        let registration = Registration {
            shard: shard.clone(),
            client_id,
            transport,
            handed_over: false,
        };
        (registration, session)
    }

    /// Registers on `shard` a session another shard handed over (see [`tcp::adopt`]).
    pub fn adopt(shard: &Rc<Shard>, session: &Session) -> Self {
        shard.shared.clients.set_shard(session.client_id, shard.id);
        shard.connections.set(shard.connections.get() + 1);
        shard.metrics.transport(session.transport).adopted();
        Registration {
            shard: shard.clone(),
            client_id: session.client_id,
            transport: session.transport,
            handed_over: false,
        }
    }

    /// The session now belongs to another shard: the client stays registered and in its
    /// groups; only this shard's counts drop.
    pub fn hand_over(mut self) {
        self.handed_over = true;
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let shard = &self.shard;
        shard.connections.set(shard.connections.get() - 1);
        shard.metrics.transport(self.transport).disconnected();
        if self.handed_over {
            return;
        }
        shard.shared.groups.leave_all(self.client_id);
        shard.shared.clients.remove(self.client_id);
        tracing::debug!(
            shard = shard.id,
            client_id = self.client_id,
            "client disconnected"
        );
    }
}

/// Sessions that have not logged in get `unauthenticated_timeout` from `connected_at`; with
/// heartbeats verified, logged-in sessions get until their heartbeat deadline; otherwise no limit.
pub fn idle_limit(shard: &Shard, session: &Session, connected_at: Instant) -> Option<Duration> {
    let heartbeat = &shard.shared.config.heartbeat;
    match session.user_id {
        Some(_) if heartbeat.enabled => {
            Some(heartbeat_limit(shard).saturating_sub(session.last_heartbeat.elapsed()))
        }
        Some(_) => None,
        None => Some(
            shard
                .shared
                .config
                .tcp
                .unauthenticated_timeout
                .0
                .saturating_sub(connected_at.elapsed()),
        ),
    }
}

fn heartbeat_limit(shard: &Shard) -> Duration {
    shard.shared.config.heartbeat.interval.0.mul_f64(1.2)
}

/// Handles one request frame, unless the session has missed its heartbeats: then everything but
/// a Ping is answered with StaleClient, which closes the connection.
pub async fn process_request(
    shard: &Shard,
    session: &mut Session,
    code: u32,
    payload: BytesMut,
) -> ResponseFrame {
    let stale = shard.shared.config.heartbeat.enabled
        && session.user_id.is_some()
        && session.last_heartbeat.elapsed() > heartbeat_limit(shard);
    if stale && code != rill_core::CommandCode::Ping.code() {
        tracing::info!(
            client_id = session.client_id,
            "session missed its heartbeats; closing"
        );
        return ResponseFrame::error(ErrorCode::StaleClient);
    }
    process_frame(shard, session, code, payload).await
}

pub async fn with_optional_timeout<T>(
    limit: Option<Duration>,
    future: impl Future<Output = T>,
) -> Option<T> {
    match limit {
        Some(limit) => compio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}

/// Most iovecs one response write carries; longer poll responses are coalesced.
const MAX_IOVECS: usize = 512;

/// A response frame ready to be written with one vectored write.
pub struct ResponseFrame {
    pub chunks: Vec<Bytes>,
    /// The status, so the transport can close after the statuses that require it.
    pub status: Option<ErrorCode>,
}

impl ResponseFrame {
    pub fn error(code: ErrorCode) -> Self {
        ResponseFrame {
            chunks: vec![Bytes::copy_from_slice(
                &ResponseHeader::error(code).to_bytes(),
            )],
            status: Some(code),
        }
    }

    fn ok(response: Response) -> Self {
        let header = ResponseHeader::ok(response.len()).to_bytes();
        let chunks = match response {
            Response::Empty => vec![Bytes::copy_from_slice(&header)],
            Response::Bytes(payload) => {
                let mut frame = Vec::with_capacity(8 + payload.len());
                frame.extend_from_slice(&header);
                frame.extend_from_slice(&payload);
                vec![Bytes::from(frame)]
            }
            Response::Polled {
                header: poll_header,
                chunks,
            } => {
                let mut first = Vec::with_capacity(8 + poll_header.len());
                first.extend_from_slice(&header);
                first.extend_from_slice(&poll_header);
                if chunks.len() + 1 > MAX_IOVECS {
                    let total = first.len() + chunks.iter().map(Bytes::len).sum::<usize>();
                    let mut frame = Vec::with_capacity(total);
                    frame.extend_from_slice(&first);
                    chunks
                        .iter()
                        .for_each(|chunk| frame.extend_from_slice(chunk));
                    vec![Bytes::from(frame)]
                } else {
                    let mut all = Vec::with_capacity(chunks.len() + 1);
                    all.push(Bytes::from(first));
                    all.extend(chunks);
                    all
                }
            }
        };
        ResponseFrame {
            chunks,
            status: None,
        }
    }

    /// After this response the connection must close (protocol.md 1.3).
    pub fn closes_connection(&self) -> bool {
        self.status.is_some_and(ErrorCode::closes_connection)
    }
}

/// Decodes and handles one request frame, and records it: requests by command and status,
/// latency by command (this shard's metric cells, no lock), messages in and out, and a WARN
/// line for a request slower than `logging.slow_request_threshold`.
pub async fn process_frame(
    shard: &Shard,
    session: &mut Session,
    code: u32,
    payload: BytesMut,
) -> ResponseFrame {
    let started = Instant::now();
    let command_slot = metrics::command_slot(code);
    let request = match Request::decode(code, payload) {
        Ok(request) => request,
        Err(error) => {
            tracing::debug!(client_id = session.client_id, code, %error, "malformed request");
            record(shard, session, command_slot, Some(error.code), started);
            return ResponseFrame::error(error.code);
        }
    };
    let sent = match &request {
        Request::SendMessages(send) => Some((send.batch.count(), send.batch.size())),
        _ => None,
    };
    let command = request.command();
    let result = handlers::handle(shard, session, request).await;
    match result {
        Ok(response) => {
            let metrics = &shard.metrics;
            if let Some((count, size)) = sent {
                metrics.messages_in.add(u64::from(count));
                metrics.messages_in_bytes.add(size as u64);
            }
            if let Response::Polled { header, chunks } = &response {
                // Poll header: partition id u32, current offset u64, message count u32.
                let count = u32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
                metrics.messages_out.add(u64::from(count));
                metrics
                    .messages_out_bytes
                    .add(chunks.iter().map(Bytes::len).sum::<usize>() as u64);
            }
            let elapsed = record(shard, session, command_slot, None, started);
            tracing::trace!(client_id = session.client_id, %command, ?elapsed, "request handled");
            ResponseFrame::ok(response)
        }
        Err(code) => {
            let elapsed = record(shard, session, command_slot, Some(code), started);
            tracing::debug!(client_id = session.client_id, %command, %code, ?elapsed, "request failed");
            ResponseFrame::error(code)
        }
    }
}

/// Counts a finished request and logs it if it was slow. Returns its duration.
fn record(
    shard: &Shard,
    session: &Session,
    command_slot: usize,
    status: Option<ErrorCode>,
    started: Instant,
) -> Duration {
    let elapsed = started.elapsed();
    let slow = shard
        .shared
        .config
        .logging
        .slow_request_threshold
        .get()
        .is_some_and(|threshold| elapsed >= threshold.0);
    shard
        .metrics
        .record_request(command_slot, status, elapsed, slow);
    if slow {
        tracing::warn!(
            command = metrics::command_label(command_slot),
            status = metrics::status_label(metrics::status_slot(status)),
            duration_ms = elapsed.as_secs_f64() * 1e3,
            client_id = session.client_id,
            "slow request"
        );
    }
    elapsed
}
