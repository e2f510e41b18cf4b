//! The JSON the HTTP API answers with, in upstream 0.8's shapes (the official SDKs deserialize
//! exactly these): built from the binary responses the handlers give, decoded with rill-core.
//!
//! Encodings: timestamps and durations are microseconds; sizes of data are upstream's human
//! strings ("1.234 KB", "0 B"); an expiry or size of u64::MAX means never or unlimited; message
//! ids are plain u128 numbers, payloads and header values base64.

mod messages;
mod permissions;
mod system;

pub use messages::{Message, Polled};
pub use permissions::PermissionsView;
pub use system::{Client, ClientWithGroups, Cluster, StatsView};

use rill_core::responses::{
    ConsumerGroupDetails, ConsumerGroupInfo, ConsumerOffsetInfo, PartitionInfo,
    PersonalAccessTokenInfo, StreamDetails, StreamInfo, TopicDetails, TopicInfo, UserDetails,
    UserInfo,
};
use serde::Serialize;

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
            compression_algorithm: topic.compression_algorithm.name(),
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
            status: user.status.name(),
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

#[cfg(test)]
mod tests;
