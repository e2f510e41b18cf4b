//! The low-level client against the real server: every command group, typed responses,
//! server error codes, reconnection and the unreachable-server error, each scenario once in
//! each protocol generation (`both_protocols!`).

use rill_testkit as common;

use bytes::Bytes;
use common::TestServer;
use rill_sdk::types::ErrorCode;
use rill_sdk::types::{
    Consumer, GlobalPermissions, Partitioning, Permissions, PollingStrategy, UserStatus,
};
use rill_sdk::{
    Client, ClientBuilder, Error, Message, Protocol, ReconnectPolicy, SendMessage,
    SnapshotCompression, SnapshotType, TopicOptions,
};
use std::time::Duration;

/// Runs each scenario twice, as `NAME::v08` and `NAME::v09`.
macro_rules! both_protocols {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn v08() {
                super::$name(rill_sdk::Protocol::V08).await
            }
            #[tokio::test]
            async fn v09() {
                super::$name(rill_sdk::Protocol::V09).await
            }
        }
    )*};
}

both_protocols!(
    system_commands,
    streams_topics_partitions_segments,
    messages_and_offsets,
    consumer_groups,
    users_and_personal_access_tokens,
    reconnects_and_logs_in_again_after_a_server_restart,
    unreachable_server_is_a_clear_error,
);

async fn root_client(server: &TestServer, protocol: Protocol) -> Client {
    let text = format!("{}?protocol={protocol}", server.connection_string());
    let client = Client::from_connection_string(&text).unwrap();
    assert_eq!(client.config().protocol, protocol);
    client.connect().await.unwrap();
    client
}

fn server_code(error: Error) -> ErrorCode {
    error
        .server_code()
        .unwrap_or_else(|| panic!("expected a server error, got {error}"))
}

async fn system_commands(protocol: Protocol) {
    // Ping works before login; GetMe reports this session; stats count what exists.
    let server = TestServer::start_default();
    let anonymous = Client::builder()
        .protocol(protocol)
        .address(server.tcp_address())
        .build()
        .unwrap();
    anonymous.ping().await.unwrap();
    assert_eq!(
        server_code(anonymous.get_streams().await.unwrap_err()),
        ErrorCode::Unauthenticated
    );

    let client = root_client(&server, protocol).await;
    client.ping().await.unwrap();
    let me = client.get_me().await.unwrap();
    assert_eq!(me.user_id, 0);
    assert_eq!(
        me.address,
        client.local_address().await.unwrap().to_string()
    );
    let found = client.get_client(me.client_id).await.unwrap().unwrap();
    assert_eq!(found.client_id, me.client_id);
    assert!(client.get_client(12345).await.unwrap().is_none());
    let clients = client.get_clients().await.unwrap();
    assert!(clients.iter().any(|c| c.client_id == me.client_id));

    client.create_stream("s").await.unwrap();
    let stats = client.get_stats().await.unwrap();
    assert_eq!(stats.streams_count, 1);
    let metadata = client.get_cluster_metadata().await.unwrap();
    assert!(!metadata.nodes.is_empty());
    let snapshot = client
        .get_snapshot(SnapshotCompression::Deflated, &[SnapshotType::Test])
        .await
        .unwrap();
    assert_eq!(&snapshot[..2], b"PK", "a ZIP archive");
}

async fn streams_topics_partitions_segments(protocol: Protocol) {
    let server = TestServer::start_default();
    let client = root_client(&server, protocol).await;

    let stream = client.create_stream("orders").await.unwrap();
    assert_eq!(stream.stream.id, 0);
    assert_eq!(
        server_code(client.create_stream("orders").await.unwrap_err()),
        ErrorCode::StreamNameAlreadyExists
    );
    client.update_stream("orders", "orders-v2").await.unwrap();
    assert!(client.get_stream("orders").await.unwrap().is_none());
    let details = client.get_stream(0).await.unwrap().unwrap();
    assert_eq!(details.stream.name.as_str(), "orders-v2");
    assert_eq!(client.get_streams().await.unwrap().len(), 1);

    let topic = client
        .create_topic(0, "events", 3, TopicOptions::default())
        .await
        .unwrap();
    assert_eq!(topic.partitions.len(), 3);
    assert_eq!(
        server_code(
            client
                .create_topic(0, "events", 1, TopicOptions::default())
                .await
                .unwrap_err()
        ),
        ErrorCode::TopicNameAlreadyExists
    );
    client
        .update_topic(
            0,
            "events",
            "events-v2",
            TopicOptions {
                message_expiry: 60_000_000,
                ..TopicOptions::default()
            },
        )
        .await
        .unwrap();
    let topic = client.get_topic(0, "events-v2").await.unwrap().unwrap();
    assert_eq!(topic.topic.message_expiry, 60_000_000);
    assert_eq!(client.get_topics(0).await.unwrap().len(), 1);
    assert!(client.get_topic(0, 99).await.unwrap().is_none());

    client.create_partitions(0, 0, 2).await.unwrap();
    assert_eq!(
        client
            .get_topic(0, 0)
            .await
            .unwrap()
            .unwrap()
            .partitions
            .len(),
        5
    );
    client.delete_partitions(0, 0, 4).await.unwrap();
    assert_eq!(
        client
            .get_topic(0, 0)
            .await
            .unwrap()
            .unwrap()
            .partitions
            .len(),
        1
    );
    client.delete_segments(0, 0, 0, 1).await.unwrap();

    client
        .send_messages(
            0,
            0,
            Partitioning::PartitionId(0),
            &[SendMessage::new("x").into_outgoing().unwrap()],
        )
        .await
        .unwrap();
    client.purge_topic(0, 0).await.unwrap();
    client.purge_stream(0).await.unwrap();
    client.delete_topic(0, 0).await.unwrap();
    assert!(client.get_topics(0).await.unwrap().is_empty());
    client.delete_stream(0).await.unwrap();
    assert_eq!(
        server_code(client.delete_stream(0).await.unwrap_err()),
        ErrorCode::StreamIdNotFound
    );
}

