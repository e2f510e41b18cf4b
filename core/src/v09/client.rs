//! The client side of the 0.9 edge: the 0.8 [`Request`]s rill's clients build are written as
//! 0.9 frames, and 0.9 replies are read back into the 0.8 payloads those clients already decode.
//! It is the inverse of [`super::requests`] and [`super::responses`], so rill's SDK, CLI and
//! bench speak either generation with one set of typed commands.
//!
//! [`ClientSession`] holds what a 0.9 connection numbers its requests with (protocol-0.9.md
//! 3.5): a client id, the session bound by the login reply, and the request counter. One session
//! belongs to one connection; a new connection starts a new one.

use super::batch::{self, PolledFrames};
use super::header::{
    COMMAND_EVICTION, COMMAND_REPLY, HEADER_SIZE, OP_LOGOUT, OP_NON_REPLICATED, OP_REGISTER,
    RequestHeader, code_operation, is_result_framed,
};
use super::{PROTOCOL_VERSION, u32_at};

// Request header fields a pre-encoded frame is renumbered in (protocol-0.9.md 2.2).
const REQUEST_CLIENT: usize = 128;
const REQUEST_NUMBER: usize = 168;
const REQUEST_OPERATION: usize = 176;
const REQUEST_SESSION: usize = 184;
use crate::codec::{Decode, Encode, Reader, put_str32};
use crate::error::{DecodeError, ErrorCode};
use crate::hash::xxh3_64;
use crate::message::{MessageHeader, POLL_RESPONSE_HEADER_SIZE, checksum, encode_poll_header};
use crate::primitives::user_headers::HeaderKind;
use crate::primitives::{CompressionAlgorithm, Name};
use crate::requests::Request;
use crate::responses::{PartitionInfo, StreamInfo, TopicInfo, UserInfo};
use bytes::BufMut;

/// A request ready for the wire: the 256-byte header and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRequest {
    pub header: [u8; HEADER_SIZE],
    pub body: Vec<u8>,
    /// What the reply is read against.
    pub operation: u8,
    /// The command code: 0.8's, except 40 and 45 for the two logins.
    pub code: u32,
}

/// Why a reply is not a success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    /// The server refused the request with this code (status, result section or eviction).
    Status(ErrorCode),
    /// The reply does not decode.
    Malformed(DecodeError),
}

impl From<DecodeError> for ReplyError {
    fn from(error: DecodeError) -> Self {
        ReplyError::Malformed(error)
    }
}

/// The numbering state of one 0.9 connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSession {
    client: u128,
    session: u64,
    next_request: u64,
    /// A login was sent with the current client id.
    registered: bool,
    sdk_name: Name,
    sdk_version: Name,
}

impl ClientSession {
    /// A session for a new connection. `client` is the connection's random id (0 is replaced,
    /// since the server refuses it); `sdk_name` and `sdk_version` go into the login.
    pub fn new(client: u128, sdk_name: &str, sdk_version: &str) -> Result<Self, DecodeError> {
        Ok(ClientSession {
            client: client.max(1),
            session: 0,
            next_request: 1,
            registered: false,
            sdk_name: Name::new(sdk_name)?,
            sdk_version: Name::new(sdk_version)?,
        })
    }

    /// The session number the login reply bound (0 before a login).
    pub fn session(&self) -> u64 {
        self.session
    }

    /// Builds the frame of `request`, numbering it as SDK 0.11.0 does: a login carries 0,
    /// a replicated operation takes the next number, anything else carries the current one.
    pub fn encode(&mut self, request: &Request) -> Result<OutgoingRequest, DecodeError> {
        let (code, body) = self.body(request)?;
        let operation = code_operation(code);
        if operation == OP_REGISTER {
            // Every login after the first on this connection (after a logout, a failed login
            // or on a bound session) comes from a new client id, as SDK 0.11.0 does
            // (protocol-0.9.md 3.5): a server that answers a known id's Register with its
            // existing session would otherwise keep the previous user.
            if self.registered {
                self.client = next_client_id(self.client);
                self.session = 0;
                self.next_request = 1;
            }
            self.registered = true;
        }
        let number = self.number(operation);
        // Logins, logouts and metadata operations are stamped; reads and partition operations
        // carry 0 ("unstamped"), as the official SDK sends them.
        let stamped = matches!(operation, OP_REGISTER | OP_LOGOUT | 128..=149);
        let header = RequestHeader {
            size: (HEADER_SIZE + body.len()) as u32,
            client: self.client,
            request_checksum: if stamped { xxh3_64(&body).into() } else { 0 },
            request: number,
            operation,
            session: if operation == OP_REGISTER {
                0
            } else {
                self.session
            },
            code,
        };
        Ok(OutgoingRequest {
            header: header.encode(),
            body,
            operation,
            code,
        })
    }

