//! The JSON the HTTP API answers with, in upstream 0.8's shapes (the official SDKs deserialize
//! exactly these): built from the binary responses the handlers give, decoded with rill-core.
//!
//! Encodings: timestamps and durations are microseconds; sizes of data are upstream's human
//! strings ("1.234 KB", "0 B"); an expiry or size of u64::MAX means never or unlimited; message
//! ids are plain u128 numbers, payloads and header values base64.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rill_core::message::MessageView;
use rill_core::primitives::{CompressionAlgorithm, Permissions, Transport, UserStatus};
use rill_core::responses::{
    ClientDetails, ClientInfo, ClusterMetadata, ConsumerGroupDetails, ConsumerGroupInfo,
    ConsumerOffsetInfo, PartitionInfo, PersonalAccessTokenInfo, Stats, StreamDetails, StreamInfo,
    TopicDetails, TopicInfo, UserDetails, UserInfo,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// A size of data as upstream writes it: the largest unit (decimal or binary) that shows it
/// exactly with at most three decimals, else bytes.
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 12] = [
        ("EiB", 1 << 60),
        ("EB", 1_000_000_000_000_000_000),
        ("PiB", 1 << 50),
        ("PB", 1_000_000_000_000_000),
        ("TiB", 1 << 40),
        ("TB", 1_000_000_000_000),
        ("GiB", 1 << 30),
        ("GB", 1_000_000_000),
        ("MiB", 1 << 20),
        ("MB", 1_000_000),
        ("KiB", 1 << 10),
        ("KB", 1_000),
    ];
    for (name, unit) in UNITS {
        if bytes < unit || (u128::from(bytes) * 1000) % u128::from(unit) != 0 {
            continue;
        }
        let thousandths = u128::from(bytes) * 1000 / u128::from(unit);
        let (whole, fraction) = (thousandths / 1000, thousandths % 1000);
        return match fraction {
            0 => format!("{whole} {name}"),
            _ => {
                let digits = format!("{fraction:03}");
                format!("{whole}.{} {name}", digits.trim_end_matches('0'))
            }
        };
    }
    format!("{bytes} B")
}

fn compression(algorithm: CompressionAlgorithm) -> &'static str {
    match algorithm {
        CompressionAlgorithm::None => "none",
        CompressionAlgorithm::Gzip => "gzip",
    }
}

fn status(status: UserStatus) -> &'static str {
    match status {
        UserStatus::Active => "active",
        UserStatus::Inactive => "inactive",
    }
}

#[derive(Serialize)]
pub struct Stream {
    id: u32,
    created_at: u64,
    name: String,
    size: String,
    messages_count: u64,
    topics_count: u32,
}

impl From<&StreamInfo> for Stream {
    fn from(stream: &StreamInfo) -> Self {
        Stream {
            id: stream.id,
            created_at: stream.created_at,
            name: stream.name.as_str().to_owned(),
            size: byte_size(stream.size_bytes),
            messages_count: stream.messages_count,
            topics_count: stream.topics_count,
        }
    }
}

#[derive(Serialize)]
pub struct StreamWithTopics {
    #[serde(flatten)]
    stream: Stream,
    topics: Vec<Topic>,
}

impl From<&StreamDetails> for StreamWithTopics {
    fn from(details: &StreamDetails) -> Self {
        let mut stream = Stream::from(&details.stream);
        stream.topics_count = details.topics.len() as u32;
        let mut topics: Vec<Topic> = details.topics.iter().map(Topic::from).collect();
        topics.sort_by_key(|topic| topic.id);
        StreamWithTopics { stream, topics }
    }
}

#[derive(Serialize)]
pub struct Topic {
    id: u32,
    created_at: u64,
    name: String,
    size: String,
    message_expiry: u64,
    compression_algorithm: &'static str,
    max_topic_size: u64,
    replication_factor: u8,
    messages_count: u64,
    partitions_count: u32,
}

impl From<&TopicInfo> for Topic {
    fn from(topic: &TopicInfo) -> Self {
        Topic {
            id: topic.id,
            created_at: topic.created_at,
            name: topic.name.as_str().to_owned(),
            size: byte_size(topic.size_bytes),
            message_expiry: topic.message_expiry,
            compression_algorithm: compression(topic.compression_algorithm),
            max_topic_size: topic.max_topic_size,
            replication_factor: topic.replication_factor,
            messages_count: topic.messages_count,
            partitions_count: topic.partitions_count,
        }
    }
}

