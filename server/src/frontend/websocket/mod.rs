//! The WebSocket front-end (`[websocket]`, on by default as upstream, 127.0.0.1:8092): every
//! shard listens on the same address (SO_REUSEPORT, as TCP), answers the RFC 6455 opening
//! handshake, and then serves the connection with the TCP connection loop over a [`WsStream`]:
//! the binary messages' payloads form one byte stream carrying ordinary request frames of either
//! protocol generation (protocol.md 1.1, protocol-0.9.md), and each response goes back as one
//! binary message, as upstream's server and the official `WebSocketClient` frame them.
//! `[websocket.tls]` puts TLS under it (wss).
//!
//! A WebSocket connection never moves to the shard owning its partitions, unlike plain TCP: its
//! state is not only the socket but the framing around it (a partly read frame, the mask's
//! phase, a fragmented message in progress) and, with TLS, the TLS session, none of which can
//! travel as a duplicated descriptor. It stays on the shard that accepted it, forwarding
//! partition work as TLS and QUIC sessions do.

pub mod frame;
pub mod handshake;
pub mod stream;

use super::Registration;
use super::tcp::{accept_connections, finish, serve_frames};
use crate::config::WebSocketConfig;
use crate::session::Session;
use crate::shard::Shard;
use compio::BufResult;
use compio::buf::IoBuf;
use compio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use compio_tls::TlsAcceptor;
use rill_core::primitives::Transport;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;
pub use stream::WsStream;

/// The decoder's limits and the buffer sizes `[websocket]` sets.
pub fn settings(config: &WebSocketConfig) -> (frame::Limits, stream::Buffers) {
    let size = |bytes: u64| usize::try_from(bytes).unwrap_or(usize::MAX);
    (
        frame::Limits {
            max_frame: config.max_frame_size.get().map(|size| size.0),
            max_message: config.max_message_size.get().map(|size| size.0),
            accept_unmasked: config.accept_unmasked_frames,
        },
        stream::Buffers {
            read: size(config.read_buffer_size.0),
            write: size(config.write_buffer_size.0),
        },
    )
}

/// Accepts connections until shutdown, spawning one task per connection.
pub async fn accept_loop(shard: Rc<Shard>, listener: TcpListener) {
    let tls = shard.shared.websocket_tls.clone().map(TlsAcceptor::from);
    accept_connections(&shard, &listener, "WebSocket", |stream, peer| {
        compio::runtime::spawn(serve(shard.clone(), tls.clone(), stream, peer)).detach();
    })
    .await;
}

/// One connection: its slot, then the TLS and WebSocket handshakes, together bounded by
/// `tcp.unauthenticated_timeout` (a client that stalls in them is dropped), then the requests.
async fn serve(shard: Rc<Shard>, tls: Option<TlsAcceptor>, stream: TcpStream, peer: SocketAddr) {
    let Ok((registration, mut session)) = Registration::new(&shard, peer, Transport::WebSocket)
    else {
        return;
    };
    let connected_at = Instant::now();
    let deadline = shard.shared.config.tcp.unauthenticated_timeout.0;
    match tls {
        None => {
            let upgrade = compio::time::timeout(deadline, upgrade(&shard, stream)).await;
            serve_upgraded(&shard, upgrade, peer, &mut session, connected_at).await;
        }
        Some(tls) => {
            let handshakes = async {
                let stream = tls.accept(stream).await?;
                upgrade(&shard, stream).await
            };
            let upgrade = compio::time::timeout(deadline, handshakes).await;
            serve_upgraded(&shard, upgrade, peer, &mut session, connected_at).await;
        }
    }
    drop(registration);
}

/// Serves the requests of an upgraded stream, plain or TLS alike; when the handshake failed or
/// timed out, logs why and returns (the connection closes).
async fn serve_upgraded<S: AsyncRead + AsyncWrite>(
    shard: &Shard,
    upgrade: Result<io::Result<Option<WsStream<S>>>, compio::time::Elapsed>,
    peer: SocketAddr,
    session: &mut Session,
    connected_at: Instant,
) {
    let mut stream = match upgrade {
        Ok(Ok(Some(stream))) => stream,
        Ok(Ok(None)) => return,
        Ok(Err(error)) => {
            tracing::info!(%peer, %error, "WebSocket handshake failed");
            return;
        }
        Err(_) => {
            tracing::info!(%peer, "WebSocket handshake timed out");
            return;
        }
    };
    let stop = serve_frames(
        shard,
        &mut stream,
        session,
        connected_at,
        false,
        Transport::WebSocket,
    )
    .await;
    finish(shard, stream, session, stop, Transport::WebSocket).await;
}

/// Reads the upgrade request and answers it: 101 and the WebSocket stream, or an HTTP error
/// (then None, and the connection closes).
async fn upgrade<S: AsyncRead + AsyncWrite>(
    shard: &Shard,
    mut stream: S,
) -> io::Result<Option<WsStream<S>>> {
    let config = &shard.shared.config.websocket;
    let mut head = Vec::with_capacity(1024);
    let end = loop {
        if let Some(end) = handshake::head_end(&head) {
            break end;
        }
        if head.len() >= handshake::MAX_HEAD_BYTES {
            let refusal = handshake::Refusal {
                status: 431,
                reason: "the request head is too large",
            };
            let _ = stream.write_all(handshake::refusal_response(refusal)).await;
            let _ = stream.shutdown().await;
            return Ok(None);
        }
        head.reserve(1024);
        let start = head.len();
        let limit = (start + 1024).min(handshake::MAX_HEAD_BYTES);
        let BufResult(read, buffer) = stream.read(head.slice(start..limit)).await;
        head = compio::buf::IntoInner::into_inner(buffer);
        if read? == 0 {
            return Ok(None);
        }
    };
    match handshake::check_request(&head[..end]) {
        Ok(accept) => {
            stream
                .write_all(handshake::switching_protocols(&accept))
                .await
                .0?;
            stream.flush().await?;
            // A client may send its first frames right behind the request.
            let leftover = head.split_off(end);
            let (limits, buffers) = settings(config);
            Ok(Some(WsStream::new(stream, leftover, limits, buffers)))
        }
        Err(refusal) => {
            tracing::info!(
                status = refusal.status,
                reason = refusal.reason,
                "WebSocket upgrade refused"
            );
            let _ = stream.write_all(handshake::refusal_response(refusal)).await;
            let _ = stream.flush().await;
            let _ = stream.shutdown().await;
            Ok(None)
        }
    }
}
