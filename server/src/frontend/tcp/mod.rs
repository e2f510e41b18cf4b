//! The TCP front-end: every shard listens on the same address (SO_REUSEPORT, so the kernel
//! spreads connections over shards) and serves each connection as one task that handles one
//! request at a time (protocol.md 1.1). With `[tcp.tls]` on, the same port speaks TLS and the
//! same frames run inside it (protocol.md 1.5): the code below is generic over the byte stream.

use super::v09;
use super::{
    BodyRefusal, Registration, ResponseFrame, admit_body, heartbeat_verified, idle_limit, is_stale,
    process_request,
};
use crate::config::TcpSocketConfig;
use crate::session::{Generation, Session};
use crate::shard::Shard;
use crate::shard::message::ShardMessage;
use bytes::BytesMut;
use compio::io::{AsyncRead, AsyncWrite};
use compio::net::{TcpListener, TcpSocket, TcpStream};
use compio_tls::TlsAcceptor;
use futures_util::future::{Either, select};
use rill_core::ErrorCode;
use rill_core::frame::{FrameError, REQUEST_HEADER_SIZE, RequestHeader};
use rill_core::primitives::Transport;
use rill_core::v09::header as v09_header;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

mod framing;
pub(super) use framing::read_exact_array;
use framing::{HeaderWait, Inbound, write_frame};

pub async fn bind(address: SocketAddr, options: &TcpSocketConfig) -> io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4().await?
    } else {
        TcpSocket::new_v6().await?
    };
    socket.set_reuseport(true)?;
    socket.set_reuseaddr(true)?;
    if options.override_defaults {
        set_options(&socket, options)?;
    }
    socket.bind(address).await?;
    socket.listen(1024).await
}

/// `[tcp.socket]` on the listening socket, before `listen`: accepted connections inherit the
/// options, and a receive buffer set before the handshake also sizes the window scale offered.
fn set_options(socket: &TcpSocket, options: &TcpSocketConfig) -> io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    let size = |size: u64| usize::try_from(size).unwrap_or(usize::MAX);
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: i32::try_from(options.linger.0.as_secs()).unwrap_or(i32::MAX),
    };
    setsockopt(socket, sockopt::RcvBuf, &size(options.recv_buffer_size.0))?;
    setsockopt(socket, sockopt::SndBuf, &size(options.send_buffer_size.0))?;
    setsockopt(socket, sockopt::KeepAlive, &options.keepalive)?;
    setsockopt(socket, sockopt::Linger, &linger)?;
    Ok(())
}

/// Accepts connections until shutdown, spawning one task per connection.
pub async fn accept_loop(shard: Rc<Shard>, listener: TcpListener) {
    let tls = shard.shared.tls.clone().map(TlsAcceptor::from);
    accept_connections(&shard, &listener, "TCP", |stream, peer| {
        let shard = shard.clone();
        match &tls {
            None => compio::runtime::spawn(serve_plain(shard, stream, peer)).detach(),
            Some(tls) => {
                compio::runtime::spawn(serve_tls(shard, tls.clone(), stream, peer)).detach()
            }
        }
    })
    .await;
}

