//! The HTTP REST API through the official SDK 0.10.0's `HttpClient` (what it does over TCP, it
//! does over HTTP), cross-checked against TCP clients on the same server; JWT login, logout,
//! refresh and refusals; permissions per route.

use bytes::Bytes;
use iggy::prelude::*;
use rill_integration::sdk::{id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeMap;
use std::str::FromStr;

fn http_server() -> TestServer {
    TestServer::start(ServerOptions::new())
}

fn api_url(server: &TestServer) -> String {
    format!(
        "http://{}",
        server.http_address().expect("HTTP API listening")
    )
}

/// An official SDK client over HTTP, not logged in; no retries, so a failure shows at once.
fn http_client(server: &TestServer) -> IggyClient {
    IggyClient::builder()
        .with_http()
        .with_api_url(api_url(server))
        .with_retries(0)
        .build()
        .expect("build HTTP client")
}

async fn http_root(server: &TestServer) -> IggyClient {
    let client = http_client(server);
    client.connect().await.expect("connect");
    client
        .login_user("iggy", "iggy")
        .await
        .expect("log in over HTTP");
    client
}

fn message(id: u128, payload: &str, headers: bool) -> IggyMessage {
    let builder = IggyMessage::builder()
        .id(id)
        .payload(Bytes::from(payload.to_owned()));
    if headers {
        let mut map = BTreeMap::new();
        map.insert(
            HeaderKey::from_str("name").unwrap(),
            HeaderValue::from_str("value").unwrap(),
        );
        map.insert(HeaderKey::from_str("n").unwrap(), HeaderValue::from(42u32));
        map.insert(
            HeaderKey::from_str("flag").unwrap(),
            HeaderValue::from(true),
        );
        builder.user_headers(map).build()
    } else {
        builder.build()
    }
    .expect("message")
}

async fn poll(
    client: &IggyClient,
    partition: u32,
    strategy: PollingStrategy,
    count: u32,
    auto_commit: bool,
) -> PolledMessages {
    client
        .poll_messages(
            &Identifier::named("orders").unwrap(),
            &Identifier::named("events").unwrap(),
            Some(partition),
            &Consumer::new(id(7)),
            &strategy,
            count,
            auto_commit,
        )
        .await
        .expect("poll over HTTP")
}

#[tokio::test]
async fn the_official_http_client_does_what_it_does_over_tcp() {
    let server = http_server();
    let http = http_root(&server).await;
    let tcp = root_client(&server).await;
    http.ping().await.expect("ping");

    // Streams and topics.
    let stream = http.create_stream("orders").await.expect("create stream");
    assert_eq!(stream.name, "orders");
    assert!(
        http.create_stream("orders").await.is_err(),
        "duplicate name"
    );
    let topic = http
        .create_topic(
            &id(stream.id),
            "events",
            2,
            CompressionAlgorithm::None,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("create topic");
    assert_eq!((topic.name.as_str(), topic.partitions_count), ("events", 2));
    assert_eq!(topic.partitions.len(), 2);
    let streams = http.get_streams().await.expect("streams");
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].topics_count, 1);
    let details = http
        .get_stream(&Identifier::named("orders").unwrap())
        .await
        .expect("get stream")
        .expect("the stream exists");
    assert_eq!(details.topics.len(), 1);
    assert!(
        http.get_stream(&id(999)).await.expect("no error").is_none(),
        "a missing stream is None, as over TCP"
    );
    assert!(
        http.get_topic(&id(stream.id), &id(999))
            .await
            .expect("no error")
            .is_none()
    );
    http.update_topic(
        &id(stream.id),
        &id(topic.id),
        "events",
        CompressionAlgorithm::Gzip,
        None,
        IggyExpiry::ExpireDuration(IggyDuration::from_str("1h").unwrap()),
        MaxTopicSize::ServerDefault,
    )
    .await
    .expect("update topic");
    let seen_by_tcp = tcp
        .get_topic(&id(stream.id), &id(topic.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        seen_by_tcp.compression_algorithm,
        CompressionAlgorithm::Gzip
    );
    assert_eq!(
        seen_by_tcp.message_expiry,
        IggyExpiry::ExpireDuration(IggyDuration::from_str("1h").unwrap())
    );
    http.create_partitions(&id(stream.id), &id(topic.id), 2)
        .await
        .expect("create partitions");
    http.delete_partitions(&id(stream.id), &id(topic.id), 2)
        .await
        .expect("delete partitions");
    assert_eq!(
        tcp.get_topic(&id(stream.id), &id(topic.id))
            .await
            .unwrap()
            .unwrap()
            .partitions_count,
        2
    );

    // Messages: HTTP sends, both read; TCP sends, HTTP reads.
    let mut batch = vec![
        message(11, "first", true),
        message(12, "second", false),
        message(0, "server picks my id", false),
    ];
    http.send_messages(
        &Identifier::named("orders").unwrap(),
        &Identifier::named("events").unwrap(),
        &Partitioning::partition_id(0),
        &mut batch,
    )
    .await
    .expect("send over HTTP");
    let mut from_tcp = vec![message(21, "over tcp", true)];
    tcp.send_messages(
        &id(stream.id),
        &id(topic.id),
        &Partitioning::partition_id(0),
        &mut from_tcp,
    )
    .await
    .expect("send over TCP");
    let polled = poll(&http, 0, PollingStrategy::offset(0), 10, false).await;
    assert_eq!(polled.partition_id, 0);
    assert_eq!(polled.current_offset, 3);
    let payloads: Vec<&[u8]> = polled.messages.iter().map(|m| &m.payload[..]).collect();
    assert_eq!(
        payloads,
        [&b"first"[..], b"second", b"server picks my id", b"over tcp"]
    );
    let ids: Vec<u128> = polled.messages.iter().map(|m| m.header.id).collect();
    assert_eq!((ids[0], ids[1], ids[3]), (11, 12, 21));
    assert_ne!(ids[2], 0, "the server gave id 0 a random id");
    let offsets: Vec<u64> = polled.messages.iter().map(|m| m.header.offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3]);
    let headers = polled.messages[0].user_headers_map().unwrap().unwrap();
    assert_eq!(
        headers[&HeaderKey::from_str("name").unwrap()]
            .as_str()
            .unwrap(),
        "value"
    );
    assert_eq!(
        headers[&HeaderKey::from_str("n").unwrap()]
            .as_uint32()
            .unwrap(),
        42
    );
    assert!(
        headers[&HeaderKey::from_str("flag").unwrap()]
            .as_bool()
            .unwrap()
    );
    let tcp_headers = polled.messages[3].user_headers_map().unwrap().unwrap();
    assert_eq!(
        tcp_headers.len(),
        3,
        "headers sent over TCP, read over HTTP"
    );
    // The same bytes over TCP: ids, offsets, timestamps, headers, checksums.
    let over_tcp = tcp
        .poll_messages(
            &id(stream.id),
            &id(topic.id),
            Some(0),
            &Consumer::new(id(8)),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .unwrap();
    for (a, b) in polled.messages.iter().zip(&over_tcp.messages) {
        assert_eq!(a.header.id, b.header.id);
        assert_eq!(a.header.offset, b.header.offset);
        assert_eq!(a.header.timestamp, b.header.timestamp);
        assert_eq!(a.header.origin_timestamp, b.header.origin_timestamp);
        assert_eq!(a.header.checksum, b.header.checksum);
        assert_eq!(a.payload, b.payload);
        // Over HTTP "no headers" arrives as `[]` (upstream always writes the key), which the
        // SDK reads as empty rather than None.
        assert_eq!(
            a.user_headers.as_deref().unwrap_or_default(),
            b.user_headers.as_deref().unwrap_or_default()
        );
    }

    // Polling strategies, auto-commit and stored offsets.
    let first = poll(&http, 0, PollingStrategy::first(), 1, false).await;
    assert_eq!(first.messages[0].header.offset, 0);
    let last = poll(&http, 0, PollingStrategy::last(), 1, false).await;
    assert_eq!(last.messages[0].header.offset, 3);
    let since = poll(
        &http,
        0,
        PollingStrategy::timestamp(IggyTimestamp::from(over_tcp.messages[3].header.timestamp)),
        10,
        false,
    )
    .await;
    assert_eq!(since.messages[0].header.offset, 3);
    let next = poll(&http, 0, PollingStrategy::next(), 2, true).await;
    assert_eq!(next.messages.len(), 2);
    let next = poll(&http, 0, PollingStrategy::next(), 2, true).await;
    assert_eq!(
        next.messages[0].header.offset, 2,
        "auto-commit stored offset 1"
    );
    let stored = http
        .get_consumer_offset(
            &Consumer::new(id(7)),
            &id(stream.id),
            &id(topic.id),
            Some(0),
        )
        .await
        .unwrap()
        .expect("stored by auto-commit");
    assert_eq!((stored.stored_offset, stored.current_offset), (3, 3));
    http.store_consumer_offset(
        &Consumer::new(id(9)),
        &id(stream.id),
        &id(topic.id),
        Some(0),
        1,
    )
    .await
    .expect("store offset");
    let by_tcp = tcp
        .get_consumer_offset(
            &Consumer::new(id(9)),
            &id(stream.id),
            &id(topic.id),
            Some(0),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        by_tcp.stored_offset, 1,
        "offsets are shared across transports"
    );
    http.delete_consumer_offset(
        &Consumer::new(id(9)),
        &id(stream.id),
        &id(topic.id),
        Some(0),
    )
    .await
    .expect("delete offset");
    assert!(
        http.get_consumer_offset(
            &Consumer::new(id(9)),
            &id(stream.id),
            &id(topic.id),
            Some(0)
        )
        .await
        .unwrap()
        .is_none()
    );
    let empty = poll(&http, 1, PollingStrategy::offset(0), 10, false).await;
    assert!(empty.messages.is_empty());
    http.flush_unsaved_buffer(&id(stream.id), &id(topic.id), 0, true)
        .await
        .expect("flush with fsync=true, as the SDK sends it");

    // Consumer groups.
    let group = http
        .create_consumer_group(&id(stream.id), &id(topic.id), "readers")
        .await
        .expect("create group");
    assert_eq!(
        (group.name.as_str(), group.partitions_count),
        ("readers", 2)
    );
    let groups = http
        .get_consumer_groups(&id(stream.id), &id(topic.id))
        .await
        .unwrap();
    assert_eq!(groups.len(), 1);
    let found = http
        .get_consumer_group(
            &id(stream.id),
            &id(topic.id),
            &Identifier::named("readers").unwrap(),
        )
        .await
        .unwrap()
        .expect("group found");
    assert_eq!(found.id, group.id);
    http.delete_consumer_group(&id(stream.id), &id(topic.id), &id(group.id))
        .await
        .expect("delete group");
    assert!(
        http.get_consumer_group(&id(stream.id), &id(topic.id), &id(group.id))
            .await
            .unwrap()
            .is_none()
    );

    // System.
    let stats = http.get_stats().await.expect("stats");
    assert_eq!(stats.streams_count, 1);
    assert_eq!(stats.messages_count, 4);
    assert!(stats.memory_usage.as_bytes_u64() > 0);
    let clients = http.get_clients().await.expect("clients");
    assert_eq!(clients.len(), 1, "the TCP client; HTTP is stateless");
    let client = http
        .get_client(clients[0].client_id)
        .await
        .unwrap()
        .expect("the TCP client");
    assert_eq!(client.transport, "TCP");
    assert!(http.get_client(999_999).await.unwrap().is_none());
    let cluster = http.get_cluster_metadata().await.expect("cluster metadata");
    assert_eq!(cluster.nodes.len(), 1);
    assert_eq!(
        cluster.nodes[0].endpoints.http,
        server.http_address().unwrap().port()
    );
    let snapshot = http
        .snapshot(
            SnapshotCompression::Deflated,
            vec![SystemSnapshotType::ServerConfig],
        )
        .await
        .expect("snapshot");
    assert_eq!(&snapshot.0[..2], b"PK", "a zip archive");

    // Segments, purge, delete.
    http.delete_segments(&id(stream.id), &id(topic.id), 0, 1)
        .await
        .expect("delete segments");
    http.purge_topic(&id(stream.id), &id(topic.id))
        .await
        .expect("purge topic");
    http.purge_stream(&id(stream.id))
        .await
        .expect("purge stream");
    let after = poll(&http, 0, PollingStrategy::offset(0), 10, false).await;
    assert!(after.messages.is_empty(), "purged");
    http.update_stream(&id(stream.id), "orders-2")
        .await
        .expect("rename");
    http.delete_topic(&id(stream.id), &id(topic.id))
        .await
        .expect("delete topic");
    http.delete_stream(&Identifier::named("orders-2").unwrap())
        .await
        .expect("delete stream");
    assert!(tcp.get_streams().await.unwrap().is_empty());
}

#[tokio::test]
async fn users_permissions_tokens_and_logins_over_http() {
    let server = http_server();
    let root = http_root(&server).await;
    let users = root.get_users().await.expect("users");
    assert_eq!(users.len(), 1);
    let me = root.get_user(&id(users[0].id)).await.unwrap().unwrap();
    assert!(me.permissions.unwrap().global.manage_servers);
    assert!(root.get_user(&id(77)).await.unwrap().is_none());

    // A reader: may read streams, nothing else.
    let mut global = GlobalPermissions {
        read_streams: true,
        ..Default::default()
    };
    let reader = root
        .create_user(
            "reader",
            "secret-1",
            UserStatus::Active,
            Some(Permissions {
                global: global.clone(),
                streams: None,
            }),
        )
        .await
        .expect("create user");
    assert_eq!(reader.username, "reader");
    assert!(reader.permissions.as_ref().unwrap().global.read_streams);
    let client = http_client(&server);
    client
        .login_user("reader", "secret-1")
        .await
        .expect("login");
    assert!(client.get_streams().await.is_ok());
    match client.create_stream("not-mine").await {
        Err(IggyError::Unauthorized) => {}
        other => panic!("expected 403 Unauthorized, got {other:?}"),
    }
    // Permissions changed over HTTP apply at once.
    global.manage_streams = true;
    root.update_permissions(
        &Identifier::named("reader").unwrap(),
        Some(Permissions {
            global,
            streams: None,
        }),
    )
    .await
    .expect("update permissions");
    client.create_stream("mine").await.expect("now allowed");
    root.update_user(&id(reader.id), Some("reader-2"), None)
        .await
        .expect("rename");
    root.change_password(&id(reader.id), "secret-1", "secret-2")
        .await
        .expect("change password");
    let again = http_client(&server);
    assert!(again.login_user("reader-2", "secret-1").await.is_err());
    again
        .login_user("reader-2", "secret-2")
        .await
        .expect("new password");

    // Personal access tokens: create, list, log in with one, delete.
    let raw = root
        .create_personal_access_token("ci-token", IggyExpiry::NeverExpire)
        .await
        .expect("create token");
    let tokens = root.get_personal_access_tokens().await.unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0].name, "ci-token");
    let with_token = http_client(&server);
    with_token
        .login_with_personal_access_token(&raw.token)
        .await
        .expect("PAT login over HTTP");
    assert_eq!(with_token.get_streams().await.unwrap().len(), 1);
    root.delete_personal_access_token("ci-token")
        .await
        .expect("delete token");
    assert!(
        http_client(&server)
            .login_with_personal_access_token(&raw.token)
            .await
            .is_err()
    );

    // Deleting a user ends its token: a new user given the same id does not inherit it.
    root.delete_user(&id(reader.id)).await.expect("delete user");
    match again.get_streams().await {
        Err(IggyError::Unauthenticated) => {}
        other => panic!("a deleted user's token must be refused, got {other:?}"),
    }
    let successor = root
        .create_user("successor", "secret-3", UserStatus::Active, None)
        .await
        .unwrap();
    assert_eq!(successor.id, reader.id, "the id is reused");
    assert!(matches!(
        again.get_streams().await,
        Err(IggyError::Unauthenticated)
    ));

    // Logout ends the token.
    root.logout_user().await.expect("logout");
    assert!(matches!(
        root.get_streams().await,
        Err(IggyError::Unauthenticated)
    ));
    assert!(
        http_client(&server)
            .login_user("iggy", "wrong")
            .await
            .is_err()
    );
}
