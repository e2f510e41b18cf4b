//! The control-plane metadata: streams, topics, partitions, users. Shard 0 changes it only by
//! applying [`MetadataOp`]s, the same ops it writes to the metadata log, so replaying the log
//! rebuilds exactly the state that was acknowledged.

use rill_core::ErrorCode;
use rill_core::primitives::{
    CompressionAlgorithm, Identifier, Permissions, StreamPermissions, TopicPermissions, UserStatus,
};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    pub streams: BTreeMap<u32, Stream>,
    pub users: BTreeMap<u32, User>,
    /// Personal access tokens by the hex SHA-256 of the token (the token itself is never stored).
    pub tokens: BTreeMap<String, PersonalAccessToken>,
    /// In a cluster: the Raft log id (term, leader, index) of the last replicated change this
    /// state includes. Kept in the same record as the change, so a restart never applies a
    /// change twice nor skips one.
    pub replicated: Option<RaftLogId>,
}

/// A Raft log id: term, the leader that appended the entry, index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RaftLogId {
    pub term: u64,
    pub leader: u64,
    pub index: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonalAccessToken {
    pub user_id: u32,
    pub name: String,
    /// µs since the epoch; None = never expires.
    pub expiry_at: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMeta {
    pub id: u32,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub id: u32,
    pub name: String,
    pub created_at: u64,
    pub topics: BTreeMap<u32, Topic>,
}

impl Stream {
    /// The topic an identifier names within this stream.
    pub fn topic(&self, id: &Identifier) -> Option<&Topic> {
        match id {
            Identifier::Numeric(id) => self.topics.get(id),
            Identifier::String(name) => self
                .topics
                .values()
                .find(|topic| topic.name == name.as_str()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub id: u32,
    pub name: String,
    pub created_at: u64,
    pub compression: CompressionAlgorithm,
    /// Resolved: µs, u64::MAX = never.
    pub message_expiry: u64,
    /// Resolved: bytes, u64::MAX = unlimited.
    pub max_topic_size: u64,
    pub replication_factor: u8,
    /// Bytes; 0 = the server's `system.segment.size` (the topic was created without one).
    pub segment_size: u64,
    /// Partition ids are 0..len; creation times by id.
    pub partitions: Vec<PartitionMeta>,
    pub groups: BTreeMap<u32, ConsumerGroupMeta>,
}

impl Topic {
    /// The consumer group an identifier names within this topic.
    pub fn group(&self, id: &Identifier) -> Option<&ConsumerGroupMeta> {
        match id {
            Identifier::Numeric(id) => self.groups.get(id),
            Identifier::String(name) => self
                .groups
                .values()
                .find(|group| group.name == name.as_str()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionMeta {
    pub id: u32,
    pub created_at: u64,
    /// In a cluster: the node leading the partition, as last assigned by the metadata leader.
    pub leader: Option<Leadership>,
}

/// A partition's leader and the epoch it leads in. Epochs only grow per partition (an
/// assignment with an epoch not above the current one is ignored when applied), so every node
/// agrees on one leader per epoch, and the epoch fences older leaders' replication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leadership {
    pub node: u64,
    pub epoch: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: u32,
    pub username: String,
    /// PHC string of a salted slow hash; the password itself is never stored.
    pub password_hash: String,
    pub status: UserStatus,
    pub permissions: Option<Permissions>,
    pub created_at: u64,
}

/// Settings of a topic as created or updated.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicSettings {
    pub name: String,
    pub compression: CompressionAlgorithm,
    pub message_expiry: u64,
    pub max_topic_size: u64,
    pub replication_factor: u8,
}

/// One change to the metadata. Ops carry every value they need (ids, timestamps), so applying
/// one is deterministic: both left-right copies and a replay reach the same state.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataOp {
    CreateStream {
        id: u32,
        name: String,
        created_at: u64,
    },
    UpdateStream {
        id: u32,
        name: String,
    },
    DeleteStream {
        id: u32,
    },
    CreateTopic {
        stream_id: u32,
        id: u32,
        created_at: u64,
        settings: TopicSettings,
        partitions_count: u32,
        /// Bytes; 0 = the server's `system.segment.size`. Fixed for the topic's life, so it is
        /// not a [`TopicSettings`] field (UpdateTopic carries those).
        segment_size: u64,
    },
    UpdateTopic {
        stream_id: u32,
        id: u32,
        settings: TopicSettings,
    },
    DeleteTopic {
        stream_id: u32,
        id: u32,
    },
    CreatePartitions {
        stream_id: u32,
        topic_id: u32,
        count: u32,
        created_at: u64,
    },
    DeletePartitions {
        stream_id: u32,
        topic_id: u32,
        count: u32,
    },
    CreateUser(User),
    UpdateUser {
        id: u32,
        username: Option<String>,
        status: Option<UserStatus>,
    },
    UpdatePermissions {
        id: u32,
        permissions: Option<Permissions>,
    },
    ChangePassword {
        id: u32,
        password_hash: String,
    },
    DeleteUser {
        id: u32,
    },
    CreateToken {
        token_hash: String,
        token: PersonalAccessToken,
    },
    DeleteToken {
        token_hash: String,
    },
    CreateConsumerGroup {
        stream_id: u32,
        topic_id: u32,
        id: u32,
        name: String,
    },
    DeleteConsumerGroup {
        stream_id: u32,
        topic_id: u32,
        id: u32,
    },
    /// Partitions' leaders, assigned by the cluster's metadata leader: (partition, node,
    /// epoch) each.
    AssignLeaders {
        stream_id: u32,
        topic_id: u32,
        leaders: Vec<(u32, Leadership)>,
    },
    /// A change committed by the cluster's metadata group (`op`), or, without one, only the
    /// log id the state has reached (a snapshot's last record).
    Replicated {
        log_id: RaftLogId,
        op: Option<Box<MetadataOp>>,
    },
}

/// Most partitions one CreateTopic or CreatePartitions op may add: the control lane's limit per
/// request (control/topics.rs). [`Metadata::apply`] ignores ops above it, so a corrupted but
/// checksum-valid metadata record cannot make boot allocate billions of partitions or overflow
/// partition ids.
pub const MAX_PARTITIONS_PER_OP: u32 = 1000;

impl Metadata {
    /// Applies one op. Ops are validated before they are logged, so an op that does not fit
    /// the state is a bug in the caller; it is ignored rather than crashing a reader copy.
    pub fn apply(&mut self, op: &MetadataOp) {
        match op {
            MetadataOp::Replicated { log_id, op } => {
                if let Some(op) = op {
                    self.apply(op);
                }
                self.replicated = Some(*log_id);
            }
            MetadataOp::AssignLeaders {
                stream_id,
                topic_id,
                leaders,
            } => {
                if let Some(topic) = self.topic_mut(*stream_id, *topic_id) {
                    for (partition_id, leadership) in leaders {
                        if let Some(partition) = topic.partitions.get_mut(*partition_id as usize)
                            && partition
                                .leader
                                .is_none_or(|current| current.epoch < leadership.epoch)
                        {
                            partition.leader = Some(*leadership);
                        }
                    }
                }
            }
            MetadataOp::CreateStream {
                id,
                name,
                created_at,
            } => {
                self.streams.insert(
                    *id,
                    Stream {
                        id: *id,
                        name: name.clone(),
                        created_at: *created_at,
                        topics: BTreeMap::new(),
                    },
                );
            }
            MetadataOp::UpdateStream { id, name } => {
                if let Some(stream) = self.streams.get_mut(id) {
                    stream.name = name.clone();
                }
            }
            MetadataOp::DeleteStream { id } => {
                self.streams.remove(id);
                // Ids are reused: nothing granted on this stream may carry over to the next
                // stream that gets its id.
                self.forget_permissions(|stream| stream.stream_id == *id, |_, _| false);
            }
            MetadataOp::CreateTopic {
                stream_id,
                id,
                created_at,
                settings,
                partitions_count,
                segment_size,
            } => {
                if *partitions_count > MAX_PARTITIONS_PER_OP {
                    return;
                }
                if let Some(stream) = self.streams.get_mut(stream_id) {
                    let partitions = (0..*partitions_count)
                        .map(|partition_id| PartitionMeta {
                            id: partition_id,
                            created_at: *created_at,
                            leader: None,
                        })
                        .collect();
                    stream.topics.insert(
                        *id,
                        Topic {
                            id: *id,
                            name: settings.name.clone(),
                            created_at: *created_at,
                            compression: settings.compression,
                            message_expiry: settings.message_expiry,
                            max_topic_size: settings.max_topic_size,
                            replication_factor: settings.replication_factor,
                            segment_size: *segment_size,
                            partitions,
                            groups: BTreeMap::new(),
                        },
                    );
                }
            }
            MetadataOp::UpdateTopic {
                stream_id,
                id,
                settings,
            } => {
                if let Some(topic) = self.topic_mut(*stream_id, *id) {
                    topic.name = settings.name.clone();
                    topic.compression = settings.compression;
                    topic.message_expiry = settings.message_expiry;
                    topic.max_topic_size = settings.max_topic_size;
                    topic.replication_factor = settings.replication_factor;
                }
            }
            MetadataOp::DeleteTopic { stream_id, id } => {
                if let Some(stream) = self.streams.get_mut(stream_id) {
                    stream.topics.remove(id);
                }
                self.forget_permissions(
                    |_| false,
                    |stream, topic| stream == *stream_id && topic.topic_id == *id,
                );
            }
            MetadataOp::CreatePartitions {
                stream_id,
                topic_id,
                count,
                created_at,
            } => {
                if *count > MAX_PARTITIONS_PER_OP {
                    return;
                }
                if let Some(topic) = self.topic_mut(*stream_id, *topic_id) {
                    let first = topic.partitions.len() as u32;
                    let Some(end) = first.checked_add(*count) else {
                        return;
                    };
                    topic
                        .partitions
                        .extend((first..end).map(|id| PartitionMeta {
                            id,
                            created_at: *created_at,
                            leader: None,
                        }));
                }
            }
            MetadataOp::DeletePartitions {
                stream_id,
                topic_id,
                count,
            } => {
                if let Some(topic) = self.topic_mut(*stream_id, *topic_id) {
                    let keep = topic.partitions.len().saturating_sub(*count as usize);
                    topic.partitions.truncate(keep);
                }
            }
            MetadataOp::CreateUser(user) => {
                self.users.insert(user.id, user.clone());
            }
            MetadataOp::UpdateUser {
                id,
                username,
                status,
            } => {
                if let Some(user) = self.users.get_mut(id) {
                    if let Some(username) = username {
                        user.username = username.clone();
                    }
                    if let Some(status) = status {
                        user.status = *status;
                    }
                }
            }
            MetadataOp::UpdatePermissions { id, permissions } => {
                if let Some(user) = self.users.get_mut(id) {
                    user.permissions = permissions.clone();
                }
            }
            MetadataOp::ChangePassword { id, password_hash } => {
                if let Some(user) = self.users.get_mut(id) {
                    user.password_hash = password_hash.clone();
                }
            }
            MetadataOp::DeleteUser { id } => {
                self.users.remove(id);
                self.tokens.retain(|_, token| token.user_id != *id);
            }
            MetadataOp::CreateToken { token_hash, token } => {
                self.tokens.insert(token_hash.clone(), token.clone());
            }
            MetadataOp::DeleteToken { token_hash } => {
                self.tokens.remove(token_hash);
            }
            MetadataOp::CreateConsumerGroup {
                stream_id,
                topic_id,
                id,
                name,
            } => {
                if let Some(topic) = self.topic_mut(*stream_id, *topic_id) {
                    topic.groups.insert(
                        *id,
                        ConsumerGroupMeta {
                            id: *id,
                            name: name.clone(),
                        },
                    );
                }
            }
            MetadataOp::DeleteConsumerGroup {
                stream_id,
                topic_id,
                id,
            } => {
                if let Some(topic) = self.topic_mut(*stream_id, *topic_id) {
                    topic.groups.remove(id);
                }
            }
        }
    }

    /// Removes, from every user, the stream entries `stream` matches and the topic entries
    /// `topic` matches (given their stream's id).
    fn forget_permissions(
        &mut self,
        stream: impl Fn(&StreamPermissions) -> bool,
        topic: impl Fn(u32, &TopicPermissions) -> bool,
    ) {
        for user in self.users.values_mut() {
            let Some(permissions) = &mut user.permissions else {
                continue;
            };
            permissions.streams.retain(|entry| !stream(entry));
            for entry in &mut permissions.streams {
                let stream_id = entry.stream_id;
                entry.topics.retain(|entry| !topic(stream_id, entry));
            }
        }
    }

    /// The stream an identifier names (by id or by name).
    pub fn stream(&self, id: &Identifier) -> Option<&Stream> {
        match id {
            Identifier::Numeric(id) => self.streams.get(id),
            Identifier::String(name) => self
                .streams
                .values()
                .find(|stream| stream.name == name.as_str()),
        }
    }

    /// The stream and topic two identifiers name, or the not-found code of the first missing.
    pub fn stream_and_topic(
        &self,
        stream_id: &Identifier,
        topic_id: &Identifier,
    ) -> Result<(&Stream, &Topic), ErrorCode> {
        let stream = self.stream(stream_id).ok_or(ErrorCode::StreamIdNotFound)?;
        let topic = stream.topic(topic_id).ok_or(ErrorCode::TopicIdNotFound)?;
        Ok((stream, topic))
    }

    /// The user an identifier names (by id or by username).
    pub fn user(&self, id: &Identifier) -> Option<&User> {
        match id {
            Identifier::Numeric(id) => self.users.get(id),
            Identifier::String(name) => self
                .users
                .values()
                .find(|user| user.username == name.as_str()),
        }
    }

    pub fn topic_by_ids(&self, stream_id: u32, topic_id: u32) -> Option<&Topic> {
        self.streams.get(&stream_id)?.topics.get(&topic_id)
    }

    fn topic_mut(&mut self, stream_id: u32, topic_id: u32) -> Option<&mut Topic> {
        self.streams.get_mut(&stream_id)?.topics.get_mut(&topic_id)
    }

    /// Ops that rebuild this state from nothing (the snapshot's content).
    pub fn to_ops(&self) -> Vec<MetadataOp> {
        let mut ops = Vec::new();
        for user in self.users.values() {
            ops.push(MetadataOp::CreateUser(user.clone()));
        }
        for (token_hash, token) in &self.tokens {
            ops.push(MetadataOp::CreateToken {
                token_hash: token_hash.clone(),
                token: token.clone(),
            });
        }
        for stream in self.streams.values() {
            ops.push(MetadataOp::CreateStream {
                id: stream.id,
                name: stream.name.clone(),
                created_at: stream.created_at,
            });
            for topic in stream.topics.values() {
                ops.push(MetadataOp::CreateTopic {
                    stream_id: stream.id,
                    id: topic.id,
                    created_at: topic.created_at,
                    settings: TopicSettings {
                        name: topic.name.clone(),
                        compression: topic.compression,
                        message_expiry: topic.message_expiry,
                        max_topic_size: topic.max_topic_size,
                        replication_factor: topic.replication_factor,
                    },
                    partitions_count: 0,
                    segment_size: topic.segment_size,
                });
                // Partitions keep their own creation times.
                for partition in &topic.partitions {
                    ops.push(MetadataOp::CreatePartitions {
                        stream_id: stream.id,
                        topic_id: topic.id,
                        count: 1,
                        created_at: partition.created_at,
                    });
                }
                let leaders: Vec<_> = topic
                    .partitions
                    .iter()
                    .filter_map(|partition| Some((partition.id, partition.leader?)))
                    .collect();
                if !leaders.is_empty() {
                    ops.push(MetadataOp::AssignLeaders {
                        stream_id: stream.id,
                        topic_id: topic.id,
                        leaders,
                    });
                }
                for group in topic.groups.values() {
                    ops.push(MetadataOp::CreateConsumerGroup {
                        stream_id: stream.id,
                        topic_id: topic.id,
                        id: group.id,
                        name: group.name.clone(),
                    });
                }
            }
        }
        if let Some(log_id) = self.replicated {
            ops.push(MetadataOp::Replicated { log_id, op: None });
        }
        ops
    }
}

/// The lowest id not in use (upstream reuses freed ids the same way).
pub fn lowest_free_id<V>(map: &BTreeMap<u32, V>) -> Option<u32> {
    let mut candidate = 0u32;
    for &id in map.keys() {
        if id != candidate {
            break;
        }
        candidate = candidate.checked_add(1)?;
    }
    Some(candidate)
}

impl left_right::Absorb<MetadataOp> for Metadata {
    fn absorb_first(&mut self, operation: &mut MetadataOp, _other: &Self) {
        self.apply(operation);
    }

    fn absorb_second(&mut self, operation: MetadataOp, _other: &Self) {
        self.apply(&operation);
    }

    fn sync_with(&mut self, first: &Self) {
        *self = first.clone();
    }
}

#[cfg(test)]
mod tests;
