//! Every command the official SDK 0.11.0 has, against the real server over the 0.9 protocol:
//! system reads, streams, topics with their options, partitions, segments, every polling
//! strategy, flush, consumer offsets, users, permissions, personal access tokens, snapshot and
//! logout; then a restart, after which a 0.11.0 client finds everything where it was.

use iggy_v011::prelude::*;
use rill_integration::TestServer;
use rill_integration::sdk_v011::{
    assert_code, client_as, id, message, named, root_client, send_filler,
};
use std::str::FromStr;

/// A connected 0.11.0 client that has not logged in.
async fn anonymous(server: &TestServer) -> IggyClient {
    let client = IggyClient::builder()
        .with_tcp()
        .with_server_address(server.address().to_string())
        .build()
        .expect("client");
    client.connect().await.expect("connect");
    client
}

async fn send(client: &IggyClient, stream: &Identifier, partitioning: Partitioning, ids: &[u128]) {
    let mut batch: Vec<_> = ids
        .iter()
        .map(|&i| message(i, &format!("m{i}"), None))
        .collect();
    client
        .send_messages(stream, &id(0), &partitioning, &mut batch)
        .await
        .expect("send");
}

async fn poll(
    client: &IggyClient,
    stream: &Identifier,
    partition: u32,
    strategy: PollingStrategy,
    auto_commit: bool,
) -> Vec<(u64, u128)> {
    client
        .poll_messages(
            stream,
            &id(0),
            Some(partition),
            &Consumer::new(id(5)),
            &strategy,
            10,
            auto_commit,
        )
        .await
        .expect("poll")
        .messages
        .iter()
        .map(|m| (m.header.offset, m.header.id))
        .collect()
}

