//! Message types for applications: [`SendMessage`] to build outgoing messages from
//! [`Bytes`] payloads, and [`Message`], a received message that is a cheap slice of the poll
//! response buffer (cloning it bumps a reference count; nothing is copied).

use crate::error::{Error, Result};
use bytes::Bytes;
use rill_core::message::{MessageView, OutgoingMessage, PolledMessages};
use rill_core::primitives::user_headers::{self, HeaderField, HeaderKind};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, the protocol's timestamp unit.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_micros() as u64)
        .unwrap_or(0)
}

/// A random message id shaped like a UUIDv4 (version and variant bits set), so that the
/// server's optional deduplication can recognise a retried message.
pub fn random_message_id() -> u128 {
    let random: u128 = rand::random();
    let with_version = (random & !(0xF << 76)) | (0x4 << 76);
    (with_version & !(0x3 << 62)) | (0x2 << 62)
}

/// A typed header key or value (protocol.md 6.3).
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderValue {
    /// Raw bytes (1..=255).
    Raw(Vec<u8>),
    /// UTF-8 text (1..=255 bytes).
    String(String),
    /// A boolean.
    Bool(bool),
    /// i8.
    Int8(i8),
    /// i16.
    Int16(i16),
    /// i32.
    Int32(i32),
    /// i64.
    Int64(i64),
    /// i128.
    Int128(i128),
    /// u8.
    Uint8(u8),
    /// u16.
    Uint16(u16),
    /// u32.
    Uint32(u32),
    /// u64.
    Uint64(u64),
    /// u128.
    Uint128(u128),
    /// f32.
    Float32(f32),
    /// f64.
    Float64(f64),
}

impl HeaderValue {
    /// The wire field (kind and little-endian bytes).
    pub fn to_field(&self) -> HeaderField {
        let (kind, value) = match self {
            HeaderValue::Raw(bytes) => (HeaderKind::Raw, bytes.clone()),
            HeaderValue::String(text) => (HeaderKind::String, text.as_bytes().to_vec()),
            HeaderValue::Bool(value) => (HeaderKind::Bool, vec![u8::from(*value)]),
            HeaderValue::Int8(value) => (HeaderKind::Int8, value.to_le_bytes().to_vec()),
            HeaderValue::Int16(value) => (HeaderKind::Int16, value.to_le_bytes().to_vec()),
            HeaderValue::Int32(value) => (HeaderKind::Int32, value.to_le_bytes().to_vec()),
            HeaderValue::Int64(value) => (HeaderKind::Int64, value.to_le_bytes().to_vec()),
            HeaderValue::Int128(value) => (HeaderKind::Int128, value.to_le_bytes().to_vec()),
            HeaderValue::Uint8(value) => (HeaderKind::Uint8, value.to_le_bytes().to_vec()),
            HeaderValue::Uint16(value) => (HeaderKind::Uint16, value.to_le_bytes().to_vec()),
            HeaderValue::Uint32(value) => (HeaderKind::Uint32, value.to_le_bytes().to_vec()),
            HeaderValue::Uint64(value) => (HeaderKind::Uint64, value.to_le_bytes().to_vec()),
            HeaderValue::Uint128(value) => (HeaderKind::Uint128, value.to_le_bytes().to_vec()),
            HeaderValue::Float32(value) => (HeaderKind::Float32, value.to_le_bytes().to_vec()),
            HeaderValue::Float64(value) => (HeaderKind::Float64, value.to_le_bytes().to_vec()),
        };
        HeaderField { kind, value }
    }

