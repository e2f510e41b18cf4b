//! The QUIC front-end (protocol.md 1.6), on every shard.
//!
//! Each shard runs its own QUIC endpoint on its own UDP socket; all the sockets share one
//! address through SO_REUSEPORT. For unconnected UDP sockets the kernel picks the socket by a
//! hash of the datagram's addresses, so every datagram of one client lands on the same shard
//! as long as the set of sockets does not change. That is why [`bind_group`] creates the whole
//! group on the main thread before any shard starts (a socket added later would reshuffle the
//! hash), and why connection migration is refused (a client whose address changes would land
//! on a shard that does not know its connection).
//!
//! One QUIC connection is one session. Each request arrives on a new bidirectional stream: the
//! TCP request frame, then FIN; the response is the TCP response frame, then FIN. A
//! connection's streams are served one after another (the SDKs send one request at a time, and
//! a session's requests must stay ordered, e.g. a login before what it authorises); a stream
//! that is reset or never finishes only costs its own connection a `read_timeout`.

use super::tcp::read_exact_array;
use super::v09;
use super::{
    BodyRefusal, Registration, ResponseFrame, admit_body, idle_limit, process_request,
    with_optional_timeout,
};
use crate::admission::BodyPermit;
use crate::config::UdpSocketOptions;
use crate::session::{Generation, Session};
use crate::shard::Shard;
use bytes::{Bytes, BytesMut};
use compio_quic::{
    Connection, ConnectionError, Endpoint, EndpointConfig, RecvStream, SendStream, VarInt,
};
use futures_util::FutureExt;
use futures_util::future::{Either, select};
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, SockaddrStorage, sockopt};
use rill_core::ErrorCode;
use rill_core::frame::{FrameError, REQUEST_HEADER_SIZE, RequestHeader};
use rill_core::primitives::Transport;
use rill_core::v09::header as v09_header;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Application error codes sent when the server closes a connection.
const CLOSE_SHUTDOWN: u32 = 1;
const CLOSE_TIMEOUT: u32 = 2;
const CLOSE_STATUS: u32 = 3;

/// How long a response whose status closes the connection may take to be acknowledged.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);

