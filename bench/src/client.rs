//! A lean blocking TCP client for benchmarking: one connection per actor thread, one request in
//! flight (protocol.md 1.1), reusable buffers, and pre-encoded frames sent as they are.
//!
//! TLS over TCP, QUIC and WebSocket (ws, wss) go through `rill-sdk`'s transports (the same
//! rustls/quinn/tungstenite code as the SDK and the CLI), driven from the actor's thread by its own current-thread tokio runtime: a
//! few microseconds per request on top of the encryption itself, and one code path for
//! certificates, names and their error messages.
//!
//! Every byte on the wire comes from `rill_core`: requests are encoded with
//! [`rill_core::frame::encode_request`], responses read with [`ResponseHeader`], poll payloads
//! walked with [`MessageIter`]. This crate only moves bytes and times them.
//!
//! Either protocol generation is spoken (`--protocol 0.8|0.9`). For 0.9, control requests go
//! through `rill_core::v09::client` (0.8 requests written as 0.9 frames, replies read back);
//! SendMessages frames are built once as 0.9 frames and renumbered per send (the 256-byte
//! header only); polls are walked in their 0.9 batches without translation. Message bytes are
//! counted as stored (64-byte headers) in both generations, so their MB/s compare the same data.
//!
//! Why not `rill-sdk`: its client is async, re-encodes every request from typed values and holds a
//! lock per request; a benchmark should spend its time in the server, so the hot path here is
//! `write_all(prebuilt frame)` + `read_exact(header)` + `read_exact(payload into a reused buffer)`.

mod frames;
mod poll;