    /// Reads a validated wire field.
    pub fn from_field(field: &HeaderField) -> HeaderValue {
        fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
            bytes.try_into().expect("length validated by core")
        }
        let bytes = &field.value[..];
        match field.kind {
            HeaderKind::Raw => HeaderValue::Raw(bytes.to_vec()),
            HeaderKind::String => HeaderValue::String(String::from_utf8_lossy(bytes).into_owned()),
            HeaderKind::Bool => HeaderValue::Bool(bytes[0] != 0),
            HeaderKind::Int8 => HeaderValue::Int8(i8::from_le_bytes(array(bytes))),
            HeaderKind::Int16 => HeaderValue::Int16(i16::from_le_bytes(array(bytes))),
            HeaderKind::Int32 => HeaderValue::Int32(i32::from_le_bytes(array(bytes))),
            HeaderKind::Int64 => HeaderValue::Int64(i64::from_le_bytes(array(bytes))),
            HeaderKind::Int128 => HeaderValue::Int128(i128::from_le_bytes(array(bytes))),
            HeaderKind::Uint8 => HeaderValue::Uint8(bytes[0]),
            HeaderKind::Uint16 => HeaderValue::Uint16(u16::from_le_bytes(array(bytes))),
            HeaderKind::Uint32 => HeaderValue::Uint32(u32::from_le_bytes(array(bytes))),
            HeaderKind::Uint64 => HeaderValue::Uint64(u64::from_le_bytes(array(bytes))),
            HeaderKind::Uint128 => HeaderValue::Uint128(u128::from_le_bytes(array(bytes))),
            HeaderKind::Float32 => HeaderValue::Float32(f32::from_le_bytes(array(bytes))),
            HeaderKind::Float64 => HeaderValue::Float64(f64::from_le_bytes(array(bytes))),
        }
    }

    /// The kind's name as the official CLI spells it (`string`, `uint32`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            HeaderValue::Raw(_) => "raw",
            HeaderValue::String(_) => "string",
            HeaderValue::Bool(_) => "bool",
            HeaderValue::Int8(_) => "int8",
            HeaderValue::Int16(_) => "int16",
            HeaderValue::Int32(_) => "int32",
            HeaderValue::Int64(_) => "int64",
            HeaderValue::Int128(_) => "int128",
            HeaderValue::Uint8(_) => "uint8",
            HeaderValue::Uint16(_) => "uint16",
            HeaderValue::Uint32(_) => "uint32",
            HeaderValue::Uint64(_) => "uint64",
            HeaderValue::Uint128(_) => "uint128",
            HeaderValue::Float32(_) => "float32",
            HeaderValue::Float64(_) => "float64",
        }
    }

    /// Parses `value` as a value of the named kind (the CLI's `key:kind:value` syntax).
    pub fn parse(kind: &str, value: &str) -> Result<HeaderValue> {
        let bad = || Error::invalid(format!("'{value}' is not a valid {kind} header value"));
        Ok(match kind {
            "raw" => HeaderValue::Raw(value.as_bytes().to_vec()),
            "string" => HeaderValue::String(value.to_owned()),
            "bool" => HeaderValue::Bool(value.parse().map_err(|_| bad())?),
            "int8" => HeaderValue::Int8(value.parse().map_err(|_| bad())?),
            "int16" => HeaderValue::Int16(value.parse().map_err(|_| bad())?),
            "int32" => HeaderValue::Int32(value.parse().map_err(|_| bad())?),
            "int64" => HeaderValue::Int64(value.parse().map_err(|_| bad())?),
            "int128" => HeaderValue::Int128(value.parse().map_err(|_| bad())?),
            "uint8" => HeaderValue::Uint8(value.parse().map_err(|_| bad())?),
            "uint16" => HeaderValue::Uint16(value.parse().map_err(|_| bad())?),
            "uint32" => HeaderValue::Uint32(value.parse().map_err(|_| bad())?),
            "uint64" => HeaderValue::Uint64(value.parse().map_err(|_| bad())?),
            "uint128" => HeaderValue::Uint128(value.parse().map_err(|_| bad())?),
            "float32" => HeaderValue::Float32(value.parse().map_err(|_| bad())?),
            "float64" => HeaderValue::Float64(value.parse().map_err(|_| bad())?),
            _ => return Err(Error::invalid(format!("unknown header kind '{kind}'"))),
        })
    }
}

impl fmt::Display for HeaderValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderValue::Raw(bytes) => {
                for byte in bytes {
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
            HeaderValue::String(text) => f.write_str(text),
            HeaderValue::Bool(value) => write!(f, "{value}"),
            HeaderValue::Int8(value) => write!(f, "{value}"),
            HeaderValue::Int16(value) => write!(f, "{value}"),
            HeaderValue::Int32(value) => write!(f, "{value}"),
            HeaderValue::Int64(value) => write!(f, "{value}"),
            HeaderValue::Int128(value) => write!(f, "{value}"),
            HeaderValue::Uint8(value) => write!(f, "{value}"),
            HeaderValue::Uint16(value) => write!(f, "{value}"),
            HeaderValue::Uint32(value) => write!(f, "{value}"),
            HeaderValue::Uint64(value) => write!(f, "{value}"),
            HeaderValue::Uint128(value) => write!(f, "{value}"),
            HeaderValue::Float32(value) => write!(f, "{value}"),
            HeaderValue::Float64(value) => write!(f, "{value}"),
        }
    }
}

/// One user header: a key and a value, each typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The key (usually a string).
    pub key: HeaderValue,
    /// The value.
    pub value: HeaderValue,
}

