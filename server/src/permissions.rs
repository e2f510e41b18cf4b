//! Who may do what (protocol.md 2.7), following upstream Iggy 0.8.0's rules, with one
//! deliberate difference: global `read_streams`, `manage_streams`, `read_topics` and
//! `manage_topics` also allow polling (and consumer offsets), as upstream's later versions do
//! (manage_streams → read_streams → read_topics → poll_messages); a user who may read every
//! topic would otherwise be refused its messages.
//!
//! | action | granted by (global / stream entry / topic entry) |
//! |---|---|
//! | read servers, clients, stats | `manage_servers`, `read_servers` |
//! | read users / manage users | `manage_users`, `read_users` / `manage_users` |
//! | list streams, create a stream | `manage_streams`, `read_streams` / `manage_streams` |
//! | read a stream | `manage_streams`, `read_streams` / `manage_stream`, `read_stream` |
//! | update, purge, delete a stream | `manage_streams` / `manage_stream` |
//! | read a topic, its groups; join, leave, create, delete groups | `manage_streams`, `read_streams`, `manage_topics`, `read_topics` / `manage_topics`, `read_topics` / `manage_topic`, `read_topic` |
//! | create a topic | `manage_streams`, `manage_topics` / `manage_topics` |
//! | change a topic, its partitions, segments | as create, plus topic `manage_topic` |
//! | poll, offsets | `poll_messages` (+ the read/manage flags above) / `poll_messages`, `read_stream`, `manage_topics`, `read_topics` / `poll_messages`, `read_topic`, `manage_topic` |
//! | send, flush | `send_messages` / `send_messages`, `manage_stream`, `manage_topics` / `send_messages`, `manage_topic` |
//!
//! The root user (id 0) may do everything.

use crate::metadata::User;
use rill_core::primitives::{Permissions, StreamPermissions, TopicPermissions};

pub const ROOT_USER_ID: u32 = 0;

/// What a request wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    ReadServers,
    ManageServers,
    ReadUsers,
    ManageUsers,
    ReadStreams,
    CreateStream,
    ReadStream(u32),
    ManageStream(u32),
    /// List a stream's topics.
    ReadTopics(u32),
    CreateTopic(u32),
    ReadTopic(u32, u32),
    ManageTopic(u32, u32),
    PollMessages(u32, u32),
    SendMessages(u32, u32),
}

fn stream_entry(permissions: &Permissions, stream_id: u32) -> Option<&StreamPermissions> {
    permissions
        .streams
        .iter()
        .find(|stream| stream.stream_id == stream_id)
}

fn topic_entry(stream: Option<&StreamPermissions>, topic_id: u32) -> Option<&TopicPermissions> {
    stream?
        .topics
        .iter()
        .find(|topic| topic.topic_id == topic_id)
}