/// The accept loop of the TCP-based listeners (plain, TLS, WebSocket): accepts until the shard
/// shuts down, sets TCP_NODELAY as configured and hands each connection to `serve`.
pub(super) async fn accept_connections(
    shard: &Shard,
    listener: &TcpListener,
    listener_name: &'static str,
    mut serve: impl FnMut(TcpStream, SocketAddr),
) {
    loop {
        let accepted = {
            let shutdown = pin!(shard.shutdown_signal.recv_async());
            let accept = pin!(listener.accept());
            match select(shutdown, accept).await {
                Either::Left(_) => break,
                Either::Right((accepted, _)) => accepted,
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                if shard.shared.config.tcp.nodelay
                    && let Err(error) = stream.set_nodelay(true)
                {
                    tracing::warn!(%peer, %error, "cannot set TCP_NODELAY");
                }
                serve(stream, peer);
            }
            Err(error) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(%error, listener = listener_name, "accept failed");
                compio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::debug!(
        shard = shard.id,
        listener = listener_name,
        "listener stopped"
    );
}

/// Why a connection stops.
/// The timeout of a session that missed its heartbeats.
const HEARTBEAT: &str = "heartbeats";

pub(super) enum Stop {
    Closed,
    Shutdown,
    Timeout(&'static str),
    Error(io::Error),
    /// Its recent requests all went to this other shard's partitions: move it there.
    MoveTo(u16),
}

/// A TLS session: admitted, then the handshake, bounded like a login (a client that stalls in
/// it is dropped), then served where it was accepted (its TLS state cannot move between shards).
async fn serve_tls(shard: Rc<Shard>, tls: TlsAcceptor, stream: TcpStream, peer: SocketAddr) {
    let Ok((registration, mut session)) = Registration::new(&shard, peer, Transport::Tcp) else {
        return;
    };
    let limit = shard.shared.config.tcp.unauthenticated_timeout.0;
    let mut stream = match compio::time::timeout(limit, tls.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => return tracing::info!(%peer, %error, "TLS handshake failed"),
        Err(_) => return tracing::info!(%peer, "TLS handshake timed out"),
    };
    let stop = serve_frames(
        &shard,
        &mut stream,
        &mut session,
        Instant::now(),
        false,
        Transport::Tcp,
    )
    .await;
    finish(&shard, stream, &session, stop, Transport::Tcp).await;
    drop(registration);
}

/// A plain TCP session, which moves to the shard owning the partitions it uses.
async fn serve_plain(shard: Rc<Shard>, stream: TcpStream, peer: SocketAddr) {
    // Refused: dropping the stream closes it.
    if let Ok((registration, session)) = Registration::new(&shard, peer, Transport::Tcp) {
        serve_movable(shard, stream, registration, session, Instant::now()).await;
    }
}

/// Serves a session another shard handed over: `socket` is its duplicate of the connection.
pub async fn adopt(shard: Rc<Shard>, socket: OwnedFd, session: Session) {
    let registration = Registration::adopt(&shard, &session);
    let stream = match TcpStream::from_std(std::net::TcpStream::from(socket)) {
        Ok(stream) => stream,
        Err(error) => {
            // The registration's drop ends the session as a disconnect would.
            tracing::warn!(client_id = session.client_id, %error, "cannot adopt a connection");
            return;
        }
    };
    tracing::debug!(
        shard = shard.id,
        client_id = session.client_id,
        "connection moved to the shard owning its partitions"
    );
    serve_movable(shard, stream, registration, session, Instant::now()).await;
}

async fn serve_movable(
    shard: Rc<Shard>,
    mut stream: TcpStream,
    registration: Registration,
    mut session: Session,
    connected_at: Instant,
) {
    loop {
        let stop = serve_frames(
            &shard,
            &mut stream,
            &mut session,
            connected_at,
            true,
            Transport::Tcp,
        )
        .await;
        let Stop::MoveTo(owner) = stop else {
            finish(&shard, stream, &session, stop, Transport::Tcp).await;
            drop(registration);
            return;
        };
        session.affinity.reset();
        match hand_over(&shard, &stream, owner, session) {
            Ok(()) => {
                // Dropping the stream closes this shard's descriptor only; the connection lives
                // on in the duplicate the owner now serves.
                registration.hand_over();
                shard.metrics.connections_moved.inc();
                return;
            }
            Err(kept) => session = kept,
        }
    }
}

/// Sends a duplicate of the connection's socket and the session to `owner`; gives the session
/// back if that cannot be done, and the connection stays here.
#[allow(
    clippy::result_large_err,
    reason = "the session travels by value once per move, and a failed move is rarer still"
)]
fn hand_over(
    shard: &Shard,
    stream: &TcpStream,
    owner: u16,
    session: Session,
) -> Result<(), Session> {
    let socket = match stream.as_fd().try_clone_to_owned() {
        Ok(socket) => socket,
        Err(error) => {
            tracing::debug!(client_id = session.client_id, %error, "cannot duplicate a socket");
            return Err(session);
        }
    };
    let Some(inbox) = shard.shared.inboxes.get(owner as usize) else {
        return Err(session);
    };
    match inbox.try_send(ShardMessage::AdoptConnection { socket, session }) {
        Ok(()) => Ok(()),
        Err(error) => match error.into_inner() {
            ShardMessage::AdoptConnection { session, .. } => Err(session),
            _ => unreachable!("the message just sent"),
        },
    }
}

/// Ends a session: tells the client why when the server shuts down, logs, closes.
pub(super) async fn finish<S: AsyncRead + AsyncWrite>(
    shard: &Shard,
    mut stream: S,
    session: &Session,
    stop: Stop,
    transport: Transport,
) {
    let client_id = session.client_id;
    let peer = session.address;
    match stop {
        // A 0.9 client has no frame for this: it sees the connection close and reconnects.
        Stop::Shutdown if session.generation == Generation::V09 => {}
        Stop::Shutdown => {
            // Tell the client why, as upstream does, then close.
            let _ = write_frame(
                shard,
                &mut stream,
                ResponseFrame::error(ErrorCode::Disconnected),
                transport,
            )
            .await;
        }
        Stop::Timeout(what) => {
            tracing::info!(client_id, %peer, what, "closing connection: timed out");
            if what == HEARTBEAT && session.generation == Generation::V09 {
                // Tell the 0.9 client why, as upstream's verifier does: it reconnects and
                // joins its groups again.
                let eviction = ResponseFrame {
                    chunks: vec![v09::stale_eviction()],
                    status: None,
                };
                // Bounded: a peer that stopped reading must not hold its group membership.
                let write = write_frame(shard, &mut stream, eviction, transport);
                let _ = compio::time::timeout(shard.shared.config.tcp.read_timeout.0, write).await;
            }
        }
        Stop::Error(error) => tracing::debug!(client_id, %peer, %error, "connection error"),
        Stop::Closed | Stop::MoveTo(_) => {}
    }
    // A TLS close_notify, or a FIN; the socket closes when the stream drops.
    let _ = stream.shutdown().await;
}

/// Serves requests until the session ends. `transport` is what the metrics count it as (plain
/// TCP and TLS are TCP; the WebSocket front-end runs this same loop over its framing).
pub(super) async fn serve_frames<S: AsyncRead + AsyncWrite>(
    shard: &Shard,
    stream: &mut S,
    session: &mut Session,
    connected_at: Instant,
    movable: bool,
    transport: Transport,
) -> Stop {
    let config = &shard.shared.config.tcp;
    let max_send_bytes = config.max_send_messages_size.0 as usize;
    // Allocated by the first receive, not per connection.
    let mut inbound = Inbound::default();
    loop {
        if shard.is_shutting_down() {
            return Stop::Shutdown;
        }
        // Idle wait for the next header: bounded for sessions that have not logged in, by the
        // heartbeat deadline when heartbeats are verified, and by limits.idle_timeout. Once its
        // first bytes arrive, the rest of the request has tcp.read_timeout.
        let idle_limit = idle_limit(shard, session, connected_at);
        let heartbeat_bound = heartbeat_verified(shard, session);
        let header = {
            let shutdown = pin!(shard.shutdown_signal.recv_async());
            let read = pin!(inbound.read_header(stream, idle_limit, config.read_timeout.0));
            match select(shutdown, read).await {
                Either::Left(_) => return Stop::Shutdown,
                Either::Right((read, _)) => read,
            }
        };
        let header = match header {
            Err(HeaderWait::Idle) if session.user_id.is_none() => return Stop::Timeout("login"),
            Err(HeaderWait::Idle) if is_stale(shard, session) => return Stop::Timeout(HEARTBEAT),
            // The wait was bounded by a heartbeat deadline that no longer applies (a 0.9
            // session whose group went away meanwhile): wait again, by the idle limit alone.
            Err(HeaderWait::Idle) if heartbeat_bound && !heartbeat_verified(shard, session) => {
                continue;
            }
            Err(HeaderWait::Idle) => return Stop::Timeout("idle session"),
            Err(HeaderWait::Partial) => return Stop::Timeout("request header"),
            Err(HeaderWait::Io(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return Stop::Closed;
            }
            Err(HeaderWait::Io(error)) => return Stop::Error(error),
            Ok(bytes) => {
                shard
                    .metrics
                    .transport(transport)
                    .received_bytes
                    .add(REQUEST_HEADER_SIZE as u64);
                if session.generation == Generation::Undecided {
                    session.generation = if rill_core::v09::is_v09_start(&bytes) {
                        Generation::V09
                    } else {
                        Generation::V08
                    };
                }
                if session.generation == Generation::V09 {
                    if let Err(stop) =
                        serve_v09_request(shard, stream, &mut inbound, session, bytes, transport)
                            .await
                    {
                        return stop;
                    }
                    if movable
                        && inbound.is_empty()
                        && let Some(owner) = session.affinity.destination()
                        && !shard.is_shutting_down()
                    {
                        return Stop::MoveTo(owner);
                    }
                    continue;
                }
                RequestHeader::parse(bytes)
            }
        };
        let payload_len = match header.payload_len(max_send_bytes) {
            Ok(len) => len,
            Err(error @ FrameError::LengthTooSmall) => {
                if let Err(error) =
                    write_frame(shard, stream, ResponseFrame::error(error.code()), transport).await
                {
                    return Stop::Error(error);
                }
                continue;
            }
            Err(
                error @ FrameError::TooLarge {
                    payload_bytes,
                    limit_bytes,
                },
            ) => {
                tracing::info!(
                    client_id = session.client_id,
                    code = header.code,
                    payload_bytes,
                    limit_bytes,
                    "frame too large"
                );
                let _ =
                    write_frame(shard, stream, ResponseFrame::error(error.code()), transport).await;
                // The body was not read: the stream cannot be resynchronised.
                return Stop::Closed;
            }
        };
        let _permit = match admit_body(shard, session, payload_len).await {
            Ok(permit) => permit,
            Err(BodyRefusal::Status(code)) => {
                let _ = write_frame(shard, stream, ResponseFrame::error(code), transport).await;
                return Stop::Closed;
            }
            Err(BodyRefusal::Close(limit)) => return Stop::Timeout(limit),
        };
        let payload = if payload_len == 0 {
            BytesMut::new()
        } else {
            let read = inbound.read_body(stream, payload_len);
            match compio::time::timeout(config.read_timeout.0, read).await {
                Err(_) => return Stop::Timeout("request body"),
                Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                    return Stop::Closed;
                }
                Ok(Err(error)) => return Stop::Error(error),
                Ok(Ok(payload)) => {
                    shard
                        .metrics
                        .transport(transport)
                        .received_bytes
                        .add(payload_len as u64);
                    payload
                }
            }
        };
        let response = process_request(shard, session, header.code, payload).await;
        drop(_permit);
        let closes = response.closes_connection() || session.close_requested;
        session.affinity.note_request_bytes(payload_len);
        // A peer that stops reading must not pin this task and its response forever.
        match compio::time::timeout(
            config.read_timeout.0,
            write_frame(shard, stream, response, transport),
        )
        .await
        {
            Err(_) => return Stop::Timeout("response write"),
            Ok(Err(error)) => return Stop::Error(error),
            Ok(Ok(())) => {}
        }
        if closes {
            return Stop::Closed;
        }
        // Between requests nothing is in flight on the socket, so it can change hands (unless
        // the client pipelined and part of its next request was already received here).
        if movable
            && inbound.is_empty()
            && let Some(owner) = session.affinity.destination()
            && !shard.is_shutting_down()
        {
            return Stop::MoveTo(owner);
        }
    }
}

/// Serves one 0.9 request whose first eight header bytes were read: the rest of the header,
/// the body (admitted as a 0.8 body is), the handling, the reply. A header that cannot be
/// trusted closes the connection: there is no way to answer it (protocol-0.9.md 2.2).
async fn serve_v09_request<S: AsyncRead + AsyncWrite>(
    shard: &Shard,
    stream: &mut S,
    inbound: &mut Inbound,
    session: &mut Session,
    first: [u8; REQUEST_HEADER_SIZE],
    transport: Transport,
) -> Result<(), Stop> {
    let config = &shard.shared.config.tcp;
    let read_timeout = config.read_timeout.0;
    let rest = inbound.read_array::<{ v09_header::HEADER_SIZE - REQUEST_HEADER_SIZE }, _>(stream);
    let rest = match compio::time::timeout(read_timeout, rest).await {
        Err(_) => return Err(Stop::Timeout("request header")),
        Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => return Err(Stop::Closed),
        Ok(Err(error)) => return Err(Stop::Error(error)),
        Ok(Ok(rest)) => rest,
    };
    let mut bytes = [0u8; v09_header::HEADER_SIZE];
    bytes[..REQUEST_HEADER_SIZE].copy_from_slice(&first);
    bytes[REQUEST_HEADER_SIZE..].copy_from_slice(&rest);
    let metrics = shard.metrics.transport(transport);
    metrics.received_bytes.add(rest.len() as u64);
    let max_frame = max_v09_frame(config.max_send_messages_size.0);
    let header = match v09_header::RequestHeader::parse(&bytes, max_frame) {
        Ok(header) => header,
        Err(error) => {
            tracing::info!(client_id = session.client_id, %error, "closing 0.9 connection: bad request header");
            return Err(Stop::Closed);
        }
    };
    let body_len = header.body_len();
    let _permit = match admit_body(shard, session, body_len).await {
        Ok(permit) => permit,
        Err(BodyRefusal::Status(code)) => {
            tracing::info!(client_id = session.client_id, %code, "closing 0.9 connection: body refused");
            return Err(Stop::Closed);
        }
        Err(BodyRefusal::Close(limit)) => return Err(Stop::Timeout(limit)),
    };
    let body = if body_len == 0 {
        BytesMut::new()
    } else {
        let read = inbound.read_body(stream, body_len);
        match compio::time::timeout(read_timeout, read).await {
            Err(_) => return Err(Stop::Timeout("request body")),
            Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(Stop::Closed);
            }
            Ok(Err(error)) => return Err(Stop::Error(error)),
            Ok(Ok(body)) => body,
        }
    };
    metrics.received_bytes.add(body_len as u64);
    let reply = v09::process(shard, session, header, body).await;
    drop(_permit);
    let close = reply.close || session.close_requested;
    session.affinity.note_request_bytes(body_len);
    let frame = ResponseFrame {
        chunks: reply.chunks,
        status: None,
    };
    match compio::time::timeout(read_timeout, write_frame(shard, stream, frame, transport)).await {
        Err(_) => return Err(Stop::Timeout("response write")),
        Ok(Err(error)) => return Err(Stop::Error(error)),
        Ok(Ok(())) => {}
    }
    if close { Err(Stop::Closed) } else { Ok(()) }
}

/// The largest 0.9 frame accepted: the largest send body 0.8 accepts, with room for the header
/// and the batch header and per-message framing around it.
pub(super) fn max_v09_frame(max_send_bytes: u64) -> u32 {
    max_send_bytes
        .saturating_add(1 << 20)
        .min(u64::from(u32::MAX)) as u32
}