    /// The request number of the next request of `operation`.
    fn number(&mut self, operation: u8) -> u64 {
        match operation {
            OP_REGISTER => 0,
            OP_NON_REPLICATED => self.next_request,
            _ => {
                self.next_request += 1;
                self.next_request - 1
            }
        }
    }

    /// Numbers a request header encoded once and sent many times (a benchmark's SendMessages):
    /// writes this connection's client id and session number and the request number its
    /// operation takes now.
    pub fn renumber(&mut self, header: &mut [u8; HEADER_SIZE]) {
        let number = self.number(header[REQUEST_OPERATION]);
        header[REQUEST_CLIENT..REQUEST_CLIENT + 16].copy_from_slice(&self.client.to_le_bytes());
        header[REQUEST_NUMBER..REQUEST_NUMBER + 8].copy_from_slice(&number.to_le_bytes());
        header[REQUEST_SESSION..REQUEST_SESSION + 8].copy_from_slice(&self.session.to_le_bytes());
    }

    /// The 0.9 body of `request` and the code it travels under.
    fn body(&self, request: &Request) -> Result<(u32, Vec<u8>), DecodeError> {
        let mut body = Vec::with_capacity(request.payload_len() + 64);
        let code = match request {
            Request::LoginUser(login) => {
                self.login_prefix(&mut body);
                login.username.encode(&mut body);
                login.password.encode(&mut body);
                put_str32(&mut body, login.context.as_deref().unwrap_or(""));
                40
            }
            Request::LoginWithPersonalAccessToken(login) => {
                self.login_prefix(&mut body);
                login.token.encode(&mut body);
                put_str32(&mut body, "");
                45
            }
            Request::CreateTopic(topic) => {
                topic.stream_id.encode(&mut body);
                body.put_u32_le(topic.partitions_count);
                topic.name.encode(&mut body);
                // Zero asks for the server's default in both generations: leave it out.
                let expiry = Some(topic.message_expiry).filter(|&v| v != 0);
                let size = Some(topic.max_topic_size).filter(|&v| v != 0);
                topic_options(topic.compression_algorithm, expiry, size, &mut body);
                302
            }
            Request::UpdateTopic(topic) => {
                topic.stream_id.encode(&mut body);
                topic.topic_id.encode(&mut body);
                topic.name.encode(&mut body);
                // 0.8's UpdateTopic sets every setting, so every key is sent.
                let (expiry, size) = (Some(topic.message_expiry), Some(topic.max_topic_size));
                topic_options(topic.compression_algorithm, expiry, size, &mut body);
                304
            }
            Request::StoreConsumerOffset(store) => {
                store.encode(&mut body);
                body.put_u8(1); // ack: quorum, as SDK 0.11.0 always asks
                121
            }
            Request::DeleteConsumerOffset(delete) => {
                delete.encode(&mut body);
                body.put_u8(1);
                122
            }
            Request::SendMessages(send) => {
                batch::encode_send_batch(
                    &send.stream_id,
                    &send.topic_id,
                    &send.partitioning,
                    &send.batch,
                    &mut body,
                )?;
                101
            }
            // Every other body is 0.8's; streams and users add an empty options block, which
            // is zero bytes at the end of a request.
            other => {
                other.encode_payload(&mut body);
                other.command().code()
            }
        };
        Ok((code, body))
    }

    fn login_prefix(&self, body: &mut Vec<u8>) {
        body.put_u32_le(PROTOCOL_VERSION);
        self.sdk_name.encode(body);
        self.sdk_version.encode(body);
    }