/// Whether `user` may perform `action`.
pub fn allowed(user: &User, action: Action) -> bool {
    if user.id == ROOT_USER_ID {
        return true;
    }
    let Some(permissions) = &user.permissions else {
        return false;
    };
    let global = &permissions.global;
    let stream = |stream_id| stream_entry(permissions, stream_id);
    let topic = |stream_id, topic_id| topic_entry(stream_entry(permissions, stream_id), topic_id);
    let read_all_topics =
        global.manage_streams || global.read_streams || global.manage_topics || global.read_topics;
    let create_topic = |stream_id| {
        global.manage_streams
            || global.manage_topics
            || stream(stream_id).is_some_and(|s| s.manage_topics)
    };
    let read_topic = |stream_id, topic_id| {
        read_all_topics
            || stream(stream_id).is_some_and(|s| s.manage_topics || s.read_topics)
            || topic(stream_id, topic_id).is_some_and(|t| t.manage_topic || t.read_topic)
    };
    match action {
        Action::ReadServers => global.manage_servers || global.read_servers,
        Action::ManageServers => global.manage_servers,
        Action::ReadUsers => global.manage_users || global.read_users,
        Action::ManageUsers => global.manage_users,
        Action::ReadStreams => global.manage_streams || global.read_streams,
        Action::CreateStream => global.manage_streams,
        Action::ReadStream(stream_id) => {
            global.manage_streams
                || global.read_streams
                || stream(stream_id).is_some_and(|s| s.manage_stream || s.read_stream)
        }
        Action::ManageStream(stream_id) => {
            global.manage_streams || stream(stream_id).is_some_and(|s| s.manage_stream)
        }
        Action::ReadTopics(stream_id) => {
            read_all_topics
                || stream(stream_id).is_some_and(|s| {
                    s.manage_topics
                        || s.read_topics
                        || s.topics.iter().any(|t| t.manage_topic || t.read_topic)
                })
        }
        Action::CreateTopic(stream_id) => create_topic(stream_id),
        Action::ReadTopic(stream_id, topic_id) => read_topic(stream_id, topic_id),
        Action::ManageTopic(stream_id, topic_id) => {
            create_topic(stream_id) || topic(stream_id, topic_id).is_some_and(|t| t.manage_topic)
        }
        Action::PollMessages(stream_id, topic_id) => {
            global.poll_messages
                || read_all_topics
                || stream(stream_id).is_some_and(|s| {
                    s.poll_messages || s.read_stream || s.manage_topics || s.read_topics
                })
                || topic(stream_id, topic_id)
                    .is_some_and(|t| t.poll_messages || t.read_topic || t.manage_topic)
        }
        Action::SendMessages(stream_id, topic_id) => {
            global.send_messages
                || stream(stream_id)
                    .is_some_and(|s| s.send_messages || s.manage_stream || s.manage_topics)
                || topic(stream_id, topic_id).is_some_and(|t| t.send_messages || t.manage_topic)
        }
    }
}

/// Whether `user` may send messages anywhere: the global flag, or a stream or topic entry that
/// grants it. A user who may not is held to `limits.max_request_size_without_send`.
pub fn may_send_anywhere(user: &User) -> bool {
    if user.id == ROOT_USER_ID {
        return true;
    }
    let Some(permissions) = &user.permissions else {
        return false;
    };
    permissions.global.send_messages
        || permissions.streams.iter().any(|stream| {
            stream.send_messages
                || stream.manage_stream
                || stream.manage_topics
                || stream
                    .topics
                    .iter()
                    .any(|topic| topic.send_messages || topic.manage_topic)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_core::primitives::{GlobalPermissions, UserStatus};

    fn user(id: u32, permissions: Option<Permissions>) -> User {
        User {
            id,
            username: "u".into(),
            password_hash: String::new(),
            status: UserStatus::Active,
            permissions,
            created_at: 0,
        }
    }

    #[test]
    fn root_may_do_anything_and_a_bare_user_nothing() {
        assert!(allowed(&user(0, None), Action::ManageServers));
        assert!(!allowed(&user(1, None), Action::ReadStreams));
        assert!(!allowed(
            &user(
                1,
                Some(Permissions {
                    global: GlobalPermissions::none(),
                    streams: vec![]
                })
            ),
            Action::PollMessages(0, 0)
        ));
    }

    #[test]
    fn stream_and_topic_entries_apply_only_where_they_are() {
        let permissions = Permissions {
            global: GlobalPermissions::none(),
            streams: vec![StreamPermissions {
                stream_id: 1,
                manage_stream: false,
                read_stream: false,
                manage_topics: false,
                read_topics: false,
                poll_messages: false,
                send_messages: true,
                topics: vec![TopicPermissions {
                    topic_id: 2,
                    manage_topic: false,
                    read_topic: true,
                    poll_messages: false,
                    send_messages: false,
                }],
            }],
        };
        let user = user(5, Some(permissions));
        assert!(allowed(&user, Action::SendMessages(1, 9)));
        assert!(!allowed(&user, Action::SendMessages(2, 9)));
        assert!(allowed(&user, Action::PollMessages(1, 2)));
        assert!(!allowed(&user, Action::PollMessages(1, 3)));
        assert!(!allowed(&user, Action::ManageTopic(1, 2)));
    }
}
