//! Response records built from metadata plus the partitions' live counters, and the user
//! records GetUser, GetUsers and CreateUser answer with.

use crate::metadata::{Stream, Topic, User};
use crate::shard::table::{PartitionCounters, PartitionKey, ShardsTable};
use rill_core::primitives::Name;
use rill_core::responses::{
    PartitionInfo, StreamDetails, StreamInfo, TopicDetails, TopicInfo, UserDetails, UserInfo,
};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

fn name(text: &str) -> Name {
    Name::new(text).expect("stored names were validated on creation")
}

/// A partition's counters as the views show them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub segments_count: u32,
    pub current_offset: u64,
    pub size_bytes: u64,
    pub messages_count: u64,
}

impl Counts {
    pub fn of(counters: &PartitionCounters) -> Counts {
        Counts {
            segments_count: counters.segments_count.load(Ordering::Relaxed),
            current_offset: counters.current_offset(),
            size_bytes: counters.size_bytes.load(Ordering::Relaxed),
            messages_count: counters.messages_count.load(Ordering::Relaxed),
        }
    }
}

/// Where a view reads a partition's counters.
pub trait CounterSource {
    fn counts(&self, key: &PartitionKey) -> Counts;
}

impl CounterSource for ShardsTable {
    fn counts(&self, key: &PartitionKey) -> Counts {
        self.counters(key)
            .map_or_else(Counts::default, |counters| Counts::of(&counters))
    }
}

/// In a cluster: the counters of the partitions other nodes lead, as their leaders answered,
/// and this node's own for the rest (and for any leader that did not answer).
pub struct WithRemote<'a> {
    pub table: &'a ShardsTable,
    pub remote: &'a HashMap<PartitionKey, Counts>,
}

impl CounterSource for WithRemote<'_> {
    fn counts(&self, key: &PartitionKey) -> Counts {
        match self.remote.get(key) {
            Some(counts) => *counts,
            None => self.table.counts(key),
        }
    }
}

pub fn partition_info(
    table: &impl CounterSource,
    stream_id: u32,
    topic: &Topic,
    partition_id: u32,
    created_at: u64,
) -> PartitionInfo {
    let counts = table.counts(&PartitionKey::new(stream_id, topic.id, partition_id));
    PartitionInfo {
        id: partition_id,
        created_at,
        segments_count: counts.segments_count,
        current_offset: counts.current_offset,
        size_bytes: counts.size_bytes,
        messages_count: counts.messages_count,
    }
}

pub fn topic_details(table: &impl CounterSource, stream_id: u32, topic: &Topic) -> TopicDetails {
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

pub fn topic_info(table: &impl CounterSource, stream_id: u32, topic: &Topic) -> TopicInfo {
    topic_details(table, stream_id, topic).topic
}

pub fn stream_details(table: &impl CounterSource, stream: &Stream) -> StreamDetails {
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

pub fn stream_info(table: &impl CounterSource, stream: &Stream) -> StreamInfo {
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