async fn messages_and_offsets(protocol: Protocol) {
    // Messages sent with ids, payloads and headers come back identical, as views over the
    // response buffer; offsets store, read back and delete.
    let server = TestServer::start_default();
    let client = root_client(&server, protocol).await;
    client.create_stream("s").await.unwrap();
    client
        .create_topic("s", "t", 2, TopicOptions::default())
        .await
        .unwrap();
    let outgoing: Vec<_> = (0..10u128)
        .map(|i| {
            SendMessage::new(Bytes::from(format!("message-{i}")))
                .with_id(1000 + i)
                .with_header("n", rill_sdk::HeaderValue::Uint64(i as u64))
                .into_outgoing()
                .unwrap()
        })
        .collect();
    client
        .send_messages("s", "t", Partitioning::PartitionId(1), &outgoing)
        .await
        .unwrap();
    client
        .flush_unsaved_buffer("s", "t", 1, true)
        .await
        .unwrap();

    let consumer = Consumer::new(7);
    let polled = client
        .poll_messages(
            "s",
            "t",
            Some(1),
            &consumer,
            PollingStrategy::offset(3),
            4,
            false,
        )
        .await
        .unwrap();
    assert_eq!(polled.partition_id, 1);
    assert_eq!(polled.current_offset, 9);
    let messages: Vec<Message> = Message::from_polled(&polled).collect();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0].offset(), 3);
    assert_eq!(messages[0].id(), 1003);
    assert_eq!(&messages[0].payload()[..], b"message-3");
    assert_eq!(
        messages[0].headers().unwrap()[0].value,
        rill_sdk::HeaderValue::Uint64(3)
    );
    assert!(messages.iter().all(Message::checksum_is_valid));

    assert!(
        client
            .get_consumer_offset(&consumer, "s", "t", Some(1))
            .await
            .unwrap()
            .is_none()
    );
    client
        .store_consumer_offset(&consumer, "s", "t", Some(1), 5)
        .await
        .unwrap();
    let offset = client
        .get_consumer_offset(&consumer, "s", "t", Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((offset.stored_offset, offset.current_offset), (5, 9));
    let next = client
        .poll_messages(
            "s",
            "t",
            Some(1),
            &consumer,
            PollingStrategy::next(),
            1,
            true,
        )
        .await
        .unwrap();
    assert_eq!(Message::from_polled(&next).next().unwrap().offset(), 6);
    client
        .delete_consumer_offset(&consumer, "s", "t", Some(1))
        .await
        .unwrap();
    assert_eq!(
        server_code(
            client
                .delete_consumer_offset(&consumer, "s", "t", Some(1))
                .await
                .unwrap_err()
        ),
        ErrorCode::ConsumerOffsetNotFound
    );
    assert_eq!(
        server_code(
            client
                .send_messages("s", "t", Partitioning::PartitionId(9), &outgoing[..1])
                .await
                .unwrap_err()
        ),
        ErrorCode::PartitionNotFound
    );
    assert!(matches!(
        client
            .send_messages("s", "t", Partitioning::Balanced, &[])
            .await,
        Err(Error::InvalidArgument(_))
    ));
}

async fn consumer_groups(protocol: Protocol) {
    let server = TestServer::start_default();
    let client = root_client(&server, protocol).await;
    client.create_stream("s").await.unwrap();
    client
        .create_topic("s", "t", 4, TopicOptions::default())
        .await
        .unwrap();
    let group = client.create_consumer_group("s", "t", "g").await.unwrap();
    assert_eq!(group.group.partitions_count, 4);
    assert_eq!(
        server_code(
            client
                .create_consumer_group("s", "t", "g")
                .await
                .unwrap_err()
        ),
        ErrorCode::ConsumerGroupNameAlreadyExists
    );
    client.join_consumer_group("s", "t", "g").await.unwrap();
    let details = client
        .get_consumer_group("s", "t", "g")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(details.members.len(), 1);
    assert_eq!(details.members[0].partitions.len(), 4);
    let me = client.get_me().await.unwrap();
    assert_eq!(me.consumer_groups.len(), 1);
    assert_eq!(client.get_consumer_groups("s", "t").await.unwrap().len(), 1);

    // Membership survives a reconnection: the client re-joins.
    client.disconnect().await;
    let details = client
        .get_consumer_group("s", "t", "g")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(details.members.len(), 1, "re-joined after reconnecting");

    client.leave_consumer_group("s", "t", "g").await.unwrap();
    assert_eq!(
        server_code(
            client
                .leave_consumer_group("s", "t", "g")
                .await
                .unwrap_err()
        ),
        ErrorCode::ConsumerGroupMemberNotFound
    );
    client.delete_consumer_group("s", "t", "g").await.unwrap();
    assert!(
        client
            .get_consumer_group("s", "t", "g")
            .await
            .unwrap()
            .is_none()
    );
}