#[tokio::test]
async fn the_whole_command_set_of_sdk_0_11_then_a_restart() {
    let mut server = TestServer::start_default();
    let client = root_client(&server).await;

    // System.
    let metadata = client
        .get_cluster_metadata()
        .await
        .expect("cluster metadata");
    assert_eq!(metadata.nodes.len(), 1, "a single node the SDK stays on");
    assert_eq!(metadata.nodes[0].role, ClusterNodeRole::Leader);
    let me = client.get_me().await.expect("get me");
    let clients = client.get_clients().await.expect("get clients");
    assert!(clients.iter().any(|c| c.client_id == me.client_id));
    let found = client.get_client(me.client_id).await.expect("get client");
    assert_eq!(found.map(|c| c.client_id), Some(me.client_id));
    assert!(
        client
            .get_client(u32::MAX - 1)
            .await
            .expect("get client")
            .is_none()
    );
    client.get_stats().await.expect("stats");
    let snapshot = client
        .snapshot(
            SnapshotCompression::Deflated,
            vec![SystemSnapshotType::Test],
        )
        .await
        .expect("snapshot");
    assert!(snapshot.0.starts_with(b"PK"), "a ZIP archive");

    // Streams.
    let stream = client.create_stream("orders").await.expect("create stream");
    assert_eq!((stream.id, stream.topics_count), (0, 0));
    client
        .update_stream(&id(0), "orders-v2", &StreamUpdateOptions::default())
        .await
        .expect("update stream");
    let found = client.get_stream(&named("orders-v2")).await.unwrap();
    assert_eq!(found.map(|s| s.id), Some(0));
    assert!(
        client
            .get_stream(&named("missing"))
            .await
            .unwrap()
            .is_none()
    );

    // Topics with options.
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        compression_algorithm: Some(CompressionAlgorithm::Gzip),
        message_expiry: Some(IggyExpiry::ExpireDuration(
            IggyDuration::from_str("2h").unwrap(),
        )),
        max_topic_size: Some(MaxTopicSize::from_str("5GiB").unwrap()),
        ..Default::default()
    };
    let topic = client
        .create_topic(&id(0), "events", &options)
        .await
        .expect("create topic");
    assert_eq!(topic.compression_algorithm, CompressionAlgorithm::Gzip);
    assert_eq!(topic.partitions_count, 2);
    let update = TopicUpdateOptions {
        message_expiry: Some(IggyExpiry::ExpireDuration(
            IggyDuration::from_str("3h").unwrap(),
        )),
        ..Default::default()
    };
    client
        .update_topic(&id(0), &id(0), "events", &update)
        .await
        .expect("update topic expiry only");
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(
        topic.message_expiry,
        IggyExpiry::ExpireDuration(IggyDuration::from_str("3h").unwrap())
    );
    assert_eq!(
        topic.compression_algorithm,
        CompressionAlgorithm::Gzip,
        "an absent option leaves the setting as it was"
    );
    client
        .create_partitions(&id(0), &id(0), 2)
        .await
        .expect("create partitions");
    client
        .delete_partitions(&id(0), &id(0), 1)
        .await
        .expect("delete partitions");
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(topic.partitions_count, 3);
    assert_code(
        client
            .create_topic(&id(0), "events", &TopicCreateOptions::default())
            .await,
        2013,
        "a topic name already taken",
    );

    // Messages and every polling strategy.
    let s = id(0);
    send(&client, &s, Partitioning::partition_id(0), &[1, 2, 3]).await;
    send(&client, &s, Partitioning::partition_id(0), &[4, 5]).await;
    assert_eq!(
        poll(&client, &s, 0, PollingStrategy::offset(3), false).await,
        vec![(3, 4), (4, 5)]
    );
    assert_eq!(
        poll(&client, &s, 0, PollingStrategy::first(), false).await[0],
        (0, 1)
    );
    assert_eq!(
        poll(&client, &s, 0, PollingStrategy::last(), false)
            .await
            .last(),
        Some(&(4, 5))
    );
    let all = poll(
        &client,
        &s,
        0,
        PollingStrategy::timestamp(IggyTimestamp::zero()),
        false,
    )
    .await;
    assert_eq!(all.len(), 5);
    assert_eq!(
        poll(&client, &s, 0, PollingStrategy::next(), true)
            .await
            .len(),
        5
    );
    assert!(
        poll(&client, &s, 0, PollingStrategy::next(), true)
            .await
            .is_empty()
    );
    // The SDK resolves these partitionings itself and sends a partition id.
    send(&client, &s, Partitioning::balanced(), &[6]).await;
    send(
        &client,
        &s,
        Partitioning::messages_key_str("k").unwrap(),
        &[7],
    )
    .await;
    client
        .flush_unsaved_buffer(&s, &id(0), 0, true)
        .await
        .expect("flush with fsync");

    // Consumer offsets.
    let consumer = Consumer::new(id(5));
    let stored = client
        .get_consumer_offset(&consumer, &s, &id(0), Some(0))
        .await
        .unwrap()
        .expect("stored by auto-commit");
    assert!(stored.stored_offset >= 4);
    client
        .store_consumer_offset(&consumer, &s, &id(0), Some(0), 1)
        .await
        .expect("store offset");
    assert_code(
        client
            .store_consumer_offset(&consumer, &s, &id(0), Some(0), 99)
            .await,
        4100,
        "an offset beyond the partition",
    );
    client
        .delete_consumer_offset(&consumer, &s, &id(0), Some(0))
        .await
        .expect("delete offset");
    assert!(
        client
            .get_consumer_offset(&consumer, &s, &id(0), Some(0))
            .await
            .unwrap()
            .is_none()
    );

    // Users and permissions.
    let permissions = Permissions {
        global: GlobalPermissions {
            read_streams: true,
            ..Default::default()
        },
        streams: None,
    };
    let ann = client
        .create_user("ann", "first-pass", UserStatus::Active, Some(permissions))
        .await
        .expect("create user");
    assert_eq!(ann.username, "ann");
    client
        .update_user(
            &named("ann"),
            Some("anna"),
            None,
            &UserUpdateOptions::default(),
        )
        .await
        .expect("rename");
    let mut more = Permissions::default();
    more.global.manage_streams = true;
    more.global.read_streams = true;
    client
        .update_permissions(&named("anna"), Some(more))
        .await
        .expect("update permissions");
    client
        .change_password(&named("anna"), "first-pass", "second-pass")
        .await
        .expect("change password");
    let anna = client_as(&server, "anna", "second-pass").await;
    let created = anna
        .create_stream("annas")
        .await
        .expect("anna manages streams");
    assert_code(anna.get_users().await, 41, "anna may not read users");
    let found = client.get_user(&named("anna")).await.unwrap().unwrap();
    assert!(found.permissions.is_some_and(|p| p.global.manage_streams));

    // Personal access tokens.
    let token = client
        .create_personal_access_token("ci-token", IggyExpiry::NeverExpire)
        .await
        .expect("create token");
    let tokens = client.get_personal_access_tokens().await.unwrap();
    assert_eq!(tokens.len(), 1);
    let by_token = anonymous(&server).await;
    let identity = by_token
        .login_with_personal_access_token(&token.token)
        .await
        .expect("login with the token");
    assert_eq!(identity.user_id, 0);
    assert_eq!(
        by_token
            .get_streams()
            .await
            .expect("streams with the token")
            .len(),
        2
    );
    assert_code(
        anonymous(&server)
            .await
            .login_with_personal_access_token("not-a-token")
            .await,
        53,
        "an unknown token",
    );
    client
        .delete_personal_access_token("ci-token")
        .await
        .expect("delete token");

    // Deletes and purges.
    client.purge_topic(&s, &id(0)).await.expect("purge topic");
    assert!(
        poll(&client, &s, 0, PollingStrategy::first(), false)
            .await
            .is_empty()
    );
    client
        .delete_segments(&s, &id(0), 0, 1)
        .await
        .expect("delete segments");
    client
        .purge_stream(&id(created.id))
        .await
        .expect("purge stream");
    client
        .delete_stream(&id(created.id))
        .await
        .expect("delete stream");
    client
        .delete_user(&named("anna"))
        .await
        .expect("delete user");
    // The session ends (40); the SDK then logs in again by itself and is refused (42).
    let ended = anna
        .get_streams()
        .await
        .expect_err("a deleted user's session ends");
    assert!(matches!(ended.as_code(), 40 | 42), "{ended}");

    // The state outlives a restart.
    send(&client, &s, Partitioning::partition_id(1), &[50, 51]).await;
    client.logout_user().await.expect("logout");
    server.restart();
    let again = root_client(&server).await;
    let streams = again.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].name, "orders-v2");
    let topic = again.get_topic(&s, &id(0)).await.unwrap().unwrap();
    assert_eq!(
        (topic.partitions_count, topic.compression_algorithm),
        (3, CompressionAlgorithm::Gzip)
    );
    assert_eq!(
        poll(&again, &s, 1, PollingStrategy::first(), false).await,
        vec![(0, 50), (1, 51)],
        "the purge restarted the offsets; the messages after it survived"
    );
}