    /// Reads the reply to `sent` (its header's `status` and its body) into the 0.8 payload of
    /// the same command, and keeps what a login or logout changes about the session.
    pub fn read_reply(
        &mut self,
        sent: &OutgoingRequest,
        status: u32,
        body: &[u8],
    ) -> Result<Vec<u8>, ReplyError> {
        if status != 0 {
            return Err(ReplyError::Status(status_code(status)));
        }
        let payload = if is_result_framed(sent.operation) {
            result_section(body)?
        } else {
            body
        };
        match sent.code {
            40 | 45 => {
                let mut reader = Reader::new(payload);
                let user_id = reader.u32("user id")?;
                let session = reader.u64("session")?;
                if session == 0 {
                    return Err(ReplyError::Status(ErrorCode::InvalidSession));
                }
                self.session = session;
                self.next_request = 1;
                Ok(user_id.to_le_bytes().to_vec())
            }
            39 => {
                self.session = 0;
                self.next_request = 1;
                Ok(Vec::new())
            }
            code => Ok(translate_reply(code, payload)?),
        }
    }
}

/// A new client id from the previous one (SplitMix64 on each half): distinct ids without a
/// random source in this crate; never 0.
fn next_client_id(previous: u128) -> u128 {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let high = mix((previous >> 64) as u64);
    let low = mix(previous as u64 ^ high);
    ((u128::from(high) << 64) | u128::from(low)).max(1)
}

/// The options block of a CreateTopic or UpdateTopic, entries sorted by key as SDK 0.11.0
/// writes them.
fn topic_options(
    compression: CompressionAlgorithm,
    message_expiry: Option<u64>,
    max_topic_size: Option<u64>,
    out: &mut Vec<u8>,
) {
    let compression = compression.name();
    let mut entries = vec![(
        "compression_algorithm",
        HeaderKind::String,
        compression.as_bytes().to_vec(),
    )];
    if let Some(size) = max_topic_size {
        entries.push((
            "max_topic_size",
            HeaderKind::Uint64,
            size.to_le_bytes().to_vec(),
        ));
    }
    if let Some(expiry) = message_expiry {
        entries.push((
            "message_expiry",
            HeaderKind::Uint64,
            expiry.to_le_bytes().to_vec(),
        ));
    }
    for (key, kind, value) in entries {
        out.put_u8(HeaderKind::String as u8);
        out.put_u32_le(key.len() as u32);
        out.put_slice(key.as_bytes());
        out.put_u8(kind as u8);
        out.put_u32_le(value.len() as u32);
        out.put_slice(&value);
    }
}

/// An error status as a code; one this build does not know is the generic error.
fn status_code(status: u32) -> ErrorCode {
    ErrorCode::from_code(status).unwrap_or(ErrorCode::Error)
}

/// The payload after a result section, or the first failed entry's code (protocol-0.9.md 2.7).
fn result_section(body: &[u8]) -> Result<&[u8], ReplyError> {
    let mut reader = Reader::new(body);
    let count = reader.u32("result count")?;
    if count == 0 {
        return Ok(reader.rest());
    }
    let _index = reader.u32("result index")?;
    Err(ReplyError::Status(status_code(reader.u32("result")?)))
}

/// What a reply header says: the body length to read, and the status (an eviction's reason as
/// the code SDK 0.11.0 reports for it, protocol-0.9.md 2.5).
pub fn read_reply_header(header: &[u8; HEADER_SIZE]) -> Result<(usize, u32), DecodeError> {
    let size = u32_at(header, 48) as usize;
    match header[60] {
        COMMAND_EVICTION => Ok((0, eviction_code(header[255]).code())),
        COMMAND_REPLY if size >= HEADER_SIZE => Ok((size - HEADER_SIZE, u32_at(header, 216))),
        COMMAND_REPLY => Err(DecodeError::invalid("reply size")),
        _ => Err(DecodeError::invalid("reply command")),
    }
}

/// The code a client reports for an eviction reason.
pub fn eviction_code(reason: u8) -> ErrorCode {
    match reason {
        0 | 2..=6 => ErrorCode::InvalidCommand,
        9 => ErrorCode::InvalidCredentials,
        10 => ErrorCode::InvalidPersonalAccessToken,
        13 => ErrorCode::StaleClient,
        14 => ErrorCode::IncompatibleProtocolVersion,
        15 => ErrorCode::InvalidFormat,
        _ => ErrorCode::Unauthenticated,
    }
}

