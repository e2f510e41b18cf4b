//! Transports: the only code that touches sockets.
//!
//! A [`Connector`] opens [`Connection`]s; a connection carries one request frame and reads one
//! response frame at a time (protocol.md 1.1-1.2). Four transports sit behind the two traits:
//! plain TCP ([`TcpConnector`]), TLS over TCP ([`TlsConnector`], protocol.md 1.5), QUIC
//! ([`QuicConnector`], one bidirectional stream per [`Connection::round_trip`], protocol.md 1.6)
//! and WebSocket, ws or wss ([`WebSocketConnector`], one binary message per frame and per
//! reply, read whole by [`parse_reply`]).
//!
//! All rustls configurations use the ring provider explicitly: the process-wide default
//! provider is ambiguous when another crate in the same build enables aws-lc-rs.
//!
//! A frame is of either protocol generation ([`Protocol`]); its reply is read in the same one:
//! an 8-byte `[status][length]` header for 0.8, a 256-byte reply or eviction header for 0.9.
//!
//! Every request frame leaves in one vectored write: `head` (the 8-byte frame header plus the
//! encoded metadata) and `body` (for SendMessages, the messages section, written straight from
//! the batch buffer without another copy). Splitting the header into its own small write while
//! Nagle is on costs ~40 ms per request; TCP_NODELAY is also set by default.

mod http;
mod quic;
mod reply;
mod tcp;
mod tls;
mod websocket;

pub use http::{HttpConnection, HttpConnector};
pub use quic::{QuicConnection, QuicConnector};
pub use reply::parse_reply;
pub use tcp::{TcpConnection, TcpConnector};
pub use tls::{TlsConnection, TlsConnector};
pub use websocket::{WebSocketConnector, WsConnection};

use crate::config::{ClientConfig, Protocol, TransportKind};
use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use rill_core::ErrorCode;
use rill_core::frame::{RESPONSE_HEADER_SIZE, ResponseHeader};
use rill_core::v09;
use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A boxed, sendable future (the traits below are object safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The largest response payload the client accepts (a poll of many large messages stays well
/// below it); a larger declared length means a desynchronised stream.
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// Read buffer of a TCP connection. Larger reads bypass it and land in the response buffer.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// One request frame, in two parts written together.
#[derive(Debug, Clone, Copy)]
pub struct OutgoingFrame<'a> {
    /// The frame header (8 bytes for 0.8, 256 for 0.9) followed by the start of the payload.
    pub head: &'a [u8],
    /// The rest of the payload (empty for most commands).
    pub body: &'a [u8],
    /// The generation the frame is written in, and so its reply.
    pub protocol: Protocol,
}

impl OutgoingFrame<'_> {
    /// Total bytes on the wire.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    /// Whether the frame is empty (never true for a valid frame).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A response frame: the status and, for status 0, the payload. For 0.9 the payload is the
/// reply body as sent (a result section included) and an eviction is its reason's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawResponse {
    /// 0 for success, otherwise an error code.
    pub status: u32,
    /// The payload (empty for errors and empty OK responses).
    pub payload: Bytes,
}

/// One established session with the server.
pub trait Connection: Send + Sync {
    /// Writes one request frame and reads its response.
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>>;

    /// The server's address.
    fn peer_address(&self) -> Option<SocketAddr>;

    /// This side's address (its string form is what the server hashes into the client id).
    fn local_address(&self) -> Option<SocketAddr>;
}

/// Opens connections of one transport.
pub trait Connector: Send + Sync {
    /// Connects to `address` (`host:port`).
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>>;

    /// The message of a connection attempt that took longer than the connect timeout; transports
    /// say what to check.
    fn timeout_message(&self, address: &str, after: Duration) -> String {
        format!("connecting to {address} did not complete within {after:?}")
    }
}

/// The connector for a configured transport. TLS settings are checked here (CA file read and
/// parsed, server name valid), so a bad setting fails when the client is built, not on connect.
pub fn connector_for(config: &ClientConfig) -> Result<Arc<dyn Connector>> {
    match &config.transport {
        TransportKind::Tcp => Ok(Arc::new(TcpConnector {
            nodelay: config.nodelay,
        })),
        TransportKind::TcpTls(options) => Ok(Arc::new(TlsConnector::new(
            options,
            &config.address,
            config.nodelay,
        )?)),
        TransportKind::Quic(options) => Ok(Arc::new(QuicConnector::new(options)?)),
        TransportKind::WebSocket(options) => Ok(Arc::new(WebSocketConnector::new(
            options,
            &config.address,
            config.nodelay,
        )?)),
        TransportKind::Http(_) if config.protocol != Protocol::V08 => Err(Error::invalid(
            "the HTTP API carries upstream 0.8's commands: protocol=0.9 applies to the binary \
             transports",
        )),
        TransportKind::Http(options) => Ok(Arc::new(HttpConnector::new(
            options.tls.as_ref(),
            &config.address,
        )?)),
    }
}

/// A connection failure that retrying cannot fix (an untrusted certificate, a name the
/// certificate does not cover). Connectors return it inside an [`io::Error`]; the client stops
/// retrying and reports it as [`Error::Tls`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermanentFailure {
    /// The protocol code the failure maps to.
    pub code: ErrorCode,
    /// What failed and what to do about it.
    pub message: String,
}