/// How long shutdown waits for the endpoint to deliver its close frames.
const ENDPOINT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Binds `count` UDP sockets to `address` as one SO_REUSEPORT group (port 0: the first socket's
/// port). Fails, as a TCP bind would, when another process already holds the port, even one
/// that also uses SO_REUSEPORT (such as a second broker), by probing with a plain socket first
/// (for up to [`super::ports::PORT_PROBE_PATIENCE`]).
pub fn bind_group(
    address: SocketAddr,
    count: usize,
    options: UdpSocketOptions,
) -> io::Result<Vec<UdpSocket>> {
    if address.port() != 0 {
        // Patient, like the TCP probe: a predecessor killed a moment ago may still hold it.
        super::ports::wait_for_free_port(|| UdpSocket::bind(address).err().map(|e| e.to_string()))
            .map_err(|reason| io::Error::new(io::ErrorKind::AddrInUse, reason))?;
    }
    let mut sockets = Vec::with_capacity(count);
    let mut address = address;
    for _ in 0..count {
        let socket = reuseport_socket(address, options)?;
        address = socket.local_addr()?;
        sockets.push(socket);
    }
    Ok(sockets)
}

fn reuseport_socket(address: SocketAddr, options: UdpSocketOptions) -> io::Result<UdpSocket> {
    let family = if address.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    let fd: OwnedFd = socket::socket(family, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
    socket::setsockopt(&fd, sockopt::ReusePort, &true)?;
    // Best effort, as upstream: the kernel caps these at net.core.{r,w}mem_max.
    let _ = socket::setsockopt(&fd, sockopt::RcvBuf, &options.recv_buffer);
    let _ = socket::setsockopt(&fd, sockopt::SndBuf, &options.send_buffer);
    if options.keepalive {
        // Upstream sets it; UDP sends no probes (QUIC's own is quic.keep_alive_interval).
        socket::setsockopt(&fd, sockopt::KeepAlive, &true)?;
    }
    socket::bind(fd.as_raw_fd(), &SockaddrStorage::from(address))?;
    Ok(UdpSocket::from(fd))
}

/// Starts this shard's endpoint on its socket from the group.
pub fn endpoint(socket: UdpSocket, config: compio_quic::ServerConfig) -> io::Result<Endpoint> {
    let socket = compio::net::UdpSocket::from_std(socket)?;
    Endpoint::new(socket, EndpointConfig::default(), Some(config), None)
}

/// Accepts connections until shutdown, one task per connection; then closes the endpoint.
pub async fn accept_loop(shard: Rc<Shard>, endpoint: Endpoint) {
    loop {
        let incoming = {
            let shutdown = pin!(shard.shutdown_signal.recv_async());
            let incoming = pin!(endpoint.wait_incoming());
            match select(shutdown, incoming).await {
                Either::Left(_) => break,
                Either::Right((Some(incoming), _)) => incoming,
                Either::Right((None, _)) => break,
            }
        };
        let shard = shard.clone();
        compio::runtime::spawn(async move {
            match incoming.await {
                Ok(connection) => serve(shard, connection).await,
                Err(error) => tracing::debug!(%error, "QUIC handshake failed"),
            }
        })
        .detach();
    }
    tracing::debug!(shard = shard.id, "QUIC endpoint stops accepting");
    // Connections see the shutdown signal too and close themselves after their current
    // request; wait for them (bounded, like TCP's drain), then let the close frames out.
    let drain_until = Instant::now() + super::DRAIN_TIMEOUT;
    while endpoint.open_connections() > 0 && Instant::now() < drain_until {
        compio::time::sleep(Duration::from_millis(10)).await;
    }
    endpoint.close(CLOSE_SHUTDOWN.into(), b"server shutting down");
    let _ = compio::time::timeout(ENDPOINT_SHUTDOWN_TIMEOUT, endpoint.shutdown()).await;
}

/// Why a connection stops.
enum Stop {
    Closed(ConnectionError),
    Shutdown,
    Timeout(&'static str),
    Status(ErrorCode),
}

async fn serve(shard: Rc<Shard>, connection: Connection) {
    let peer = connection.remote_address();
    let Ok((registration, mut session)) = Registration::new(&shard, peer, Transport::Quic) else {
        connection.close(CLOSE_STATUS.into(), b"connection limit reached");
        return;
    };
    let stop = serve_streams(&shard, &connection, &mut session).await;
    let client_id = session.client_id;
    match stop {
        Stop::Shutdown => connection.close(CLOSE_SHUTDOWN.into(), b"server shutting down"),
        Stop::Timeout(what) => {
            tracing::info!(client_id, %peer, what, "closing QUIC connection: timed out");
            connection.close(CLOSE_TIMEOUT.into(), what.as_bytes());
        }
        Stop::Status(code) => connection.close(CLOSE_STATUS.into(), code.to_string().as_bytes()),
        Stop::Closed(error) => {
            tracing::debug!(client_id, %peer, %error, "QUIC connection closed")
        }
    }
    drop(registration);
}

async fn serve_streams(shard: &Shard, connection: &Connection, session: &mut Session) -> Stop {
    let connected_at = Instant::now();
    loop {
        if shard.is_shutting_down() {
            return Stop::Shutdown;
        }
        let idle_limit = idle_limit(shard, session, connected_at);
        let accepted = {
            let shutdown = pin!(shard.shutdown_signal.recv_async());
            let accept = pin!(with_optional_timeout(idle_limit, connection.accept_bi()));
            match select(shutdown, accept).await {
                Either::Left(_) => return Stop::Shutdown,
                Either::Right((accepted, _)) => accepted,
            }
        };
        let (send, recv) = match accepted {
            None if session.user_id.is_none() => return Stop::Timeout("login"),
            None => return Stop::Timeout("heartbeat"),
            Some(Err(error)) => return Stop::Closed(error),
            Some(Ok(streams)) => streams,
        };
        if let Some(code) = serve_stream(shard, connection, session, send, recv).await {
            return Stop::Status(code);
        }
    }
}

/// How long a request body may pause before the server prompts its acknowledgements.
const ACK_PROMPT_AFTER: Duration = Duration::from_millis(1);

/// Reads a request body of `len` bytes.
///
/// A client whose QUIC send window is smaller than the body (the official SDK's is 100 000
/// bytes) stops at the end of each window until all of it is acknowledged, and quinn
/// acknowledges a lone trailing packet only when its 25 ms `max_ack_delay` runs out: a 1 MB
/// batch took 250 ms. So when the body pauses for [`ACK_PROMPT_AFTER`], the connection window
/// is grown by one byte and set back (the shrink is taken from the next credit), which queues a
/// MAX_DATA frame; the endpoint sends it at once and the pending ACK rides along. Bodies that
/// keep flowing (clients with large windows) never pay for the extra packets.
async fn read_body(
    recv: &mut RecvStream,
    connection: &Connection,
    receive_window: VarInt,
    len: usize,
) -> io::Result<BytesMut> {
    let mut body = BytesMut::with_capacity(len);
    while body.len() < len {
        let wanted = len - body.len();
        // read_chunk is cancel-safe: a read dropped while pending loses nothing.
        let chunk = match recv.read_chunk(wanted, true).now_or_never() {
            Some(chunk) => chunk,
            None => {
                match compio::time::timeout(ACK_PROMPT_AFTER, recv.read_chunk(wanted, true)).await {
                    Ok(chunk) => chunk,
                    Err(_) => {
                        if let Some(nudge) = receive_window.into_inner().checked_add(1)
                            && let Ok(nudge) = VarInt::from_u64(nudge)
                        {
                            connection.set_receive_window(nudge);
                            connection.set_receive_window(receive_window);
                        }
                        recv.read_chunk(wanted, true).await
                    }
                }
            }
        };
        match chunk.map_err(io::Error::from)? {
            Some(chunk) => body.extend_from_slice(&chunk.bytes),
            None => return Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }
    Ok(body)
}

/// A request read from a stream, in the generation it was written in.
enum Incoming<'a> {
    V08(u32, BytesMut, Option<BodyPermit<'a>>),
    V09(v09_header::RequestHeader, BytesMut, Option<BodyPermit<'a>>),
}

/// Reads the rest of a 0.9 request (header and body) whose first eight bytes were read. A
/// header that cannot be trusted refuses the stream.
async fn read_v09_request<'a>(
    shard: &'a Shard,
    session: &Session,
    connection: &Connection,
    recv: &mut RecvStream,
    first: [u8; REQUEST_HEADER_SIZE],
) -> io::Result<Result<Incoming<'a>, BodyRefusal>> {
    let config = &shard.shared.config;
    let rest = read_exact_array(recv, [0u8; v09_header::HEADER_SIZE - REQUEST_HEADER_SIZE]).await?;
    let mut bytes = [0u8; v09_header::HEADER_SIZE];
    bytes[..REQUEST_HEADER_SIZE].copy_from_slice(&first);
    bytes[REQUEST_HEADER_SIZE..].copy_from_slice(&rest);
    let metrics = shard.metrics.transport(Transport::Quic);
    metrics.received_bytes.add(rest.len() as u64);
    let max_frame = super::tcp::max_v09_frame(config.tcp.max_send_messages_size.0);
    let header = match v09_header::RequestHeader::parse(&bytes, max_frame) {
        Ok(header) => header,
        Err(error) => {
            tracing::info!(client_id = session.client_id, %error, "refusing a 0.9 stream: bad request header");
            return Ok(Err(BodyRefusal::Close("request header")));
        }
    };
    let len = header.body_len();
    let permit = match admit_body(shard, session, len).await {
        Ok(permit) => permit,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let receive_window = VarInt::from_u64(config.quic.receive_window.0).unwrap_or(VarInt::MAX);
    let body = if len == 0 {
        BytesMut::new()
    } else {
        read_body(recv, connection, receive_window, len).await?
    };
    metrics.received_bytes.add(len as u64);
    Ok(Ok(Incoming::V09(header, body, permit)))
}

/// Serves one request stream. Returns a status after which the connection must close.
async fn serve_stream(
    shard: &Shard,
    connection: &Connection,
    session: &mut Session,
    mut send: SendStream,
    mut recv: RecvStream,
) -> Option<ErrorCode> {
    let metrics = shard.metrics.transport(Transport::Quic);
    let config = &shard.shared.config.tcp;
    let max_send_bytes = config.max_send_messages_size.0 as usize;
    let receive_window =
        VarInt::from_u64(shard.shared.config.quic.receive_window.0).unwrap_or(VarInt::MAX);
    let asking = &*session;
    let generation = session.generation;
    let request = async {
        let first = read_exact_array(&mut recv, [0u8; REQUEST_HEADER_SIZE]).await?;
        metrics.received_bytes.add(REQUEST_HEADER_SIZE as u64);
        let v09 = match generation {
            Generation::Undecided => rill_core::v09::is_v09_start(&first),
            decided => decided == Generation::V09,
        };
        if v09 {
            return read_v09_request(shard, asking, connection, &mut recv, first).await;
        }
        let header = RequestHeader::parse(first);
        let payload_len = match header.payload_len(max_send_bytes) {
            Ok(len) => len,
            Err(error) => {
                if let FrameError::TooLarge {
                    payload_bytes,
                    limit_bytes,
                } = error
                {
                    tracing::info!(
                        code = header.code,
                        payload_bytes,
                        limit_bytes,
                        "frame too large"
                    );
                }
                return Ok(Err(BodyRefusal::Status(error.code())));
            }
        };
        let permit = match admit_body(shard, asking, payload_len).await {
            Ok(permit) => permit,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let payload = if payload_len == 0 {
            BytesMut::new()
        } else {
            read_body(&mut recv, connection, receive_window, payload_len).await?
        };
        metrics.received_bytes.add(payload_len as u64);
        io::Result::Ok(Ok(Incoming::V08(header.code, payload, permit)))
    };
    let response = match compio::time::timeout(config.read_timeout.0, request).await {
        Err(_) | Ok(Ok(Err(BodyRefusal::Close(_)))) => {
            tracing::debug!(
                client_id = session.client_id,
                "QUIC request stream timed out or was refused"
            );
            let _ = send.reset(CLOSE_TIMEOUT.into());
            return None;
        }
        Ok(Err(error)) => {
            // Reset, truncated or the connection is gone: this stream only.
            tracing::debug!(client_id = session.client_id, %error, "QUIC request stream failed");
            let _ = send.reset(CLOSE_STATUS.into());
            return None;
        }
        Ok(Ok(Err(BodyRefusal::Status(status)))) => {
            // The rest of this stream's bytes are not wanted; other streams are unaffected.
            let _ = recv.stop(CLOSE_STATUS.into());
            ResponseFrame::error(status)
        }
        Ok(Ok(Ok(Incoming::V08(code, payload, permit)))) => {
            session.generation = Generation::V08;
            let response = process_request(shard, session, code, payload).await;
            drop(permit);
            response
        }
        Ok(Ok(Ok(Incoming::V09(header, body, permit)))) => {
            session.generation = Generation::V09;
            let reply = v09::process(shard, session, header, body).await;
            drop(permit);
            if reply.close {
                session.close_requested = true;
            }
            ResponseFrame {
                chunks: reply.chunks,
                status: None,
            }
        }
    };
    let closes = match response.status {
        Some(status) if response.closes_connection() => Some(status),
        // Too many failed logins: the connection ends with the last failure's status.
        status if session.close_requested => Some(status.unwrap_or(ErrorCode::Unauthenticated)),
        _ => None,
    };
    let bytes: usize = response.chunks.iter().map(Bytes::len).sum();
    let mut chunks = response.chunks;
    // A peer that stops reading (flow control) must not pin this connection forever.
    match compio::time::timeout(config.read_timeout.0, send.write_all_chunks(&mut chunks)).await {
        Ok(Ok(())) => {
            metrics.sent_bytes.add(bytes as u64);
            let _ = send.finish();
            if closes.is_some() {
                // Closing the connection discards unsent stream data: let the peer receive the
                // status that explains the close first (bounded).
                let _ = compio::time::timeout(CLOSE_FLUSH_TIMEOUT, send.stopped()).await;
            }
        }
        Ok(Err(error)) => {
            tracing::debug!(client_id = session.client_id, %error, "QUIC response not delivered")
        }
        Err(_) => {
            tracing::info!(
                client_id = session.client_id,
                "QUIC response write timed out"
            );
            let _ = send.reset(CLOSE_TIMEOUT.into());
        }
    }
    closes
}
