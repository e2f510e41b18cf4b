//! The TCP front-end: every shard listens on the same address (SO_REUSEPORT, so the kernel
//! spreads connections over shards) and serves each connection as one task that handles one
//! request at a time (protocol.md 1.1).

use super::{ResponseFrame, process_frame};
use crate::clients::ClientEntry;
use crate::handlers::Session;
use crate::shard::Shard;
use bytes::BytesMut;
use compio::BufResult;
use compio::buf::IoBuf;
use compio::io::{AsyncReadExt, AsyncWriteExt};
use compio::net::{TcpListener, TcpSocket, TcpStream};
use futures_util::future::{Either, select};
use rill_core::ErrorCode;
use rill_core::frame::{FrameError, REQUEST_HEADER_SIZE, RequestHeader};
use rill_core::primitives::Transport;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Frames up to this size are read into the connection's reusable buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;

pub async fn bind(address: SocketAddr) -> io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4().await?
    } else {
        TcpSocket::new_v6().await?
    };
    socket.set_reuseport(true)?;
    socket.set_reuseaddr(true)?;
    socket.bind(address).await?;
    socket.listen(1024).await
}

/// Accepts connections until shutdown, spawning one task per connection.
pub async fn accept_loop(shard: Rc<Shard>, listener: TcpListener) {
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
                compio::runtime::spawn(serve(shard.clone(), stream, peer)).detach();
            }
            Err(error) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(%error, "accept failed");
                compio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::debug!(shard = shard.id, "TCP listener stopped");
}

