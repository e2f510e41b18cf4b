//! Users and permissions (protocol.md 1.4, 2.7, 3, 4.2, 8): user commands with their error codes,
//! the permission matrix for every command, the unauthenticated sweep over all 47 command codes,
//! live permission changes, and users surviving a graceful restart.

mod support;

use iggy::prelude::*;
use rill_integration::raw::{RawClient, status};
use rill_integration::sdk::{anonymous_client, assert_error_code, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::{BTreeMap, BTreeSet};
use support::{all_global, code_of, every_command, global_only, login_client, no_global};

const PASSWORD: &str = "secret-pass";

/// What the tests keep of CreateUser's answer (`UserInfoDetails` is not exported by the `iggy`
/// crate's prelude, so it cannot be named here).
struct Created {
    id: u32,
    permissions: Option<Permissions>,
}

/// Creates an active user with `permissions` and returns its id and permissions as the server
/// answered.
async fn create_user(
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

fn sample_permissions() -> Permissions {
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

#[tokio::test]
async fn user_commands_happy_path() {
    // Proves: CreateUser returns the new user's details (id, status, username, permissions as
    // given, created_at now); GetUser by id and by name returns the same; GetUsers lists root
    // and the users sorted by id; UpdateUser changes username and status; UpdatePermissions
    // replaces (and clears) permissions; DeleteUser removes the user, who can then no longer log
    // in. How: official SDK as root, every answer compared field by field.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let before = IggyTimestamp::now().as_micros();
    let alice = root
        .create_user(
            "alice",
            PASSWORD,
            UserStatus::Active,
            Some(sample_permissions()),
        )
        .await
        .expect("create alice");
    let after = IggyTimestamp::now().as_micros();
    assert_eq!(alice.username, "alice");
    assert_eq!(alice.status, UserStatus::Active);
    assert_eq!(alice.permissions, Some(sample_permissions()));
    assert_ne!(alice.id, 0, "user 0 is root");
    let created = alice.created_at.as_micros();
    assert!(
        (before.saturating_sub(1_000_000)..=after + 1_000_000).contains(&created),
        "created_at {created} outside {before}..={after}"
    );
    let bob = root
        .create_user("bob", PASSWORD, UserStatus::Inactive, None)
        .await
        .expect("create bob");
    assert_eq!(bob.status, UserStatus::Inactive);
    assert_eq!(bob.permissions, None);
    assert!(
        bob.id > alice.id,
        "ids grow: alice {} bob {}",
        alice.id,
        bob.id
    );

    for identifier in [id(alice.id), named("alice")] {
        let fetched = root
            .get_user(&identifier)
            .await
            .expect("get alice")
            .expect("alice exists");
        assert_eq!(fetched.id, alice.id);
        assert_eq!(fetched.username, "alice");
        assert_eq!(fetched.status, UserStatus::Active);
        assert_eq!(fetched.created_at, alice.created_at);
        assert_eq!(fetched.permissions, Some(sample_permissions()));
    }
    let root_details = root
        .get_user(&id(0))
        .await
        .expect("get root")
        .expect("root exists");
    assert_eq!(root_details.username, "iggy");
    assert_eq!(
        root_details.permissions,
        Some(global_only(all_global())),
        "root has all ten global permissions and no stream entries (protocol.md 2.7)"
    );

    let users = root.get_users().await.expect("get users");
    let listed: Vec<(u32, &str, UserStatus)> = users
        .iter()
        .map(|user| (user.id, user.username.as_str(), user.status))
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "iggy", UserStatus::Active),
            (alice.id, "alice", UserStatus::Active),
            (bob.id, "bob", UserStatus::Inactive),
        ]
    );

    root.update_user(&id(bob.id), Some("robert"), Some(UserStatus::Active))
        .await
        .expect("rename and activate bob");
    let robert = root
        .get_user(&named("robert"))
        .await
        .expect("get robert")
        .expect("robert exists");
    assert_eq!((robert.id, robert.status), (bob.id, UserStatus::Active));
    assert!(root.get_user(&named("bob")).await.unwrap().is_none());
    // Only the status this time.
    root.update_user(&named("robert"), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate robert");
    let robert = root.get_user(&id(bob.id)).await.unwrap().expect("robert");
    assert_eq!(
        (robert.username.as_str(), robert.status),
        ("robert", UserStatus::Inactive)
    );

    let new_permissions = global_only(GlobalPermissions {
        manage_streams: true,
        ..GlobalPermissions::default()
    });
    root.update_permissions(&id(alice.id), Some(new_permissions.clone()))
        .await
        .expect("update alice's permissions");
    let fetched = root.get_user(&id(alice.id)).await.unwrap().expect("alice");
    assert_eq!(fetched.permissions, Some(new_permissions));
    root.update_permissions(&named("alice"), None)
        .await
        .expect("clear alice's permissions");
    let fetched = root.get_user(&id(alice.id)).await.unwrap().expect("alice");
    assert_eq!(fetched.permissions, None);

    // A user can read their own details without read_users.
    let alice_client = login_client(&server, "alice", PASSWORD).await;
    let own = alice_client
        .get_user(&id(alice.id))
        .await
        .expect("alice reads herself")
        .expect("alice exists");
    assert_eq!(own.username, "alice");

    root.delete_user(&named("alice"))
        .await
        .expect("delete alice");
    assert!(root.get_user(&id(alice.id)).await.unwrap().is_none());
    let users = root.get_users().await.unwrap();
    assert_eq!(
        users.iter().map(|u| u.id).collect::<Vec<_>>(),
        vec![0, bob.id]
    );
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("alice", PASSWORD).await,
        42,
        "login of a deleted user",
    );
}