impl Header {
    /// A header with a string key.
    pub fn new(key: impl Into<String>, value: HeaderValue) -> Self {
        Header {
            key: HeaderValue::String(key.into()),
            value,
        }
    }
}

/// Encodes headers into the user-header blob, validating them as the server would.
pub fn encode_headers(headers: &[Header]) -> Result<Bytes> {
    if headers.is_empty() {
        return Ok(Bytes::new());
    }
    let pairs: Vec<_> = headers
        .iter()
        .map(|header| (header.key.to_field(), header.value.to_field()))
        .collect();
    for (key, value) in &pairs {
        key.validate(rill_core::ErrorCode::InvalidHeaderKey)?;
        value.validate(rill_core::ErrorCode::InvalidHeaderValue)?;
    }
    let mut blob = Vec::with_capacity(user_headers::encoded_len(&pairs));
    user_headers::encode(&pairs, &mut blob);
    if blob.len() > user_headers::MAX_USER_HEADERS_BYTES {
        return Err(Error::invalid("user headers exceed 100 000 bytes"));
    }
    Ok(Bytes::from(blob))
}

/// Parses a user-header blob.
pub fn decode_headers(blob: &[u8]) -> Result<Vec<Header>> {
    let pairs = user_headers::parse(blob).map_err(|error| Error::Decode {
        command: rill_core::CommandCode::PollMessages,
        source: error,
    })?;
    Ok(pairs
        .iter()
        .map(|(key, value)| Header {
            key: HeaderValue::from_field(key),
            value: HeaderValue::from_field(value),
        })
        .collect())
}

/// A message to send.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SendMessage {
    /// The message id; `None` lets the producer assign a random UUIDv4-like id (the low-level
    /// client sends 0, and the server assigns one).
    pub id: Option<u128>,
    /// The payload; sent without copying it anywhere but into the batch buffer.
    pub payload: Bytes,
    /// User headers.
    pub headers: Vec<Header>,
    /// A partitioning key for this message (producer with key partitioning).
    pub key: Option<Bytes>,
}

impl SendMessage {
    /// A message with this payload.
    pub fn new(payload: impl Into<Bytes>) -> Self {
        SendMessage {
            payload: payload.into(),
            ..SendMessage::default()
        }
    }

    /// Sets the id.
    pub fn with_id(mut self, id: u128) -> Self {
        self.id = Some(id);
        self
    }

    /// Adds a header with a string key.
    pub fn with_header(mut self, key: impl Into<String>, value: HeaderValue) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }

    /// Sets the partitioning key (1..=255 bytes).
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Bytes this message occupies in a batch (64-byte header, payload, headers).
    pub fn size_estimate(&self) -> usize {
        rill_core::message::HEADER_SIZE
            + self.payload.len()
            + self
                .headers
                .iter()
                .map(|h| 10 + h.key.to_field().value.len() + h.value.to_field().value.len())
                .sum::<usize>()
    }

    /// The wire message, with the origin timestamp set to now.
    pub fn into_outgoing(self) -> Result<OutgoingMessage> {
        if self.payload.len() > rill_core::message::MAX_PAYLOAD_BYTES {
            return Err(Error::invalid("payload exceeds 64 000 000 bytes"));
        }
        Ok(OutgoingMessage {
            id: self.id.unwrap_or(0),
            origin_timestamp: now_micros(),
            user_headers: encode_headers(&self.headers)?,
            payload: self.payload,
        })
    }
}

impl From<Bytes> for SendMessage {
    fn from(payload: Bytes) -> Self {
        SendMessage::new(payload)
    }
}

impl From<&'static str> for SendMessage {
    fn from(payload: &'static str) -> Self {
        SendMessage::new(Bytes::from_static(payload.as_bytes()))
    }
}

impl From<String> for SendMessage {
    fn from(payload: String) -> Self {
        SendMessage::new(Bytes::from(payload))
    }
}

/// A received message: a slice of the poll response buffer plus the partition it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    partition_id: u32,
    bytes: Bytes,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("partition_id", &self.partition_id)
            .field("offset", &self.offset())
            .field("id", &self.id())
            .field("payload_length", &self.payload_slice().len())
            .finish()
    }
}

