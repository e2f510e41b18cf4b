//! The HTTP API's JSON answers as the payloads of the binary commands they stand for, so the
//! client above the transport reads them as it reads a TCP answer.
//!
//! Sizes arrive as upstream's strings ("1.234 KB", "34732 KiB") or as numbers; ids of messages
//! as numbers up to u128; payloads and header values in base64.

use super::route::Answer;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::BufMut;
use json::{Result, array, bool_of, byte_size, field, list, name_of, str_of, u32_of, u64_of};
use rill_core::Encode;
use rill_core::message::MessageHeader;
use rill_core::message::encode_poll_header;
use rill_core::primitives::{
    CompressionAlgorithm, GlobalPermissions, Permissions, StreamPermissions, TopicPermissions,
    UserStatus, user_headers,
};
use rill_core::responses::{
    ClientDetails, ClientGroup, ConsumerGroupDetails, ConsumerGroupInfo, ConsumerGroupMember,
    ConsumerOffsetInfo, IdentityInfo, PartitionInfo, PersonalAccessTokenInfo,
    RawPersonalAccessToken, StreamDetails, StreamInfo, TopicDetails, TopicInfo, UserDetails,
    UserInfo,
};
use serde_json::Value;
use system::{client, cluster, stats};

mod json;
mod system;

pub use json::Malformed;

fn compression(value: &Value) -> Result<CompressionAlgorithm> {
    Ok(
        CompressionAlgorithm::from_name(str_of(value, "compression_algorithm")?)
            .unwrap_or(CompressionAlgorithm::None),
    )
}

fn user_status(value: &Value) -> Result<UserStatus> {
    Ok(UserStatus::from_name(str_of(value, "status")?).unwrap_or(UserStatus::Active))
}

fn stream(value: &Value) -> Result<StreamInfo> {
    Ok(StreamInfo {
        id: u32_of(value, "id")?,
        created_at: u64_of(value, "created_at")?,
        topics_count: u32_of(value, "topics_count")?,
        size_bytes: byte_size(value, "size")?,
        messages_count: u64_of(value, "messages_count")?,
        name: name_of(value, "name")?,
    })
}

fn topic(value: &Value) -> Result<TopicInfo> {
    Ok(TopicInfo {
        id: u32_of(value, "id")?,
        created_at: u64_of(value, "created_at")?,
        partitions_count: u32_of(value, "partitions_count")?,
        message_expiry: u64_of(value, "message_expiry")?,
        compression_algorithm: compression(value)?,
        max_topic_size: u64_of(value, "max_topic_size")?,
        replication_factor: value
            .get("replication_factor")
            .and_then(Value::as_u64)
            .map_or(1, |factor| factor.min(255) as u8),
        size_bytes: byte_size(value, "size")?,
        messages_count: u64_of(value, "messages_count")?,
        name: name_of(value, "name")?,
    })
}

fn partition(value: &Value) -> Result<PartitionInfo> {
    Ok(PartitionInfo {
        id: u32_of(value, "id")?,
        created_at: u64_of(value, "created_at")?,
        segments_count: u32_of(value, "segments_count")?,
        current_offset: u64_of(value, "current_offset")?,
        size_bytes: byte_size(value, "size")?,
        messages_count: u64_of(value, "messages_count")?,
    })
}

fn group(value: &Value) -> Result<ConsumerGroupInfo> {
    Ok(ConsumerGroupInfo {
        id: u32_of(value, "id")?,
        partitions_count: u32_of(value, "partitions_count")?,
        members_count: u32_of(value, "members_count")?,
        name: name_of(value, "name")?,
    })
}

fn user(value: &Value) -> Result<UserInfo> {
    Ok(UserInfo {
        id: u32_of(value, "id")?,
        created_at: u64_of(value, "created_at")?,
        status: user_status(value)?,
        username: name_of(value, "username")?,
    })
}

fn keyed<T>(map: Option<&Value>, mut item: impl FnMut(u32, &Value) -> Result<T>) -> Result<Vec<T>> {
    let Some(Value::Object(map)) = map else {
        return Ok(Vec::new());
    };
    map.iter()
        .map(|(key, value)| {
            let id = key
                .parse()
                .map_err(|_| Malformed(format!("permission key {key:?} is not an id")))?;
            item(id, value)
        })
        .collect()
}

