//! Response records built from metadata plus the partitions' live counters, and the user
//! records GetUser, GetUsers and CreateUser answer with.

use crate::metadata::{Stream, Topic, User};
use crate::shard::table::{PartitionKey, ShardsTable};
use rill_core::primitives::Name;
use rill_core::responses::{
    PartitionInfo, StreamDetails, StreamInfo, TopicDetails, TopicInfo, UserDetails, UserInfo,
};

fn name(text: &str) -> Name {
    Name::new(text).expect("stored names were validated on creation")
}

pub fn partition_info(
    table: &ShardsTable,
    stream_id: u32,
    topic: &Topic,
    partition_id: u32,
    created_at: u64,
) -> PartitionInfo {
    let key = PartitionKey::new(stream_id, topic.id, partition_id);
    let counters = table.counters(&key);
    let load = |read: fn(&crate::shard::table::PartitionCounters) -> u64| {
        counters.as_deref().map_or(0, read)
    };
    PartitionInfo {
        id: partition_id,
        created_at,
        segments_count: counters.as_deref().map_or(0, |c| {
            c.segments_count.load(std::sync::atomic::Ordering::Relaxed)
        }),
        current_offset: load(|c| c.current_offset()),
        size_bytes: load(|c| c.size_bytes.load(std::sync::atomic::Ordering::Relaxed)),
        messages_count: load(|c| c.messages_count.load(std::sync::atomic::Ordering::Relaxed)),
    }
}

pub fn topic_details(table: &ShardsTable, stream_id: u32, topic: &Topic) -> TopicDetails {
    let partitions: Vec<_> = topic
        .partitions
        .iter()
        .map(|partition| {
            partition_info(table, stream_id, topic, partition.id, partition.created_at)
        })
        .collect();
    let topic_info = TopicInfo {
        id: topic.id,
        created_at: topic.created_at,
        partitions_count: partitions.len() as u32,
        message_expiry: topic.message_expiry,
        compression_algorithm: topic.compression,
        max_topic_size: topic.max_topic_size,
        replication_factor: topic.replication_factor,
        size_bytes: partitions.iter().map(|p| p.size_bytes).sum(),
        messages_count: partitions.iter().map(|p| p.messages_count).sum(),
        name: name(&topic.name),
    };
    TopicDetails {
        topic: topic_info,
        partitions,
    }
}

pub fn topic_info(table: &ShardsTable, stream_id: u32, topic: &Topic) -> TopicInfo {
    topic_details(table, stream_id, topic).topic
}

pub fn stream_details(table: &ShardsTable, stream: &Stream) -> StreamDetails {
    let topics: Vec<_> = stream
        .topics
        .values()
        .map(|topic| topic_info(table, stream.id, topic))
        .collect();
    StreamDetails {
        stream: StreamInfo {
            id: stream.id,
            created_at: stream.created_at,
            topics_count: topics.len() as u32,
            size_bytes: topics.iter().map(|t| t.size_bytes).sum(),
            messages_count: topics.iter().map(|t| t.messages_count).sum(),
            name: name(&stream.name),
        },
        topics,
    }
}

pub fn stream_info(table: &ShardsTable, stream: &Stream) -> StreamInfo {
    stream_details(table, stream).stream
}

pub fn user_details(user: &User) -> UserDetails {
    UserDetails {
        user: UserInfo {
            id: user.id,
            created_at: user.created_at,
            status: user.status,
            username: Name::new(user.username.clone())
                .expect("usernames are validated on creation"),
        },
        permissions: user.permissions.clone(),
    }
}