#[tokio::test]
async fn user_commands_error_codes() {
    // Proves the error codes of protocol.md 4.2 / 8.1: duplicate username 46 (create and
    // rename), username length outside 3..=50 → 43, password length outside 3..=100 → 44,
    // inactive user login 47, wrong password 42, deleting root 48, changing root's permissions
    // 49, unknown user → 20 on UpdateUser / DeleteUser / UpdatePermissions / ChangePassword, and
    // GetUser of an unknown user → None. How: official SDK as root; after every refusal the state
    // is checked to be unchanged.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let carol = create_user(&root, "carol", None).await;
    create_user(&root, "dave", None).await;

    assert_error_code(
        root.create_user("carol", PASSWORD, UserStatus::Active, None)
            .await,
        46,
        "duplicate username",
    );
    assert_error_code(
        root.update_user(&id(carol.id), Some("dave"), None).await,
        46,
        "rename to an existing username",
    );
    for username in ["ab".to_string(), "u".repeat(51)] {
        assert_error_code(
            root.create_user(&username, PASSWORD, UserStatus::Active, None)
                .await,
            43,
            &format!("create user with a {}-byte username", username.len()),
        );
    }
    assert_error_code(
        root.update_user(&id(carol.id), Some("ab"), None).await,
        43,
        "rename to a 2-byte username",
    );
    for password in ["pw".to_string(), "p".repeat(101)] {
        assert_error_code(
            root.create_user("erin", &password, UserStatus::Active, None)
                .await,
            44,
            &format!("create user with a {}-byte password", password.len()),
        );
    }
    // 3 and 50 / 3 and 100 are the inclusive bounds.
    root.create_user(&"x".repeat(50), "abc", UserStatus::Active, None)
        .await
        .expect("50-byte username and 3-byte password are valid");
    root.create_user("xyz", &"p".repeat(100), UserStatus::Active, None)
        .await
        .expect("3-byte username and 100-byte password are valid");
    let users = root.get_users().await.unwrap();
    let names: Vec<&str> = users.iter().map(|u| u.username.as_str()).collect();
    assert!(
        !names.contains(&"erin"),
        "refused users must not exist: {names:?}"
    );
    assert_eq!(
        users.len(),
        5,
        "root, carol, dave and the two bound cases: {names:?}"
    );

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("carol", "wrong-password").await,
        42,
        "wrong password",
    );
    assert_error_code(
        client.login_user("nobody", PASSWORD).await,
        42,
        "unknown username",
    );
    root.update_user(&id(carol.id), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate carol");
    assert_error_code(
        client.login_user("carol", PASSWORD).await,
        47,
        "login of an inactive user",
    );
    root.update_user(&id(carol.id), None, Some(UserStatus::Active))
        .await
        .expect("reactivate carol");
    let identity = client.login_user("carol", PASSWORD).await.expect("login");
    assert_eq!(identity.user_id, carol.id);

    assert_error_code(root.delete_user(&id(0)).await, 48, "delete root by id");
    assert_error_code(
        root.delete_user(&named("iggy")).await,
        48,
        "delete root by name",
    );
    assert_error_code(
        root.update_permissions(&id(0), Some(global_only(no_global())))
            .await,
        49,
        "change root's permissions",
    );
    assert_error_code(
        root.update_permissions(&id(0), None).await,
        49,
        "clear root's permissions",
    );
    let root_details = root.get_user(&id(0)).await.unwrap().expect("root");
    assert_eq!(root_details.permissions, Some(global_only(all_global())));
    let root_again = root_client(&server).await;
    root_again.get_users().await.expect("root still works");

    for unknown in [id(4242), named("nobody")] {
        let what = format!("unknown user {unknown}");
        assert_error_code(
            root.update_user(&unknown, Some("someone"), None).await,
            20,
            &format!("UpdateUser of {what}"),
        );
        assert_error_code(
            root.delete_user(&unknown).await,
            20,
            &format!("DeleteUser of {what}"),
        );
        assert_error_code(
            root.update_permissions(&unknown, None).await,
            20,
            &format!("UpdatePermissions of {what}"),
        );
        assert_error_code(
            root.change_password(&unknown, PASSWORD, "another-pass")
                .await,
            20,
            &format!("ChangePassword of {what}"),
        );
        assert!(
            root.get_user(&unknown).await.expect("GetUser").is_none(),
            "GetUser of {what} must be None (empty OK)"
        );
    }
}