/// Why a connection stops.
enum Stop {
    Closed,
    Shutdown,
    Timeout(&'static str),
    Error(io::Error),
}

async fn serve(shard: Rc<Shard>, mut stream: TcpStream, peer: SocketAddr) {
    let client_id = rill_core::hash::client_id(&peer.to_string());
    let mut session = Session {
        client_id,
        address: peer,
        transport: Transport::Tcp,
        user_id: None,
        last_heartbeat: Instant::now(),
    };
    shard.shared.clients.register(ClientEntry {
        client_id,
        address: peer.to_string(),
        transport: Transport::Tcp,
        user_id: None,
        groups: Vec::new(),
        shard: shard.id,
    });
    shard.connections.set(shard.connections.get() + 1);
    shard.metrics.tcp_accepted.inc();
    shard
        .metrics
        .tcp_connections
        .set(shard.connections.get() as u64);
    tracing::debug!(shard = shard.id, client_id, %peer, "client connected");

    let stop = serve_frames(&shard, &mut stream, &mut session).await;
    match stop {
        Stop::Shutdown => {
            // Tell the client why, as upstream does, then close.
            let _ = write_frame(
                &shard,
                &mut stream,
                ResponseFrame::error(ErrorCode::Disconnected),
            )
            .await;
        }
        Stop::Timeout(what) => {
            tracing::info!(client_id, %peer, what, "closing connection: timed out")
        }
        Stop::Error(error) => tracing::debug!(client_id, %peer, %error, "connection error"),
        Stop::Closed => {}
    }
    let _ = stream.close().await;
    shard.shared.groups.leave_all(client_id);
    shard.shared.clients.remove(client_id);
    shard.connections.set(shard.connections.get() - 1);
    shard
        .metrics
        .tcp_connections
        .set(shard.connections.get() as u64);
    tracing::debug!(shard = shard.id, client_id, %peer, "client disconnected");
}

async fn serve_frames(shard: &Shard, stream: &mut TcpStream, session: &mut Session) -> Stop {
    let config = &shard.shared.config.tcp;
    let connected_at = Instant::now();
    let max_send_bytes = config.max_send_messages_size.0 as usize;
    let mut buffer = BytesMut::with_capacity(READ_BUFFER_BYTES);
    let mut header_bytes = [0u8; REQUEST_HEADER_SIZE];
    loop {
        if shard.is_shutting_down() {
            return Stop::Shutdown;
        }
        // Idle wait for the next header: bounded for sessions that have not logged in, and by the
        // heartbeat deadline when heartbeats are verified.
        let heartbeat = &shard.shared.config.heartbeat;
        let heartbeat_limit = heartbeat.interval.0.mul_f64(1.2);
        let idle_limit = match session.user_id {
            Some(_) if heartbeat.enabled => {
                Some(heartbeat_limit.saturating_sub(session.last_heartbeat.elapsed()))
            }
            Some(_) => None,
            None => Some(
                config
                    .unauthenticated_timeout
                    .0
                    .saturating_sub(connected_at.elapsed()),
            ),
        };
        let read_header = read_exact_array(stream, header_bytes);
        let header = {
            let shutdown = pin!(shard.shutdown_signal.recv_async());
            let read = pin!(with_optional_timeout(idle_limit, read_header));
            match select(shutdown, read).await {
                Either::Left(_) => return Stop::Shutdown,
                Either::Right((read, _)) => read,
            }
        };
        let header = match header {
            None if session.user_id.is_none() => return Stop::Timeout("login"),
            None => return Stop::Timeout("heartbeat"),
            Some(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                return Stop::Closed;
            }
            Some(Err(error)) => return Stop::Error(error),
            Some(Ok(bytes)) => {
                header_bytes = bytes;
                shard
                    .metrics
                    .tcp_received_bytes
                    .add(REQUEST_HEADER_SIZE as u64);
                RequestHeader::parse(bytes)
            }
        };
        let payload_len = match header.payload_len(max_send_bytes) {
            Ok(len) => len,
            Err(error @ FrameError::LengthTooSmall) => {
                if let Err(error) =
                    write_frame(shard, stream, ResponseFrame::error(error.code())).await
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
                let _ = write_frame(shard, stream, ResponseFrame::error(error.code())).await;
                // The body was not read: the stream cannot be resynchronised.
                return Stop::Closed;
            }
        };
        buffer.clear();
        buffer.reserve(payload_len.max(READ_BUFFER_BYTES));
        let payload = if payload_len == 0 {
            BytesMut::new()
        } else {
            let read = read_payload(stream, std::mem::take(&mut buffer), payload_len);
            match compio::time::timeout(config.read_timeout.0, read).await {
                Err(_) => return Stop::Timeout("request body"),
                Ok(Err(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                    return Stop::Closed;
                }
                Ok(Err(error)) => return Stop::Error(error),
                Ok(Ok(mut filled)) => {
                    shard.metrics.tcp_received_bytes.add(payload_len as u64);
                    let payload = filled.split_to(payload_len);
                    buffer = filled;
                    payload
                }
            }
        };
        let stale = heartbeat.enabled
            && session.user_id.is_some()
            && session.last_heartbeat.elapsed() > heartbeat_limit;
        let response = if stale && header.code != rill_core::CommandCode::Ping.code() {
            tracing::info!(
                client_id = session.client_id,
                "session missed its heartbeats; closing"
            );
            ResponseFrame::error(ErrorCode::StaleClient)
        } else {
            process_frame(shard, session, header.code, payload).await
        };
        let closes = response.closes_connection();
        if let Err(error) = write_frame(shard, stream, response).await {
            return Stop::Error(error);
        }
        if closes {
            return Stop::Closed;
        }
    }
}

async fn with_optional_timeout<T>(
    limit: Option<Duration>,
    future: impl Future<Output = T>,
) -> Option<T> {
    match limit {
        Some(limit) => compio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}

async fn read_exact_array<const N: usize>(
    stream: &mut TcpStream,
    buffer: [u8; N],
) -> io::Result<[u8; N]> {
    let BufResult(result, buffer) = stream.read_exact(buffer).await;
    result.map(|()| buffer)
}

/// Reads exactly `len` bytes into `buffer`'s spare capacity (which must hold them).
async fn read_payload(
    stream: &mut TcpStream,
    buffer: BytesMut,
    len: usize,
) -> io::Result<BytesMut> {
    debug_assert!(buffer.is_empty() && buffer.capacity() >= len);
    let BufResult(result, slice) = stream.read_exact(buffer.slice(0..len)).await;
    result?;
    let buffer = compio::buf::IntoInner::into_inner(slice);
    debug_assert_eq!(buffer.len(), len);
    Ok(buffer)
}

/// Writes a whole response frame with one vectored write (header and payload together).
async fn write_frame(
    shard: &Shard,
    stream: &mut TcpStream,
    frame: ResponseFrame,
) -> io::Result<()> {
    let bytes: usize = frame.chunks.iter().map(|chunk| chunk.len()).sum();
    let BufResult(result, _) = if frame.chunks.len() == 1 {
        let chunk = frame.chunks.into_iter().next().expect("one chunk");
        let BufResult(result, chunk) = stream.write_all(chunk).await;
        BufResult(result, vec![chunk])
    } else {
        stream.write_vectored_all(frame.chunks).await
    };
    if result.is_ok() {
        shard.metrics.tcp_sent_bytes.add(bytes as u64);
    }
    result
}
