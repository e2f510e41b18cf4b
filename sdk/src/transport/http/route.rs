//! A binary request as the HTTP API's call: method, path and query, JSON body (upstream 0.8's
//! REST routes, as the official SDK's `HttpClient` calls them).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rill_core::ErrorCode;
use rill_core::message::MessageIter;
use rill_core::primitives::{
    ConsumerKind, Identifier, Partitioning, Permissions, PollingKind, UserStatus, user_headers,
};
use rill_core::requests::Request;
use serde_json::{Value, json};

/// What the answer's body is, for turning it back into the binary payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Nothing (the binary command answers an empty payload).
    Empty,
    Stats,
    Snapshot,
    Cluster,
    Client,
    Clients,
    User,
    Users,
    /// A login: the token is kept, IdentityInfo is answered.
    Identity,
    /// A logout: the token is dropped.
    Logout,
    Tokens,
    RawToken,
    Polled,
    ConsumerOffset,
    Stream,
    Streams,
    Topic,
    Topics,
    Group,
    GroupCreated,
    Groups,
}

/// One HTTP request.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: &'static str,
    /// Path and query, percent-encoded.
    pub target: String,
    pub body: Option<Value>,
    pub answer: Answer,
    /// The binary status of a 404 (None: an empty payload, as the binary lookups answer
    /// "no such stream, topic, group, user, client or stored offset").
    pub not_found: Option<ErrorCode>,
}

impl Call {
    fn new(method: &'static str, target: String, answer: Answer) -> Call {
        Call {
            method,
            target,
            body: None,
            answer,
            not_found: Some(ErrorCode::ResourceNotFound),
        }
    }

    fn body(mut self, body: Value) -> Call {
        self.body = Some(body);
        self
    }

    fn not_found(mut self, code: Option<ErrorCode>) -> Call {
        self.not_found = code;
        self
    }
}

/// A path segment: ids as numbers, names percent-encoded.
fn segment(id: &Identifier) -> String {
    encode(&id.to_string())
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

fn topic_path(stream: &Identifier, topic: &Identifier) -> String {
    format!("/streams/{}/topics/{}", segment(stream), segment(topic))
}

pub fn permissions(permissions: &Permissions) -> Value {
    let global = &permissions.global;
    let streams: serde_json::Map<String, Value> = permissions
        .streams
        .iter()
        .map(|stream| {
            let topics: serde_json::Map<String, Value> = stream
                .topics
                .iter()
                .map(|topic| {
                    (
                        topic.topic_id.to_string(),
                        json!({
                            "manage_topic": topic.manage_topic,
                            "read_topic": topic.read_topic,
                            "poll_messages": topic.poll_messages,
                            "send_messages": topic.send_messages,
                        }),
                    )
                })
                .collect();
            (
                stream.stream_id.to_string(),
                json!({
                    "manage_stream": stream.manage_stream,
                    "read_stream": stream.read_stream,
                    "manage_topics": stream.manage_topics,
                    "read_topics": stream.read_topics,
                    "poll_messages": stream.poll_messages,
                    "send_messages": stream.send_messages,
                    "topics": if topics.is_empty() { Value::Null } else { Value::Object(topics) },
                }),
            )
        })
        .collect();
    json!({
        "global": {
            "manage_servers": global.manage_servers,
            "read_servers": global.read_servers,
            "manage_users": global.manage_users,
            "read_users": global.read_users,
            "manage_streams": global.manage_streams,
            "read_streams": global.read_streams,
            "manage_topics": global.manage_topics,
            "read_topics": global.read_topics,
            "poll_messages": global.poll_messages,
            "send_messages": global.send_messages,
        },
        "streams": if streams.is_empty() { Value::Null } else { Value::Object(streams) },
    })
}

/// The SendMessages body: partitioning and messages, ids as strings (u128), payloads and header
/// values in base64.
fn send_body(send: &rill_core::message::SendMessages) -> Result<Value, ErrorCode> {
    let (kind, value) = match &send.partitioning {
        Partitioning::Balanced => ("balanced", Vec::new()),
        Partitioning::PartitionId(id) => ("partition_id", id.to_le_bytes().to_vec()),
        Partitioning::MessagesKey(key) => ("messages_key", key.clone()),
    };
    let mut messages = Vec::new();
    for message in MessageIter::new(send.batch.as_bytes()) {
        let message = message.map_err(|error| error.code)?;
        let mut entry = json!({
            "id": message.id().to_string(),
            "payload": STANDARD.encode(message.payload()),
        });
        if !message.user_headers().is_empty() {
            let headers =
                user_headers::parse(message.user_headers()).map_err(|error| error.code)?;
            entry["user_headers"] = headers
                .iter()
                .map(|(key, value)| {
                    json!({
                        "key": {"kind": key.kind.name(), "value": STANDARD.encode(&key.value)},
                        "value": {"kind": value.kind.name(), "value": STANDARD.encode(&value.value)},
                    })
                })
                .collect();
        }
        messages.push(entry);
    }
    Ok(json!({
        "partitioning": {"kind": kind, "value": STANDARD.encode(value)},
        "messages": messages,
    }))
}

fn polling_kind(kind: PollingKind) -> &'static str {
    match kind {
        PollingKind::Offset => "offset",
        PollingKind::Timestamp => "timestamp",
        PollingKind::First => "first",
        PollingKind::Last => "last",
        PollingKind::Next => "next",
    }
}

