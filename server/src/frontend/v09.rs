//! Serving the Iggy 0.9 protocol (protocol-0.9.md) on a connection that opened with it: the
//! Register handshake and its sessions, replies re-sent for repeated requests, and every command
//! run by the same handlers as 0.8, with `rill_core::v09` turning bodies into 0.8 requests and
//! results back into 0.9 replies. A transport reads one 256-byte header and its body, and
//! writes what [`process`] returns.

use super::{is_stale, record, run};
use crate::handlers::{self, Response};
use crate::metrics;
use crate::session::Session;
use crate::shard::Shard;
use crate::shard::message::ControlCommand;
use bytes::{Bytes, BytesMut};
use rill_core::primitives::Identifier;
use rill_core::requests::{GetTopic, LogoutUser, UpdateTopic};
use rill_core::responses::TopicDetails;
use rill_core::v09::batch::Piece;
use rill_core::v09::header::{
    self, EvictionReason, OP_LOGOUT, OP_NON_REPLICATED, OP_REGISTER, RequestHeader,
};
use rill_core::v09::requests::{self, Credentials, LoginRefusal, V09Request};
use rill_core::v09::responses::SegmentSize;
use rill_core::v09::{batch, options, responses};
use rill_core::{Decode, ErrorCode, Request};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Session numbers: unique and increasing across the process, never 0 (the SDK refuses 0).
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The eviction a silent consumer-group member gets before its connection closes, unasked, as
/// upstream's heartbeat verifier sends it (protocol-0.9.md 3.7).
pub fn stale_eviction() -> Bytes {
    Bytes::copy_from_slice(&header::eviction(1, EvictionReason::StaleClient))
}

/// What to write back, and whether the connection ends after it.
pub struct Reply {
    pub chunks: Vec<Bytes>,
    pub close: bool,
}

impl Reply {
    fn frame(request: &RequestHeader, status: u32, body: Vec<u8>, op: u64) -> Reply {
        let header = header::reply(request, status, body.len(), op);
        let mut chunks = vec![Bytes::copy_from_slice(&header)];
        if !body.is_empty() {
            chunks.push(Bytes::from(body));
        }
        Reply {
            chunks,
            close: false,
        }
    }

    fn status(request: &RequestHeader, session: &Session, code: ErrorCode) -> Reply {
        let mut reply = Reply::frame(request, code.code(), Vec::new(), session.v09.session);
        reply.close = code.closes_connection();
        reply
    }

    /// An eviction ends the session; the connection stays open for a new login.
    fn eviction(request: &RequestHeader, reason: EvictionReason) -> Reply {
        Reply {
            chunks: vec![Bytes::copy_from_slice(&header::eviction(
                request.client,
                reason,
            ))],
            close: false,
        }
    }
}

/// Handles one 0.9 request.
pub async fn process(
    shard: &Shard,
    session: &mut Session,
    request: RequestHeader,
    body: BytesMut,
) -> Reply {
    if is_stale(shard, session) && request.command_code() != Some(1) {
        tracing::info!(
            client_id = session.client_id,
            "session missed its heartbeats; closing"
        );
        let mut reply = Reply::eviction(&request, EvictionReason::StaleClient);
        reply.close = true;
        return reply;
    }
    // Every 0.9 request counts as a heartbeat, as upstream counts it: the official SDK's raw
    // clients send no Ping of their own.
    session.last_heartbeat = Instant::now();
    match request.operation {
        OP_REGISTER if session.user_id.is_some() => {
            // A login on a logged-in connection replaces the session; the old one ends first,
            // so a failed login never leaves the previous user's authority in place.
            log_out(shard, session).await;
            login(shard, session, &request, &body).await
        }
        OP_REGISTER => login(shard, session, &request, &body).await,
        OP_LOGOUT => {
            // Upstream answers OK on a connection that is not logged in, too.
            if session.user_id.is_some() {
                log_out(shard, session).await;
            } else {
                session.v09.reset();
            }
            Reply::frame(&request, 0, Vec::new(), 0)
        }
        operation => {
            let code = request.command_code().unwrap_or(0);
            if matches!(code, 38 | 44) {
                // 0.8's logins: a 0.9 client must use the Register handshake.
                return Reply::eviction(&request, EvictionReason::MalformedLogin);
            }
            if operation != OP_NON_REPLICATED && session.user_id.is_none() {
                return Reply::eviction(&request, EvictionReason::NoSession);
            }
            if let Err(error) = request.verify_body(&body) {
                return Reply::status(&request, session, error.code);
            }
            let metadata = (128..=149).contains(&operation);
            if metadata {
                if let Some(reply) = session
                    .v09
                    .cached(request.request, request.request_checksum)
                {
                    return Reply {
                        chunks: reply.clone(),
                        close: false,
                    };
                }
                if request.request <= session.v09.highest {
                    let body = ErrorCode::RequestAlreadyApplied.code();
                    return Reply::frame(&request, 0, result_section(body), session.v09.session);
                }
            }
            let reply = execute(shard, session, &request, code, body).await;
            if metadata {
                session.v09.remember(
                    request.request,
                    request.request_checksum,
                    reply.chunks.clone(),
                );
            }
            reply
        }
    }
}

