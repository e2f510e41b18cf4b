//! Helpers shared by the users and permissions tests: a user with a known password, sample
//! permissions, and permission builders that set one flag by name.

use iggy::prelude::*;
use std::collections::BTreeMap;

pub(crate) const PASSWORD: &str = "secret-pass";

/// What the tests keep of CreateUser's answer (`UserInfoDetails` is not exported by the `iggy`
/// crate's prelude, so it cannot be named here).
pub(crate) struct Created {
    pub(crate) id: u32,
    pub(crate) permissions: Option<Permissions>,
}

/// Creates an active user with `permissions` and returns its id and permissions as the server
/// answered.
pub(crate) async fn create_user(
    root: &IggyClient,
    username: &str,
    permissions: Option<Permissions>,
) -> Created {
    let details = root
        .create_user(username, PASSWORD, UserStatus::Active, permissions)
        .await
        .unwrap_or_else(|error| panic!("create user {username:?}: {error}"));
    assert_eq!(details.username, username);
    Created {
        id: details.id,
        permissions: details.permissions,
    }
}

pub(crate) fn sample_permissions() -> Permissions {
    let mut topics = BTreeMap::new();
    topics.insert(
        3,
        TopicPermissions {
            manage_topic: false,
            read_topic: true,
            poll_messages: true,
            send_messages: false,
        },
    );
    let mut streams = BTreeMap::new();
    streams.insert(
        2,
        StreamPermissions {
            manage_stream: false,
            read_stream: true,
            manage_topics: false,
            read_topics: true,
            poll_messages: false,
            send_messages: true,
            topics: Some(topics),
        },
    );
    streams.insert(
        5,
        StreamPermissions {
            manage_stream: true,
            topics: None,
            ..StreamPermissions::default()
        },
    );
    Permissions {
        global: GlobalPermissions {
            read_servers: true,
            read_users: true,
            poll_messages: true,
            ..GlobalPermissions::default()
        },
        streams: Some(streams),
    }
}

/// Stream permissions with one flag set (by name), no topic entries.
pub(crate) fn stream_flag(flag: &str) -> StreamPermissions {
    let mut p = StreamPermissions::default();
    match flag {
        "manage_stream" => p.manage_stream = true,
        "read_stream" => p.read_stream = true,
        "manage_topics" => p.manage_topics = true,
        "read_topics" => p.read_topics = true,
        "poll_messages" => p.poll_messages = true,
        "send_messages" => p.send_messages = true,
        "" => {}
        other => panic!("unknown stream flag {other}"),
    }
    p
}

pub(crate) fn topic_flag(flag: &str) -> TopicPermissions {
    let mut p = TopicPermissions::default();
    match flag {
        "manage_topic" => p.manage_topic = true,
        "read_topic" => p.read_topic = true,
        "poll_messages" => p.poll_messages = true,
        "send_messages" => p.send_messages = true,
        other => panic!("unknown topic flag {other}"),
    }
    p
}

pub(crate) fn global_flag(flag: &str) -> GlobalPermissions {
    let mut g = GlobalPermissions::default();
    match flag {
        "manage_servers" => g.manage_servers = true,
        "read_servers" => g.read_servers = true,
        "manage_users" => g.manage_users = true,
        "read_users" => g.read_users = true,
        "manage_streams" => g.manage_streams = true,
        "read_streams" => g.read_streams = true,
        "manage_topics" => g.manage_topics = true,
        "read_topics" => g.read_topics = true,
        "poll_messages" => g.poll_messages = true,
        "send_messages" => g.send_messages = true,
        other => panic!("unknown global flag {other}"),
    }
    g
}