#[derive(Serialize)]
pub struct TopicWithPartitions {
    #[serde(flatten)]
    topic: Topic,
    partitions: Vec<Partition>,
}

impl From<&TopicDetails> for TopicWithPartitions {
    fn from(details: &TopicDetails) -> Self {
        let mut topic = Topic::from(&details.topic);
        topic.partitions_count = details.partitions.len() as u32;
        let mut partitions: Vec<Partition> =
            details.partitions.iter().map(Partition::from).collect();
        partitions.sort_by_key(|partition| partition.id);
        TopicWithPartitions { topic, partitions }
    }
}

#[derive(Serialize)]
pub struct Partition {
    id: u32,
    created_at: u64,
    segments_count: u32,
    current_offset: u64,
    size: String,
    messages_count: u64,
}

impl From<&PartitionInfo> for Partition {
    fn from(partition: &PartitionInfo) -> Self {
        Partition {
            id: partition.id,
            created_at: partition.created_at,
            segments_count: partition.segments_count,
            current_offset: partition.current_offset,
            size: byte_size(partition.size_bytes),
            messages_count: partition.messages_count,
        }
    }
}

#[derive(Serialize)]
pub struct ConsumerGroup {
    id: u32,
    name: String,
    partitions_count: u32,
    members_count: u32,
}

impl From<&ConsumerGroupInfo> for ConsumerGroup {
    fn from(group: &ConsumerGroupInfo) -> Self {
        ConsumerGroup {
            id: group.id,
            name: group.name.as_str().to_owned(),
            partitions_count: group.partitions_count,
            members_count: group.members_count,
        }
    }
}

#[derive(Serialize)]
pub struct ConsumerGroupWithMembers {
    #[serde(flatten)]
    group: ConsumerGroup,
    members: Vec<Member>,
}

#[derive(Serialize)]
struct Member {
    id: u32,
    partitions_count: u32,
    partitions: Vec<u32>,
}