/// Ends the session's login as LogoutUser does, and its 0.9 binding.
async fn log_out(shard: &Shard, session: &mut Session) {
    let slot = metrics::command_slot(39);
    let logout = Request::LogoutUser(LogoutUser {});
    // LogoutUser cannot fail for a logged-in session; its outcome is recorded by `run`.
    let _ = run(shard, session, slot, logout, Instant::now()).await;
    session.v09.reset();
}

/// A result section with one failed entry.
fn result_section(code: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(12);
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&code.to_le_bytes());
    body
}

/// LoginRegister (40) and LoginRegisterWithPat (45): the version gate, then the 0.8 login,
/// then a new session number. Every failure is an eviction, as upstream answers it.
async fn login(
    shard: &Shard,
    session: &mut Session,
    request: &RequestHeader,
    body: &[u8],
) -> Reply {
    let login = match requests::decode_login(body) {
        Ok(login) => login,
        Err(LoginRefusal::Malformed) => {
            return Reply::eviction(request, EvictionReason::MalformedLogin);
        }
        Err(LoginRefusal::InvalidCredentials) => {
            return Reply::eviction(request, EvictionReason::InvalidCredentials);
        }
    };
    if !rill_core::v09::is_compatible(login.protocol_version) {
        tracing::info!(
            client_id = session.client_id,
            version = login.protocol_version,
            sdk = login.sdk_name.as_str(),
            "login refused: incompatible protocol version"
        );
        return Reply::eviction(request, EvictionReason::IncompatibleProtocol);
    }
    // A new login replaces whatever the connection was bound to.
    session.v09.reset();
    let (code, is_token, inner) = match login.credentials {
        Credentials::Password(user) => (38, false, Request::LoginUser(user)),
        Credentials::Token(token) => (44, true, Request::LoginWithPersonalAccessToken(token)),
    };
    let started = Instant::now();
    let result = run(shard, session, metrics::command_slot(code), inner, started).await;
    let user_id = match (result, session.user_id) {
        (Ok(_), Some(user_id)) => user_id,
        (Err(code), _) => {
            let reason = match code {
                ErrorCode::InvalidPersonalAccessToken | ErrorCode::PersonalAccessTokenExpired => {
                    EvictionReason::InvalidToken
                }
                _ if is_token => EvictionReason::InvalidToken,
                _ => EvictionReason::InvalidCredentials,
            };
            let mut reply = Reply::eviction(request, reason);
            reply.close = session.close_requested;
            return reply;
        }
        (Ok(_), None) => return Reply::eviction(request, EvictionReason::InvalidCredentials),
    };
    let number = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
    session.v09.session = number;
    let mut out = Vec::with_capacity(48);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&user_id.to_le_bytes());
    out.extend_from_slice(&number.to_le_bytes());
    out.extend_from_slice(&rill_core::v09::PROTOCOL_VERSION.to_le_bytes());
    let version = concat!("rill-", env!("CARGO_PKG_VERSION"));
    out.push(version.len() as u8);
    out.extend_from_slice(version.as_bytes());
    Reply::frame(request, 0, out, number)
}

