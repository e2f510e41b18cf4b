//! The official SDK 0.10.0 and 0.11.0 clients over ws and wss, and data crossing between
//! WebSocket and TCP.

use crate::helpers::{OPTIONS, connect, send_and_poll_back, ws_client};
use crate::raw_ws::upgrade_request;
use iggy::prelude::*;
use rill_integration::fixtures::{message_id, test_messages};
use rill_integration::sdk::{create_stream, create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdk_over_websocket_does_what_it_does_over_tcp() {
    let server = TestServer::start(ServerOptions::new().shards(2));
    let client = ws_client(&server).await;
    client.ping().await.expect("ping over WebSocket");
    let me = client.get_me().await.expect("get_me");
    assert_eq!(me.transport.to_lowercase(), "websocket", "{me:?}");

    let stream = create_stream(&client, "over-ws").await;
    create_topic(&client, stream, "t", 2).await;
    // Small batches, then large ones: a 1 MB request arrives in many reads, and a poll answer
    // of several hundred KiB leaves as one message of several frames.
    send_and_poll_back(&client, stream, 3, 300, 50).await;
    let big = create_stream(&client, "big-over-ws").await;
    create_topic(&client, big, "t", 1).await;
    let (b, t0) = (id(big), id(0));
    for round in 0..3u64 {
        let mut batch: Vec<IggyMessage> = (0..16)
            .map(|i| {
                IggyMessage::builder()
                    .id(u128::from(round * 16 + i + 1))
                    .payload(bytes::Bytes::from(vec![(round * 16 + i) as u8; 64 * 1024]))
                    .build()
                    .expect("message")
            })
            .collect();
        client
            .send_messages(&b, &t0, &Partitioning::partition_id(0), &mut batch)
            .await
            .expect("1 MiB batch over WebSocket");
    }
    let polled = client
        .poll_messages(
            &b,
            &t0,
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            48,
            false,
        )
        .await
        .expect("poll 3 MiB");
    assert_eq!(polled.messages.len(), 48);
    for (i, message) in polled.messages.iter().enumerate() {
        assert_eq!(message.payload.len(), 64 * 1024);
        assert!(
            message.payload.iter().all(|byte| *byte == i as u8),
            "payload {i}"
        );
    }

    // Polling strategies and stored offsets.
    let (s, t) = (id(stream), id(0));
    let reader = Consumer::new(id(7));
    let first = client
        .poll_messages(
            &s,
            &t,
            Some(0),
            &reader,
            &PollingStrategy::first(),
            10,
            false,
        )
        .await
        .expect("poll first");
    assert_eq!(first.messages[0].header.offset, 0);
    client
        .store_consumer_offset(&reader, &s, &t, Some(0), 41)
        .await
        .expect("store offset");
    let stored = client
        .get_consumer_offset(&reader, &s, &t, Some(0))
        .await
        .expect("get offset")
        .expect("an offset is stored");
    assert_eq!(stored.stored_offset, 41);
    let next = client
        .poll_messages(&s, &t, Some(0), &reader, &PollingStrategy::next(), 10, true)
        .await
        .expect("poll next");
    assert_eq!(next.messages[0].header.offset, 42);
    let last = client
        .poll_messages(&s, &t, Some(0), &reader, &PollingStrategy::last(), 1, false)
        .await
        .expect("poll last");
    assert_eq!(last.messages[0].header.offset, 299);

    // Consumer groups.
    client
        .create_consumer_group(&s, &t, "readers")
        .await
        .expect("create group");
    client
        .join_consumer_group(&s, &t, &named("readers"))
        .await
        .expect("join group");
    let group = client
        .get_consumer_group(&s, &t, &named("readers"))
        .await
        .expect("get group")
        .expect("the group exists");
    assert_eq!(group.members_count, 1);
    let mut polled = 0;
    for _ in 0..4 {
        polled += client
            .poll_messages(
                &s,
                &t,
                None,
                &Consumer::group(named("readers")),
                &PollingStrategy::next(),
                1000,
                true,
            )
            .await
            .expect("group poll")
            .messages
            .len();
    }
    assert_eq!(polled, 300, "the group reads partition 0 once");
    client
        .leave_consumer_group(&s, &t, &named("readers"))
        .await
        .expect("leave group");

    // Users, stats, clients, cluster metadata.
    client
        .create_user("ws-user", "secret-pass", UserStatus::Active, None)
        .await
        .expect("create user");
    let user = client.get_user(&named("ws-user")).await.expect("get user");
    assert!(user.is_some());
    client
        .delete_user(&named("ws-user"))
        .await
        .expect("delete user");
    let stats = client.get_stats().await.expect("stats");
    assert_eq!(stats.streams_count, 2);
    assert_eq!(stats.messages_count, 348);
    let metadata = client
        .get_cluster_metadata()
        .await
        .expect("cluster metadata");
    let node = &metadata.nodes[0];
    assert_eq!(
        node.endpoints.websocket,
        server.websocket_address().port(),
        "{metadata:?}"
    );
    let clients = client.get_clients().await.expect("get_clients");
    assert!(
        clients
            .iter()
            .any(|c| c.transport.to_lowercase() == "websocket"),
        "{clients:?}"
    );
    client.logout_user().await.expect("logout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_crosses_between_websocket_and_tcp() {
    let server = TestServer::start(ServerOptions::new());
    let ws = ws_client(&server).await;
    let tcp = root_client(&server).await;
    let stream = create_stream(&ws, "crossing").await;
    create_topic(&ws, stream, "t", 1).await;
    let (s, t) = (id(stream), id(0));
    let mut from_ws = test_messages(1, 0, 20);
    ws.send_messages(&s, &t, &Partitioning::partition_id(0), &mut from_ws)
        .await
        .expect("send over WebSocket");
    let mut from_tcp = test_messages(2, 20, 20);
    tcp.send_messages(&s, &t, &Partitioning::partition_id(0), &mut from_tcp)
        .await
        .expect("send over TCP");
    for (client, name) in [(&ws, "WebSocket"), (&tcp, "TCP")] {
        let polled = client
            .poll_messages(
                &s,
                &t,
                Some(0),
                &Consumer::new(id(3)),
                &PollingStrategy::offset(0),
                100,
                false,
            )
            .await
            .unwrap_or_else(|error| panic!("poll over {name}: {error}"));
        assert_eq!(polled.messages.len(), 40, "over {name}");
        for (offset, message) in polled.messages.iter().enumerate() {
            let tag = if offset < 20 { 1 } else { 2 };
            assert_eq!(
                message.header.id,
                message_id(tag, offset as u64),
                "over {name}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdk_0_11_speaks_0_9_over_websocket() {
    use iggy_v011::prelude::{
        Client as _, Consumer as Consumer11, IggyClient as Client11, MessageClient as _,
        Partitioning as Partitioning11, PollingStrategy as Strategy11, StreamClient as _,
        SystemClient as _, TopicClient as _,
    };
    use rill_integration::sdk_v011::{id as id11, message};
    let server = TestServer::start(ServerOptions::new());
    let connection = format!("iggy+ws://iggy:iggy@{}", server.websocket_address());
    let client = Client11::from_connection_string(&connection).expect("connection string");
    client
        .connect()
        .await
        .expect("0.11 client connects over WebSocket");
    client.ping().await.expect("ping");
    let me = client.get_me().await.expect("get_me");
    assert_eq!(me.user_id, Some(0), "{me:?}");
    client.create_stream("v09-ws").await.expect("create stream");
    let options = iggy_v011::prelude::TopicCreateOptions {
        partitions_count: Some(1),
        ..Default::default()
    };
    client
        .create_topic(&id11(0), "t", &options)
        .await
        .expect("create topic");
    let mut messages: Vec<_> = (1..=10)
        .map(|i| message(i, &format!("payload {i}"), Some("ws")))
        .collect();
    client
        .send_messages(
            &id11(0),
            &id11(0),
            &Partitioning11::partition_id(0),
            &mut messages,
        )
        .await
        .expect("send over 0.9 WebSocket");
    let polled = client
        .poll_messages(
            &id11(0),
            &id11(0),
            Some(0),
            &Consumer11::new(id11(1)),
            &Strategy11::offset(0),
            100,
            false,
        )
        .await
        .expect("poll over 0.9 WebSocket");
    assert_eq!(polled.messages.len(), 10);
    assert_eq!(&polled.messages[3].payload[..], b"payload 4");
    // What the 0.11 client sent is read back by a 0.8 client over TCP.
    let tcp = root_client(&server).await;
    let polled = tcp
        .poll_messages(
            &id(0),
            &id(0),
            Some(0),
            &Consumer::new(id(2)),
            &PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .expect("poll over TCP");
    assert_eq!(polled.messages.len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_with_the_generated_certificate() {
    let server = TestServer::start(ServerOptions::new().env("IGGY_WEBSOCKET_TLS_ENABLED", "true"));
    let certificate = server
        .data_path()
        .join("certs")
        .join("websocket-self-signed.pem");
    assert!(certificate.is_file(), "{}", certificate.display());
    let connection = format!(
        "iggy+ws://iggy:iggy@{}?{OPTIONS}&tls=true&tls_domain=localhost&tls_ca_file={}",
        server.websocket_address(),
        certificate.display()
    );
    let client = connect(&connection).await;
    client.ping().await.expect("ping over wss");
    let stream = create_stream(&client, "over-wss").await;
    create_topic(&client, stream, "t", 1).await;
    send_and_poll_back(&client, stream, 5, 200, 100).await;
    // The plain-text handshake is not answered on the TLS port.
    let mut raw = TcpStream::connect(server.websocket_address()).expect("connect");
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(upgrade_request("/").as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/1.1 101"),
        "no plain upgrade on the wss port"
    );
    client.ping().await.expect("the wss client still works");
}
