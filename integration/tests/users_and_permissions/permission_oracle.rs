//! The permission matrix's model: the commands it runs, the fixture's ids, the expected
//! answer of upstream's permissioner for a user's permissions, and the matrix's users.

use crate::helpers::{global_flag, stream_flag, topic_flag};
use crate::support::{global_only, no_global};
use iggy::prelude::*;
use std::collections::BTreeMap;

/// Every command the matrix runs, in the order each user runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmd {
    Ping,
    GetMe,
    GetStats,
    GetClient,
    GetClients,
    GetClusterMetadata,
    GetSnapshot,
    GetUserSelf,
    GetUserOther,
    GetUsers,
    CreateUser,
    UpdateUser,
    UpdatePermissions,
    ChangePasswordSelf,
    ChangePasswordOther,
    DeleteUser,
    CreatePersonalAccessToken,
    GetPersonalAccessTokens,
    LoginWithPersonalAccessToken,
    DeletePersonalAccessToken,
    GetStream,
    GetStreams,
    CreateStream,
    UpdateStream,
    PurgeStream,
    DeleteStream,
    GetTopic,
    GetTopics,
    CreateTopic,
    UpdateTopic,
    PurgeTopic,
    CreatePartitions,
    DeletePartitions,
    DeleteSegments,
    DeleteTopic,
    SendMessages,
    FlushUnsavedBuffer,
    PollMessages,
    StoreConsumerOffset,
    GetConsumerOffset,
    DeleteConsumerOffset,
    GetConsumerGroup,
    GetConsumerGroups,
    CreateConsumerGroup,
    JoinConsumerGroup,
    LeaveConsumerGroup,
    DeleteConsumerGroup,
    LogoutUser,
}

pub(crate) const ALL_CMDS: [Cmd; 48] = [
    Cmd::Ping,
    Cmd::GetMe,
    Cmd::GetStats,
    Cmd::GetClient,
    Cmd::GetClients,
    Cmd::GetClusterMetadata,
    Cmd::GetSnapshot,
    Cmd::GetUserSelf,
    Cmd::GetUserOther,
    Cmd::GetUsers,
    Cmd::CreateUser,
    Cmd::UpdateUser,
    Cmd::UpdatePermissions,
    Cmd::ChangePasswordSelf,
    Cmd::ChangePasswordOther,
    Cmd::DeleteUser,
    Cmd::CreatePersonalAccessToken,
    Cmd::GetPersonalAccessTokens,
    Cmd::LoginWithPersonalAccessToken,
    Cmd::DeletePersonalAccessToken,
    Cmd::GetStream,
    Cmd::GetStreams,
    Cmd::CreateStream,
    Cmd::UpdateStream,
    Cmd::PurgeStream,
    Cmd::DeleteStream,
    Cmd::GetTopic,
    Cmd::GetTopics,
    Cmd::CreateTopic,
    Cmd::UpdateTopic,
    Cmd::PurgeTopic,
    Cmd::CreatePartitions,
    Cmd::DeletePartitions,
    Cmd::DeleteSegments,
    Cmd::DeleteTopic,
    Cmd::SendMessages,
    Cmd::FlushUnsavedBuffer,
    Cmd::PollMessages,
    Cmd::StoreConsumerOffset,
    Cmd::GetConsumerOffset,
    Cmd::DeleteConsumerOffset,
    Cmd::GetConsumerGroup,
    Cmd::GetConsumerGroups,
    Cmd::CreateConsumerGroup,
    Cmd::JoinConsumerGroup,
    Cmd::LeaveConsumerGroup,
    Cmd::DeleteConsumerGroup,
    Cmd::LogoutUser,
];

/// The fixture's ids. Reads, messages, offsets and groups target stream 0 / topic 0 ("main");
/// stream-management commands target stream 1 ("victim") and topic-management commands topic 1
/// of stream 0 ("victim-topic"), which are recreated (at the same ids: lowest free slot) when a
/// user deletes them.
pub(crate) const MAIN_STREAM: u32 = 0;
pub(crate) const MAIN_TOPIC: u32 = 0;
pub(crate) const VICTIM_STREAM: u32 = 1;
pub(crate) const VICTIM_TOPIC: u32 = 1;

/// The expected answer per upstream Iggy 0.8.0's permissioner (server/src/streaming/users/
/// permissioner_rules/*.rs): which flags grant which command. Root has all global flags.
pub(crate) struct Oracle<'a>(pub(crate) Option<&'a Permissions>);