/// Decodes, authorises and runs one command, and writes its 0.9 reply.
async fn execute(
    shard: &Shard,
    session: &mut Session,
    request: &RequestHeader,
    code: u32,
    body: BytesMut,
) -> Reply {
    let started = Instant::now();
    let slot = metrics::command_slot(code);
    let refused = match handlers::gate(session, code) {
        // Codes 0.8 does not have pass the gate; they need a login all the same.
        Ok(()) if matches!(code, 13 | 606) && session.user_id.is_none() => {
            Some(ErrorCode::Unauthenticated)
        }
        Ok(()) => None,
        Err(status) => Some(status),
    };
    if let Some(status) = refused {
        record(shard, session, slot, Some(status), started);
        return Reply::status(request, session, status);
    }
    let decoded = match requests::decode(code, body) {
        Ok(decoded) => decoded,
        Err(error) => {
            tracing::debug!(client_id = session.client_id, code, %error, "malformed 0.9 request");
            record(shard, session, slot, Some(error.code), started);
            return Reply::status(request, session, error.code);
        }
    };
    let topics_of = named_stream(&decoded);
    let result = match decoded {
        V09Request::Request(inner) => run(shard, session, slot, inner, started).await,
        V09Request::UpdateTopic {
            stream_id,
            topic_id,
            name,
            options,
        } => {
            // Absent options keep the topic's settings: read them, then update.
            let current = GetTopic {
                stream_id: stream_id.clone(),
                topic_id: topic_id.clone(),
            };
            match run(shard, session, slot, Request::GetTopic(current), started).await {
                Ok(Response::Bytes(bytes)) => match TopicDetails::from_bytes(&bytes) {
                    Ok(details) => {
                        let topic = details.topic;
                        let update = UpdateTopic {
                            stream_id,
                            topic_id,
                            compression_algorithm: options
                                .compression
                                .unwrap_or(topic.compression_algorithm),
                            message_expiry: options.message_expiry.unwrap_or(topic.message_expiry),
                            max_topic_size: options.max_topic_size.unwrap_or(topic.max_topic_size),
                            replication_factor: topic.replication_factor,
                            name,
                        };
                        run(shard, session, slot, Request::UpdateTopic(update), started).await
                    }
                    Err(error) => Err(error.code),
                },
                Ok(_) => Err(ErrorCode::TopicIdNotFound),
                Err(code) => Err(code),
            }
        }
        V09Request::CreateTopic {
            request,
            segment_size,
        } => {
            // What handlers::handle does with a CreateTopic, carrying the segment size along.
            let command = ControlCommand::CreateTopic {
                request,
                segment_size,
            };
            let result = shard.control(command, session).await;
            recorded(
                shard,
                session,
                slot,
                started,
                result.map(Response::from_payload),
            )
        }
        V09Request::DescribeOptions(scope) => {
            let result = options::describe(scope).map_err(|error| error.code);
            recorded(shard, session, slot, started, result.map(Response::Bytes))
        }
        V09Request::SyncConsumerGroup(group) => {
            let result = handlers::sync_group(shard, session, group);
            recorded(shard, session, slot, started, result)
        }
    };
    match result {
        Ok(Response::Polled {
            header,
            chunks,
            frame_checksums,
        }) => match polled_reply(request, session, &header, chunks, &frame_checksums) {
            Ok(reply) => reply,
            Err(error) => {
                tracing::warn!(client_id = session.client_id, code, %error, "cannot write a 0.9 poll reply");
                Reply::status(request, session, ErrorCode::Error)
            }
        },
        Ok(response) => match reply_body(code, response, &segment_sizes(shard, topics_of)) {
            Ok(payload) => {
                let mut body = Vec::with_capacity(4 + payload.len());
                if header::is_result_framed(request.operation) {
                    body.extend_from_slice(&0u32.to_le_bytes());
                }
                body.extend_from_slice(&payload);
                Reply::frame(request, 0, body, session.v09.session)
            }
            Err(error) => {
                tracing::warn!(client_id = session.client_id, code, %error, "cannot write a 0.9 reply");
                Reply::status(request, session, ErrorCode::Error)
            }
        },
        Err(status) => Reply::status(request, session, status),
    }
}

/// Records the outcome of a command that did not go through [`run`] (which records its own),
/// and passes it on.
fn recorded(
    shard: &Shard,
    session: &Session,
    slot: usize,
    started: Instant,
    result: handlers::HandlerResult,
) -> handlers::HandlerResult {
    record(
        shard,
        session,
        slot,
        result.as_ref().err().copied(),
        started,
    );
    result
}

