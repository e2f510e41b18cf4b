//! The Iggy 0.9 protocol beside 0.8 on the same port (protocol-0.9.md): the official
//! 0.9-generation SDK (`iggy` 0.11.0) logs in, manages streams, topics and users, sends, polls
//! and stores offsets against the real server; what one generation writes the other reads with
//! identical ids, offsets, timestamps, headers and payloads; bad 0.9 input is refused without
//! harming 0.8 clients.

use bytes::Bytes;
use iggy::prelude::{
    ConsumerOffsetClient as _, IggyMessage as V10Message, MessageClient as _,
    Partitioning as V10Partitioning, PollingStrategy as V10Strategy,
};
use iggy_v011::prelude as v11;
use iggy_v011::prelude::{
    Client as _, ConsumerGroupClient as _, ConsumerOffsetClient as _, MessageClient as _,
    StreamClient as _, SystemClient as _, TopicClient as _, UserClient as _,
};
use rill_integration::sdk::{consumer, id, root_client};
use rill_integration::{TestServer, sdk_v011};
use std::str::FromStr;

/// (id, offset, timestamp, origin timestamp, payload, user header bytes) of a polled message.
type Seen = (u128, u64, u64, u64, Vec<u8>, Vec<u8>);

/// The [`Seen`] values of polled messages of either SDK generation (their types differ, their
/// field names do not).
macro_rules! seen {
    ($messages:expr) => {
        $messages
            .iter()
            .map(|m| {
                let headers = m.user_headers.as_ref().map(|h| h.to_vec());
                (
                    m.header.id,
                    m.header.offset,
                    m.header.timestamp,
                    m.header.origin_timestamp,
                    m.payload.to_vec(),
                    headers.unwrap_or_default(),
                )
            })
            .collect()
    };
}