impl std::fmt::Display for PermanentFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PermanentFailure {}

impl PermanentFailure {
    /// Wraps the failure into the error type connectors return.
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }

    /// The failure inside `error`, when `error` carries one.
    pub fn find(error: &io::Error) -> Option<&PermanentFailure> {
        error.get_ref()?.downcast_ref::<PermanentFailure>()
    }
}

impl From<PermanentFailure> for Error {
    fn from(failure: PermanentFailure) -> Self {
        Error::Tls {
            code: failure.code,
            message: failure.message,
        }
    }
}

/// Writes both parts with vectored writes: one system call unless the kernel takes less.
async fn write_frame<W: AsyncWriteExt + Unpin>(
    writer: &mut W,
    frame: OutgoingFrame<'_>,
) -> io::Result<()> {
    let mut slices = [IoSlice::new(frame.head), IoSlice::new(frame.body)];
    let mut remaining: &mut [IoSlice<'_>] = &mut slices;
    IoSlice::advance_slices(&mut remaining, 0);
    while !remaining.is_empty() {
        let written = writer.write_vectored(remaining).await?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut remaining, written);
    }
    Ok(())
}

/// Reads the reply to a frame of `protocol`.
async fn read_response<R: AsyncReadExt + Unpin>(
    reader: &mut R,
    protocol: Protocol,
) -> io::Result<RawResponse> {
    match protocol {
        Protocol::V08 => read_v08_response(reader).await,
        Protocol::V09 => read_v09_reply(reader).await,
    }
}

fn too_large(length: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("response of {length} bytes exceeds the {MAX_RESPONSE_BYTES}-byte limit"),
    )
}

/// Reads one 0.9 reply or eviction (protocol-0.9.md 2.3, 2.5): a 256-byte header, then the
/// body its `size` declares.
async fn read_v09_reply<R: AsyncReadExt + Unpin>(reader: &mut R) -> io::Result<RawResponse> {
    let mut header = [0u8; v09::header::HEADER_SIZE];
    reader.read_exact(&mut header).await?;
    let (length, status) = v09::client::read_reply_header(&header)
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.to_string()))?;
    if length > MAX_RESPONSE_BYTES {
        return Err(too_large(length));
    }
    let mut payload = BytesMut::zeroed(length);
    reader.read_exact(&mut payload).await?;
    Ok(RawResponse {
        status,
        payload: payload.freeze(),
    })
}

/// Reads one 0.8 response frame. An error status carries no payload (protocol.md 1.2).
async fn read_v08_response<R: AsyncReadExt + Unpin>(reader: &mut R) -> io::Result<RawResponse> {
    let mut header = [0u8; RESPONSE_HEADER_SIZE];
    reader.read_exact(&mut header).await?;
    let header = ResponseHeader::parse(header);
    if header.status != 0 {
        return Ok(RawResponse {
            status: header.status,
            payload: Bytes::new(),
        });
    }
    let length = header.length as usize;
    if length > MAX_RESPONSE_BYTES {
        return Err(too_large(length));
    }
    let mut payload = BytesMut::zeroed(length);
    reader.read_exact(&mut payload).await?;
    Ok(RawResponse {
        status: 0,
        payload: payload.freeze(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frame_parts_are_written_in_order_and_responses_parsed() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            write_frame(
                &mut client,
                OutgoingFrame {
                    head: &[1, 2, 3],
                    body: &[4, 5],
                    protocol: Protocol::V08,
                },
            )
            .await
            .unwrap();
            client
        });
        let mut received = [0u8; 5];
        server.read_exact(&mut received).await.unwrap();
        assert_eq!(received, [1, 2, 3, 4, 5]);
        let mut client = writer.await.unwrap();
        server
            .write_all(&[0, 0, 0, 0, 2, 0, 0, 0, 9, 9, 40, 0, 0, 0, 0, 0, 0, 0])
            .await
            .unwrap();
        let ok = read_response(&mut client, Protocol::V08).await.unwrap();
        assert_eq!(ok.status, 0);
        assert_eq!(&ok.payload[..], &[9, 9]);
        let error = read_response(&mut client, Protocol::V08).await.unwrap();
        assert_eq!(error.status, 40);
        assert!(error.payload.is_empty());
    }

    #[tokio::test]
    async fn v09_replies_and_evictions_are_read_whole() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        let mut reply = [0u8; 256];
        reply[48..52].copy_from_slice(&259u32.to_le_bytes());
        reply[60] = 8;
        server.write_all(&reply).await.unwrap();
        server.write_all(&[1, 2, 3]).await.unwrap();
        let mut eviction = [0u8; 256];
        eviction[48..52].copy_from_slice(&256u32.to_le_bytes());
        eviction[60] = 13;
        eviction[255] = 13;
        server.write_all(&eviction).await.unwrap();
        let ok = read_response(&mut client, Protocol::V09).await.unwrap();
        assert_eq!((ok.status, &ok.payload[..]), (0, &[1u8, 2, 3][..]));
        let evicted = read_response(&mut client, Protocol::V09).await.unwrap();
        assert_eq!(evicted.status, 30, "stale client");
        let mut garbage = [0u8; 256];
        garbage[60] = 5;
        server.write_all(&garbage).await.unwrap();
        assert!(read_response(&mut client, Protocol::V09).await.is_err());
    }
}