/// The stream whose topics a reply lists (GetStream, GetTopic, GetTopics, CreateTopic).
fn named_stream(request: &V09Request) -> Option<Identifier> {
    match request {
        V09Request::Request(Request::GetStream(get)) => Some(get.stream_id.clone()),
        V09Request::Request(Request::GetTopic(get)) => Some(get.stream_id.clone()),
        V09Request::Request(Request::GetTopics(get)) => Some(get.stream_id.clone()),
        V09Request::CreateTopic { request, .. } => Some(request.stream_id.clone()),
        _ => None,
    }
}

/// The segment size of each topic of `stream` (its own or the server's), read after the
/// command ran, so a topic it created is there.
fn segment_sizes(shard: &Shard, stream: Option<Identifier>) -> BTreeMap<u32, SegmentSize> {
    let Some(stream) = stream else {
        return BTreeMap::new();
    };
    let shared = &shard.shared;
    shard
        .metadata(|metadata| {
            metadata.stream(&stream).map(|stream| {
                let sizes = stream.topics.values();
                sizes
                    .map(|topic| {
                        let size = SegmentSize {
                            bytes: shared.segment_size(topic.segment_size),
                            explicit: topic.segment_size != 0,
                        };
                        (topic.id, size)
                    })
                    .collect()
            })
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A handler's response as the 0.9 payload of `code`; `segment_sizes` by topic id (of the
/// stream the command named) fill in what 0.8's topic records do not carry.
fn reply_body(
    code: u32,
    response: Response,
    segment_sizes: &BTreeMap<u32, SegmentSize>,
) -> Result<Vec<u8>, rill_core::DecodeError> {
    let segment_size = |topic: u32| segment_sizes.get(&topic).copied();
    match response {
        // A send is confirmed by an empty body ("no confirmations", protocol-0.9.md 6.6).
        Response::Empty => responses::translate(code, &[], &segment_size),
        Response::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        } => Ok(batch::confirmation(
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        )),
        Response::Bytes(bytes) => responses::translate(code, &bytes, &segment_size),
        // Written by `polled_reply`, without a copy of the messages.
        Response::Polled { header, chunks, .. } => {
            let stored = chunks.concat();
            batch::encode_polled(&header, &stored)
        }
    }
}

/// A poll's 0.9 reply as one vectored write: the reply header and the new bytes (poll head,
/// batch and frame headers) around the stored payloads and user headers, which go out from
/// the buffers storage returned, as 0.8 replies do. Chunks that are whole batches sent over
/// 0.9 come with their frames' checksums, which are sent back instead of hashed again.
fn polled_reply(
    request: &RequestHeader,
    session: &Session,
    poll_head: &[u8; 16],
    chunks: Vec<Bytes>,
    frame_checksums: &[Option<Arc<[u64]>>],
) -> Result<Reply, rill_core::DecodeError> {
    let slices: Vec<&[u8]> = chunks.iter().map(|chunk| &chunk[..]).collect();
    let known: Vec<Option<&[u64]>> = frame_checksums.iter().map(Option::as_deref).collect();
    let (planned, chunks) = match batch::polled_pieces_known(poll_head, &slices, &known) {
        Ok(planned) => (planned, chunks),
        // Buffers cut inside a message (not how storage slices them): join them.
        Err(_) => {
            let joined = Bytes::from(chunks.concat());
            (batch::polled_pieces(poll_head, &[&joined])?, vec![joined])
        }
    };
    let slices: Vec<&[u8]> = chunks.iter().map(|chunk| &chunk[..]).collect();
    let body_len = planned.len(&slices);
    let header = header::reply(request, 0, body_len, session.v09.session);
    let heads = Bytes::from(planned.heads);
    let mut out = Vec::with_capacity(planned.pieces.len() + 1);
    out.push(Bytes::copy_from_slice(&header));
    out.extend(planned.pieces.into_iter().map(|piece| match piece {
        Piece::Heads(range) => heads.slice(range),
        Piece::Stored { chunk, range } => chunks[chunk].slice(range),
    }));
    Ok(Reply {
        chunks: out,
        close: false,
    })
}
