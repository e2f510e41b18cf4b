//! How responses are shown: JSON views, display names, table rows.

use crate::util::*;
use rill_sdk::types::*;
use serde_json::{Value, json};

pub(super) fn stream_json(stream: &StreamInfo) -> Value {
    json!({"id": stream.id, "name": stream.name.as_str(), "created_at": stream.created_at,
        "size_bytes": stream.size_bytes, "messages_count": stream.messages_count, "topics_count": stream.topics_count})
}

pub(super) fn topic_json(topic: &TopicInfo) -> Value {
    json!({"id": topic.id, "name": topic.name.as_str(), "created_at": topic.created_at,
        "partitions_count": topic.partitions_count, "message_expiry": topic.message_expiry,
        "compression_algorithm": topic.compression_algorithm.name(),
        "max_topic_size": topic.max_topic_size, "replication_factor": topic.replication_factor,
        "size_bytes": topic.size_bytes, "messages_count": topic.messages_count})
}

pub(super) fn partition_json(partition: &PartitionInfo) -> Value {
    json!({"id": partition.id, "created_at": partition.created_at, "segments_count": partition.segments_count,
        "current_offset": partition.current_offset, "size_bytes": partition.size_bytes, "messages_count": partition.messages_count})
}

pub(super) fn group_json(group: &ConsumerGroupInfo) -> Value {
    json!({"id": group.id, "name": group.name.as_str(), "partitions_count": group.partitions_count, "members_count": group.members_count})
}

pub(super) fn user_json(user: &UserInfo) -> Value {
    json!({"id": user.id, "username": user.username.as_str(), "created_at": user.created_at, "status": user.status.name()})
}

pub(super) fn client_json(client: &ClientInfo) -> Value {
    json!({"client_id": client.client_id, "user_id": user_id_value(client.user_id), "transport": client.transport.name(),
        "address": client.address, "consumer_groups_count": client.consumer_groups_count})
}

pub(super) fn permissions_json(permissions: &Option<Permissions>) -> Value {
    let Some(permissions) = permissions else {
        return Value::Null;
    };
    let g = &permissions.global;
    json!({
        "global": {"manage_servers": g.manage_servers, "read_servers": g.read_servers, "manage_users": g.manage_users,
            "read_users": g.read_users, "manage_streams": g.manage_streams, "read_streams": g.read_streams,
            "manage_topics": g.manage_topics, "read_topics": g.read_topics, "poll_messages": g.poll_messages,
            "send_messages": g.send_messages},
        "streams": permissions.streams.iter().map(|s| json!({"stream_id": s.stream_id, "manage_stream": s.manage_stream,
            "read_stream": s.read_stream, "manage_topics": s.manage_topics, "read_topics": s.read_topics,
            "poll_messages": s.poll_messages, "send_messages": s.send_messages,
            "topics": s.topics.iter().map(|t| json!({"topic_id": t.topic_id, "manage_topic": t.manage_topic,
                "read_topic": t.read_topic, "poll_messages": t.poll_messages, "send_messages": t.send_messages})).collect::<Vec<_>>()
        })).collect::<Vec<_>>()
    })
}

pub(super) fn user_id_value(user_id: u32) -> Value {
    if user_id == u32::MAX {
        Value::Null
    } else {
        json!(user_id)
    }
}

pub(super) fn user_id_text(user_id: u32) -> String {
    if user_id == u32::MAX {
        "-".to_owned()
    } else {
        user_id.to_string()
    }
}

pub(super) fn stream_rows(streams: &[StreamInfo]) -> Vec<Vec<String>> {
    streams
        .iter()
        .map(|s| {
            vec![
                s.id.to_string(),
                format_timestamp(s.created_at),
                s.name.to_string(),
                format_size(s.size_bytes),
                s.messages_count.to_string(),
                s.topics_count.to_string(),
            ]
        })
        .collect()
}

pub(super) fn topic_rows(topics: &[TopicInfo]) -> Vec<Vec<String>> {
    topics
        .iter()
        .map(|t| {
            vec![
                t.id.to_string(),
                format_timestamp(t.created_at),
                t.name.to_string(),
                format_size(t.size_bytes),
                format_size(t.max_topic_size),
                format_expiry(t.message_expiry),
                t.messages_count.to_string(),
                t.partitions_count.to_string(),
                t.replication_factor.to_string(),
            ]
        })
        .collect()
}

pub(super) const TOPIC_HEADER: [&str; 9] = [
    "ID",
    "Created",
    "Name",
    "Size (B)",
    "Max Topic Size",
    "Message Expiry (s)",
    "Messages",
    "Partitions",
    "Replication",
];