fn permissions(value: &Value) -> Result<Permissions> {
    let global = field(value, "global")?;
    Ok(Permissions {
        global: GlobalPermissions {
            manage_servers: bool_of(global, "manage_servers")?,
            read_servers: bool_of(global, "read_servers")?,
            manage_users: bool_of(global, "manage_users")?,
            read_users: bool_of(global, "read_users")?,
            manage_streams: bool_of(global, "manage_streams")?,
            read_streams: bool_of(global, "read_streams")?,
            manage_topics: bool_of(global, "manage_topics")?,
            read_topics: bool_of(global, "read_topics")?,
            poll_messages: bool_of(global, "poll_messages")?,
            send_messages: bool_of(global, "send_messages")?,
        },
        streams: keyed(value.get("streams"), |stream_id, stream| {
            Ok(StreamPermissions {
                stream_id,
                manage_stream: bool_of(stream, "manage_stream")?,
                read_stream: bool_of(stream, "read_stream")?,
                manage_topics: bool_of(stream, "manage_topics")?,
                read_topics: bool_of(stream, "read_topics")?,
                poll_messages: bool_of(stream, "poll_messages")?,
                send_messages: bool_of(stream, "send_messages")?,
                topics: keyed(stream.get("topics"), |topic_id, topic| {
                    Ok(TopicPermissions {
                        topic_id,
                        manage_topic: bool_of(topic, "manage_topic")?,
                        read_topic: bool_of(topic, "read_topic")?,
                        poll_messages: bool_of(topic, "poll_messages")?,
                        send_messages: bool_of(topic, "send_messages")?,
                    })
                })?,
            })
        })?,
    })
}

fn header_field(value: &Value) -> Result<user_headers::HeaderField> {
    let kind = str_of(value, "kind")?;
    let kind = user_headers::HeaderKind::from_name(kind)
        .ok_or_else(|| Malformed(format!("unknown header kind {kind:?}")))?;
    let bytes = STANDARD
        .decode(str_of(value, "value")?)
        .map_err(|error| Malformed(format!("header value: {error}")))?;
    Ok(user_headers::HeaderField { kind, value: bytes })
}

/// A polled message as the API writes it. Read typed rather than as a `Value`: ids are u128
/// numbers, which a `Value` would round to a float.
#[derive(serde::Deserialize)]
struct PolledJson {
    partition_id: u32,
    current_offset: u64,
    #[serde(default)]
    messages: Vec<MessageJson>,
}

#[derive(serde::Deserialize)]
struct MessageJson {
    header: HeaderJson,
    payload: String,
    #[serde(default)]
    user_headers: Value,
}

#[derive(serde::Deserialize)]
struct HeaderJson {
    checksum: u64,
    id: u128,
    offset: u64,
    timestamp: u64,
    origin_timestamp: u64,
}

