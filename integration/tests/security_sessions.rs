//! Hardening (issue 21), sessions and identities: a session ends with its user's authority, no
//! permission carries over to an object that reuses a deleted one's id, root is changed only by
//! root, snapshots need a server-read permission, and client ids are per session.

mod support;

use iggy::prelude::*;
use iggy::quic::quic_client::QuicClient;
use rill_integration::raw::{RawClient, status};
use rill_integration::sdk::{assert_error_code, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeMap;
use std::str::FromStr;
use support::{code_of, global_only, login_client, no_global};

const PASSWORD: &str = "secret-pass";
const GET_ME: u32 = 20;
const GET_USERS: u32 = 32;
const CREATE_STREAM: u32 = 202;

/// A raw session logged in as `username`; asserts the login worked and returns the user id.
fn raw_login(server: &TestServer, username: &str, password: &str) -> (RawClient, u32) {
    let mut client = RawClient::connect(server.address());
    let response = client.login(username, password);
    assert_eq!(response.status, status::OK, "login {username}");
    let user_id = u32::from_le_bytes(response.payload[..4].try_into().unwrap());
    (client, user_id)
}

fn create_stream_payload(name: &str) -> Vec<u8> {
    rill_integration::raw::name(name)
}

#[tokio::test]
async fn a_deleted_users_session_never_becomes_the_user_who_reuses_its_id() {
    // Proves finding 1: a user deleted while connected, then an admin created with the same id,
    // does not hand the old session the admin's rights. Fails before the fix with the old
    // session's GetUsers and CreateStream answered OK.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let temp = root
        .create_user("temp", PASSWORD, UserStatus::Active, None)
        .await
        .expect("create temp");
    let (mut old_session, temp_id) = raw_login(&server, "temp", PASSWORD);
    assert_eq!(temp_id, temp.id);
    assert_eq!(
        old_session.request(GET_USERS, &[]).status,
        41,
        "no rights yet"
    );

    root.delete_user(&id(temp.id)).await.expect("delete temp");
    let mut admin_permissions = no_global();
    admin_permissions.manage_streams = true;
    admin_permissions.read_users = true;
    admin_permissions.manage_users = true;
    let admin = root
        .create_user(
            "admin2",
            PASSWORD,
            UserStatus::Active,
            Some(global_only(admin_permissions)),
        )
        .await
        .expect("create admin2");
    assert_eq!(admin.id, temp.id, "ids are reused, as upstream does");

    assert_eq!(
        old_session.request(GET_USERS, &[]).status,
        status::UNAUTHENTICATED,
        "the deleted user's session is logged out"
    );
    assert_eq!(
        old_session
            .request(CREATE_STREAM, &create_stream_payload("stolen"))
            .status,
        status::UNAUTHENTICATED
    );
    assert!(
        root.get_stream(&Identifier::named("stolen").unwrap())
            .await
            .unwrap()
            .is_none(),
        "nothing was created by the old session"
    );
    // The session can log in again, as whoever it really is.
    let (mut again, admin_id) = raw_login(&server, "admin2", PASSWORD);
    assert_eq!(admin_id, admin.id);
    assert_eq!(again.request(GET_USERS, &[]).status, status::OK);
    // GetClients no longer shows the old session as that user.
    let clients = root.get_clients().await.unwrap();
    let logged_in_as_admin = clients
        .iter()
        .filter(|c| c.user_id == Some(admin.id))
        .count();
    assert_eq!(logged_in_as_admin, 1, "{clients:?}");
}

#[tokio::test]
async fn deactivation_and_password_changes_end_the_users_other_sessions() {
    // Proves finding 1 (second half): deactivating a user ends its sessions at once; a password
    // change ends every other session of the user and keeps the one that made the change.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let user = root
        .create_user(
            "worker",
            PASSWORD,
            UserStatus::Active,
            Some(global_only(no_global())),
        )
        .await
        .expect("create worker");
    let (mut first, _) = raw_login(&server, "worker", PASSWORD);
    let (mut second, _) = raw_login(&server, "worker", PASSWORD);
    assert_eq!(first.request(GET_ME, &[]).status, status::OK);

    root.update_user(&id(user.id), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate");
    assert_eq!(first.request(GET_ME, &[]).status, status::UNAUTHENTICATED);
    assert_eq!(second.request(GET_ME, &[]).status, status::UNAUTHENTICATED);
    assert_eq!(first.login("worker", PASSWORD).status, 47, "inactive");

    root.update_user(&id(user.id), None, Some(UserStatus::Active))
        .await
        .expect("reactivate");
    let changer = login_client(&server, "worker", PASSWORD).await;
    let (mut other, _) = raw_login(&server, "worker", PASSWORD);
    changer
        .change_password(&id(user.id), PASSWORD, "new-secret")
        .await
        .expect("change own password");
    assert_eq!(
        other.request(GET_ME, &[]).status,
        status::UNAUTHENTICATED,
        "another session of the user ends"
    );
    changer
        .get_me()
        .await
        .expect("the session that changed the password stays");
    assert_eq!(other.login("worker", PASSWORD).status, 42);
    assert_eq!(other.login("worker", "new-secret").status, status::OK);

    // A permission change takes effect on open sessions at their next request.
    let mut read_streams = no_global();
    read_streams.read_streams = true;
    let reader = login_client(&server, "worker", "new-secret").await;
    assert_eq!(code_of(&reader.get_streams().await), 41);
    root.update_permissions(&id(user.id), Some(global_only(read_streams)))
        .await
        .unwrap();
    reader.get_streams().await.expect("now allowed");
}

fn stream_reader(stream_id: u32) -> Permissions {
    let mut streams = BTreeMap::new();
    streams.insert(
        stream_id as usize,
        StreamPermissions {
            read_stream: true,
            read_topics: true,
            poll_messages: true,
            ..StreamPermissions::default()
        },
    );
    Permissions {
        global: no_global(),
        streams: Some(streams),
    }
}

#[tokio::test]
async fn permissions_do_not_follow_a_reused_stream_or_topic_id() {
    // Proves finding 2: a user allowed to read stream S only; S deleted and `payroll` created
    // with the same id. Before the fix the user polled payroll's messages.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let public = create_stream(&root, "public").await;
    create_topic(&root, public, "events", 1).await;
    let reader = root
        .create_user(
            "reader",
            PASSWORD,
            UserStatus::Active,
            Some(stream_reader(public)),
        )
        .await
        .unwrap();
    let client = login_client(&server, "reader", PASSWORD).await;
    let consumer = Consumer::new(id(1));
    client
        .poll_messages(
            &id(public),
            &id(0),
            Some(0),
            &consumer,
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("allowed on the public stream");

    root.delete_stream(&id(public)).await.unwrap();
    let payroll = create_stream(&root, "payroll").await;
    assert_eq!(payroll, public, "the id is reused");
    create_topic(&root, payroll, "salaries", 1).await;
    root.send_messages(
        &id(payroll),
        &id(0),
        &Partitioning::partition_id(0),
        &mut [IggyMessage::from_str("salary: 1").unwrap()],
    )
    .await
    .unwrap();

    let polled = client
        .poll_messages(
            &id(payroll),
            &id(0),
            Some(0),
            &consumer,
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await;
    assert_error_code(polled, 41, "poll of the stream that reused the id");
    let details = root.get_user(&id(reader.id)).await.unwrap().unwrap();
    let streams = details
        .permissions
        .and_then(|permissions| permissions.streams)
        .unwrap_or_default();
    assert!(
        streams.is_empty(),
        "the deleted stream's entry went with it: {streams:?}"
    );

    // The same for a topic entry when only the topic is deleted and recreated.
    let mut topics = BTreeMap::new();
    topics.insert(
        0,
        TopicPermissions {
            read_topic: true,
            poll_messages: true,
            ..TopicPermissions::default()
        },
    );
    let mut streams = BTreeMap::new();
    streams.insert(
        payroll as usize,
        StreamPermissions {
            topics: Some(topics),
            ..StreamPermissions::default()
        },
    );
    root.update_permissions(
        &id(reader.id),
        Some(Permissions {
            global: no_global(),
            streams: Some(streams),
        }),
    )
    .await
    .unwrap();
    root.delete_topic(&id(payroll), &id(0)).await.unwrap();
    create_topic(&root, payroll, "bonuses", 1).await;
    let polled = client
        .poll_messages(
            &id(payroll),
            &id(0),
            Some(0),
            &consumer,
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await;
    assert_error_code(polled, 41, "poll of the topic that reused the id");
}

#[tokio::test]
async fn only_root_changes_root_and_snapshots_need_a_server_read_permission() {
    // Proves findings 8 and 9: a user with manage_users cannot deactivate, rename or re-password
    // root; a user without read_servers gets no snapshot, one with it does.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let mut manage_users = no_global();
    manage_users.manage_users = true;
    manage_users.read_users = true;
    root.create_user(
        "usermin",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(manage_users)),
    )
    .await
    .unwrap();
    let admin = login_client(&server, "usermin", PASSWORD).await;
    assert_error_code(
        admin
            .update_user(&id(0), None, Some(UserStatus::Inactive))
            .await,
        41,
        "deactivate root",
    );
    assert_error_code(
        admin.update_user(&id(0), Some("mallory"), None).await,
        41,
        "rename root",
    );
    assert_error_code(
        admin.change_password(&id(0), "iggy", "taken-over").await,
        41,
        "change root's password",
    );
    let root_details = root.get_user(&id(0)).await.unwrap().unwrap();
    assert_eq!(root_details.status, UserStatus::Active);
    assert_eq!(root_details.username, "iggy");

    assert_error_code(
        admin
            .snapshot(
                SnapshotCompression::Deflated,
                vec![SystemSnapshotType::Test],
            )
            .await,
        41,
        "snapshot without read_servers",
    );
    let mut read_servers = no_global();
    read_servers.read_servers = true;
    root.create_user(
        "operator",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(read_servers)),
    )
    .await
    .unwrap();
    let operator = login_client(&server, "operator", PASSWORD).await;
    operator
        .snapshot(
            SnapshotCompression::Deflated,
            vec![SystemSnapshotType::Test],
        )
        .await
        .expect("snapshot with read_servers");
}

#[tokio::test]
async fn client_ids_are_unique_per_session_even_from_one_address() {
    // Proves finding 12: a QUIC session from the same ip:port as a TCP session gets its own
    // client id, and its disconnect leaves the TCP session's entry and groups alone. Before the
    // fix both hashed "127.0.0.1:<port>" to the same id.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let stream = create_stream(&root, "s").await;
    create_topic(&root, stream, "t", 2).await;
    let group = root
        .create_consumer_group(&id(stream), &id(0), "g")
        .await
        .unwrap();

    // A raw TCP session, whose local port the QUIC client then binds (UDP and TCP ports are
    // separate spaces).
    let (mut tcp, _) = raw_login(&server, "iggy", "iggy");
    let tcp_me = tcp.request(GET_ME, &[]);
    assert_eq!(tcp_me.status, status::OK);
    let tcp_id = u32::from_le_bytes(tcp_me.payload[..4].try_into().unwrap());
    let local = tcp.local_address();
    // Join the group from the TCP session (JoinConsumerGroup 604: stream, topic, group ids).
    let mut join = rill_integration::raw::numeric_identifier(stream);
    join.extend(rill_integration::raw::numeric_identifier(0));
    join.extend(rill_integration::raw::numeric_identifier(group.id));
    assert_eq!(tcp.request(604, &join).status, status::OK, "join");

    let quic = QuicClient::new(
        &local.to_string(),
        &server.quic_address().to_string(),
        "localhost",
        false,
        AutoLogin::Disabled,
    )
    .expect("QUIC client");
    let quic = IggyClient::new(ClientWrapper::Quic(quic));
    quic.connect().await.expect("QUIC connect");
    quic.login_user("iggy", "iggy").await.expect("QUIC login");
    let quic_me = quic.get_me().await.unwrap();
    assert_eq!(quic_me.address, local.to_string(), "same ip:port");
    assert_ne!(quic_me.client_id, tcp_id, "one id per session");
    let ids: Vec<u32> = root
        .get_clients()
        .await
        .unwrap()
        .iter()
        .map(|c| c.client_id)
        .collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "client ids are unique: {ids:?}");

    quic.disconnect().await.unwrap();
    drop(quic);
    // The TCP session is untouched: still registered, still in its group, still served. (A
    // QUIC session the client abandons ends at the latest after quic.max_idle_timeout.)
    let mut clients = Vec::new();
    for _ in 0..150 {
        clients = root.get_clients().await.unwrap();
        if clients.iter().all(|c| c.client_id != quic_me.client_id) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        clients.iter().all(|c| c.client_id != quic_me.client_id),
        "the QUIC session ended: {clients:?}"
    );
    assert!(
        clients
            .iter()
            .any(|c| c.client_id == tcp_id && c.consumer_groups_count == 1),
        "the TCP session kept its entry and its group: {clients:?}"
    );
    assert_eq!(tcp.request(GET_ME, &[]).status, status::OK);
}

#[tokio::test]
async fn existence_is_not_revealed_to_those_who_may_not_read_it() {
    // Proves the low findings: GetStream/GetTopic/GetUser of a missing object answered an empty
    // OK while an existing one answered 41, and "already exists" came before the permission
    // check. A user who may not read an object now gets 41 whether it exists or not.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let secret = create_stream(&root, "secret").await;
    create_topic(&root, secret, "t", 1).await;
    root.create_user(
        "outsider",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(no_global())),
    )
    .await
    .unwrap();
    let mut reader = no_global();
    reader.read_streams = true;
    reader.read_users = true;
    root.create_user(
        "reader",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(reader)),
    )
    .await
    .unwrap();
    let outsider = login_client(&server, "outsider", PASSWORD).await;
    let reader = login_client(&server, "reader", PASSWORD).await;
    let missing = secret + 40;

    for (what, result) in [
        (
            "existing stream",
            code_of(&outsider.get_stream(&id(secret)).await),
        ),
        (
            "missing stream",
            code_of(&outsider.get_stream(&id(missing)).await),
        ),
        (
            "missing named stream",
            code_of(
                &outsider
                    .get_stream(&Identifier::named("nope").unwrap())
                    .await,
            ),
        ),
        (
            "existing topic",
            code_of(&outsider.get_topic(&id(secret), &id(0)).await),
        ),
        (
            "missing topic",
            code_of(&outsider.get_topic(&id(secret), &id(9)).await),
        ),
        (
            "topic of a missing stream",
            code_of(&outsider.get_topic(&id(missing), &id(0)).await),
        ),
        (
            "topics of a missing stream",
            code_of(&outsider.get_topics(&id(missing)).await),
        ),
        ("missing user", code_of(&outsider.get_user(&id(77)).await)),
        (
            "existing stream name",
            code_of(&outsider.create_stream("secret").await),
        ),
        (
            "new stream name",
            code_of(&outsider.create_stream("fresh").await),
        ),
    ] {
        assert_eq!(result, 41, "{what}: the outsider learns nothing");
    }
    // Those who may read see absence as before: an empty answer.
    assert!(reader.get_stream(&id(missing)).await.unwrap().is_none());
    assert!(
        reader
            .get_topic(&id(secret), &id(9))
            .await
            .unwrap()
            .is_none()
    );
    assert!(reader.get_user(&id(77)).await.unwrap().is_none());
}

#[test]
fn requests_are_refused_before_login_without_being_decoded() {
    // Proves the low finding "requests decoded before the auth gate": a malformed payload of a
    // command that needs a login answered with its decoding error (telling an anonymous peer
    // about our parser); it now gets 40 like any request before login. Unknown command codes
    // still get 3 (InvalidCommand).
    let server = TestServer::start(ServerOptions::new());
    let mut anonymous = RawClient::connect(server.address());
    for code in [CREATE_STREAM, GET_USERS, 101, 100, 302] {
        let response = anonymous.request(code, &[0xff, 0x01]);
        assert_eq!(response.status, status::UNAUTHENTICATED, "command {code}");
    }
    assert_eq!(
        anonymous.request(9_999, &[0xff]).status,
        status::INVALID_COMMAND
    );
    anonymous.assert_ping();
}