fn partition_query(partition: Option<u32>) -> String {
    partition.map_or_else(String::new, |id| format!("&partition_id={id}"))
}

/// The HTTP call of `request`, or the status the binary command gets where HTTP has no such
/// call (as upstream's HTTP API has none: GetMe, group membership, a group consumer's polls
/// and offsets).
pub fn call(request: &Request) -> Result<Call, ErrorCode> {
    use Answer as A;
    let unavailable = Err(ErrorCode::FeatureUnavailable);
    Ok(match request {
        Request::Ping(_) => Call::new("GET", "/ping".into(), A::Empty),
        Request::GetStats(_) => Call::new("GET", "/stats".into(), A::Stats),
        Request::GetSnapshot(snapshot) => {
            let compression = match snapshot.compression {
                1 => "Stored",
                2 => "Deflated",
                3 => "Bzip2",
                4 => "Zstd",
                5 => "Lzma",
                _ => "Xz",
            };
            let types: Vec<&str> = snapshot
                .types
                .iter()
                .map(|kind| match kind {
                    1 => "FilesystemOverview",
                    2 => "ProcessList",
                    3 => "ResourceUsage",
                    4 => "Test",
                    5 => "ServerLogs",
                    6 => "ServerConfig",
                    _ => "All",
                })
                .collect();
            Call::new("POST", "/snapshot".into(), A::Snapshot)
                .body(json!({"compression": compression, "snapshot_types": types}))
        }
        Request::GetClusterMetadata(_) => {
            Call::new("GET", "/cluster/metadata".into(), A::Cluster)
        }
        Request::GetMe(_) => return unavailable,
        Request::GetClient(get) => Call::new("GET", format!("/clients/{}", get.client_id), A::Client)
            .not_found(None),
        Request::GetClients(_) => Call::new("GET", "/clients".into(), A::Clients),
        Request::GetUser(get) => {
            Call::new("GET", format!("/users/{}", segment(&get.user_id)), A::User)
                .not_found(None)
        }
        Request::GetUsers(_) => Call::new("GET", "/users".into(), A::Users),
        Request::CreateUser(create) => Call::new("POST", "/users".into(), A::User).body(json!({
            "username": create.username.as_str(),
            "password": create.password.0,
            "status": create.status.name(),
            "permissions": create.permissions.as_ref().map(permissions),
        })),
        Request::DeleteUser(delete) => {
            Call::new("DELETE", format!("/users/{}", segment(&delete.user_id)), A::Empty)
        }
        Request::UpdateUser(update) => Call::new(
            "PUT",
            format!("/users/{}", segment(&update.user_id)),
            A::Empty,
        )
        .body(json!({
            "username": update.username.as_ref().map(|name| name.as_str()),
            "status": update.status.map(UserStatus::name),
        })),
        Request::UpdatePermissions(update) => Call::new(
            "PUT",
            format!("/users/{}/permissions", segment(&update.user_id)),
            A::Empty,
        )
        .body(json!({"permissions": update.permissions.as_ref().map(permissions)})),
        Request::ChangePassword(change) => Call::new(
            "PUT",
            format!("/users/{}/password", segment(&change.user_id)),
            A::Empty,
        )
        .body(json!({
            "current_password": change.current_password.0,
            "new_password": change.new_password.0,
        })),
        Request::LoginUser(login) => Call::new("POST", "/users/login".into(), A::Identity).body(
            json!({
                "username": login.username.as_str(),
                "password": login.password.0,
                "version": login.version,
                "context": login.context,
            }),
        ),
        Request::LogoutUser(_) => Call::new("DELETE", "/users/logout".into(), A::Logout),
        Request::GetPersonalAccessTokens(_) => {
            Call::new("GET", "/personal-access-tokens".into(), A::Tokens)
        }
        Request::CreatePersonalAccessToken(create) => {
            Call::new("POST", "/personal-access-tokens".into(), A::RawToken)
                .body(json!({"name": create.name.as_str(), "expiry": create.expiry}))
        }
        Request::DeletePersonalAccessToken(delete) => Call::new(
            "DELETE",
            format!("/personal-access-tokens/{}", encode(delete.name.as_str())),
            A::Empty,
        ),
        Request::LoginWithPersonalAccessToken(login) => {
            Call::new("POST", "/personal-access-tokens/login".into(), A::Identity)
                .body(json!({"token": login.token.as_str()}))
        }
        Request::PollMessages(poll) => {
            if poll.consumer.kind == ConsumerKind::ConsumerGroup {
                return unavailable;
            }
            Call::new(
                "GET",
                format!(
                    "{}/messages?consumer_id={}{}&kind={}&value={}&count={}&auto_commit={}",
                    topic_path(&poll.stream_id, &poll.topic_id),
                    segment(&poll.consumer.id),
                    partition_query(poll.partition_id.0),
                    polling_kind(poll.strategy.kind),
                    poll.strategy.value,
                    poll.count,
                    poll.auto_commit
                ),
                A::Polled,
            )
        }
        Request::SendMessages(send) => Call::new(
            "POST",
            format!("{}/messages", topic_path(&send.stream_id, &send.topic_id)),
            A::Empty,
        )
        .body(send_body(send)?),
        Request::FlushUnsavedBuffer(flush) => Call::new(
            "GET",
            format!(
                "{}/messages/flush/{}/{}",
                topic_path(&flush.stream_id, &flush.topic_id),
                flush.partition_id,
                flush.fsync
            ),
            A::Empty,
        ),
        Request::GetConsumerOffset(get) => {
            if get.consumer.kind == ConsumerKind::ConsumerGroup {
                return unavailable;
            }
            Call::new(
                "GET",
                format!(
                    "{}/consumer-offsets?consumer_id={}{}",
                    topic_path(&get.stream_id, &get.topic_id),
                    segment(&get.consumer.id),
                    partition_query(get.partition_id.0)
                ),
                A::ConsumerOffset,
            )
            .not_found(None)
        }
        Request::StoreConsumerOffset(store) => {
            if store.consumer.kind == ConsumerKind::ConsumerGroup {
                return unavailable;
            }
            Call::new(
                "PUT",
                format!("{}/consumer-offsets", topic_path(&store.stream_id, &store.topic_id)),
                A::Empty,
            )
            .body(json!({
                "consumer_id": store.consumer.id.to_string(),
                "partition_id": store.partition_id.0,
                "offset": store.offset,
            }))
        }
        Request::DeleteConsumerOffset(delete) => {
            if delete.consumer.kind == ConsumerKind::ConsumerGroup {
                return unavailable;
            }
            let partition = delete
                .partition_id
                .0
                .map_or_else(String::new, |id| format!("?partition_id={id}"));
            Call::new(
                "DELETE",
                format!(
                    "{}/consumer-offsets/{}{partition}",
                    topic_path(&delete.stream_id, &delete.topic_id),
                    segment(&delete.consumer.id)
                ),
                A::Empty,
            )
        }
        Request::GetStream(get) => Call::new(
            "GET",
            format!("/streams/{}", segment(&get.stream_id)),
            A::Stream,
        )
        .not_found(None),
        Request::GetStreams(_) => Call::new("GET", "/streams".into(), A::Streams),
        Request::CreateStream(create) => Call::new("POST", "/streams".into(), A::Stream)
            .body(json!({"name": create.name.as_str()})),
        Request::DeleteStream(delete) => Call::new(
            "DELETE",
            format!("/streams/{}", segment(&delete.stream_id)),
            A::Empty,
        ),
        Request::UpdateStream(update) => Call::new(
            "PUT",
            format!("/streams/{}", segment(&update.stream_id)),
            A::Empty,
        )
        .body(json!({"name": update.name.as_str()})),
        Request::PurgeStream(purge) => Call::new(
            "DELETE",
            format!("/streams/{}/purge", segment(&purge.stream_id)),
            A::Empty,
        ),
        Request::GetTopic(get) => {
            Call::new("GET", topic_path(&get.stream_id, &get.topic_id), A::Topic)
                .not_found(None)
        }
        Request::GetTopics(get) => Call::new(
            "GET",
            format!("/streams/{}/topics", segment(&get.stream_id)),
            A::Topics,
        ),
        Request::CreateTopic(create) => Call::new(
            "POST",
            format!("/streams/{}/topics", segment(&create.stream_id)),
            A::Topic,
        )
        .body(json!({
            "partitions_count": create.partitions_count,
            "compression_algorithm": create.compression_algorithm.name(),
            "message_expiry": create.message_expiry,
            "max_topic_size": create.max_topic_size,
            "replication_factor": (create.replication_factor != 0).then_some(create.replication_factor),
            "name": create.name.as_str(),
        })),
        Request::DeleteTopic(delete) => Call::new(
            "DELETE",
            topic_path(&delete.stream_id, &delete.topic_id),
            A::Empty,
        ),
        Request::UpdateTopic(update) => Call::new(
            "PUT",
            topic_path(&update.stream_id, &update.topic_id),
            A::Empty,
        )
        .body(json!({
            "compression_algorithm": update.compression_algorithm.name(),
            "message_expiry": update.message_expiry,
            "max_topic_size": update.max_topic_size,
            "replication_factor": (update.replication_factor != 0).then_some(update.replication_factor),
            "name": update.name.as_str(),
        })),
        Request::PurgeTopic(purge) => Call::new(
            "DELETE",
            format!("{}/purge", topic_path(&purge.stream_id, &purge.topic_id)),
            A::Empty,
        ),
        Request::CreatePartitions(create) => Call::new(
            "POST",
            format!("{}/partitions", topic_path(&create.stream_id, &create.topic_id)),
            A::Empty,
        )
        .body(json!({"partitions_count": create.partitions_count})),
        Request::DeletePartitions(delete) => Call::new(
            "DELETE",
            format!(
                "{}/partitions?partitions_count={}",
                topic_path(&delete.stream_id, &delete.topic_id),
                delete.partitions_count
            ),
            A::Empty,
        ),
        Request::DeleteSegments(delete) => Call::new(
            "DELETE",
            format!(
                "{}/partitions/{}?segments_count={}",
                topic_path(&delete.stream_id, &delete.topic_id),
                delete.partition_id,
                delete.segments_count
            ),
            A::Empty,
        ),
        Request::GetConsumerGroup(get) => Call::new(
            "GET",
            format!(
                "{}/consumer-groups/{}",
                topic_path(&get.stream_id, &get.topic_id),
                segment(&get.group_id)
            ),
            A::Group,
        )
        .not_found(None),
        Request::GetConsumerGroups(get) => Call::new(
            "GET",
            format!("{}/consumer-groups", topic_path(&get.stream_id, &get.topic_id)),
            A::Groups,
        ),
        Request::CreateConsumerGroup(create) => Call::new(
            "POST",
            format!("{}/consumer-groups", topic_path(&create.stream_id, &create.topic_id)),
            A::GroupCreated,
        )
        .body(json!({"name": create.name.as_str()})),
        Request::DeleteConsumerGroup(delete) => Call::new(
            "DELETE",
            format!(
                "{}/consumer-groups/{}",
                topic_path(&delete.stream_id, &delete.topic_id),
                segment(&delete.group_id)
            ),
            A::Empty,
        ),
        Request::JoinConsumerGroup(_) | Request::LeaveConsumerGroup(_) => return unavailable,
    })
}