impl Message {
    /// The messages of a poll response, each sharing the response buffer.
    pub fn from_polled(polled: &PolledMessages) -> impl Iterator<Item = Message> + '_ {
        let buffer = polled.messages_bytes();
        polled.messages().map(move |view| Message {
            partition_id: polled.partition_id,
            bytes: buffer.slice_ref(view.as_bytes()),
        })
    }

    fn view(&self) -> MessageView<'_> {
        MessageView::parse(&self.bytes).expect("validated when the response was decoded")
    }

    /// The partition the message was read from.
    pub fn partition_id(&self) -> u32 {
        self.partition_id
    }

    /// The offset within its partition.
    pub fn offset(&self) -> u64 {
        self.view().offset()
    }

    /// The message id.
    pub fn id(&self) -> u128 {
        self.view().id()
    }

    /// The server timestamp (µs since the epoch).
    pub fn timestamp(&self) -> u64 {
        self.view().timestamp()
    }

    /// The producer's timestamp (µs since the epoch).
    pub fn origin_timestamp(&self) -> u64 {
        self.view().origin_timestamp()
    }

    /// The stored checksum.
    pub fn checksum(&self) -> u64 {
        self.view().checksum()
    }

    /// Whether the checksum matches the bytes.
    pub fn checksum_is_valid(&self) -> bool {
        self.view().checksum_is_valid()
    }

    fn payload_slice(&self) -> &[u8] {
        MessageView::parse(&self.bytes)
            .map(|view| view.payload())
            .unwrap_or(&[])
    }

    /// The payload, as a slice of the response buffer (no copy).
    pub fn payload(&self) -> Bytes {
        self.bytes.slice_ref(self.payload_slice())
    }

    /// The raw user-header blob (empty when none).
    pub fn user_headers_raw(&self) -> Bytes {
        let view = self.view();
        self.bytes.slice_ref(view.user_headers())
    }

    /// The parsed user headers.
    pub fn headers(&self) -> Result<Vec<Header>> {
        decode_headers(self.view().user_headers())
    }

    /// The whole message as stored (header, payload, user headers).
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_core::message::{MessageBatch, encode_poll_header};

    #[test]
    fn random_ids_look_like_uuid_v4() {
        let id = random_message_id();
        assert_eq!((id >> 76) & 0xF, 4);
        assert_eq!((id >> 62) & 0x3, 2);
        assert_ne!(random_message_id(), id);
    }

    #[test]
    fn headers_round_trip_and_match_the_protocol_example() {
        let headers = vec![Header::new("k", HeaderValue::String("v".into()))];
        let blob = encode_headers(&headers).unwrap();
        assert_eq!(
            &blob[..],
            [0x02, 0x01, 0, 0, 0, 0x6b, 0x02, 0x01, 0, 0, 0, 0x76]
        );
        let many = vec![
            Header::new("n", HeaderValue::Uint32(7)),
            Header::new("f", HeaderValue::Float64(1.5)),
            Header::new("b", HeaderValue::Bool(true)),
        ];
        assert_eq!(
            decode_headers(&encode_headers(&many).unwrap()).unwrap(),
            many
        );
        assert!(encode_headers(&[Header::new("", HeaderValue::Bool(true))]).is_err());
        assert_eq!(
            HeaderValue::parse("int16", "-3").unwrap(),
            HeaderValue::Int16(-3)
        );
        assert!(HeaderValue::parse("uint8", "300").is_err());
        assert!(HeaderValue::parse("nope", "1").is_err());
    }

    #[test]
    fn received_messages_share_the_response_buffer() {
        let outgoing: Vec<_> = ["one", "two"]
            .iter()
            .map(|text| {
                SendMessage::new(Bytes::from_static(text.as_bytes()))
                    .with_id(9)
                    .with_header("k", HeaderValue::String("v".into()))
                    .into_outgoing()
                    .unwrap()
            })
            .collect();
        let mut batch = MessageBatch::from_messages(&outgoing);
        batch.stamp(5, 1000, || 1);
        let mut payload = encode_poll_header(3, 6, 2).to_vec();
        payload.extend_from_slice(batch.as_bytes());
        let polled = PolledMessages::decode_bytes(Bytes::from(payload)).unwrap();
        let messages: Vec<_> = Message::from_polled(&polled).collect();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].offset(), 6);
        assert_eq!(messages[1].partition_id(), 3);
        assert_eq!(&messages[1].payload()[..], b"two");
        assert!(messages[0].checksum_is_valid());
        assert_eq!(
            messages[0].headers().unwrap(),
            vec![Header::new("k", HeaderValue::String("v".into()))]
        );
        // Zero copy: the payload points into the response buffer.
        let buffer = polled.messages_bytes();
        let payload = messages[0].payload();
        let start = buffer.as_ptr() as usize;
        let at = payload.as_ptr() as usize;
        assert!(at >= start && at < start + buffer.len());
    }
}