#[tokio::test]
async fn change_password_rules() {
    // Proves: a user may change their own password without any permission; the old password
    // then fails (42) and the new one works; a wrong current password is 42; a new password
    // outside 3..=100 is 44; changing someone else's password needs manage_users (41 without it,
    // accepted with it). How: official SDK, several sessions.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let frank = create_user(&root, "frank", None).await;
    let grace = create_user(&root, "grace", None).await;
    let admin = create_user(
        &root,
        "user-admin",
        Some(global_only(GlobalPermissions {
            manage_users: true,
            ..GlobalPermissions::default()
        })),
    )
    .await;

    let frank_client = login_client(&server, "frank", PASSWORD).await;
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), "wrong-current", "frank-new-pass")
            .await,
        42,
        "wrong current password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), PASSWORD, "xy")
            .await,
        44,
        "2-byte new password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), PASSWORD, &"n".repeat(101))
            .await,
        44,
        "101-byte new password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(grace.id), PASSWORD, "grace-new-pass")
            .await,
        41,
        "frank changes grace's password without manage_users",
    );
    frank_client
        .change_password(&id(frank.id), PASSWORD, "frank-new-pass")
        .await
        .expect("frank changes his own password");

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("frank", PASSWORD).await,
        42,
        "old password after the change",
    );
    client
        .login_user("frank", "frank-new-pass")
        .await
        .expect("new password works");
    let grace_client = login_client(&server, "grace", PASSWORD).await;
    drop(grace_client);

    let admin_client = login_client(&server, "user-admin", PASSWORD).await;
    admin_client
        .change_password(&named("grace"), PASSWORD, "grace-new-pass")
        .await
        .expect("a manage_users holder changes grace's password");
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("grace", PASSWORD).await,
        42,
        "grace's old password",
    );
    let identity = client
        .login_user("grace", "grace-new-pass")
        .await
        .expect("grace's new password");
    assert_eq!(identity.user_id, grace.id);
    assert_ne!(admin.id, grace.id);
}

// ---------------------------------------------------------------------------------------------
// The unauthenticated sweep
// ---------------------------------------------------------------------------------------------

