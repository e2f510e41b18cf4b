//! Permissions as upstream's JSON has them, both ways (user views out, CreateUser and
//! UpdatePermissions bodies in).

use rill_core::primitives::Permissions;
use serde::Serialize;
use std::collections::BTreeMap;

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
