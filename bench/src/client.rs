//! A lean blocking TCP client for benchmarking: one connection per actor thread, one request in
//! flight (protocol.md 1.1), reusable buffers, and pre-encoded frames sent as they are.
//!
//! TLS over TCP and QUIC go through `rill-sdk`'s transports (the same rustls/quinn code as the
//! SDK and the CLI), driven from the actor's thread by its own current-thread tokio runtime: a
//! few microseconds per request on top of the encryption itself, and one code path for
//! certificates, names and their error messages.
//!
//! Every byte on the wire comes from `rill_core`: requests are encoded with
//! [`rill_core::frame::encode_request`], responses read with [`ResponseHeader`], poll payloads
//! walked with [`MessageIter`]. This crate only moves bytes and times them.
//!
//! Why not `rill-sdk`: its client is async, re-encodes every request from typed values and holds a
//! lock per request; a benchmark should spend its time in the server, so the hot path here is
//! `write_all(prebuilt frame)` + `read_exact(header)` + `read_exact(payload into a reused buffer)`.

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use rill_core::frame::{RESPONSE_HEADER_SIZE, ResponseHeader, encode_request};
use rill_core::message::{MessageBatch, MessageIter, OutgoingMessage, POLL_RESPONSE_HEADER_SIZE};
use rill_core::primitives::{CompressionAlgorithm, Identifier, Name, Partitioning, ShortString};
use rill_core::requests::*;
use rill_core::responses::{Stats, StreamDetails, TopicDetails};
use rill_core::{Decode, ErrorCode, Reader, Request};
use rill_sdk::transport::{Connection as SdkConnection, OutgoingFrame, PermanentFailure};
use rill_sdk::{ClientConfig, QuicOptions, TlsOptions, TransportKind};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The version string sent in LoginUser (the official SDK's, protocol.md 12).
const CLIENT_VERSION: &str = "0.10.0";
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A response larger than this means the stream is desynchronised.
const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// The transports `iggy-bench` knows by name; TCP (plain or TLS) and QUIC are implemented.
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

    /// Fails with a clear message for transports this tool cannot drive yet.
    pub fn ensure_supported(self) -> Result<()> {
        match self {
            Transport::Tcp | Transport::Quic => Ok(()),
            other => Err(Error::Unsupported(format!(
                "transport '{}' is not supported: iggy-bench speaks the binary protocol over \
                 TCP (optionally with TLS) and QUIC (use the `tcp` or `quic` subcommand)",
                other.name()
            ))),
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
    /// TLS over TCP (`tcp --tls`).
    pub tls: Option<TlsOptions>,
    /// QUIC settings (used by the `quic` transport).
    pub quic: QuicOptions,
}

impl Endpoint {
    /// The SDK transport for TLS and QUIC; `None` for plain TCP (this module's own path).
    fn sdk_transport(&self) -> Option<TransportKind> {
        match (self.transport, &self.tls) {
            (Transport::Quic, _) => Some(TransportKind::Quic(self.quic.clone())),
            (_, Some(tls)) => Some(TransportKind::TcpTls(tls.clone())),
            _ => None,
        }
    }
}

/// A poll's outcome, read without copying the messages out of the receive buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollSummary {
    pub partition_id: u32,
    pub current_offset: u64,
    pub messages: u32,
    /// Bytes of the messages section (headers, payloads, user headers).
    pub bytes: u64,
    /// Bytes of payload only.
    pub payload_bytes: u64,
    /// Offset of the last message returned, if any.
    pub last_offset: Option<u64>,
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

/// Sends one whole request frame and reads the response payload into `response` (grown to the
/// largest response seen and reused); returns the payload length.
fn exchange(
    wire: &mut Wire,
    frame: &[u8],
    response: &mut Vec<u8>,
    during: &'static str,
) -> Result<usize> {
    match wire {
        Wire::Tcp(stream) => {
            stream.write_all(frame)?;
            let mut header = [0u8; RESPONSE_HEADER_SIZE];
            stream.read_exact(&mut header)?;
            let length = ResponseHeader::parse(header)
                .result()
                .map_err(|code| Error::Server(during, code))?;
            if length > MAX_RESPONSE_BYTES {
                return Err(Error::Protocol(format!(
                    "response of {length} bytes while trying to {during}"
                )));
            }
            if response.len() < length {
                response.resize(length, 0);
            }
            stream.read_exact(&mut response[..length])?;
            Ok(length)
        }
        Wire::Sdk(session) => {
            let SdkSession {
                runtime,
                connection,
            } = &mut **session;
            let raw = runtime.block_on(connection.round_trip(OutgoingFrame {
                head: frame,
                body: &[],
            }))?;
            let length = ResponseHeader {
                status: raw.status,
                length: raw.payload.len() as u32,
            }
            .result()
            .map_err(|code| Error::Server(during, code))?;
            if response.len() < length {
                response.resize(length, 0);
            }
            response[..length].copy_from_slice(&raw.payload);
            Ok(length)
        }
    }
}

/// One authenticated session.
pub struct Connection {
    wire: Wire,
    /// Encoding buffer for control requests.
    request: BytesMut,
    /// Receive buffer, grown to the largest response seen and reused.
    response: Vec<u8>,
}

impl Connection {
    /// Connects and logs in.
    pub fn open(endpoint: &Endpoint) -> Result<Connection> {
        endpoint.transport.ensure_supported()?;
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
        let mut connection = Connection {
            wire,
            request: BytesMut::with_capacity(512),
            response: Vec::with_capacity(64 * 1024),
        };
        connection.login(&endpoint.username, &endpoint.password)?;
        Ok(connection)
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

    /// Sends one request and returns the response payload (valid until the next call).
    pub fn call(&mut self, request: Request, during: &'static str) -> Result<&[u8]> {
        self.request.clear();
        encode_request(&request, &mut self.request);
        let length = exchange(&mut self.wire, &self.request, &mut self.response, during)?;
        Ok(&self.response[..length])
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

    /// Writes a pre-encoded request frame and reads the response; returns the payload length.
    pub fn send_frame(&mut self, frame: &[u8], during: &'static str) -> Result<usize> {
        exchange(&mut self.wire, frame, &mut self.response, during)
    }

    /// The payload of the last response.
    pub fn last_payload(&self, length: usize) -> &[u8] {
        &self.response[..length]
    }

    /// Sends a pre-encoded PollMessages frame and summarises the messages returned, checking
    /// each with `rill_core`'s message parser.
    pub fn poll_frame(&mut self, frame: &[u8]) -> Result<PollSummary> {
        let length = self.send_frame(frame, "poll messages")?;
        summarise_poll(&self.response[..length])
    }

    /// Sends a PollMessages request (encoded into the reused buffer) and summarises the
    /// messages returned.
    pub fn poll(&mut self, request: PollMessages) -> Result<PollSummary> {
        let payload = self.call(request.into(), "poll messages")?;
        summarise_poll(payload)
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

/// Reads a PollMessages response payload (protocol.md 6.5) and walks its messages by their
/// header lengths, as the official SDK does.
pub fn summarise_poll(payload: &[u8]) -> Result<PollSummary> {
    let decode = |error| Error::Decode("poll messages", error);
    let mut reader = Reader::new(payload);
    let partition_id = reader.u32("partition id").map_err(decode)?;
    let current_offset = reader.u64("current offset").map_err(decode)?;
    let _declared_count = reader.u32("messages count").map_err(decode)?;
    let mut summary = PollSummary {
        partition_id,
        current_offset,
        ..PollSummary::default()
    };
    for message in MessageIter::new(&payload[POLL_RESPONSE_HEADER_SIZE..]) {
        let message = message.map_err(decode)?;
        summary.messages += 1;
        summary.bytes += message.size() as u64;
        summary.payload_bytes += message.payload().len() as u64;
        summary.last_offset = Some(message.offset());
    }
    Ok(summary)
}

/// Encodes a whole request frame (header and payload) once, to be sent many times.
pub fn encode_frame(request: &Request) -> Bytes {
    let mut frame = BytesMut::with_capacity(8 + request.payload_len());
    encode_request(request, &mut frame);
    frame.freeze()
}

/// A SendMessages frame built once and resent, with what it carries.
#[derive(Debug, Clone)]
pub struct PreparedBatch {
    pub frame: Bytes,
    pub messages: u32,
    /// Bytes of the messages (64-byte headers included), as a poll would return them.
    pub bytes: u64,
    /// Bytes of payload only.
    pub payload_bytes: u64,
}

/// Builds SendMessages frames for `stream/topic` with the given partitioning. Message `i` of a
/// batch carries id `i + 1` (so the server does not spend time drawing random ids) and a payload
/// of `sizes[i]` bytes of a repeating pattern.
pub fn prepare_batch(
    stream: &Identifier,
    topic: &Identifier,
    partitioning: &Partitioning,
    sizes: &[u32],
) -> PreparedBatch {
    let messages: Vec<OutgoingMessage> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| OutgoingMessage {
            id: i as u128 + 1,
            origin_timestamp: 0,
            payload: Bytes::from(
                (0..size)
                    .map(|byte| b'a' + (byte % 26) as u8)
                    .collect::<Vec<u8>>(),
            ),
            user_headers: Bytes::new(),
        })
        .collect();
    let batch = MessageBatch::from_messages(&messages);
    let bytes = batch.size() as u64;
    let request: Request = SendMessages {
        stream_id: stream.clone(),
        topic_id: topic.clone(),
        partitioning: partitioning.clone(),
        batch,
    }
    .into();
    PreparedBatch {
        frame: encode_frame(&request),
        messages: sizes.len() as u32,
        bytes,
        payload_bytes: sizes.iter().map(|&size| u64::from(size)).sum(),
    }
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
mod tests {
    use super::*;
    use rill_core::message::encode_poll_header;

    #[test]
    fn prepared_batches_decode_as_the_server_would() {
        let batch = prepare_batch(
            &Identifier::named("bench-stream-1").unwrap(),
            &Identifier::numeric(0),
            &Partitioning::PartitionId(0),
            &[10, 20, 30],
        );
        assert_eq!(batch.messages, 3);
        assert_eq!(batch.payload_bytes, 60);
        assert_eq!(batch.bytes, 3 * 64 + 60);
        let header = rill_core::frame::RequestHeader::parse(batch.frame[..8].try_into().unwrap());
        assert_eq!(header.code, 101);
        assert_eq!(header.length as usize, batch.frame.len() - 4);
        let decoded = SendMessages::decode_owned(BytesMut::from(&batch.frame[8..])).unwrap();
        assert_eq!(decoded.batch.count(), 3);
        let payload_sizes: Vec<_> = decoded.batch.iter().map(|m| m.payload().len()).collect();
        assert_eq!(payload_sizes, [10, 20, 30]);
    }

    #[test]
    fn poll_summaries_count_messages_and_bytes() {
        let batch = MessageBatch::from_messages(&[
            OutgoingMessage::new(&b"hello"[..]),
            OutgoingMessage::new(&b"world!"[..]),
        ]);
        let mut batch = MessageBatch::from_stored(batch.into_bytes()).unwrap();
        batch.stamp(41, 7, || 9);
        let mut payload = encode_poll_header(3, 42, 2).to_vec();
        payload.extend_from_slice(batch.as_bytes());
        let summary = summarise_poll(&payload).unwrap();
        assert_eq!(
            summary,
            PollSummary {
                partition_id: 3,
                current_offset: 42,
                messages: 2,
                bytes: 2 * 64 + 11,
                payload_bytes: 11,
                last_offset: Some(42),
            }
        );
        let empty = summarise_poll(&encode_poll_header(0, 0, 0)).unwrap();
        assert_eq!(empty.messages, 0);
        assert_eq!(empty.last_offset, None);
        assert!(summarise_poll(&payload[..20]).is_err());
    }
}