impl Oracle<'_> {
    fn global(&self) -> GlobalPermissions {
        self.0.map(|p| p.global.clone()).unwrap_or_default()
    }

    fn stream(&self, stream_id: u32) -> Option<StreamPermissions> {
        self.0?
            .streams
            .as_ref()?
            .get(&(stream_id as usize))
            .cloned()
    }

    fn topic(&self, stream_id: u32, topic_id: u32) -> Option<TopicPermissions> {
        self.stream(stream_id)?
            .topics?
            .get(&(topic_id as usize))
            .cloned()
    }

    fn read_servers(&self) -> bool {
        let g = self.global();
        g.manage_servers || g.read_servers
    }

    fn read_users(&self) -> bool {
        let g = self.global();
        g.manage_users || g.read_users
    }

    fn manage_users(&self) -> bool {
        self.global().manage_users
    }

    fn get_stream(&self, s: u32) -> bool {
        let g = self.global();
        g.manage_streams
            || g.read_streams
            || self
                .stream(s)
                .is_some_and(|p| p.manage_stream || p.read_stream)
    }

    fn get_streams(&self) -> bool {
        let g = self.global();
        g.manage_streams || g.read_streams
    }

    fn create_stream(&self) -> bool {
        self.global().manage_streams
    }

    fn manage_stream(&self, s: u32) -> bool {
        self.global().manage_streams || self.stream(s).is_some_and(|p| p.manage_stream)
    }

    fn read_topic_global(&self) -> bool {
        let g = self.global();
        g.read_streams || g.manage_streams || g.manage_topics || g.read_topics
    }

    fn get_topic(&self, s: u32, t: u32) -> bool {
        self.read_topic_global()
            || self
                .stream(s)
                .is_some_and(|p| p.manage_topics || p.read_topics)
            || self
                .topic(s, t)
                .is_some_and(|p| p.manage_topic || p.read_topic)
    }

    fn get_topics(&self, s: u32) -> bool {
        // Upstream looks the topic-level entry up under the *stream* id here; with stream 0 and
        // a topic entry for topic 0 both readings agree, so the matrix is not sensitive to it.
        self.get_topic(s, s)
    }

    fn create_topic(&self, s: u32) -> bool {
        let g = self.global();
        g.manage_streams || g.manage_topics || self.stream(s).is_some_and(|p| p.manage_topics)
    }

    fn manage_topic(&self, s: u32, t: u32) -> bool {
        self.create_topic(s) || self.topic(s, t).is_some_and(|p| p.manage_topic)
    }

    // One deliberate difference from upstream 0.8.0 (server/src/permissions.rs): global
    // read_streams, manage_streams, read_topics and manage_topics also allow polling, as in
    // upstream's later versions; 0.8.0 refused them.
    fn poll(&self, s: u32, t: u32) -> bool {
        self.global().poll_messages
            || self.read_topic_global()
            || self.stream(s).is_some_and(|p| {
                p.poll_messages || p.read_stream || p.manage_topics || p.read_topics
            })
            || self
                .topic(s, t)
                .is_some_and(|p| p.poll_messages || p.read_topic || p.manage_topic)
    }

    fn send(&self, s: u32, t: u32) -> bool {
        self.global().send_messages
            || self
                .stream(s)
                .is_some_and(|p| p.send_messages || p.manage_stream || p.manage_topics)
            || self
                .topic(s, t)
                .is_some_and(|p| p.send_messages || p.manage_topic)
    }

    pub(crate) fn allows(&self, cmd: Cmd) -> bool {
        let (s, t) = (MAIN_STREAM, MAIN_TOPIC);
        match cmd {
            Cmd::Ping
            | Cmd::GetMe
            | Cmd::GetClusterMetadata
            | Cmd::GetUserSelf
            | Cmd::ChangePasswordSelf
            | Cmd::CreatePersonalAccessToken
            | Cmd::GetPersonalAccessTokens
            | Cmd::LoginWithPersonalAccessToken
            | Cmd::DeletePersonalAccessToken
            | Cmd::LogoutUser => true,
            // GetSnapshot shows the host's processes, paths and configuration: rill asks for
            // read_servers where upstream 0.8.0 lets anyone (issue 21).
            Cmd::GetStats | Cmd::GetClient | Cmd::GetClients | Cmd::GetSnapshot => {
                self.read_servers()
            }
            Cmd::GetUserOther | Cmd::GetUsers => self.read_users(),
            Cmd::CreateUser
            | Cmd::UpdateUser
            | Cmd::UpdatePermissions
            | Cmd::ChangePasswordOther
            | Cmd::DeleteUser => self.manage_users(),
            Cmd::GetStream => self.get_stream(s),
            Cmd::GetStreams => self.get_streams(),
            Cmd::CreateStream => self.create_stream(),
            Cmd::UpdateStream | Cmd::PurgeStream | Cmd::DeleteStream => {
                self.manage_stream(VICTIM_STREAM)
            }
            Cmd::GetTopic => self.get_topic(s, t),
            Cmd::GetTopics => self.get_topics(s),
            Cmd::CreateTopic => self.create_topic(s),
            Cmd::UpdateTopic
            | Cmd::PurgeTopic
            | Cmd::CreatePartitions
            | Cmd::DeletePartitions
            | Cmd::DeleteSegments
            | Cmd::DeleteTopic => self.manage_topic(s, VICTIM_TOPIC),
            Cmd::SendMessages | Cmd::FlushUnsavedBuffer => self.send(s, t),
            Cmd::PollMessages
            | Cmd::StoreConsumerOffset
            | Cmd::GetConsumerOffset
            | Cmd::DeleteConsumerOffset => self.poll(s, t),
            Cmd::GetConsumerGroup
            | Cmd::GetConsumerGroups
            | Cmd::CreateConsumerGroup
            | Cmd::JoinConsumerGroup
            | Cmd::LeaveConsumerGroup
            | Cmd::DeleteConsumerGroup => self.get_topic(s, t),
        }
    }
}

