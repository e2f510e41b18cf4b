//! Transport front-ends. Every transport turns bytes into (code, payload) frames and hands them
//! to [`process_frame`], which decodes, authenticates, routes and encodes the response the same
//! way for all of them; a transport only moves bytes.

pub mod ports;
pub mod quic;
pub mod tcp;
pub mod v09;
pub mod websocket;

use crate::admission::BodyPermit;
use crate::clients::ClientEntry;
use crate::handlers::{self, Response};
use crate::metrics;
use crate::session::{Generation, Session};
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

/// Bodies up to this size are read into the connection's own buffer and take no share of the
/// global in-flight budget (`limits.max_request_bytes_in_flight`): the connection cap bounds them.
pub const SMALL_BODY_BYTES: usize = 64 * 1024;

/// How often a body waiting for room in the in-flight budget looks again.
const BUDGET_RETRY: Duration = Duration::from_millis(2);

/// Why a request body is not read. Either way the connection closes afterwards: its body was
/// not read, so its stream cannot be resynchronised.
pub enum BodyRefusal {
    /// Answer with this status first.
    Status(ErrorCode),
    /// Close without an answer.
    Close(&'static str),
}

/// Decides, before any of it is allocated, whether a request body of `len` bytes may be read:
/// sessions that have not logged in send at most [`MAX_UNAUTHENTICATED_PAYLOAD`], users who may
/// send messages nowhere at most `limits.max_request_size_without_send`, and a large body waits
/// (at most `tcp.read_timeout`) for room in the global in-flight budget. The permit, if any,
/// must live until the request is handled.
pub async fn admit_body<'a>(
    shard: &'a Shard,
    session: &Session,
    len: usize,
) -> Result<Option<BodyPermit<'a>>, BodyRefusal> {
    let shared = &shard.shared;
    let Some(user_id) = session.user_id else {
        if len > MAX_UNAUTHENTICATED_PAYLOAD {
            // Nothing a session may send before logging in is this large; refusing before the
            // body arrives keeps anonymous peers from making us reserve megabytes each.
            return Err(BodyRefusal::Status(ErrorCode::Unauthenticated));
        }
        return Ok(None);
    };
    let limits = shared.admission.limits();
    if len as u64 > limits.max_request_size_without_send.0 {
        let may_send = shard
            .metadata(|metadata| {
                metadata
                    .users
                    .get(&user_id)
                    .is_some_and(crate::permissions::may_send_anywhere)
            })
            .unwrap_or(false);
        if !may_send {
            tracing::warn!(
                client_id = session.client_id,
                user_id,
                bytes = len,
                limit = "limits.max_request_size_without_send",
                "request refused before its body was read: the user may send messages nowhere"
            );
            return Err(BodyRefusal::Status(ErrorCode::Unauthorized));
        }
    }
    if len <= SMALL_BODY_BYTES {
        return Ok(None);
    }
    let deadline = Instant::now() + shared.config.tcp.read_timeout.0;
    loop {
        if let Some(permit) = shared.admission.try_reserve_body(len as u64) {
            return Ok(Some(permit));
        }
        if Instant::now() >= deadline || shard.is_shutting_down() {
            tracing::warn!(
                client_id = session.client_id,
                bytes = len,
                limit = "limits.max_request_bytes_in_flight",
                "closing connection: no room for its request body"
            );
            return Err(BodyRefusal::Close("limits.max_request_bytes_in_flight"));
        }
        compio::time::sleep(BUDGET_RETRY).await;
    }
}

/// One client session's registration: its connection slot (`[limits]`), its entry in the
/// clients table (GetClients/GetMe) and in the shard's connection count (shutdown waits for it
/// to reach zero). Dropping it undoes all three and takes the client out of its consumer
/// groups, however the connection ended.
pub struct Registration {
    shard: Rc<Shard>,
    client_id: u32,
    transport: Transport,
    address: std::net::IpAddr,
    /// Handed over to another shard, which registered it there: dropping this one only
    /// undoes this shard's counts.
    handed_over: bool,
}

impl Registration {
    /// Registers a new connection, or names the `[limits]` entry that refuses it (the caller
    /// closes it; the refusal is logged).
    pub fn new(
        shard: &Rc<Shard>,
        peer: SocketAddr,
        transport: Transport,
    ) -> Result<(Self, Session), &'static str> {
        let admission = &shard.shared.admission;
        if let Err(limit) = admission.admit_connection(peer.ip()) {
            admission.log_refusal(peer.ip(), limit);
            return Err(limit);
        }
        let client_id = shard.shared.clients.next_id();
        let session = Session::new(client_id, peer, transport);
        shard.shared.clients.register(ClientEntry {
            client_id,
            address: peer.to_string(),
            transport,
            user_id: None,
            groups: Vec::new(),
            shard: shard.id,
            revoked: session.revocation(),
        });
        shard.connections.set(shard.connections.get() + 1);
        shard.metrics.transport(transport).connected();
        tracing::debug!(shard = shard.id, client_id, %peer, ?transport, "client connected");
        let registration = Registration {
            shard: shard.clone(),
            client_id,
            transport,
            address: peer.ip(),
            handed_over: false,
        };
        Ok((registration, session))
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
            address: session.address.ip(),
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
        if let Some(cluster) = &shard.shared.cluster
            && cluster.relays()
        {
            // The session may have joined groups on the leader through relayed requests.
            let client = crate::cluster::relay::leader_client_id(cluster.view.me, self.client_id);
            let _ = cluster
                .relay
                .try_send(crate::cluster::link::Relay::Gone { client });
        }
        shard.shared.clients.remove(self.client_id);
        shard.shared.admission.release_connection(self.address);
        tracing::debug!(
            shard = shard.id,
            client_id = self.client_id,
            "client disconnected"
        );
    }
}