async fn users_and_personal_access_tokens(protocol: Protocol) {
    let server = TestServer::start_default();
    let client = root_client(&server, protocol).await;
    let permissions = Permissions {
        global: GlobalPermissions {
            read_streams: true,
            ..GlobalPermissions::none()
        },
        streams: vec![],
    };
    let user = client
        .create_user(
            "alice",
            "secret1",
            UserStatus::Active,
            Some(permissions.clone()),
        )
        .await
        .unwrap();
    assert_eq!(user.permissions, Some(permissions));
    assert_eq!(
        server_code(
            client
                .create_user("alice", "secret1", UserStatus::Active, None)
                .await
                .unwrap_err()
        ),
        ErrorCode::UserAlreadyExists
    );
    assert_eq!(client.get_users().await.unwrap().len(), 2);
    client
        .update_user("alice", Some("alicia"), Some(UserStatus::Active))
        .await
        .unwrap();
    assert!(client.get_user("alice").await.unwrap().is_none());
    client.update_permissions("alicia", None).await.unwrap();
    assert_eq!(
        client
            .get_user("alicia")
            .await
            .unwrap()
            .unwrap()
            .permissions,
        None
    );
    client
        .change_password("alicia", "secret1", "secret2")
        .await
        .unwrap();

    // A second session logs in as the new user: no permission to create streams.
    let alice = Client::builder()
        .protocol(protocol)
        .address(server.tcp_address())
        .credentials("alicia", "secret2")
        .connect()
        .await
        .unwrap();
    assert_eq!(
        server_code(alice.create_stream("nope").await.unwrap_err()),
        ErrorCode::Unauthorized
    );
    let token = alice
        .create_personal_access_token("cli-token", 0)
        .await
        .unwrap();
    assert_eq!(alice.get_personal_access_tokens().await.unwrap().len(), 1);
    alice.logout_user().await.unwrap();
    assert_eq!(
        server_code(alice.get_me().await.unwrap_err()),
        ErrorCode::Unauthenticated
    );
    let identity = alice
        .login_with_personal_access_token(token.token.as_str())
        .await
        .unwrap();
    assert_eq!(identity.user_id, user.user.id);
    alice
        .delete_personal_access_token("cli-token")
        .await
        .unwrap();
    assert!(alice.get_personal_access_tokens().await.unwrap().is_empty());

    // Wrong password: the server's code comes back by name.
    let wrong = Client::builder()
        .protocol(protocol)
        .address(server.tcp_address())
        .build()
        .unwrap();
    let error = wrong.login_user("iggy", "wrong").await.unwrap_err();
    assert_eq!(error.server_code(), Some(ErrorCode::InvalidCredentials));
    assert!(error.to_string().contains("42"), "{error}");

    client.delete_user("alicia").await.unwrap();
    assert_eq!(
        server_code(client.delete_user(0).await.unwrap_err()),
        ErrorCode::CannotDeleteUser
    );
}

async fn reconnects_and_logs_in_again_after_a_server_restart(protocol: Protocol) {
    let mut server = TestServer::start_default();
    let client = Client::builder()
        .protocol(protocol)
        .address(server.tcp_address())
        .credentials("iggy", "iggy")
        .reconnect(ReconnectPolicy {
            enabled: true,
            max_attempts: Some(50),
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(500),
        })
        .connect()
        .await
        .unwrap();
    client.create_stream("durable").await.unwrap();
    let epoch = client.connection_epoch();
    let server = tokio::task::spawn_blocking(move || {
        server.restart();
        server
    })
    .await
    .unwrap();
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1, "the stream survived the restart");
    assert!(
        client.connection_epoch() > epoch,
        "a new connection was made"
    );
    drop(server);
}

async fn unreachable_server_is_a_clear_error(protocol: Protocol) {
    let port = common::free_port();
    let client = ClientBuilder::default()
        .protocol(protocol)
        .address(format!("127.0.0.1:{port}"))
        .reconnect(ReconnectPolicy {
            enabled: true,
            max_attempts: Some(3),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
        })
        .build()
        .unwrap();
    let error = client.connect().await.unwrap_err();
    match &error {
        Error::Unreachable {
            attempts, address, ..
        } => {
            assert_eq!(*attempts, 3);
            assert!(address.ends_with(&port.to_string()));
        }
        other => panic!("expected Unreachable, got {other}"),
    }
    assert!(error.to_string().contains("cannot connect"));
}
