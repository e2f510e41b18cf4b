//! The permissions blob (protocol.md 2.7).
//!
//! ```text
//! global: 10 × u8 (manage_servers, read_servers, manage_users, read_users, manage_streams,
//!                  read_streams, manage_topics, read_topics, poll_messages, send_messages)
//! has_streams u8 (1 = a stream entry follows)
//! per stream: stream_id u32, 6 × u8 (manage_stream, read_stream, manage_topics, read_topics,
//!             poll_messages, send_messages), has_topics u8,
//!             per topic: topic_id u32, 4 × u8 (manage_topic, read_topic, poll_messages,
//!                        send_messages), next_topic u8
//!             next_stream u8
//! ```
//! Every entry costs at least 11 bytes, so a hostile blob cannot make the decoder allocate more
//! than the input size.

use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use bytes::BufMut;

crate::codec::wire_struct! {
    /// Permissions that apply to every stream.
    pub struct GlobalPermissions {
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
}

impl GlobalPermissions {
    /// Everything (the root user's permissions).
    pub fn all() -> Self {
        GlobalPermissions {
            manage_servers: true,
            read_servers: true,
            manage_users: true,
            read_users: true,
            manage_streams: true,
            read_streams: true,
            manage_topics: true,
            read_topics: true,
            poll_messages: true,
            send_messages: true,
        }
    }

    pub fn none() -> Self {
        GlobalPermissions {
            manage_servers: false,
            read_servers: false,
            manage_users: false,
            read_users: false,
            manage_streams: false,
            read_streams: false,
            manage_topics: false,
            read_topics: false,
            poll_messages: false,
            send_messages: false,
        }
    }
}

/// Permissions on one topic of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPermissions {
    pub topic_id: u32,
    pub manage_topic: bool,
    pub read_topic: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
}

/// Permissions on one stream, with optional per-topic entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPermissions {
    pub stream_id: u32,
    pub manage_stream: bool,
    pub read_stream: bool,
    pub manage_topics: bool,
    pub read_topics: bool,
    pub poll_messages: bool,
    pub send_messages: bool,
    pub topics: Vec<TopicPermissions>,
}

/// A user's permissions: global flags plus per-stream entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Permissions {
    pub global: GlobalPermissions,
    pub streams: Vec<StreamPermissions>,
}

impl Permissions {
    pub fn root() -> Self {
        Permissions {
            global: GlobalPermissions::all(),
            streams: Vec::new(),
        }
    }
}

/// The "another item follows" flags: 1 means more, anything else ends the list.
fn follows(reader: &mut Reader<'_>, what: &'static str) -> Result<bool, DecodeError> {
    Ok(reader.u8(what)? == 1)
}

impl Encode for Permissions {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.global.encode(out);
        out.put_u8(u8::from(!self.streams.is_empty()));
        for (stream_index, stream) in self.streams.iter().enumerate() {
            out.put_u32_le(stream.stream_id);
            for flag in [
                stream.manage_stream,
                stream.read_stream,
                stream.manage_topics,
                stream.read_topics,
                stream.poll_messages,
                stream.send_messages,
            ] {
                out.put_u8(u8::from(flag));
            }
            out.put_u8(u8::from(!stream.topics.is_empty()));
            for (topic_index, topic) in stream.topics.iter().enumerate() {
                out.put_u32_le(topic.topic_id);
                for flag in [
                    topic.manage_topic,
                    topic.read_topic,
                    topic.poll_messages,
                    topic.send_messages,
                ] {
                    out.put_u8(u8::from(flag));
                }
                out.put_u8(u8::from(topic_index + 1 < stream.topics.len()));
            }
            out.put_u8(u8::from(stream_index + 1 < self.streams.len()));
        }
    }

    fn encoded_len(&self) -> usize {
        10 + 1
            + self
                .streams
                .iter()
                .map(|stream| 4 + 6 + 1 + stream.topics.len() * (4 + 4 + 1) + 1)
                .sum::<usize>()
    }
}

impl Decode for Permissions {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let global = GlobalPermissions::decode(reader)?;
        let mut streams = Vec::new();
        let mut more_streams = follows(reader, "has_streams")?;
        while more_streams {
            let stream_id = reader.u32("stream permissions id")?;
            let flags = reader.take(6, "stream permissions")?;
            let mut topics = Vec::new();
            let mut more_topics = follows(reader, "has_topics")?;
            while more_topics {
                let topic_id = reader.u32("topic permissions id")?;
                let topic_flags = reader.take(4, "topic permissions")?;
                topics.push(TopicPermissions {
                    topic_id,
                    manage_topic: topic_flags[0] != 0,
                    read_topic: topic_flags[1] != 0,
                    poll_messages: topic_flags[2] != 0,
                    send_messages: topic_flags[3] != 0,
                });
                more_topics = follows(reader, "next_topic")?;
            }
            streams.push(StreamPermissions {
                stream_id,
                manage_stream: flags[0] != 0,
                read_stream: flags[1] != 0,
                manage_topics: flags[2] != 0,
                read_topics: flags[3] != 0,
                poll_messages: flags[4] != 0,
                send_messages: flags[5] != 0,
                topics,
            });
            more_streams = follows(reader, "next_stream")?;
        }
        Ok(Permissions { global, streams })
    }
}

/// Reads `permissions_length u32` followed by exactly that many bytes of blob.
pub(crate) fn decode_sized(reader: &mut Reader<'_>) -> Result<Permissions, DecodeError> {
    let len = reader.u32("permissions length")? as usize;
    let blob = reader.take(len, "permissions")?;
    let mut inner = Reader::new(blob);
    let permissions = Permissions::decode(&mut inner)?;
    if !inner.is_empty() {
        return Err(DecodeError::invalid("permissions length mismatch"));
    }
    Ok(permissions)
}

/// Writes `permissions_length u32` + blob.
pub(crate) fn encode_sized<B: BufMut>(permissions: &Permissions, out: &mut B) {
    out.put_u32_le(permissions.encoded_len() as u32);
    permissions.encode(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_permissions_are_eleven_bytes() {
        let bytes = Permissions::root().to_bytes();
        assert_eq!(bytes, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    }

    #[test]
    fn nested_entries_round_trip() {
        let permissions = Permissions {
            global: GlobalPermissions::none(),
            streams: vec![
                StreamPermissions {
                    stream_id: 7,
                    manage_stream: false,
                    read_stream: true,
                    manage_topics: false,
                    read_topics: true,
                    poll_messages: true,
                    send_messages: false,
                    topics: vec![
                        TopicPermissions {
                            topic_id: 1,
                            manage_topic: true,
                            read_topic: true,
                            poll_messages: false,
                            send_messages: true,
                        },
                        TopicPermissions {
                            topic_id: 2,
                            manage_topic: false,
                            read_topic: true,
                            poll_messages: true,
                            send_messages: false,
                        },
                    ],
                },
                StreamPermissions {
                    stream_id: 9,
                    manage_stream: true,
                    read_stream: true,
                    manage_topics: true,
                    read_topics: true,
                    poll_messages: true,
                    send_messages: true,
                    topics: vec![],
                },
            ],
        };
        let bytes = permissions.to_bytes();
        assert_eq!(bytes.len(), permissions.encoded_len());
        assert_eq!(Permissions::from_bytes(&bytes).unwrap(), permissions);
    }
}