#[test]
fn every_command_before_login_answers_40_except_ping_and_the_logins() {
    // Proves: on a session that has not logged in, every one of the 47 command codes of
    // protocol.md section 3 answers 40 (Unauthenticated) with an empty error frame, except Ping
    // (OK), LoginUser (here with a wrong password: 42) and LoginWithPersonalAccessToken (here
    // with an unknown token: 20); nothing is changed by the refused requests; and the same
    // well-formed requests are accepted for decoding once logged in (no 3/4/40 answers), so the
    // 40s are not decode failures in disguise. How: the harness's raw TCP client (the SDK refuses
    // to send most of these before login), requests built from protocol.md in support/mod.rs;
    // all mismatches are collected and reported together.
    let server = TestServer::start(ServerOptions::new());
    let commands = every_command();
    let codes: BTreeSet<u32> = commands.iter().map(|c| c.code).collect();
    assert_eq!(codes.len(), 47, "the sweep covers 47 distinct codes");

    let mut raw = RawClient::connect(server.address());
    let mut mismatches = Vec::new();
    for command in &commands {
        let response = raw.request(command.code, &command.payload);
        let expected = match command.code {
            1 => status::OK,
            38 => status::INVALID_CREDENTIALS,
            44 => 20,
            _ => status::UNAUTHENTICATED,
        };
        if response.status != expected {
            mismatches.push(format!(
                "{} ({}) before login: expected {expected}, got {}",
                command.name, command.code, response.status
            ));
        }
    }
    raw.assert_ping();

    // Nothing happened: root's password is unchanged, no stream, user or token was created.
    raw.login_root();
    let streams = raw.request(201, &[]);
    assert_eq!(streams.status, status::OK);
    assert!(
        streams.payload.is_empty(),
        "a stream was created before login"
    );
    let users = raw.request(32, &[]);
    assert_eq!(users.status, status::OK);
    assert_eq!(
        users.payload.len(),
        14 + 4,
        "GetUsers must hold only root (one 14 + 4 byte record): {:?}",
        users.payload
    );
    let tokens = raw.request(41, &[]);
    assert_eq!(tokens.status, status::OK);
    assert!(
        tokens.payload.is_empty(),
        "a token was created before login"
    );

    // The same requests decode once logged in (LogoutUser is sent last).
    for command in commands.iter().filter(|c| c.code != 39) {
        let response = raw.request(command.code, &command.payload);
        if [status::INVALID_COMMAND, status::INVALID_FORMAT, 40].contains(&response.status) {
            mismatches.push(format!(
                "{} ({}) as root: got {}, which means the request was not accepted",
                command.name, command.code, response.status
            ));
        }
    }
    let logout = raw.request(39, &[]);
    assert_eq!(logout.status, status::OK, "LogoutUser as root");
    let after_logout = raw.request(20, &[]);
    assert_eq!(after_logout.status, 40, "GetMe after LogoutUser");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The permission matrix
// ---------------------------------------------------------------------------------------------

/// Every command the matrix runs, in the order each user runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
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

const ALL_CMDS: [Cmd; 48] = [
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
const MAIN_STREAM: u32 = 0;
const MAIN_TOPIC: u32 = 0;
const VICTIM_STREAM: u32 = 1;
const VICTIM_TOPIC: u32 = 1;

/// The expected answer per upstream Iggy 0.8.0's permissioner (server/src/streaming/users/
/// permissioner_rules/*.rs): which flags grant which command. Root has all global flags.
struct Oracle<'a>(Option<&'a Permissions>);

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

    fn allows(&self, cmd: Cmd) -> bool {
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

/// Stream permissions with one flag set (by name), no topic entries.
fn stream_flag(flag: &str) -> StreamPermissions {
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

fn topic_flag(flag: &str) -> TopicPermissions {
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

fn global_flag(flag: &str) -> GlobalPermissions {
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

/// The matrix's users: (username, permissions). Stream-level users hold the same entry on the
/// main and the victim stream; topic-level users hold the same entry on topics (0,0), (0,1) and
/// (1,0) (with all stream flags off); "elsewhere" holds everything, but only on stream 7.
fn matrix_users() -> Vec<(String, Option<Permissions>)> {
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

/// Shared state of one matrix run: the root client (which prepares and restores victims) and a
/// counter for unique names.
struct Matrix<'a> {
    server: &'a TestServer,
    root: IggyClient,
    counter: u32,
    target_user: u32,
    /// The matrix users' permissions, granted again when a victim stream or topic is recreated:
    /// deleting a stream or topic removes every permission entry naming it (issue 21), so the
    /// grants on the victim do not carry over to its successor by themselves.
    grants: Vec<(u32, Option<Permissions>)>,
}

impl Matrix<'_> {
    fn unique(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }

    async fn ensure_victim_stream(&self) {
        if self
            .root
            .get_stream(&id(VICTIM_STREAM))
            .await
            .unwrap()
            .is_none()
        {
            let stream = self
                .root
                .create_stream("victim")
                .await
                .expect("victim stream");
            assert_eq!(stream.id, VICTIM_STREAM, "recreated victim stream id");
            self.grant_again().await;
            self.root
                .create_topic(
                    &id(VICTIM_STREAM),
                    "victim-stream-topic",
                    1,
                    CompressionAlgorithm::None,
                    None,
                    IggyExpiry::ServerDefault,
                    MaxTopicSize::ServerDefault,
                )
                .await
                .expect("victim stream's topic");
        }
    }

    async fn ensure_victim_topic(&self) {
        match self
            .root
            .get_topic(&id(MAIN_STREAM), &id(VICTIM_TOPIC))
            .await
            .unwrap()
        {
            Some(topic) if topic.partitions_count >= 2 => {}
            Some(topic) => {
                self.root
                    .create_partitions(
                        &id(MAIN_STREAM),
                        &id(VICTIM_TOPIC),
                        3 - topic.partitions_count,
                    )
                    .await
                    .expect("refill victim topic partitions");
            }
            None => {
                let topic = self
                    .root
                    .create_topic(
                        &id(MAIN_STREAM),
                        "victim-topic",
                        3,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
                    .expect("victim topic");
                assert_eq!(topic.id, VICTIM_TOPIC, "recreated victim topic id");
                self.grant_again().await;
            }
        }
    }

    async fn grant_again(&self) {
        for (user_id, permissions) in &self.grants {
            self.root
                .update_permissions(&id(*user_id), permissions.clone())
                .await
                .expect("grant again");
        }
    }

    async fn ensure_victim_user(&self) -> u32 {
        if let Some(user) = self.root.get_user(&named("victim-user")).await.unwrap() {
            return user.id;
        }
        create_user(&self.root, "victim-user", None).await.id
    }

    async fn ensure_victim_group(&self) {
        let group = self
            .root
            .get_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), &named("victim-group"))
            .await
            .unwrap();
        if group.is_none() {
            self.root
                .create_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), "victim-group")
                .await
                .expect("victim group");
        }
    }

    /// Runs `cmd` as `client` (user `user_id` with `password`), preparing what it needs with
    /// root first and cleaning up after a success. Returns the command's own result.
    async fn attempt(
        &mut self,
        cmd: Cmd,
        client: &IggyClient,
        user_id: u32,
        password: &str,
        token: &mut Option<String>,
    ) -> Result<(), IggyError> {
        let (s, t) = (id(MAIN_STREAM), id(MAIN_TOPIC));
        let root = &self.root;
        match cmd {
            Cmd::Ping => client.ping().await,
            Cmd::GetMe => client.get_me().await.map(drop),
            Cmd::GetStats => client.get_stats().await.map(drop),
            Cmd::GetClient => {
                let me = own_client_id(client).await;
                match client.get_client(me).await? {
                    Some(_) => Ok(()),
                    None => Err(IggyError::ResourceNotFound(format!("client {me}"))),
                }
            }
            Cmd::GetClients => client.get_clients().await.map(drop),
            Cmd::GetClusterMetadata => client.get_cluster_metadata().await.map(drop),
            Cmd::GetSnapshot => client
                .snapshot(SnapshotCompression::Stored, vec![SystemSnapshotType::Test])
                .await
                .map(drop),
            Cmd::GetUserSelf => match client.get_user(&id(user_id)).await? {
                Some(_) => Ok(()),
                None => Err(IggyError::ResourceNotFound("self".into())),
            },
            Cmd::GetUserOther => client.get_user(&id(self.target_user)).await.map(drop),
            Cmd::GetUsers => client.get_users().await.map(drop),
            Cmd::CreateUser => {
                let name = self.unique("made-user");
                let result = client
                    .create_user(&name, PASSWORD, UserStatus::Active, None)
                    .await;
                if result.is_ok() {
                    self.root.delete_user(&named(&name)).await.expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateUser => {
                let name = self.unique("target");
                client
                    .update_user(&id(self.target_user), Some(&name), None)
                    .await
            }
            Cmd::UpdatePermissions => {
                client
                    .update_permissions(
                        &id(self.target_user),
                        Some(global_only(global_flag("read_streams"))),
                    )
                    .await
            }
            Cmd::ChangePasswordSelf => {
                client
                    .change_password(&id(user_id), password, password)
                    .await
            }
            Cmd::ChangePasswordOther => {
                client
                    .change_password(&id(self.target_user), PASSWORD, PASSWORD)
                    .await
            }
            Cmd::DeleteUser => {
                let victim = self.ensure_victim_user().await;
                client.delete_user(&id(victim)).await
            }
            Cmd::CreatePersonalAccessToken => {
                let created = client
                    .create_personal_access_token("matrix-token", IggyExpiry::NeverExpire)
                    .await?;
                *token = Some(created.token);
                Ok(())
            }
            Cmd::GetPersonalAccessTokens => {
                let tokens = client.get_personal_access_tokens().await?;
                if tokens.iter().any(|t| t.name == "matrix-token") {
                    Ok(())
                } else {
                    Err(IggyError::ResourceNotFound("matrix-token".into()))
                }
            }
            Cmd::LoginWithPersonalAccessToken => {
                let Some(token) = token.as_deref() else {
                    return Err(IggyError::ResourceNotFound("no token was created".into()));
                };
                let fresh = anonymous_client(self.server).await;
                let identity = fresh.login_with_personal_access_token(token).await?;
                if identity.user_id == user_id {
                    Ok(())
                } else {
                    Err(IggyError::ResourceNotFound(format!(
                        "token logged in as user {}",
                        identity.user_id
                    )))
                }
            }
            Cmd::DeletePersonalAccessToken => {
                client.delete_personal_access_token("matrix-token").await
            }
            Cmd::GetStream => client.get_stream(&s).await.map(drop),
            Cmd::GetStreams => client.get_streams().await.map(drop),
            Cmd::CreateStream => {
                let name = self.unique("made-stream");
                let result = client.create_stream(&name).await;
                if result.is_ok() {
                    self.root
                        .delete_stream(&named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateStream => {
                self.ensure_victim_stream().await;
                let name = self.unique("victim");
                client.update_stream(&id(VICTIM_STREAM), &name).await
            }
            Cmd::PurgeStream => {
                self.ensure_victim_stream().await;
                client.purge_stream(&id(VICTIM_STREAM)).await
            }
            Cmd::DeleteStream => {
                self.ensure_victim_stream().await;
                client.delete_stream(&id(VICTIM_STREAM)).await
            }
            Cmd::GetTopic => client.get_topic(&s, &t).await.map(drop),
            Cmd::GetTopics => client.get_topics(&s).await.map(drop),
            Cmd::CreateTopic => {
                self.ensure_victim_topic().await;
                let name = self.unique("made-topic");
                let result = client
                    .create_topic(
                        &s,
                        &name,
                        1,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await;
                if result.is_ok() {
                    self.root
                        .delete_topic(&s, &named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateTopic => {
                self.ensure_victim_topic().await;
                let name = self.unique("victim-topic");
                client
                    .update_topic(
                        &s,
                        &id(VICTIM_TOPIC),
                        &name,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
            }
            Cmd::PurgeTopic => {
                self.ensure_victim_topic().await;
                client.purge_topic(&s, &id(VICTIM_TOPIC)).await
            }
            Cmd::CreatePartitions => {
                self.ensure_victim_topic().await;
                let result = client.create_partitions(&s, &id(VICTIM_TOPIC), 1).await;
                if result.is_ok() {
                    self.root
                        .delete_partitions(&s, &id(VICTIM_TOPIC), 1)
                        .await
                        .expect("cleanup");
                }
                result
            }
            Cmd::DeletePartitions => {
                self.ensure_victim_topic().await;
                client.delete_partitions(&s, &id(VICTIM_TOPIC), 1).await
            }
            Cmd::DeleteSegments => {
                self.ensure_victim_topic().await;
                client.delete_segments(&s, &id(VICTIM_TOPIC), 0, 1).await
            }
            Cmd::DeleteTopic => {
                self.ensure_victim_topic().await;
                client.delete_topic(&s, &id(VICTIM_TOPIC)).await
            }
            Cmd::SendMessages => {
                let mut messages = vec![
                    IggyMessage::builder()
                        .payload(bytes::Bytes::from_static(b"matrix"))
                        .build()
                        .expect("message"),
                ];
                client
                    .send_messages(&s, &t, &Partitioning::partition_id(0), &mut messages)
                    .await
            }
            Cmd::FlushUnsavedBuffer => client.flush_unsaved_buffer(&s, &t, 0, false).await,
            Cmd::PollMessages => client
                .poll_messages(
                    &s,
                    &t,
                    Some(0),
                    &Consumer::new(id(1000 + user_id)),
                    &PollingStrategy::offset(0),
                    1,
                    false,
                )
                .await
                .map(drop),
            Cmd::StoreConsumerOffset => {
                client
                    .store_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0), 0)
                    .await
            }
            Cmd::GetConsumerOffset => client
                .get_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0))
                .await
                .map(drop),
            Cmd::DeleteConsumerOffset => {
                // Stored just before when allowed; make sure of it so "allowed" means Ok.
                let _ = root
                    .store_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0), 0)
                    .await;
                client
                    .delete_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0))
                    .await
            }
            Cmd::GetConsumerGroup => client
                .get_consumer_group(&s, &t, &named("main-group"))
                .await
                .map(drop),
            Cmd::GetConsumerGroups => client.get_consumer_groups(&s, &t).await.map(drop),
            Cmd::CreateConsumerGroup => {
                let name = self.unique("made-group");
                let result = client.create_consumer_group(&s, &t, &name).await;
                if result.is_ok() {
                    self.root
                        .delete_consumer_group(&s, &t, &named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::JoinConsumerGroup => {
                client
                    .join_consumer_group(&s, &t, &named("main-group"))
                    .await
            }
            Cmd::LeaveConsumerGroup => {
                client
                    .leave_consumer_group(&s, &t, &named("main-group"))
                    .await
            }
            Cmd::DeleteConsumerGroup => {
                self.ensure_victim_group().await;
                client
                    .delete_consumer_group(&s, &t, &named("victim-group"))
                    .await
            }
            Cmd::LogoutUser => client.logout_user().await,
        }
    }
}

/// The client id of `client`'s session, as GetMe reports it (GetMe needs no permission; if it
/// fails, that is reported as GetMe's own mismatch and id 1 stands in).
async fn own_client_id(client: &IggyClient) -> u32 {
    client.get_me().await.map(|me| me.client_id).unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_matrix_every_command_for_every_kind_of_grant() {
    // Proves: for every authenticated command, a user without the needed permission gets 41 and
    // a user with it succeeds, following upstream 0.8.0's rules (global flags, "manage" implying
    // "read", stream-level and topic-level entries that apply only to their stream / topic,
    // per-stream poll/send separate from read/manage globals), while commands that need no
    // permission (Ping, GetMe, GetClusterMetadata, own user / password / tokens,
    // LogoutUser) work for everyone. How: 24 users (none, empty, each global flag, each stream
    // flag, each topic flag, everything-but-on-another-stream, plus root) each log in with their
    // own official SDK session and run all 48 matrix commands in order against a fixture; the
    // expected outcome comes from `Oracle`; every mismatch is collected and reported at the end.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let main = root.create_stream("main").await.expect("main stream");
    assert_eq!(main.id, MAIN_STREAM);
    root.create_topic(
        &id(MAIN_STREAM),
        "main-topic",
        2,
        CompressionAlgorithm::None,
        None,
        IggyExpiry::ServerDefault,
        MaxTopicSize::ServerDefault,
    )
    .await
    .expect("main topic");
    let mut messages: Vec<IggyMessage> = (0..5)
        .map(|i| {
            IggyMessage::builder()
                .payload(bytes::Bytes::from(format!("fixture-{i}")))
                .build()
                .expect("message")
        })
        .collect();
    root.send_messages(
        &id(MAIN_STREAM),
        &id(MAIN_TOPIC),
        &Partitioning::partition_id(0),
        &mut messages,
    )
    .await
    .expect("fixture messages");
    root.create_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), "main-group")
        .await
        .expect("main group");
    let target = create_user(&root, "target-user", None).await;

    let mut matrix = Matrix {
        server: &server,
        root,
        counter: 0,
        target_user: target.id,
        grants: Vec::new(),
    };
    matrix.ensure_victim_stream().await;
    matrix.ensure_victim_topic().await;
    matrix.ensure_victim_group().await;

    let mut users: Vec<(String, u32, Option<Permissions>)> = Vec::new();
    for (username, permissions) in matrix_users() {
        let created = create_user(&matrix.root, &username, permissions.clone()).await;
        assert_eq!(
            created.permissions, permissions,
            "{username}'s permissions as stored"
        );
        matrix.grants.push((created.id, permissions.clone()));
        users.push((username, created.id, permissions));
    }
    users.push(("iggy".to_string(), 0, Some(global_only(all_global()))));

    let mut mismatches = Vec::new();
    let mut checked = 0;
    for (username, user_id, permissions) in &users {
        let password = if *user_id == 0 { "iggy" } else { PASSWORD };
        let client = login_client(&server, username, password).await;
        let oracle = Oracle(permissions.as_ref());
        let mut token = None;
        for cmd in ALL_CMDS {
            let allowed = oracle.allows(cmd);
            let result = matrix
                .attempt(cmd, &client, *user_id, password, &mut token)
                .await;
            checked += 1;
            let ok = match (&result, allowed) {
                (Ok(()), true) => true,
                (Err(error), false) => error.as_code() == 41,
                _ => false,
            };
            if !ok {
                mismatches.push(format!(
                    "{username:>18} {cmd:?}: expected {}, got {}",
                    if allowed { "success" } else { "41" },
                    match &result {
                        Ok(()) => "success".to_string(),
                        Err(error) => format!("{} ({error})", error.as_code()),
                    }
                ));
            }
        }
    }
    assert_eq!(checked, users.len() * ALL_CMDS.len());
    assert!(
        mismatches.is_empty(),
        "{} of {checked} permission checks disagree with upstream 0.8.0's rules:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[tokio::test]
async fn permission_changes_apply_to_sessions_already_logged_in() {
    // Proves: UpdatePermissions takes effect for a session that is already logged in (no
    // re-login), both granting and revoking; and a deactivated user's new logins are refused
    // (47) while root is unaffected. How: one session of "henry" checks GetStreams (needs
    // read_streams) before and after root changes his permissions.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let henry = create_user(&root, "henry", None).await;
    let session = login_client(&server, "henry", PASSWORD).await;
    assert_error_code(
        session.get_streams().await,
        41,
        "GetStreams without permission",
    );
    root.update_permissions(
        &id(henry.id),
        Some(global_only(global_flag("read_streams"))),
    )
    .await
    .expect("grant read_streams");
    session
        .get_streams()
        .await
        .expect("GetStreams right after the grant, same session");
    assert_error_code(
        session.create_stream("henrys").await,
        41,
        "CreateStream with read_streams only",
    );
    root.update_permissions(&id(henry.id), None)
        .await
        .expect("revoke");
    assert_error_code(
        session.get_streams().await,
        41,
        "GetStreams right after the revocation, same session",
    );
    root.update_user(&id(henry.id), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate");
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("henry", PASSWORD).await,
        47,
        "login after deactivation",
    );
    root.get_streams().await.expect("root unaffected");
}

#[tokio::test]
async fn users_survive_a_graceful_restart() {
    // Proves: users (ids, names, statuses, permissions), changed passwords and deletions are
    // persisted: after SIGTERM and a restart, GetUsers / GetUser answer the same, the new
    // password logs in and the old one does not, an inactive user is still refused (47), a
    // deleted user stays deleted, and root keeps its credentials. How: official SDK, TestServer
    // restart on the same data directory.
    let mut server = TestServer::start(ServerOptions::new());
    let (ivy, jack, kate) = {
        let root = root_client(&server).await;
        let ivy = root
            .create_user(
                "ivy",
                PASSWORD,
                UserStatus::Active,
                Some(sample_permissions()),
            )
            .await
            .expect("ivy");
        let jack = create_user(&root, "jack", None).await;
        let kate = create_user(&root, "kate", None).await;
        root.change_password(&id(ivy.id), PASSWORD, "ivy-new-pass")
            .await
            .expect("change ivy's password");
        root.update_user(&id(jack.id), Some("jackson"), Some(UserStatus::Inactive))
            .await
            .expect("rename and deactivate jack");
        root.delete_user(&id(kate.id)).await.expect("delete kate");
        (ivy, jack, kate)
    };
    server.restart();

    let root = root_client(&server).await;
    let users = root.get_users().await.expect("users after restart");
    let listed: Vec<(u32, &str, UserStatus)> = users
        .iter()
        .map(|u| (u.id, u.username.as_str(), u.status))
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "iggy", UserStatus::Active),
            (ivy.id, "ivy", UserStatus::Active),
            (jack.id, "jackson", UserStatus::Inactive),
        ]
    );
    let ivy_after = root.get_user(&named("ivy")).await.unwrap().expect("ivy");
    assert_eq!(ivy_after.permissions, Some(sample_permissions()));
    assert_eq!(ivy_after.created_at, ivy.created_at);
    assert!(root.get_user(&id(kate.id)).await.unwrap().is_none());

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("ivy", PASSWORD).await,
        42,
        "ivy's old password",
    );
    assert_eq!(
        client
            .login_user("ivy", "ivy-new-pass")
            .await
            .expect("ivy's new password")
            .user_id,
        ivy.id
    );
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("jackson", PASSWORD).await,
        47,
        "inactive jackson",
    );
    assert_error_code(
        client.login_user("kate", PASSWORD).await,
        42,
        "deleted kate",
    );

    // A new user after the restart does not reuse a live user's id.
    let leo = create_user(&root, "leo", None).await;
    assert!(
        ![0, ivy.id, jack.id].contains(&leo.id),
        "new user id {} collides with an existing user",
        leo.id
    );
    assert_eq!(code_of(&root.get_user(&id(leo.id)).await), 0);
}