/// Rewrites the 0.9 payload of command `code` as 0.8 sends it: the inverse of
/// [`super::responses::translate`], plus polls (batches to 0.8 messages) and sends (the
/// confirmation becomes 0.8's empty OK).
pub fn translate_reply(code: u32, payload: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut reader = Reader::new(payload);
    let mut out = Vec::with_capacity(payload.len());
    match code {
        100 => return polled_to_v08(payload),
        101 => return Ok(Vec::new()),
        _ if payload.is_empty() => return Ok(Vec::new()),
        200 | 202 => {
            let stream = stream(&mut reader)?;
            let topics = stream.topics_count;
            stream.encode(&mut out);
            for _ in 0..topics {
                topic(&mut reader)?.encode(&mut out);
            }
        }
        201 => {
            while !reader.is_empty() {
                stream(&mut reader)?.encode(&mut out);
            }
        }
        300 | 302 => {
            let topic = topic(&mut reader)?;
            let partitions = topic.partitions_count;
            topic.encode(&mut out);
            for _ in 0..partitions {
                PartitionInfo::decode(&mut reader)?.encode(&mut out);
            }
        }
        301 => {
            for _ in 0..reader.u32("topics count")? {
                topic(&mut reader)?.encode(&mut out);
            }
        }
        31 | 33 => {
            user(&mut reader)?.encode(&mut out);
            // The permissions that follow are 0.8's bytes.
            out.put_slice(reader.rest());
        }
        32 => {
            while !reader.is_empty() {
                user(&mut reader)?.encode(&mut out);
            }
        }
        _ => return Ok(payload.to_vec()),
    }
    Ok(out)
}

fn skip_options(reader: &mut Reader<'_>) -> Result<(), DecodeError> {
    let len = reader.u32("options length")? as usize;
    reader.take(len, "options block").map(|_| ())
}

fn stream(reader: &mut Reader<'_>) -> Result<StreamInfo, DecodeError> {
    let stream = StreamInfo::decode(reader)?;
    skip_options(reader)?;
    Ok(stream)
}

fn user(reader: &mut Reader<'_>) -> Result<UserInfo, DecodeError> {
    let user = UserInfo::decode(reader)?;
    skip_options(reader)?;
    Ok(user)
}

/// A 0.9 topic header (no replication factor, two options blocks) as 0.8's record, which
/// reports a replication factor of 1, as a single node does.
fn topic(reader: &mut Reader<'_>) -> Result<TopicInfo, DecodeError> {
    let topic = TopicInfo {
        id: reader.u32("topic id")?,
        created_at: reader.u64("created at")?,
        partitions_count: reader.u32("partitions count")?,
        message_expiry: reader.u64("message expiry")?,
        compression_algorithm: CompressionAlgorithm::decode(reader)?,
        max_topic_size: reader.u64("max topic size")?,
        replication_factor: 1,
        size_bytes: reader.u64("size")?,
        messages_count: reader.u64("messages count")?,
        name: Name::decode(reader)?,
    };
    skip_options(reader)?;
    skip_options(reader)?;
    Ok(topic)
}

/// A 0.9 poll reply as 0.8's: the same 16-byte head, then each message in the 64-byte-header
/// form with the same id, offset, timestamps, payload and user headers and a 0.8 checksum.
fn polled_to_v08(payload: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut reader = Reader::new(payload);
    let partition_id = reader.u32("partition id")?;
    let current_offset = reader.u64("current offset")?;
    let _count = reader.u32("count")?;
    let mut out = Vec::with_capacity(payload.len() + payload.len() / 8);
    out.put_slice(&[0; POLL_RESPONSE_HEADER_SIZE]);
    let mut count = 0u32;
    for frame in PolledFrames::new(reader.rest()) {
        let frame = frame?;
        let start = out.len();
        MessageHeader {
            checksum: 0,
            id: frame.id,
            offset: frame.offset,
            timestamp: frame.timestamp,
            origin_timestamp: frame.origin_timestamp,
            user_headers_length: frame.user_headers.len() as u32,
            payload_length: frame.payload.len() as u32,
            reserved: 0,
        }
        .encode(&mut out);
        out.put_slice(frame.payload);
        out.put_slice(frame.user_headers);
        let sum = checksum(&out[start..]);
        out[start..start + 8].copy_from_slice(&sum.to_le_bytes());
        count += 1;
    }
    out[..POLL_RESPONSE_HEADER_SIZE].copy_from_slice(&encode_poll_header(
        partition_id,
        current_offset,
        count,
    ));
    Ok(out)
}

#[cfg(test)]
mod tests;