pub use frames::{PreparedBatch, encode_frame, prepare_batch};
pub use poll::{PollSummary, summarise_poll, summarise_v09_poll};

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use rill_core::frame::{RESPONSE_HEADER_SIZE, ResponseHeader, encode_request};
use rill_core::message::{MessageBatch, OutgoingMessage};
use rill_core::primitives::{CompressionAlgorithm, Identifier, Name, Partitioning, ShortString};
use rill_core::requests::*;
use rill_core::responses::{Stats, StreamDetails, TopicDetails};
use rill_core::v09::client::{ClientSession, OutgoingRequest, ReplyError, read_reply_header};
use rill_core::v09::header::HEADER_SIZE as V09_HEADER_SIZE;
use rill_core::{Decode, ErrorCode, Request};
use rill_sdk::transport::{Connection as SdkConnection, OutgoingFrame, PermanentFailure};
use rill_sdk::{
    ClientConfig, HttpOptions, Protocol, QuicOptions, TlsOptions, TransportKind, WebSocketOptions,
};
use std::io::{IoSlice, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The version string sent in LoginUser (the official SDK's, protocol.md 12).
const CLIENT_VERSION: &str = "0.10.0";
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A response larger than this means the stream is desynchronised.
const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// The transports `iggy-bench` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Tcp,
    Quic,
    Http,
    WebSocket,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Quic => "quic",
            Transport::Http => "http",
            Transport::WebSocket => "websocket",
        }
    }

    /// Fails with a clear message for what a transport cannot carry: the HTTP API has the 0.8
    /// commands only (the 0.9 protocol is a binary framing).
    pub fn ensure_supported(self, protocol: Protocol) -> Result<()> {
        match (self, protocol) {
            (Transport::Http, Protocol::V09) => Err(Error::Unsupported(
                "the HTTP API carries upstream 0.8's commands: --protocol 0.9 applies to the \
                 binary transports (tcp, quic, ws)"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

/// How to reach and log in to a server.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub transport: Transport,
    pub address: String,
    pub username: String,
    pub password: String,
    pub nodelay: bool,
    /// TLS over TCP (`tcp --tls`) or WebSocket (`ws --tls`).
    pub tls: Option<TlsOptions>,
    /// QUIC settings (used by the `quic` transport).
    pub quic: QuicOptions,
    /// The wire protocol generation.
    pub protocol: Protocol,
}

impl Endpoint {
    /// The SDK transport for TLS, QUIC and WebSocket; `None` for plain TCP (this module's own
    /// path).
    fn sdk_transport(&self) -> Option<TransportKind> {
        match (self.transport, &self.tls) {
            (Transport::Quic, _) => Some(TransportKind::Quic(self.quic.clone())),
            (Transport::WebSocket, tls) => Some(TransportKind::WebSocket(WebSocketOptions {
                tls: tls.clone(),
                ..WebSocketOptions::default()
            })),
            (Transport::Http, tls) => Some(TransportKind::Http(HttpOptions { tls: tls.clone() })),
            (_, Some(tls)) => Some(TransportKind::TcpTls(tls.clone())),
            _ => None,
        }
    }
}

/// A session through one of the SDK's transports, driven synchronously.
struct SdkSession {
    runtime: tokio::runtime::Runtime,
    connection: Box<dyn SdkConnection>,
}

enum Wire {
    Tcp(TcpStream),
    Sdk(Box<SdkSession>),
}

/// Connects with the SDK's transport on a runtime owned by the calling (actor) thread.
fn open_sdk_session(endpoint: &Endpoint, transport: TransportKind) -> Result<SdkSession> {
    let config = ClientConfig {
        address: endpoint.address.clone(),
        transport,
        nodelay: endpoint.nodelay,
        ..ClientConfig::default()
    };
    let connector = rill_sdk::transport::connector_for(&config)
        .map_err(|error| Error::Usage(error.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let connection = runtime
        .block_on(async {
            tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(&endpoint.address))
                .await
                .unwrap_or_else(|_| {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        connector.timeout_message(&endpoint.address, CONNECT_TIMEOUT),
                    ))
                })
        })
        .map_err(|error| match PermanentFailure::find(&error) {
            Some(failure) => Error::Tls(failure.message.clone()),
            None => Error::Connect(endpoint.address.clone(), error),
        })?;
    Ok(SdkSession {
        runtime,
        connection,
    })
}

/// Writes both parts of a frame: one system call unless the kernel takes less.
fn write_parts(stream: &mut TcpStream, head: &[u8], body: &[u8]) -> std::io::Result<()> {
    let mut slices = [IoSlice::new(head), IoSlice::new(body)];
    let mut remaining: &mut [IoSlice<'_>] = &mut slices;
    while !remaining.is_empty() {
        let written = stream.write_vectored(remaining)?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut remaining, written);
    }
    Ok(())
}

/// Grows `response` to `length` when needed, refusing lengths that mean a desynchronised stream.
fn make_room(response: &mut Vec<u8>, length: usize, during: &'static str) -> Result<()> {
    if length > MAX_RESPONSE_BYTES {
        return Err(Error::Protocol(format!(
            "response of {length} bytes while trying to {during}"
        )));
    }
    if response.len() < length {
        response.resize(length, 0);
    }
    Ok(())
}

/// Sends one request frame (`head` then `body`) of `protocol` and reads the reply into
/// `response` (grown to the largest seen and reused); returns the status and the payload (0.8)
/// or body (0.9) length. A 0.9 eviction is its reason's status.
fn exchange(
    wire: &mut Wire,
    head: &[u8],
    body: &[u8],
    protocol: Protocol,
    response: &mut Vec<u8>,
    during: &'static str,
) -> Result<(u32, usize)> {
    match wire {
        Wire::Tcp(stream) => {
            write_parts(stream, head, body)?;
            let (status, length) = match protocol {
                Protocol::V08 => {
                    let mut header = [0u8; RESPONSE_HEADER_SIZE];
                    stream.read_exact(&mut header)?;
                    let header = ResponseHeader::parse(header);
                    // An error status carries no payload (protocol.md 1.2).
                    let length = if header.status == 0 { header.length } else { 0 };
                    (header.status, length as usize)
                }
                Protocol::V09 => {
                    let mut header = [0u8; V09_HEADER_SIZE];
                    stream.read_exact(&mut header)?;
                    let (length, status) =
                        read_reply_header(&header).map_err(|error| Error::Decode(during, error))?;
                    (status, length)
                }
            };
            make_room(response, length, during)?;
            stream.read_exact(&mut response[..length])?;
            Ok((status, length))
        }
        Wire::Sdk(session) => {
            let SdkSession {
                runtime,
                connection,
            } = &mut **session;
            let raw = runtime.block_on(connection.round_trip(OutgoingFrame {
                head,
                body,
                protocol,
            }))?;
            let length = raw.payload.len();
            make_room(response, length, during)?;
            response[..length].copy_from_slice(&raw.payload);
            Ok((raw.status, length))
        }
    }
}

/// A status as this tool's error.
fn refused(during: &'static str, status: u32) -> Error {
    Error::Server(
        during,
        ErrorCode::from_code(status).unwrap_or(ErrorCode::Error),
    )
}

/// One authenticated session.
pub struct Connection {
    wire: Wire,
    /// The 0.9 session numbering; `None` on a 0.8 connection.
    v09: Option<ClientSession>,
    /// Encoding buffer for control requests.
    request: BytesMut,
    /// Receive buffer, grown to the largest response seen and reused.
    response: Vec<u8>,
    /// A 0.9 control reply read back into its 0.8 payload.
    translated: Vec<u8>,
}

impl Connection {
    /// Connects and logs in.
    pub fn open(endpoint: &Endpoint) -> Result<Connection> {
        endpoint.transport.ensure_supported(endpoint.protocol)?;
        let wire = match endpoint.sdk_transport() {
            Some(transport) => Wire::Sdk(Box::new(open_sdk_session(endpoint, transport)?)),
            None => {
                let address = endpoint
                    .address
                    .to_socket_addrs()
                    .map_err(|error| Error::Connect(endpoint.address.clone(), error))?
                    .next()
                    .ok_or_else(|| {
                        Error::Usage(format!("'{}' resolves to nothing", endpoint.address))
                    })?;
                let stream = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)
                    .map_err(|error| Error::Connect(endpoint.address.clone(), error))?;
                stream.set_nodelay(endpoint.nodelay)?;
                Wire::Tcp(stream)
            }
        };
        let v09 = match endpoint.protocol {
            Protocol::V08 => None,
            Protocol::V09 => Some(
                ClientSession::new(rand::random(), "iggy-bench", env!("CARGO_PKG_VERSION"))
                    .map_err(|error| Error::Decode("start a 0.9 session", error))?,
            ),
        };
        let mut connection = Connection {
            wire,
            v09,
            request: BytesMut::with_capacity(512),
            response: Vec::with_capacity(64 * 1024),
            translated: Vec::new(),
        };
        connection.login(&endpoint.username, &endpoint.password)?;
        Ok(connection)
    }

    /// The generation this connection speaks.
    pub fn protocol(&self) -> Protocol {
        if self.v09.is_some() {
            Protocol::V09
        } else {
            Protocol::V08
        }
    }

    fn login(&mut self, username: &str, password: &str) -> Result<()> {
        let request = LoginUser {
            username: Name::new(username)
                .map_err(|_| Error::Usage(format!("invalid username '{username}'")))?,
            password: ShortString(password.to_owned()),
            version: Some(CLIENT_VERSION.to_owned()),
            context: Some("iggy-bench".to_owned()),
        };
        self.call(request.into(), "log in").map(|_| ())
    }

    /// Sends one request and returns the response payload, in 0.8's form whatever the
    /// generation (valid until the next call).
    pub fn call(&mut self, request: Request, during: &'static str) -> Result<&[u8]> {
        if self.v09.is_none() {
            self.request.clear();
            encode_request(&request, &mut self.request);
            let (status, length) = exchange(
                &mut self.wire,
                &self.request,
                &[],
                Protocol::V08,
                &mut self.response,
                during,
            )?;
            if status != 0 {
                return Err(refused(during, status));
            }
            return Ok(&self.response[..length]);
        }
        let (sent, status, length) = self.round_trip_v09(&request, during)?;
        let session = self.v09.as_mut().expect("a 0.9 connection");
        self.translated = session
            .read_reply(&sent, status, &self.response[..length])
            .map_err(|error| match error {
                ReplyError::Status(code) => Error::Server(during, code),
                ReplyError::Malformed(error) => Error::Decode(during, error),
            })?;
        Ok(&self.translated)
    }

    /// Writes `request` as a 0.9 frame of this session and reads the reply into the response
    /// buffer: the request as sent, the reply's status and its body length.
    fn round_trip_v09(
        &mut self,
        request: &Request,
        during: &'static str,
    ) -> Result<(OutgoingRequest, u32, usize)> {
        let session = self.v09.as_mut().expect("a 0.9 connection");
        let sent = session
            .encode(request)
            .map_err(|error| Error::Decode(during, error))?;
        let (status, length) = exchange(
            &mut self.wire,
            &sent.header,
            &sent.body,
            Protocol::V09,
            &mut self.response,
            during,
        )?;
        Ok((sent, status, length))
    }

    /// Sends one request and decodes its response.
    pub fn call_decoded<T: Decode>(&mut self, request: Request, during: &'static str) -> Result<T> {
        let payload = self.call(request, during)?;
        T::from_bytes(payload).map_err(|error| Error::Decode(during, error))
    }

    /// Sends one request whose non-empty response is decoded; an empty OK is `None` (how the
    /// server answers a Get for something that does not exist).
    pub fn call_optional<T: Decode>(
        &mut self,
        request: Request,
        during: &'static str,
    ) -> Result<Option<T>> {
        let payload = self.call(request, during)?;
        if payload.is_empty() {
            return Ok(None);
        }
        T::from_bytes(payload)
            .map(Some)
            .map_err(|error| Error::Decode(during, error))
    }

    /// Writes a SendMessages frame prepared for this connection's generation and reads the
    /// response; a 0.9 frame's header is renumbered for this session first.
    pub fn send_frame(&mut self, frame: &[u8], during: &'static str) -> Result<()> {
        let (status, _) = match self.v09.as_mut() {
            None => exchange(
                &mut self.wire,
                frame,
                &[],
                Protocol::V08,
                &mut self.response,
                during,
            )?,
            Some(session) => {
                let (header, body) = frame.split_at(V09_HEADER_SIZE);
                let mut header: [u8; V09_HEADER_SIZE] =
                    header.try_into().expect("split at the header size");
                session.renumber(&mut header);
                exchange(
                    &mut self.wire,
                    &header,
                    body,
                    Protocol::V09,
                    &mut self.response,
                    during,
                )?
            }
        };
        match status {
            0 => Ok(()),
            status => Err(refused(during, status)),
        }
    }

    /// Sends a PollMessages request and summarises the messages returned, checking each with
    /// `rill_core`'s parser of the connection's generation.
    pub fn poll(&mut self, request: PollMessages) -> Result<PollSummary> {
        if self.v09.is_none() {
            let payload = self.call(request.into(), "poll messages")?;
            return summarise_poll(payload);
        }
        let during = "poll messages";
        let (_, status, length) = self.round_trip_v09(&Request::PollMessages(request), during)?;
        if status != 0 {
            return Err(refused(during, status));
        }
        summarise_v09_poll(&self.response[..length])
    }

    pub fn get_stream(&mut self, stream: &Identifier) -> Result<Option<StreamDetails>> {
        self.call_optional(
            GetStream {
                stream_id: stream.clone(),
            }
            .into(),
            "get a stream",
        )
    }

    pub fn get_topic(
        &mut self,
        stream: &Identifier,
        topic: &Identifier,
    ) -> Result<Option<TopicDetails>> {
        self.call_optional(
            GetTopic {
                stream_id: stream.clone(),
                topic_id: topic.clone(),
            }
            .into(),
            "get a topic",
        )
    }

    pub fn get_stats(&mut self) -> Result<Stats> {
        self.call_decoded(GetStats {}.into(), "get server stats")
    }

    pub fn create_stream(&mut self, name: &str) -> Result<()> {
        let request = CreateStream {
            name: valid_name(name)?,
        };
        self.call(request.into(), "create a stream").map(|_| ())
    }

    pub fn delete_stream(&mut self, stream: &Identifier) -> Result<()> {
        let request = DeleteStream {
            stream_id: stream.clone(),
        };
        self.call(request.into(), "delete a stream").map(|_| ())
    }

    pub fn create_topic(
        &mut self,
        stream: &Identifier,
        name: &str,
        partitions: u32,
        message_expiry_micros: u64,
        max_topic_size_bytes: u64,
    ) -> Result<()> {
        let request = CreateTopic {
            stream_id: stream.clone(),
            partitions_count: partitions,
            compression_algorithm: CompressionAlgorithm::None,
            message_expiry: message_expiry_micros,
            max_topic_size: max_topic_size_bytes,
            replication_factor: 1,
            name: valid_name(name)?,
        };
        self.call(request.into(), "create a topic").map(|_| ())
    }

    pub fn create_consumer_group(
        &mut self,
        stream: &Identifier,
        topic: &Identifier,
        name: &str,
    ) -> Result<()> {
        let request = CreateConsumerGroup {
            stream_id: stream.clone(),
            topic_id: topic.clone(),
            name: valid_name(name)?,
        };
        self.call(request.into(), "create a consumer group")
            .map(|_| ())
    }

    pub fn delete_consumer_group(
        &mut self,
        stream: &Identifier,
        topic: &Identifier,
        group: &Identifier,
    ) -> Result<()> {
        let request = DeleteConsumerGroup {
            stream_id: stream.clone(),
            topic_id: topic.clone(),
            group_id: group.clone(),
        };
        self.call(request.into(), "delete a consumer group")
            .map(|_| ())
    }

    pub fn join_consumer_group(
        &mut self,
        stream: &Identifier,
        topic: &Identifier,
        group: &Identifier,
    ) -> Result<()> {
        let request = JoinConsumerGroup {
            stream_id: stream.clone(),
            topic_id: topic.clone(),
            group_id: group.clone(),
        };
        self.call(request.into(), "join a consumer group")
            .map(|_| ())
    }
}

fn valid_name(name: &str) -> Result<Name> {
    Name::new(name).map_err(|_| Error::Usage(format!("invalid name '{name}'")))
}

/// Whether an error is the server saying that something already exists.
pub fn is_already_exists(error: &Error) -> bool {
    matches!(
        error,
        Error::Server(
            _,
            ErrorCode::StreamNameAlreadyExists
                | ErrorCode::TopicNameAlreadyExists
                | ErrorCode::ConsumerGroupNameAlreadyExists
        )
    )
}

#[cfg(test)]
mod tests;
