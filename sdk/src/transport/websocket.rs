//! WebSocket (RFC 6455), plain (ws) or over TLS (wss): after the upgrade at "/", each request
//! frame leaves as one binary message and each reply arrives as one binary message (the server
//! may fragment it; tungstenite gathers the fragments), in the frame's protocol generation.
//!
//! tungstenite only does the upgrade and the framing: the TCP socket and, for wss, the rustls
//! session are ours (tls.rs: CA file, server name, validation flag, certificate messages), so
//! one TLS setup serves TCP and WebSocket and tungstenite needs no TLS feature.

use super::reply::parse_reply;
use super::tls::{TCP_HINTS, client_crypto, handshake_error, server_name};
use super::{BoxFuture, Connection, Connector, OutgoingFrame, PermanentFailure, RawResponse};
use crate::config::{TlsOptions, WebSocketOptions};
use crate::error::Result;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use rill_core::ErrorCode;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{WebSocketStream, client_async_with_config};

/// WebSocket, with TLS when the options say so.
#[derive(Clone)]
pub struct WebSocketConnector {
    tls: Option<(tokio_rustls::TlsConnector, TlsOptions)>,
    config: WebSocketConfig,
    nodelay: bool,
}

impl std::fmt::Debug for WebSocketConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketConnector")
            .field("tls", &self.tls.as_ref().map(|(_, options)| options))
            .field("nodelay", &self.nodelay)
            .finish_non_exhaustive()
    }
}

impl WebSocketConnector {
    /// Reads the CA file and checks the server name for `address` now (with TLS), so that bad
    /// settings fail before the first connection attempt.
    pub fn new(options: &WebSocketOptions, address: &str, nodelay: bool) -> Result<Self> {
        let tls = match &options.tls {
            Some(tls) => {
                let crypto = client_crypto(
                    tls.validate_certificate,
                    tls.ca_file.as_deref(),
                    rustls::DEFAULT_VERSIONS,
                )?;
                server_name(tls.domain.as_deref(), address, TCP_HINTS.name)?;
                Some((
                    tokio_rustls::TlsConnector::from(Arc::new(crypto)),
                    tls.clone(),
                ))
            }
            None => None,
        };
        let mut config = WebSocketConfig::default()
            .max_message_size(Some(options.max_message_size))
            .max_frame_size(Some(options.max_frame_size));
        if let Some(size) = options.read_buffer_size {
            config = config.read_buffer_size(size);
        }
        if let Some(size) = options.write_buffer_size {
            // tungstenite insists on room for at least one more write than it buffers.
            config = config
                .write_buffer_size(size)
                .max_write_buffer_size(usize::MAX);
        }
        Ok(WebSocketConnector {
            tls,
            config,
            nodelay,
        })
    }
}

impl Connector for WebSocketConnector {
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>> {
        Box::pin(async move {
            let name = match &self.tls {
                Some((_, options)) => Some(
                    server_name(options.domain.as_deref(), address, TCP_HINTS.name)
                        .map_err(PermanentFailure::into_io)?,
                ),
                None => None,
            };
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(self.nodelay)?;
            let peer = stream.peer_addr().ok();
            let local = stream.local_addr().ok();
            match (&self.tls, name) {
                (Some((connector, _)), Some(name)) => {
                    let stream = connector
                        .connect(name.clone(), stream)
                        .await
                        .map_err(|error| handshake_error(error, address, &name))?;
                    let url = format!("wss://{address}/");
                    self.upgrade(url, stream, peer, local).await
                }
                _ => {
                    let url = format!("ws://{address}/");
                    self.upgrade(url, stream, peer, local).await
                }
            }
        })
    }

    fn timeout_message(&self, address: &str, after: Duration) -> String {
        let what = if self.tls.is_some() { "wss" } else { "ws" };
        format!(
            "connecting with WebSocket ({what}) to {address} did not complete within {after:?} \
             (is the server reachable, and does its [websocket] listener use TLS exactly when \
             tls=true?)"
        )
    }
}

impl WebSocketConnector {
    async fn upgrade<S>(
        &self,
        url: String,
        stream: S,
        peer: Option<SocketAddr>,
        local: Option<SocketAddr>,
    ) -> io::Result<Box<dyn Connection>>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        let (socket, _) = client_async_with_config(url.as_str(), stream, Some(self.config))
            .await
            .map_err(|error| upgrade_error(error, &url))?;
        Ok(Box::new(WsConnection {
            socket,
            peer,
            local,
        }))
    }
}

/// An upgrade the server refused is permanent (a wrong port or path will not start answering
/// 101); a broken or closed socket is retried like any connection failure.
fn upgrade_error(error: tungstenite::Error, url: &str) -> io::Error {
    match error {
        tungstenite::Error::Http(response) => PermanentFailure {
            code: ErrorCode::CannotEstablishConnection,
            message: format!(
                "the server refused the WebSocket upgrade of {url} with HTTP {}: is this its \
                 [websocket] address?",
                response.status()
            ),
        }
        .into_io(),
        tungstenite::Error::Io(error) => io::Error::new(
            error.kind(),
            format!("WebSocket upgrade of {url} failed: {error}"),
        ),
        other => io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "WebSocket upgrade of {url} failed: {other} (if the server's [websocket] \
                 listener uses TLS, connect with tls=true)"
            ),
        ),
    }
}

/// What a failed read or write of an established connection means for the caller.
fn connection_error(error: tungstenite::Error) -> io::Error {
    match error {
        tungstenite::Error::Io(error) => error,
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "the WebSocket connection is closed",
        ),
        other => io::Error::new(io::ErrorKind::InvalidData, format!("WebSocket: {other}")),
    }
}

/// A WebSocket session over `S` (a TCP socket or a TLS session on one).
pub struct WsConnection<S> {
    socket: WebSocketStream<S>,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
}

impl<S> std::fmt::Debug for WsConnection<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsConnection")
            .field("peer", &self.peer)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl<S> WsConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync,
{
    /// The next binary message, answering pings on the way (tungstenite queues the pong; the
    /// flush sends it now rather than with our next request).
    async fn next_binary(&mut self) -> io::Result<Bytes> {
        loop {
            let message = match self.socket.next().await {
                Some(message) => message.map_err(connection_error)?,
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the WebSocket connection",
                    ));
                }
            };
            match message {
                Message::Binary(data) => return Ok(data),
                Message::Ping(_) => self.socket.flush().await.map_err(connection_error)?,
                Message::Pong(_) | Message::Frame(_) => {}
                Message::Close(frame) => {
                    let why = frame.map_or_else(String::new, |frame| {
                        format!(" (code {}, '{}')", u16::from(frame.code), frame.reason)
                    });
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        format!("the server closed the WebSocket connection{why}"),
                    ));
                }
                Message::Text(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the server sent a text message; replies are binary messages",
                    ));
                }
            }
        }
    }
}

impl<S> Connection for WsConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync,
{
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>> {
        Box::pin(async move {
            // One message per frame; the server would also take head and body as two, but one
            // keeps a request in one write and its framing identical to upstream's client.
            let mut message = Vec::with_capacity(frame.len());
            message.extend_from_slice(frame.head);
            message.extend_from_slice(frame.body);
            self.socket
                .send(Message::Binary(message.into()))
                .await
                .map_err(connection_error)?;
            let reply = self.next_binary().await?;
            parse_reply(frame.protocol, reply)
        })
    }

    fn peer_address(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.local
    }
}