#[tokio::test]
async fn the_0_11_sdk_and_the_0_10_sdk_share_one_server_and_one_store() {
    let server = TestServer::start_default();
    let new = sdk_v011::root_client(&server).await;
    new.ping().await.expect("ping");

    let stream = new
        .create_stream("generations")
        .await
        .expect("create stream");
    assert_eq!(stream.id, 0);
    assert_eq!(stream.name, "generations");
    let options = v11::TopicCreateOptions {
        partitions_count: Some(2),
        ..Default::default()
    };
    let topic = new
        .create_topic(&sdk_v011::id(0), "events", &options)
        .await
        .expect("create topic with the SDK's default options");
    assert_eq!((topic.id, topic.partitions_count), (0, 2));
    let streams = new.get_streams().await.expect("get streams");
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].topics_count, 1);
    let topics = new.get_topics(&sdk_v011::id(0)).await.expect("get topics");
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].name, "events");

    // 0.9 writes, both generations read.
    let mut batch = vec![
        sdk_v011::message(101, "first", Some("new")),
        sdk_v011::message(102, "second", None),
        sdk_v011::message(103, "third", Some("new")),
    ];
    let confirmed = new
        .send_messages(
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            &v11::Partitioning::partition_id(1),
            &mut batch,
        )
        .await
        .expect("send from 0.11");
    let confirmations: Vec<_> = confirmed
        .confirmations
        .iter()
        .map(|c| (c.stream_id, c.topic_id, c.partition_id, c.base_offset))
        .collect();
    assert_eq!(confirmations, vec![(0, 0, 1, 0)], "the send is confirmed");

    let polled = new
        .poll_messages(
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            Some(1),
            &v11::Consumer::new(sdk_v011::id(9)),
            &v11::PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll from 0.11");
    assert_eq!((polled.partition_id, polled.current_offset), (1, 2));
    let seen_new: Vec<Seen> = seen!(polled.messages);
    assert_eq!(seen_new.len(), 3);
    assert_eq!(seen_new[0].0, 101);
    assert_eq!(seen_new[2].4, b"third".to_vec());
    assert!(!seen_new[0].5.is_empty(), "user headers travel");

    let old = root_client(&server).await;
    let polled_old = old
        .poll_messages(
            &id(0),
            &id(0),
            Some(1),
            &consumer(9),
            &V10Strategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll from 0.10");
    let seen_old: Vec<Seen> = seen!(polled_old.messages);
    assert_eq!(seen_old, seen_new, "both generations see the same messages");

    // 0.8 writes, 0.9 reads.
    let mut old_batch: Vec<V10Message> = (0..2)
        .map(|i| {
            V10Message::builder()
                .id(200 + i)
                .payload(Bytes::from(format!("old-{i}")))
                .build()
                .unwrap()
        })
        .collect();
    old.send_messages(
        &id(0),
        &id(0),
        &V10Partitioning::partition_id(1),
        &mut old_batch,
    )
    .await
    .expect("send from 0.10");
    let polled = new
        .poll_messages(
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            Some(1),
            &v11::Consumer::new(sdk_v011::id(9)),
            &v11::PollingStrategy::offset(3),
            10,
            false,
        )
        .await
        .expect("poll 0.10's messages from 0.11");
    let ids: Vec<(u128, u64, Vec<u8>)> = polled
        .messages
        .iter()
        .map(|m| (m.header.id, m.header.offset, m.payload.to_vec()))
        .collect();
    assert_eq!(
        ids,
        vec![(200, 3, b"old-0".to_vec()), (201, 4, b"old-1".to_vec())]
    );

    // Offsets stored by one generation are read by the other.
    new.store_consumer_offset(
        &v11::Consumer::new(sdk_v011::id(9)),
        &sdk_v011::id(0),
        &sdk_v011::id(0),
        Some(1),
        3,
    )
    .await
    .expect("store offset from 0.11");
    let stored = old
        .get_consumer_offset(&consumer(9), &id(0), &id(0), Some(1))
        .await
        .expect("get offset from 0.10")
        .expect("an offset");
    assert_eq!(stored.stored_offset, 3);
    let stored = new
        .get_consumer_offset(
            &v11::Consumer::new(sdk_v011::id(9)),
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            Some(1),
        )
        .await
        .expect("get offset from 0.11")
        .expect("an offset");
    assert_eq!((stored.stored_offset, stored.current_offset), (3, 4));
}

#[tokio::test]
async fn sessions_users_options_and_groups_work_for_the_0_11_sdk() {
    let server = TestServer::start_default();
    let client = sdk_v011::root_client(&server).await;

    let me = client.get_me().await.expect("get me");
    assert_eq!(me.user_id, Some(0));
    let options = client
        .describe_options(v11::OptionsScope::Topic)
        .await
        .expect("describe topic options");
    assert!(options.iter().any(|o| o.key == "durability"));

    client.create_stream("s").await.unwrap();
    let mut options = v11::TopicCreateOptions {
        partitions_count: Some(3),
        ..Default::default()
    };
    options.message_expiry = Some(v11::IggyExpiry::ExpireDuration(
        v11::IggyDuration::from_str("1h").unwrap(),
    ));
    let topic = client
        .create_topic(&sdk_v011::id(0), "t", &options)
        .await
        .unwrap();
    assert_eq!(
        topic.message_expiry,
        v11::IggyExpiry::ExpireDuration(v11::IggyDuration::from_str("1h").unwrap())
    );
    let duplicate = client.create_stream("s").await.unwrap_err();
    assert_eq!(duplicate.as_code(), 1012, "stream name already exists");

    // Users: create, list, and a login as that user on another connection.
    client
        .create_user("ann", "secret-pass", v11::UserStatus::Active, None)
        .await
        .expect("create user");
    let users = client.get_users().await.unwrap();
    assert_eq!(users.len(), 2);
    let connection = format!("iggy://ann:secret-pass@{}", server.address());
    let ann = v11::IggyClient::from_connection_string(&connection).unwrap();
    ann.connect().await.expect("ann logs in");
    let denied = ann.create_stream("nope").await.unwrap_err();
    assert_eq!(denied.as_code(), 41, "ann may not manage streams");
    let wrong = format!("iggy://ann:wrong-pass@{}", server.address());
    let wrong = v11::IggyClient::from_connection_string(&wrong).unwrap();
    let refused = wrong.connect().await.unwrap_err();
    assert_eq!(
        refused.as_code(),
        42,
        "a wrong password is InvalidCredentials"
    );

    // Consumer groups: join, then the SDK syncs and polls the member's partitions.
    client
        .create_consumer_group(&sdk_v011::id(0), &sdk_v011::id(0), "g")
        .await
        .expect("create group");
    client
        .join_consumer_group(&sdk_v011::id(0), &sdk_v011::id(0), &sdk_v011::id(0))
        .await
        .expect("join group");
    let group = client
        .get_consumer_group(&sdk_v011::id(0), &sdk_v011::id(0), &sdk_v011::id(0))
        .await
        .unwrap()
        .expect("the group");
    assert_eq!(group.members_count, 1);
    assert_eq!(group.members[0].partitions_count, 3);
    let mut batch = vec![sdk_v011::message(1, "grouped", None)];
    client
        .send_messages(
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            &v11::Partitioning::partition_id(2),
            &mut batch,
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let polled = client
            .poll_messages(
                &sdk_v011::id(0),
                &sdk_v011::id(0),
                Some(2),
                &v11::Consumer::group(sdk_v011::id(0)),
                &v11::PollingStrategy::next(),
                10,
                true,
            )
            .await
            .expect("group poll");
        seen.extend(polled.messages.into_iter().map(|m| m.payload.to_vec()));
    }
    assert_eq!(seen, vec![b"grouped".to_vec()], "read once, then committed");
    client
        .leave_consumer_group(&sdk_v011::id(0), &sdk_v011::id(0), &sdk_v011::id(0))
        .await
        .expect("leave group");
    client.logout_user().await.expect("logout");
}

/// Creates stream `stream` with topic "t" over a 0.11 client and sends `batch` to its partition
/// 0; returns the stream's identifier.
async fn send_to_new_topic(
    client: &v11::IggyClient,
    stream: &str,
    mut batch: Vec<v11::IggyMessage>,
) -> v11::Identifier {
    let created = client.create_stream(stream).await.expect("create stream");
    let stream_id = sdk_v011::id(created.id);
    client
        .create_topic(&stream_id, "t", &v11::TopicCreateOptions::default())
        .await
        .expect("create topic");
    client
        .send_messages(
            &stream_id,
            &sdk_v011::id(0),
            &v11::Partitioning::partition_id(0),
            &mut batch,
        )
        .await
        .expect("send");
    stream_id
}

/// Sends three messages and polls them back over one 0.11 client; returns the payloads.
async fn round_trip(client: &v11::IggyClient, stream: &str) -> Vec<Vec<u8>> {
    let batch = (1..=3)
        .map(|i| sdk_v011::message(i, &format!("{stream}-{i}"), None))
        .collect();
    let stream_id = send_to_new_topic(client, stream, batch).await;
    let polled = client
        .poll_messages(
            &stream_id,
            &sdk_v011::id(0),
            Some(0),
            &v11::Consumer::new(sdk_v011::id(1)),
            &v11::PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll");
    polled.messages.iter().map(|m| m.payload.to_vec()).collect()
}

#[tokio::test]
async fn the_0_11_sdk_works_over_tls_and_quic() {
    let server = TestServer::start(
        rill_integration::ServerOptions::new().env("IGGY_TCP_TLS_ENABLED", "true"),
    );
    let certificate = server.data_path().join("certs").join("tcp-self-signed.pem");
    let tls = v11::IggyClient::from_connection_string(&format!(
        "iggy+tcp://iggy:iggy@{}?tls=true&tls_domain=localhost&tls_ca_file={}",
        server.tcp_address(),
        certificate.display()
    ))
    .unwrap();
    tls.connect().await.expect("0.11 over TLS");
    assert_eq!(
        round_trip(&tls, "tls").await,
        vec![b"tls-1".to_vec(), b"tls-2".to_vec(), b"tls-3".to_vec()]
    );

    let quic = v11::IggyClient::from_connection_string(&format!(
        "iggy+quic://iggy:iggy@{}",
        server.quic_address()
    ))
    .unwrap();
    quic.connect().await.expect("0.11 over QUIC");
    assert_eq!(
        round_trip(&quic, "quic").await,
        vec![b"quic-1".to_vec(), b"quic-2".to_vec(), b"quic-3".to_vec()]
    );
    let me = quic.get_me().await.expect("get me over QUIC");
    assert_eq!(me.transport.to_lowercase(), "quic");
}

/// The official Python client of the 0.9 generation: streams, topics, send, poll and a
/// consumer group; what it wrote, the 0.10 Rust SDK reads back identically.
#[tokio::test]
async fn the_python_0_9_client_works_and_its_messages_read_back_over_0_8() {
    let server = TestServer::start_default();
    // The server is another process: blocking this test's thread on the script is harmless.
    let address = server.address().to_string();
    let result = sdk_v011::run_python("v09_client.py", &[&address, "py"], || server.log_tail());
    let seen: serde_json::Value = serde_json::from_slice(&result).expect("the script's JSON line");
    assert_eq!(seen["partitions"], 2);
    assert_eq!(
        seen["polled"],
        serde_json::json!([[0, "p1-0"], [1, "p1-1"], [2, "p1-2"]])
    );
    assert_eq!(
        seen["consumed"],
        serde_json::json!(["p0-0", "p0-1", "p1-0", "p1-1", "p1-2"]),
        "the group reads every partition once"
    );

    let old = root_client(&server).await;
    let polled = old
        .poll_messages(
            &rill_integration::sdk::named("py"),
            &rill_integration::sdk::named("t"),
            Some(0),
            &consumer(1),
            &V10Strategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll from 0.10");
    let payloads: Vec<_> = polled.messages.iter().map(|m| m.payload.to_vec()).collect();
    assert_eq!(payloads, vec![b"p0-0".to_vec(), b"p0-1".to_vec()]);
    assert!(
        polled.messages.iter().all(|m| m.header.id != 0),
        "ids minted by the client"
    );
}

/// A batch the official 0.11 SDK sent is polled back with every frame and batch checksum right,
/// whole (the server sends the SDK's own frame checksums back) and from its middle (the server
/// computes them), from the read cache and, after a restart, from disk.
#[tokio::test]
async fn polled_checksums_hold_for_whole_and_partial_batches_sent_by_the_0_11_sdk() {
    use rill_integration::raw_v09;
    use rill_sdk::rill_core;
    use rill_sdk::rill_core::Encode;
    use rill_sdk::rill_core::primitives::{Consumer, PollingKind, PollingStrategy};
    let mut server = TestServer::start(rill_integration::ServerOptions::new());
    let client = sdk_v011::root_client(&server).await;
    let batch = (1..=5)
        .map(|i| sdk_v011::message(i, &"x".repeat(100 * i as usize), Some("h")))
        .collect();
    send_to_new_topic(&client, "s", batch).await;
    drop(client);
    let poll = |address, offset: u64| {
        let mut raw = raw_v09::Client::connect(address);
        raw.login_root();
        let body = rill_core::requests::PollMessages {
            consumer: Consumer::new(rill_core::primitives::Identifier::Numeric(1)),
            stream_id: rill_core::primitives::Identifier::Numeric(0),
            topic_id: rill_core::primitives::Identifier::Numeric(0),
            partition_id: rill_core::primitives::OptionalPartition(Some(0)),
            strategy: PollingStrategy {
                kind: PollingKind::Offset,
                value: offset,
            },
            count: 10,
            auto_commit: false,
        }
        .to_bytes();
        let reply = raw.call(&raw.read_only(100), &body);
        assert_eq!(reply.status(), 0, "poll from {offset}");
        // Checks every frame checksum and every batch checksum.
        let (_, _, messages) = rill_core::v09::batch::decode_polled(&reply.body)
            .unwrap_or_else(|error| panic!("poll from {offset}: {error}"));
        messages
            .iter()
            .map(|m| (m.id, m.offset, m.payload.len()))
            .collect::<Vec<_>>()
    };
    let expected: Vec<_> = (1..=5u64)
        .map(|i| (i as u128, i - 1, 100 * i as usize))
        .collect();
    for _ in 0..2 {
        assert_eq!(poll(server.address(), 0), expected, "whole batch");
        assert_eq!(poll(server.address(), 2), expected[2..], "from its middle");
        // Again from disk, where nothing but the stored messages is left.
        server.restart();
    }
}
