//! Who may do what (protocol.md 2.7). The root user (id 0) may do everything; other users have
//! global flags plus per-stream and per-topic entries. A `manage` flag implies the matching
//! `read`, and a flag on a stream covers its topics.

use crate::metadata::User;
use rill_core::primitives::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};

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
    let global: &GlobalPermissions = &permissions.global;
    let manage_stream = |stream_id| {
        global.manage_streams
            || stream_entry(permissions, stream_id).is_some_and(|s| s.manage_stream)
    };
    let read_stream = |stream_id| {
        manage_stream(stream_id)
            || global.read_streams
            || stream_entry(permissions, stream_id).is_some_and(|s| s.read_stream)
    };
    let manage_topic = |stream_id, topic_id| {
        let stream = stream_entry(permissions, stream_id);
        manage_stream(stream_id)
            || global.manage_topics
            || stream.is_some_and(|s| s.manage_topics)
            || topic_entry(stream, topic_id).is_some_and(|t| t.manage_topic)
    };
    let read_topic = |stream_id, topic_id| {
        let stream = stream_entry(permissions, stream_id);
        manage_topic(stream_id, topic_id)
            || read_stream(stream_id)
            || global.read_topics
            || stream.is_some_and(|s| s.read_topics)
            || topic_entry(stream, topic_id).is_some_and(|t| t.read_topic)
    };
    match action {
        Action::ReadServers => global.manage_servers || global.read_servers,
        Action::ManageServers => global.manage_servers,
        Action::ReadUsers => global.manage_users || global.read_users,
        Action::ManageUsers => global.manage_users,
        Action::ReadStreams => global.manage_streams || global.read_streams,
        Action::CreateStream => global.manage_streams,
        Action::ReadStream(stream_id) => read_stream(stream_id),
        Action::ManageStream(stream_id) => manage_stream(stream_id),
        Action::CreateTopic(stream_id) => {
            manage_stream(stream_id)
                || global.manage_topics
                || stream_entry(permissions, stream_id).is_some_and(|s| s.manage_topics)
        }
        Action::ReadTopic(stream_id, topic_id) => read_topic(stream_id, topic_id),
        Action::ManageTopic(stream_id, topic_id) => manage_topic(stream_id, topic_id),
        Action::PollMessages(stream_id, topic_id) => {
            let stream = stream_entry(permissions, stream_id);
            global.poll_messages
                || read_topic(stream_id, topic_id)
                || stream.is_some_and(|s| s.poll_messages)
                || topic_entry(stream, topic_id).is_some_and(|t| t.poll_messages)
        }
        Action::SendMessages(stream_id, topic_id) => {
            let stream = stream_entry(permissions, stream_id);
            global.send_messages
                || manage_topic(stream_id, topic_id)
                || stream.is_some_and(|s| s.send_messages)
                || topic_entry(stream, topic_id).is_some_and(|t| t.send_messages)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_core::primitives::UserStatus;

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
