//! Binary form of [`MetadataOp`] inside metadata log records. Integers are little-endian,
//! strings are u32-length-prefixed UTF-8; the permissions blob is the wire protocol's.

use super::model::{Leadership, MetadataOp, PersonalAccessToken, RaftLogId, TopicSettings, User};
use bytes::BufMut;
use rill_core::primitives::{CompressionAlgorithm, Permissions, UserStatus};
use rill_core::{Decode, DecodeError, Encode, Reader};

const CREATE_STREAM: u8 = 1;
const UPDATE_STREAM: u8 = 2;
const DELETE_STREAM: u8 = 3;
const CREATE_TOPIC: u8 = 4;
const UPDATE_TOPIC: u8 = 5;
const DELETE_TOPIC: u8 = 6;
const CREATE_PARTITIONS: u8 = 7;
const DELETE_PARTITIONS: u8 = 8;
const CREATE_USER: u8 = 9;
const UPDATE_USER: u8 = 10;
const UPDATE_PERMISSIONS: u8 = 11;
const CHANGE_PASSWORD: u8 = 12;
const DELETE_USER: u8 = 13;
const CREATE_TOKEN: u8 = 14;
const DELETE_TOKEN: u8 = 15;
const CREATE_CONSUMER_GROUP: u8 = 16;
const DELETE_CONSUMER_GROUP: u8 = 17;
const REPLICATED: u8 = 18;
const ASSIGN_LEADERS: u8 = 19;
/// CreateTopic with a segment size of its own: CREATE_TOPIC's fields, then the size. Topics
/// without one keep CREATE_TOPIC, so logs written before per-topic sizes read as they did.
const CREATE_TOPIC_SIZED: u8 = 20;

fn put_optional_permissions(out: &mut Vec<u8>, permissions: &Option<Permissions>) {
    match permissions {
        Some(permissions) => {
            out.put_u8(1);
            permissions.encode(out);
        }
        None => out.put_u8(0),
    }
}

fn read_optional_permissions(reader: &mut Reader<'_>) -> Result<Option<Permissions>, DecodeError> {
    Ok(match reader.u8("has permissions")? {
        0 => None,
        _ => Some(Permissions::decode(reader)?),
    })
}

fn put_settings(out: &mut Vec<u8>, settings: &TopicSettings) {
    settings.name.encode(out);
    out.put_u8(settings.compression.as_u8());
    out.put_u64_le(settings.message_expiry);
    out.put_u64_le(settings.max_topic_size);
    out.put_u8(settings.replication_factor);
}

fn read_settings(reader: &mut Reader<'_>) -> Result<TopicSettings, DecodeError> {
    Ok(TopicSettings {
        name: String::decode(reader)?,
        compression: CompressionAlgorithm::decode(reader)?,
        message_expiry: reader.u64("expiry")?,
        max_topic_size: reader.u64("max size")?,
        replication_factor: reader.u8("replication")?,
    })
}