async fn segments(client: &IggyClient, topic: &Identifier) -> u32 {
    let topic = client.get_topic(&id(0), topic).await.unwrap().unwrap();
    topic.partitions[0].segments_count
}

/// A topic's segment size as SDK 0.11.0 shows it in `Topic::options`, and whether it is marked
/// as the client's choice (explicit) or the server's (derived); read with GetTopic and GetTopics.
async fn reported_segment_size(client: &IggyClient, name: &str) -> (u64, bool) {
    let from_options = |options: &ResourceOptions| {
        let (_, option) = options
            .iter()
            .find(|(key, _)| key.as_bytes() == b"segment_size")
            .expect("segment_size among the topic's options");
        (option.value.as_uint64().expect("a u64"), option.explicit)
    };
    let topic = client
        .get_topic(&id(0), &named(name))
        .await
        .unwrap()
        .unwrap();
    let listed = client.get_topics(&id(0)).await.unwrap();
    let listed = listed
        .iter()
        .find(|topic| topic.name == name)
        .expect("listed");
    assert_eq!(from_options(&listed.options), from_options(&topic.options));
    from_options(&topic.options)
}

#[tokio::test]
async fn a_topic_keeps_its_own_segment_size_through_a_restart() {
    // Proves: CreateTopic's `segment_size` option (SDK 0.11.0's TopicCreateOptions) sizes that
    // topic's segments and no other's, is kept across a restart, and is what a finite
    // max_topic_size must hold. How: two topics, one with 1 MiB segments; about 3.1 MB into
    // each; segment counts read back with GetTopic, then again after a restart and more sends.
    let mut server = TestServer::start_default();
    let client = root_client(&server).await;
    client.create_stream("sized").await.expect("stream");
    let mib = IggyByteSize::from(1u64 << 20);
    let small = TopicCreateOptions {
        partitions_count: Some(1),
        segment_size: Some(mib),
        ..Default::default()
    };
    client
        .create_topic(&id(0), "small", &small)
        .await
        .expect("a topic with 1 MiB segments");
    let plain = TopicCreateOptions {
        partitions_count: Some(1),
        ..Default::default()
    };
    client
        .create_topic(&id(0), "plain", &plain)
        .await
        .expect("a topic with the server's segments");

    // A 2 MiB cap holds two 1 MiB segments, not one of the server's 1 GiB.
    let cap = Some(MaxTopicSize::from_str("2MiB").unwrap());
    let capped = TopicCreateOptions {
        max_topic_size: cap,
        ..small.clone()
    };
    client
        .create_topic(&id(0), "capped", &capped)
        .await
        .expect("2 MiB over 1 MiB segments");
    let capped_plain = TopicCreateOptions {
        max_topic_size: cap,
        ..plain.clone()
    };
    assert_code(
        client
            .create_topic(&id(0), "capped-plain", &capped_plain)
            .await,
        1019,
        "2 MiB cannot hold one 1 GiB segment",
    );
    let odd = TopicCreateOptions {
        segment_size: Some(IggyByteSize::from((1u64 << 20) + 100)),
        ..plain.clone()
    };
    assert_code(
        client.create_topic(&id(0), "odd", &odd).await,
        4042,
        "a segment size that is not a multiple of 512",
    );

    assert_eq!(
        reported_segment_size(&client, "small").await,
        (1 << 20, true)
    );
    assert_eq!(
        reported_segment_size(&client, "plain").await,
        (1 << 30, false),
        "the server's default, as a derived option"
    );

    send_filler(&client, &id(0), &named("small"), 12).await;
    send_filler(&client, &id(0), &named("plain"), 12).await;
    let before = segments(&client, &named("small")).await;
    assert!(before >= 3, "3.1 MB in 1 MiB segments: {before} segments");
    assert_eq!(segments(&client, &named("plain")).await, 1);

    client.logout_user().await.expect("logout");
    server.restart();
    let client = root_client(&server).await;
    assert_eq!(segments(&client, &named("small")).await, before);
    assert_eq!(
        reported_segment_size(&client, "small").await,
        (1 << 20, true)
    );
    send_filler(&client, &id(0), &named("small"), 8).await;
    let after = segments(&client, &named("small")).await;
    assert!(
        after >= before + 2,
        "2 MB more after the restart still rotate every MiB: {before} -> {after}"
    );
    send_filler(&client, &id(0), &named("plain"), 8).await;
    assert_eq!(segments(&client, &named("plain")).await, 1);
}