/// The matrix's users: (username, permissions). Stream-level users hold the same entry on the
/// main and the victim stream; topic-level users hold the same entry on topics (0,0), (0,1) and
/// (1,0) (with all stream flags off); "elsewhere" holds everything, but only on stream 7.
pub(crate) fn matrix_users() -> Vec<(String, Option<Permissions>)> {
    let mut users = vec![
        ("bare".to_string(), None),
        ("empty-perms".to_string(), Some(global_only(no_global()))),
    ];
    for flag in [
        "manage_servers",
        "read_servers",
        "manage_users",
        "read_users",
        "manage_streams",
        "read_streams",
        "manage_topics",
        "read_topics",
        "poll_messages",
        "send_messages",
    ] {
        users.push((format!("g-{flag}"), Some(global_only(global_flag(flag)))));
    }
    for flag in [
        "manage_stream",
        "read_stream",
        "manage_topics",
        "read_topics",
        "poll_messages",
        "send_messages",
    ] {
        let mut streams = BTreeMap::new();
        streams.insert(MAIN_STREAM as usize, stream_flag(flag));
        streams.insert(VICTIM_STREAM as usize, stream_flag(flag));
        users.push((
            format!("s-{flag}"),
            Some(Permissions {
                global: no_global(),
                streams: Some(streams),
            }),
        ));
    }
    for flag in [
        "manage_topic",
        "read_topic",
        "poll_messages",
        "send_messages",
    ] {
        let mut main_topics = BTreeMap::new();
        main_topics.insert(MAIN_TOPIC as usize, topic_flag(flag));
        main_topics.insert(VICTIM_TOPIC as usize, topic_flag(flag));
        let mut victim_topics = BTreeMap::new();
        victim_topics.insert(0, topic_flag(flag));
        let mut streams = BTreeMap::new();
        streams.insert(
            MAIN_STREAM as usize,
            StreamPermissions {
                topics: Some(main_topics),
                ..stream_flag("")
            },
        );
        streams.insert(
            VICTIM_STREAM as usize,
            StreamPermissions {
                topics: Some(victim_topics),
                ..stream_flag("")
            },
        );
        users.push((
            format!("t-{flag}"),
            Some(Permissions {
                global: no_global(),
                streams: Some(streams),
            }),
        ));
    }
    let everything_topic = TopicPermissions {
        manage_topic: true,
        read_topic: true,
        poll_messages: true,
        send_messages: true,
    };
    let mut elsewhere_topics = BTreeMap::new();
    elsewhere_topics.insert(0, everything_topic.clone());
    elsewhere_topics.insert(1, everything_topic);
    let mut elsewhere = BTreeMap::new();
    elsewhere.insert(
        7,
        StreamPermissions {
            manage_stream: true,
            read_stream: true,
            manage_topics: true,
            read_topics: true,
            poll_messages: true,
            send_messages: true,
            topics: Some(elsewhere_topics),
        },
    );
    users.push((
        "elsewhere".to_string(),
        Some(Permissions {
            global: no_global(),
            streams: Some(elsewhere),
        }),
    ));
    users
}