pub fn encode(op: &MetadataOp) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match op {
        MetadataOp::CreateStream {
            id,
            name,
            created_at,
        } => {
            out.put_u8(CREATE_STREAM);
            out.put_u32_le(*id);
            name.encode(&mut out);
            out.put_u64_le(*created_at);
        }
        MetadataOp::UpdateStream { id, name } => {
            out.put_u8(UPDATE_STREAM);
            out.put_u32_le(*id);
            name.encode(&mut out);
        }
        MetadataOp::DeleteStream { id } => {
            out.put_u8(DELETE_STREAM);
            out.put_u32_le(*id);
        }
        MetadataOp::CreateTopic {
            stream_id,
            id,
            created_at,
            settings,
            partitions_count,
            segment_size,
        } => {
            out.put_u8(if *segment_size == 0 {
                CREATE_TOPIC
            } else {
                CREATE_TOPIC_SIZED
            });
            out.put_u32_le(*stream_id);
            out.put_u32_le(*id);
            out.put_u64_le(*created_at);
            put_settings(&mut out, settings);
            out.put_u32_le(*partitions_count);
            if *segment_size != 0 {
                out.put_u64_le(*segment_size);
            }
        }
        MetadataOp::UpdateTopic {
            stream_id,
            id,
            settings,
        } => {
            out.put_u8(UPDATE_TOPIC);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*id);
            put_settings(&mut out, settings);
        }
        MetadataOp::DeleteTopic { stream_id, id } => {
            out.put_u8(DELETE_TOPIC);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*id);
        }
        MetadataOp::CreatePartitions {
            stream_id,
            topic_id,
            count,
            created_at,
        } => {
            out.put_u8(CREATE_PARTITIONS);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*topic_id);
            out.put_u32_le(*count);
            out.put_u64_le(*created_at);
        }
        MetadataOp::DeletePartitions {
            stream_id,
            topic_id,
            count,
        } => {
            out.put_u8(DELETE_PARTITIONS);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*topic_id);
            out.put_u32_le(*count);
        }
        MetadataOp::CreateUser(user) => {
            out.put_u8(CREATE_USER);
            out.put_u32_le(user.id);
            user.username.encode(&mut out);
            user.password_hash.encode(&mut out);
            out.put_u8(user.status.as_u8());
            put_optional_permissions(&mut out, &user.permissions);
            out.put_u64_le(user.created_at);
        }
        MetadataOp::UpdateUser {
            id,
            username,
            status,
        } => {
            out.put_u8(UPDATE_USER);
            out.put_u32_le(*id);
            match username {
                Some(username) => {
                    out.put_u8(1);
                    username.encode(&mut out);
                }
                None => out.put_u8(0),
            }
            out.put_u8(status.map_or(0, UserStatus::as_u8));
        }
        MetadataOp::UpdatePermissions { id, permissions } => {
            out.put_u8(UPDATE_PERMISSIONS);
            out.put_u32_le(*id);
            put_optional_permissions(&mut out, permissions);
        }
        MetadataOp::ChangePassword { id, password_hash } => {
            out.put_u8(CHANGE_PASSWORD);
            out.put_u32_le(*id);
            password_hash.encode(&mut out);
        }
        MetadataOp::DeleteUser { id } => {
            out.put_u8(DELETE_USER);
            out.put_u32_le(*id);
        }
        MetadataOp::CreateToken { token_hash, token } => {
            out.put_u8(CREATE_TOKEN);
            token_hash.encode(&mut out);
            out.put_u32_le(token.user_id);
            token.name.encode(&mut out);
            out.put_u64_le(token.expiry_at.unwrap_or(0));
        }
        MetadataOp::DeleteToken { token_hash } => {
            out.put_u8(DELETE_TOKEN);
            token_hash.encode(&mut out);
        }
        MetadataOp::CreateConsumerGroup {
            stream_id,
            topic_id,
            id,
            name,
        } => {
            out.put_u8(CREATE_CONSUMER_GROUP);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*topic_id);
            out.put_u32_le(*id);
            name.encode(&mut out);
        }
        MetadataOp::DeleteConsumerGroup {
            stream_id,
            topic_id,
            id,
        } => {
            out.put_u8(DELETE_CONSUMER_GROUP);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*topic_id);
            out.put_u32_le(*id);
        }
        MetadataOp::AssignLeaders {
            stream_id,
            topic_id,
            leaders,
        } => {
            out.put_u8(ASSIGN_LEADERS);
            out.put_u32_le(*stream_id);
            out.put_u32_le(*topic_id);
            out.put_u32_le(leaders.len() as u32);
            for (partition_id, leadership) in leaders {
                out.put_u32_le(*partition_id);
                out.put_u64_le(leadership.node);
                out.put_u64_le(leadership.epoch);
            }
        }
        MetadataOp::Replicated { log_id, op } => {
            out.put_u8(REPLICATED);
            out.put_u64_le(log_id.term);
            out.put_u64_le(log_id.leader);
            out.put_u64_le(log_id.index);
            if let Some(op) = op {
                out.extend_from_slice(&encode(op));
            }
        }
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<MetadataOp, DecodeError> {
    let mut reader = Reader::new(bytes);
    let op = match reader.u8("op tag")? {
        CREATE_STREAM => MetadataOp::CreateStream {
            id: reader.u32("id")?,
            name: String::decode(&mut reader)?,
            created_at: reader.u64("created_at")?,
        },
        UPDATE_STREAM => MetadataOp::UpdateStream {
            id: reader.u32("id")?,
            name: String::decode(&mut reader)?,
        },
        DELETE_STREAM => MetadataOp::DeleteStream {
            id: reader.u32("id")?,
        },
        tag @ (CREATE_TOPIC | CREATE_TOPIC_SIZED) => MetadataOp::CreateTopic {
            stream_id: reader.u32("stream")?,
            id: reader.u32("id")?,
            created_at: reader.u64("created_at")?,
            settings: read_settings(&mut reader)?,
            partitions_count: reader.u32("partitions")?,
            segment_size: match tag {
                CREATE_TOPIC => 0,
                _ => match reader.u64("segment size")? {
                    0 => return Err(DecodeError::invalid("a sized CreateTopic of size 0")),
                    size => size,
                },
            },
        },
        UPDATE_TOPIC => MetadataOp::UpdateTopic {
            stream_id: reader.u32("stream")?,
            id: reader.u32("id")?,
            settings: read_settings(&mut reader)?,
        },
        DELETE_TOPIC => MetadataOp::DeleteTopic {
            stream_id: reader.u32("stream")?,
            id: reader.u32("id")?,
        },
        CREATE_PARTITIONS => MetadataOp::CreatePartitions {
            stream_id: reader.u32("stream")?,
            topic_id: reader.u32("topic")?,
            count: reader.u32("count")?,
            created_at: reader.u64("created_at")?,
        },
        DELETE_PARTITIONS => MetadataOp::DeletePartitions {
            stream_id: reader.u32("stream")?,
            topic_id: reader.u32("topic")?,
            count: reader.u32("count")?,
        },
        CREATE_USER => MetadataOp::CreateUser(User {
            id: reader.u32("id")?,
            username: String::decode(&mut reader)?,
            password_hash: String::decode(&mut reader)?,
            status: UserStatus::decode(&mut reader)?,
            permissions: read_optional_permissions(&mut reader)?,
            created_at: reader.u64("created_at")?,
        }),
        UPDATE_USER => MetadataOp::UpdateUser {
            id: reader.u32("id")?,
            username: match reader.u8("has username")? {
                0 => None,
                _ => Some(String::decode(&mut reader)?),
            },
            status: match reader.u8("status")? {
                0 => None,
                value => Some(UserStatus::from_u8(value)?),
            },
        },
        UPDATE_PERMISSIONS => MetadataOp::UpdatePermissions {
            id: reader.u32("id")?,
            permissions: read_optional_permissions(&mut reader)?,
        },
        CHANGE_PASSWORD => MetadataOp::ChangePassword {
            id: reader.u32("id")?,
            password_hash: String::decode(&mut reader)?,
        },
        DELETE_USER => MetadataOp::DeleteUser {
            id: reader.u32("id")?,
        },
        CREATE_TOKEN => MetadataOp::CreateToken {
            token_hash: String::decode(&mut reader)?,
            token: PersonalAccessToken {
                user_id: reader.u32("user")?,
                name: String::decode(&mut reader)?,
                expiry_at: match reader.u64("expiry")? {
                    0 => None,
                    value => Some(value),
                },
            },
        },
        DELETE_TOKEN => MetadataOp::DeleteToken {
            token_hash: String::decode(&mut reader)?,
        },
        CREATE_CONSUMER_GROUP => MetadataOp::CreateConsumerGroup {
            stream_id: reader.u32("stream")?,
            topic_id: reader.u32("topic")?,
            id: reader.u32("id")?,
            name: String::decode(&mut reader)?,
        },
        DELETE_CONSUMER_GROUP => MetadataOp::DeleteConsumerGroup {
            stream_id: reader.u32("stream")?,
            topic_id: reader.u32("topic")?,
            id: reader.u32("id")?,
        },
        ASSIGN_LEADERS => {
            let stream_id = reader.u32("stream")?;
            let topic_id = reader.u32("topic")?;
            let count = reader.u32("leaders")? as usize;
            // Never trust the count for an allocation: each entry takes 20 bytes.
            let mut leaders = Vec::with_capacity(count.min(reader.remaining() / 20));
            for _ in 0..count {
                let partition_id = reader.u32("partition")?;
                let leadership = Leadership {
                    node: reader.u64("node")?,
                    epoch: reader.u64("epoch")?,
                };
                leaders.push((partition_id, leadership));
            }
            MetadataOp::AssignLeaders {
                stream_id,
                topic_id,
                leaders,
            }
        }
        REPLICATED => {
            let log_id = RaftLogId {
                term: reader.u64("term")?,
                leader: reader.u64("leader")?,
                index: reader.u64("index")?,
            };
            let rest = reader.rest();
            let op = match rest.first() {
                None => None,
                // One level only: a change is never nested in another.
                Some(&REPLICATED) => return Err(DecodeError::invalid("nested replicated op")),
                Some(_) => Some(Box::new(decode(rest)?)),
            };
            return Ok(MetadataOp::Replicated { log_id, op });
        }
        _ => return Err(DecodeError::invalid("metadata op tag")),
    };
    if !reader.is_empty() {
        return Err(DecodeError::invalid("trailing bytes in metadata op"));
    }
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_round_trips() {
        let settings = TopicSettings {
            name: "orders".into(),
            compression: CompressionAlgorithm::Gzip,
            message_expiry: 5,
            max_topic_size: u64::MAX,
            replication_factor: 1,
        };
        let log_id = RaftLogId {
            term: 4,
            leader: 2,
            index: 99,
        };
        let ops = [
            MetadataOp::Replicated { log_id, op: None },
            MetadataOp::Replicated {
                log_id,
                op: Some(Box::new(MetadataOp::DeleteStream { id: 7 })),
            },
            MetadataOp::CreateStream {
                id: 3,
                name: "s".into(),
                created_at: 9,
            },
            MetadataOp::UpdateStream {
                id: 3,
                name: "t".into(),
            },
            MetadataOp::DeleteStream { id: 3 },
            MetadataOp::AssignLeaders {
                stream_id: 1,
                topic_id: 2,
                leaders: vec![(
                    0,
                    Leadership {
                        node: 3,
                        epoch: 4 << 32,
                    },
                )],
            },
            MetadataOp::CreateTopic {
                stream_id: 1,
                id: 2,
                created_at: 3,
                settings: settings.clone(),
                partitions_count: 4,
                segment_size: 0,
            },
            MetadataOp::CreateTopic {
                stream_id: 1,
                id: 3,
                created_at: 3,
                settings: settings.clone(),
                partitions_count: 4,
                segment_size: 1 << 20,
            },
            MetadataOp::UpdateTopic {
                stream_id: 1,
                id: 2,
                settings,
            },
            MetadataOp::DeleteTopic {
                stream_id: 1,
                id: 2,
            },
            MetadataOp::CreatePartitions {
                stream_id: 1,
                topic_id: 2,
                count: 3,
                created_at: 4,
            },
            MetadataOp::DeletePartitions {
                stream_id: 1,
                topic_id: 2,
                count: 3,
            },
            MetadataOp::CreateUser(User {
                id: 0,
                username: "iggy".into(),
                password_hash: "$argon2id$...".into(),
                status: UserStatus::Active,
                permissions: Some(Permissions::root()),
                created_at: 1,
            }),
            MetadataOp::UpdateUser {
                id: 2,
                username: Some("bob".into()),
                status: Some(UserStatus::Inactive),
            },
            MetadataOp::UpdateUser {
                id: 2,
                username: None,
                status: None,
            },
            MetadataOp::UpdatePermissions {
                id: 2,
                permissions: None,
            },
            MetadataOp::ChangePassword {
                id: 2,
                password_hash: "$argon2id$x".into(),
            },
            MetadataOp::DeleteUser { id: 2 },
            MetadataOp::CreateToken {
                token_hash: "ab12".into(),
                token: PersonalAccessToken {
                    user_id: 2,
                    name: "ci".into(),
                    expiry_at: Some(9),
                },
            },
            MetadataOp::DeleteToken {
                token_hash: "ab12".into(),
            },
            MetadataOp::CreateConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                id: 3,
                name: "g".into(),
            },
            MetadataOp::DeleteConsumerGroup {
                stream_id: 1,
                topic_id: 2,
                id: 3,
            },
        ];
        for op in ops {
            let bytes = encode(&op);
            assert_eq!(decode(&bytes).unwrap(), op);
            assert!(
                decode(&bytes[..bytes.len() - 1]).is_err(),
                "truncated {op:?} decoded"
            );
        }
    }

    #[test]
    fn a_replicated_op_is_never_nested() {
        let log_id = RaftLogId {
            term: 1,
            leader: 0,
            index: 1,
        };
        let inner = encode(&MetadataOp::Replicated { log_id, op: None });
        let mut outer = encode(&MetadataOp::Replicated { log_id, op: None });
        outer.extend_from_slice(&inner);
        assert!(decode(&outer).is_err());
    }
}