/// How long a session may wait for its next request. Sessions that have not logged in get
/// `tcp.unauthenticated_timeout` from `connected_at`; logged-in sessions get the sooner of
/// their heartbeat deadline (when heartbeats are verified) and `limits.idle_timeout`; None is
/// no limit.
pub fn idle_limit(shard: &Shard, session: &Session, connected_at: Instant) -> Option<Duration> {
    let config = &shard.shared.config;
    if session.user_id.is_none() {
        return Some(
            config
                .tcp
                .unauthenticated_timeout
                .0
                .saturating_sub(connected_at.elapsed()),
        );
    }
    let heartbeat = heartbeat_verified(shard, session)
        .then(|| heartbeat_limit(shard).saturating_sub(session.last_heartbeat.elapsed()));
    let idle = config.limits.idle_timeout.get().map(|idle| idle.0);
    match (heartbeat, idle) {
        (Some(heartbeat), Some(idle)) => Some(heartbeat.min(idle)),
        (heartbeat, idle) => heartbeat.or(idle),
    }
}

pub(super) fn heartbeat_limit(shard: &Shard) -> Duration {
    shard.shared.config.heartbeat.interval.0.mul_f64(1.2)
}

/// Whether the session must keep its heartbeats. With `[heartbeat]` on, every logged-in 0.8
/// session must; a 0.9 session only while it is a consumer-group member, as upstream 0.9
/// verifies them (protocol-0.9.md 3.7): its partitions go to others when it falls silent.
pub(super) fn heartbeat_verified(shard: &Shard, session: &Session) -> bool {
    shard.shared.config.heartbeat.enabled
        && session.user_id.is_some()
        && (session.generation != Generation::V09
            || shard.shared.clients.in_any_group(session.client_id))
}

/// Whether the session missed its heartbeats.
pub(super) fn is_stale(shard: &Shard, session: &Session) -> bool {
    heartbeat_verified(shard, session) && session.last_heartbeat.elapsed() > heartbeat_limit(shard)
}

/// Handles one request frame, unless the session has missed its heartbeats: then everything but
/// a Ping is answered with StaleClient, which closes the connection.
pub async fn process_request(
    shard: &Shard,
    session: &mut Session,
    code: u32,
    payload: BytesMut,
) -> ResponseFrame {
    if is_stale(shard, session) && code != rill_core::CommandCode::Ping.code() {
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

/// Most iovecs one response write carries; longer 0.8 poll responses are coalesced, and longer
/// 0.9 ones written in several writes.
pub(super) const MAX_IOVECS: usize = 512;

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
            Response::Empty | Response::Sent { .. } => vec![Bytes::copy_from_slice(&header)],
            Response::Bytes(payload) => {
                let mut frame = Vec::with_capacity(8 + payload.len());
                frame.extend_from_slice(&header);
                frame.extend_from_slice(&payload);
                vec![Bytes::from(frame)]
            }
            Response::Polled {
                header: poll_header,
                chunks,
                ..
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
    if let Err(status) = handlers::gate(session, code) {
        record(shard, session, command_slot, Some(status), started);
        return ResponseFrame::error(status);
    }
    let request = match Request::decode(code, payload) {
        Ok(request) => request,
        Err(error) => {
            tracing::debug!(client_id = session.client_id, code, %error, "malformed request");
            record(shard, session, command_slot, Some(error.code), started);
            return ResponseFrame::error(error.code);
        }
    };
    match run(shard, session, command_slot, request, started).await {
        Ok(response) => ResponseFrame::ok(response),
        Err(code) => ResponseFrame::error(code),
    }
}

/// Handles one decoded request and records it (see [`process_frame`]); both protocol
/// generations end here.
pub async fn run(
    shard: &Shard,
    session: &mut Session,
    command_slot: usize,
    request: Request,
    started: Instant,
) -> handlers::HandlerResult {
    let sent = match &request {
        Request::SendMessages(send) => Some((send.batch.count(), send.batch.size())),
        _ => None,
    };
    let command = request.command();
    // Enabled only by the trace export ([telemetry]): otherwise a disabled span costs nothing.
    // Numbers as i64: OpenTelemetry has no unsigned attributes (u64 would become text).
    let span = tracing::debug_span!(
        target: crate::telemetry::REQUEST_SPAN_TARGET,
        "request",
        command = command.name(),
        code = i64::from(command.code()),
        client_id = i64::from(session.client_id),
        shard = i64::from(shard.id),
        status = tracing::field::Empty,
    );
    let result =
        tracing::Instrument::instrument(handlers::handle(shard, session, request), span.clone())
            .await;
    if let Err(code) = &result {
        span.record("status", i64::from(code.code()));
    }
    match &result {
        Ok(response) => {
            let metrics = &shard.metrics;
            if let Some((count, size)) = sent {
                metrics.messages_in.add(u64::from(count));
                metrics.messages_in_bytes.add(size as u64);
            }
            if let Response::Polled { header, chunks, .. } = response {
                // Poll header: partition id u32, current offset u64, message count u32.
                let count = u32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
                metrics.messages_out.add(u64::from(count));
                metrics
                    .messages_out_bytes
                    .add(chunks.iter().map(Bytes::len).sum::<usize>() as u64);
            }
            let elapsed = record(shard, session, command_slot, None, started);
            tracing::trace!(client_id = session.client_id, %command, ?elapsed, "request handled");
        }
        Err(code) => {
            let elapsed = record(shard, session, command_slot, Some(*code), started);
            tracing::debug!(client_id = session.client_id, %command, %code, ?elapsed, "request failed");
        }
    }
    result
}

/// Counts a finished request and logs it if it was slow. Returns its duration.
pub fn record(
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