impl From<&ConsumerGroupDetails> for ConsumerGroupWithMembers {
    fn from(details: &ConsumerGroupDetails) -> Self {
        let mut group = ConsumerGroup::from(&details.group);
        group.members_count = details.members.len() as u32;
        ConsumerGroupWithMembers {
            group,
            members: details
                .members
                .iter()
                .map(|member| Member {
                    id: member.id,
                    partitions_count: member.partitions.len() as u32,
                    partitions: member.partitions.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct ConsumerOffset {
    partition_id: u32,
    current_offset: u64,
    stored_offset: u64,
}

impl From<&ConsumerOffsetInfo> for ConsumerOffset {
    fn from(offset: &ConsumerOffsetInfo) -> Self {
        ConsumerOffset {
            partition_id: offset.partition_id,
            current_offset: offset.current_offset,
            stored_offset: offset.stored_offset,
        }
    }
}

#[derive(Serialize)]
pub struct User {
    id: u32,
    created_at: u64,
    status: &'static str,
    username: String,
}

impl From<&UserInfo> for User {
    fn from(user: &UserInfo) -> Self {
        User {
            id: user.id,
            created_at: user.created_at,
            status: status(user.status),
            username: user.username.as_str().to_owned(),
        }
    }
}

#[derive(Serialize)]
pub struct UserWithPermissions {
    #[serde(flatten)]
    user: User,
    permissions: Option<PermissionsView>,
}

impl From<&UserDetails> for UserWithPermissions {
    fn from(details: &UserDetails) -> Self {
        UserWithPermissions {
            user: User::from(&details.user),
            permissions: details.permissions.as_ref().map(PermissionsView::from),
        }
    }
}

/// Permissions as upstream's JSON has them: per-stream and per-topic maps keyed by id (as
/// strings, JSON's only object keys), or null when there are none.
#[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct PermissionsView {
    pub global: GlobalView,
    pub streams: Option<BTreeMap<u32, StreamPermissionsView>>,
}

#[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct GlobalView {
    pub manage_servers: bool,
    pub read_servers: bool,
    pub manage_users: bool,
    pub read_users: bool,
    pub manage_streams: bool,
    pub read_streams: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

#[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct StreamPermissionsView {
    pub manage_stream: bool,
    pub read_stream: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
    pub topics: Option<BTreeMap<u32, TopicPermissionsView>>,
}

#[derive(Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct TopicPermissionsView {
    pub manage_topic: bool,
    pub read_topic: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

impl From<&Permissions> for PermissionsView {
    fn from(permissions: &Permissions) -> Self {
        let global = &permissions.global;
        let streams: BTreeMap<u32, StreamPermissionsView> = permissions
            .streams
            .iter()
            .map(|stream| {
                let topics: BTreeMap<u32, TopicPermissionsView> = stream
                    .topics
                    .iter()
                    .map(|topic| {
                        (
                            topic.topic_id,
                            TopicPermissionsView {
                                manage_topic: topic.manage_topic,
                                read_topic: topic.read_topic,
                                poll_messages: topic.poll_messages,
                                send_messages: topic.send_messages,
                            },
                        )
                    })
                    .collect();
                (
                    stream.stream_id,
                    StreamPermissionsView {
                        manage_stream: stream.manage_stream,
                        read_stream: stream.read_stream,
                        manage_topics: stream.manage_topics,
                        read_topics: stream.read_topics,
                        poll_messages: stream.poll_messages,
                        send_messages: stream.send_messages,
                        topics: (!topics.is_empty()).then_some(topics),
                    },
                )
            })
            .collect();
        PermissionsView {
            global: GlobalView {
                manage_servers: global.manage_servers,
                read_servers: global.read_servers,
                manage_users: global.manage_users,
                read_users: global.read_users,
                manage_streams: global.manage_streams,
                read_streams: global.read_streams,
                manage_topics: global.manage_topics,
                read_topics: global.read_topics,
                poll_messages: global.poll_messages,
                send_messages: global.send_messages,
            },
            streams: (!streams.is_empty()).then_some(streams),
        }
    }
}

impl From<PermissionsView> for Permissions {
    fn from(view: PermissionsView) -> Self {
        use rill_core::primitives::{GlobalPermissions, StreamPermissions, TopicPermissions};
        let global = view.global;
        Permissions {
            global: GlobalPermissions {
                manage_servers: global.manage_servers,
                read_servers: global.read_servers,
                manage_users: global.manage_users,
                read_users: global.read_users,
                manage_streams: global.manage_streams,
                read_streams: global.read_streams,
                manage_topics: global.manage_topics,
                read_topics: global.read_topics,
                poll_messages: global.poll_messages,
                send_messages: global.send_messages,
            },
            streams: view
                .streams
                .unwrap_or_default()
                .into_iter()
                .map(|(stream_id, stream)| StreamPermissions {
                    stream_id,
                    manage_stream: stream.manage_stream,
                    read_stream: stream.read_stream,
                    manage_topics: stream.manage_topics,
                    read_topics: stream.read_topics,
                    poll_messages: stream.poll_messages,
                    send_messages: stream.send_messages,
                    topics: stream
                        .topics
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(topic_id, topic)| TopicPermissions {
                            topic_id,
                            manage_topic: topic.manage_topic,
                            read_topic: topic.read_topic,
                            poll_messages: topic.poll_messages,
                            send_messages: topic.send_messages,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct Identity {
    pub user_id: u32,
    pub access_token: Option<AccessToken>,
}

#[derive(Serialize)]
pub struct AccessToken {
    pub token: String,
    /// Unix seconds, as the token's `exp`.
    pub expiry: u64,
}

#[derive(Serialize)]
pub struct TokenInfo {
    name: String,
    expiry_at: Option<u64>,
}

impl From<&PersonalAccessTokenInfo> for TokenInfo {
    fn from(token: &PersonalAccessTokenInfo) -> Self {
        TokenInfo {
            name: token.name.as_str().to_owned(),
            expiry_at: (token.expiry_at != 0).then_some(token.expiry_at),
        }
    }
}

fn transport(transport: Transport) -> &'static str {
    match transport {
        Transport::Tcp => "TCP",
        Transport::Quic => "QUIC",
        Transport::Http => "HTTP",
        Transport::WebSocket => "WebSocket",
    }
}

#[derive(Serialize)]
pub struct Client {
    client_id: u32,
    user_id: Option<u32>,
    address: String,
    transport: &'static str,
    consumer_groups_count: u32,
}

impl From<&ClientInfo> for Client {
    fn from(client: &ClientInfo) -> Self {
        Client {
            client_id: client.client_id,
            user_id: (client.user_id != u32::MAX).then_some(client.user_id),
            address: client.address.clone(),
            transport: transport(client.transport),
            consumer_groups_count: client.consumer_groups_count,
        }
    }
}

#[derive(Serialize)]
pub struct ClientWithGroups {
    #[serde(flatten)]
    client: Client,
    consumer_groups: Vec<ClientGroup>,
}

#[derive(Serialize)]
struct ClientGroup {
    stream_id: u32,
    topic_id: u32,
    group_id: u32,
}

impl From<&ClientDetails> for ClientWithGroups {
    fn from(details: &ClientDetails) -> Self {
        ClientWithGroups {
            client: Client {
                client_id: details.client_id,
                user_id: (details.user_id != u32::MAX).then_some(details.user_id),
                address: details.address.clone(),
                transport: transport(details.transport),
                consumer_groups_count: details.consumer_groups.len() as u32,
            },
            consumer_groups: details
                .consumer_groups
                .iter()
                .map(|group| ClientGroup {
                    stream_id: group.stream_id,
                    topic_id: group.topic_id,
                    group_id: group.group_id,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct Cluster {
    name: String,
    nodes: Vec<Node>,
}

#[derive(Serialize)]
struct Node {
    name: String,
    ip: String,
    endpoints: Endpoints,
    role: &'static str,
    status: &'static str,
}

#[derive(Serialize)]
struct Endpoints {
    tcp: u16,
    quic: u16,
    http: u16,
    websocket: u16,
}

impl From<&ClusterMetadata> for Cluster {
    fn from(cluster: &ClusterMetadata) -> Self {
        Cluster {
            name: cluster.name.clone(),
            nodes: cluster
                .nodes
                .iter()
                .map(|node| Node {
                    name: node.name.clone(),
                    ip: node.ip.clone(),
                    endpoints: Endpoints {
                        tcp: node.tcp_port,
                        quic: node.quic_port,
                        http: node.http_port,
                        websocket: node.websocket_port,
                    },
                    role: if node.role == 0 { "leader" } else { "follower" },
                    status: match node.status {
                        0 => "healthy",
                        1 => "starting",
                        2 => "stopping",
                        3 => "unreachable",
                        4 => "maintenance",
                        _ => "unknown",
                    },
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct StatsView {
    process_id: u32,
    cpu_usage: f32,
    total_cpu_usage: f32,
    memory_usage: String,
    total_memory: String,
    available_memory: String,
    run_time: u64,
    start_time: u64,
    read_bytes: String,
    written_bytes: String,
    messages_size_bytes: String,
    streams_count: u32,
    topics_count: u32,
    partitions_count: u32,
    segments_count: u32,
    messages_count: u64,
    clients_count: u32,
    consumer_groups_count: u32,
    hostname: String,
    os_name: String,
    os_version: String,
    kernel_version: String,
    iggy_server_version: String,
    iggy_server_semver: Option<u32>,
    cache_metrics: BTreeMap<String, CacheMetric>,
    threads_count: u32,
    free_disk_space: String,
    total_disk_space: String,
    /// Ours: the I/O driver the shards run on (upstream's SDKs ignore unknown keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    io_driver: Option<&'static str>,
}

#[derive(Serialize)]
struct CacheMetric {
    hits: u64,
    misses: u64,
    hit_ratio: f32,
}

impl StatsView {
    pub fn new(stats: &Stats, io_driver: Option<&'static str>) -> StatsView {
        StatsView {
            process_id: stats.process_id,
            cpu_usage: stats.cpu_usage,
            total_cpu_usage: stats.total_cpu_usage,
            memory_usage: byte_size(stats.memory_usage),
            total_memory: byte_size(stats.total_memory),
            available_memory: byte_size(stats.available_memory),
            run_time: stats.run_time,
            start_time: stats.start_time,
            read_bytes: byte_size(stats.read_bytes),
            written_bytes: byte_size(stats.written_bytes),
            messages_size_bytes: byte_size(stats.messages_size_bytes),
            streams_count: stats.streams_count,
            topics_count: stats.topics_count,
            partitions_count: stats.partitions_count,
            segments_count: stats.segments_count,
            messages_count: stats.messages_count,
            clients_count: stats.clients_count,
            consumer_groups_count: stats.consumer_groups_count,
            hostname: stats.hostname.clone(),
            os_name: stats.os_name.clone(),
            os_version: stats.os_version.clone(),
            kernel_version: stats.kernel_version.clone(),
            iggy_server_version: stats.iggy_server_version.clone(),
            iggy_server_semver: (stats.iggy_server_semver != 0).then_some(stats.iggy_server_semver),
            cache_metrics: stats
                .cache_metrics
                .iter()
                .map(|metric| {
                    (
                        format!(
                            "{}-{}-{}",
                            metric.stream_id, metric.topic_id, metric.partition_id
                        ),
                        CacheMetric {
                            hits: metric.hits,
                            misses: metric.misses,
                            hit_ratio: metric.hit_ratio,
                        },
                    )
                })
                .collect(),
            threads_count: stats.threads_count,
            free_disk_space: byte_size(stats.free_disk_space),
            total_disk_space: byte_size(stats.total_disk_space),
            io_driver,
        }
    }
}

/// A polled message: its header's fields, payload and user headers.
#[derive(Serialize)]
pub struct Message {
    header: MessageHeader,
    payload: String,
    user_headers: UserHeaders,
}

#[derive(Serialize)]
struct MessageHeader {
    checksum: u64,
    id: u128,
    offset: u64,
    timestamp: u64,
    origin_timestamp: u64,
    user_headers_length: u32,
    payload_length: u32,
    reserved: u64,
}

/// Entries when the headers parse, else their raw bytes in base64 (as upstream falls back).
#[derive(Serialize)]
#[serde(untagged)]
enum UserHeaders {
    Entries(Vec<HeaderEntry>),
    Raw(String),
}

#[derive(Serialize)]
struct HeaderEntry {
    key: HeaderField,
    value: HeaderField,
}

#[derive(Serialize)]
pub struct HeaderField {
    pub kind: &'static str,
    pub value: String,
}

/// upstream's names of the header kinds, by their wire number.
pub const HEADER_KINDS: [&str; 15] = [
    "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16",
    "uint32", "uint64", "uint128", "float32", "float64",
];

fn header_field(field: &rill_core::primitives::user_headers::HeaderField) -> HeaderField {
    HeaderField {
        kind: HEADER_KINDS
            .get(usize::from(field.kind as u8).wrapping_sub(1))
            .copied()
            .unwrap_or("raw"),
        value: STANDARD.encode(&field.value),
    }
}

impl From<&MessageView<'_>> for Message {
    fn from(message: &MessageView<'_>) -> Self {
        let header = message.header();
        let raw_headers = message.user_headers();
        let user_headers = match rill_core::primitives::user_headers::parse(raw_headers) {
            Ok(entries) => UserHeaders::Entries(
                entries
                    .iter()
                    .map(|(key, value)| HeaderEntry {
                        key: header_field(key),
                        value: header_field(value),
                    })
                    .collect(),
            ),
            Err(_) => UserHeaders::Raw(STANDARD.encode(raw_headers)),
        };
        Message {
            header: MessageHeader {
                checksum: header.checksum,
                id: header.id,
                offset: header.offset,
                timestamp: header.timestamp,
                origin_timestamp: header.origin_timestamp,
                user_headers_length: raw_headers.len() as u32,
                payload_length: message.payload().len() as u32,
                reserved: 0,
            },
            payload: STANDARD.encode(message.payload()),
            user_headers,
        }
    }
}

#[derive(Serialize)]
pub struct Polled {
    pub partition_id: u32,
    pub current_offset: u64,
    pub count: u32,
    pub messages: Vec<Message>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_as_upstream_writes_them() {
        for (bytes, text) in [
            (0, "0 B"),
            (1, "1 B"),
            (999, "999 B"),
            (1000, "1 KB"),
            (1024, "1 KiB"),
            (1234, "1.234 KB"),
            (1500, "1.5 KB"),
            (1_048_576, "1 MiB"),
            (123_456_789, "123456.789 KB"),
            (10_000_000_000, "10 GB"),
            (1_000_001, "1000.001 KB"),
            (10_000_001, "10000.001 KB"),
            (1001, "1.001 KB"),
        ] {
            assert_eq!(byte_size(bytes), text, "{bytes}");
        }
    }
}