/// The binary poll payload: the 16-byte header, then each message as it is stored (64-byte
/// header, payload, user headers).
fn polled(body: &[u8]) -> Result<Vec<u8>> {
    let polled: PolledJson = serde_json::from_slice(body)
        .map_err(|error| Malformed(format!("the polled messages: {error}")))?;
    let mut out = Vec::new();
    out.extend_from_slice(&encode_poll_header(
        polled.partition_id,
        polled.current_offset,
        polled.messages.len() as u32,
    ));
    for message in &polled.messages {
        let payload = STANDARD
            .decode(&message.payload)
            .map_err(|error| Malformed(format!("payload: {error}")))?;
        let headers = match &message.user_headers {
            Value::Null => Vec::new(),
            Value::String(raw) => STANDARD
                .decode(raw)
                .map_err(|error| Malformed(format!("user headers: {error}")))?,
            Value::Array(entries) => {
                let pairs = entries
                    .iter()
                    .map(|entry| {
                        Ok((
                            header_field(field(entry, "key")?)?,
                            header_field(field(entry, "value")?)?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut blob = Vec::new();
                user_headers::encode(&pairs, &mut blob);
                blob
            }
            other => return Err(Malformed(format!("user headers: {other}"))),
        };
        let header = &message.header;
        MessageHeader {
            checksum: header.checksum,
            id: header.id,
            offset: header.offset,
            timestamp: header.timestamp,
            origin_timestamp: header.origin_timestamp,
            user_headers_length: headers.len() as u32,
            payload_length: payload.len() as u32,
            reserved: 0,
        }
        .encode(&mut out);
        out.put_slice(&payload);
        out.put_slice(&headers);
    }
    Ok(out)
}

/// The binary payload `answer` stands for, from the answer's body.
pub fn payload(answer: Answer, body: &[u8]) -> Result<Vec<u8>> {
    if matches!(answer, Answer::Empty | Answer::Logout) {
        return Ok(Vec::new());
    }
    match answer {
        Answer::Snapshot => return Ok(body.to_vec()),
        Answer::Polled => return polled(body),
        _ => {}
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| Malformed(format!("the answer is not JSON: {error}")))?;
    let value = &value;
    Ok(match answer {
        Answer::Empty | Answer::Logout | Answer::Snapshot | Answer::Polled => {
            unreachable!("answered above")
        }
        Answer::Stats => stats(value)?.to_bytes(),
        Answer::Cluster => cluster(value)?.to_bytes(),
        Answer::Client => {
            let info = client(value)?;
            let groups = list(value, "consumer_groups")?
                .iter()
                .map(|group| {
                    Ok(ClientGroup {
                        stream_id: u32_of(group, "stream_id")?,
                        topic_id: u32_of(group, "topic_id")?,
                        group_id: u32_of(group, "group_id")?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            ClientDetails {
                client_id: info.client_id,
                user_id: info.user_id,
                transport: info.transport,
                address: info.address,
                consumer_groups: groups,
            }
            .to_bytes()
        }
        Answer::Clients => array(value)?
            .iter()
            .map(client)
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
        Answer::User => UserDetails {
            user: user(value)?,
            permissions: match value.get("permissions") {
                None | Some(Value::Null) => None,
                Some(found) => Some(permissions(found)?),
            },
        }
        .to_bytes(),
        Answer::Users => array(value)?
            .iter()
            .map(user)
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
        Answer::Identity => IdentityInfo {
            user_id: u32_of(value, "user_id")?,
        }
        .to_bytes(),
        Answer::Tokens => array(value)?
            .iter()
            .map(|token| {
                Ok(PersonalAccessTokenInfo {
                    name: name_of(token, "name")?,
                    expiry_at: token.get("expiry_at").and_then(Value::as_u64).unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
        Answer::RawToken => RawPersonalAccessToken {
            token: name_of(value, "token")?,
        }
        .to_bytes(),
        Answer::ConsumerOffset => ConsumerOffsetInfo {
            partition_id: u32_of(value, "partition_id")?,
            current_offset: u64_of(value, "current_offset")?,
            stored_offset: u64_of(value, "stored_offset")?,
        }
        .to_bytes(),
        Answer::Stream => StreamDetails {
            stream: stream(value)?,
            topics: list(value, "topics")?
                .iter()
                .map(topic)
                .collect::<Result<Vec<_>>>()?,
        }
        .to_bytes(),
        Answer::Streams => array(value)?
            .iter()
            .map(stream)
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
        Answer::Topic => TopicDetails {
            topic: topic(value)?,
            partitions: list(value, "partitions")?
                .iter()
                .map(partition)
                .collect::<Result<Vec<_>>>()?,
        }
        .to_bytes(),
        Answer::Topics => array(value)?
            .iter()
            .map(topic)
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
        Answer::Group => ConsumerGroupDetails {
            group: group(value)?,
            members: list(value, "members")?
                .iter()
                .map(|member| {
                    Ok(ConsumerGroupMember {
                        id: u32_of(member, "id")?,
                        partitions: list(member, "partitions")?
                            .iter()
                            .map(|id| {
                                id.as_u64()
                                    .and_then(|id| u32::try_from(id).ok())
                                    .ok_or_else(|| Malformed("a member's partition id".into()))
                            })
                            .collect::<Result<Vec<_>>>()?,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        }
        .to_bytes(),
        Answer::GroupCreated => group(value)?.to_bytes(),
        Answer::Groups => array(value)?
            .iter()
            .map(group)
            .collect::<Result<Vec<_>>>()?
            .to_bytes(),
    })
}

#[cfg(test)]
mod tests;
