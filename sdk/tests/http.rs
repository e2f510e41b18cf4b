//! The client over the HTTP REST API against the real server: HTTP and HTTPS (the generated
//! certificate as CA file): login, streams and topics, users, sends and polls with headers,
//! consumer offsets, stats; what HTTP cannot do is refused clearly; data written over HTTP is
//! read over TCP.

use rill_testkit as common;

use bytes::Bytes;
use common::{ServerOptions, TestServer};
use rill_core::ErrorCode;
use rill_sdk::types::{Consumer, Partitioning, PollingStrategy};
use rill_sdk::{Client, HeaderValue, Message, SendMessage, TopicOptions};

async fn connect(text: &str) -> Client {
    let client = Client::from_connection_string(text).unwrap();
    client.connect().await.unwrap();
    client
}

fn http_address(server: &TestServer) -> std::net::SocketAddr {
    server.http_address().expect("the HTTP API listens")
}

#[tokio::test]
async fn commands_over_http() {
    let server = TestServer::start_default();
    let client = connect(&format!("iggy+http://iggy:iggy@{}", http_address(&server))).await;
    exercise(&client).await;
    // The same data over TCP.
    let tcp = connect(&server.connection_string()).await;
    let polled = tcp
        .poll_messages(
            "s",
            "t",
            Some(1),
            &Consumer::new(8),
            PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    let over_tcp: Vec<Message> = Message::from_polled(&polled).collect();
    assert_eq!(over_tcp.len(), 40);
    assert_eq!(over_tcp[3].id(), 1003);
    // What HTTP has no call for is refused with FeatureUnavailable (5), as upstream's SDK does.
    let error = client.get_me().await.unwrap_err();
    assert_eq!(
        error.server_code(),
        Some(ErrorCode::FeatureUnavailable),
        "{error}"
    );
}

#[tokio::test]
async fn commands_over_https() {
    let server = TestServer::start(ServerOptions::new().env("IGGY_HTTP_TLS_ENABLED", "true"));
    let certificate = server
        .data_path()
        .join("certs")
        .join("http-self-signed.pem");
    let client = connect(&format!(
        "iggy+http://iggy:iggy@{}?tls=true&tls_domain=localhost&tls_validate_certificate=true&\
         tls_ca_file={}",
        http_address(&server),
        certificate.display()
    ))
    .await;
    exercise(&client).await;
}

/// Everything a producer and a consumer do, checked end to end.
async fn exercise(client: &Client) {
    client.ping().await.unwrap();
    client.create_stream("s").await.unwrap();
    client
        .create_topic("s", "t", 2, TopicOptions::default())
        .await
        .unwrap();
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].topics_count, 1);
    assert!(client.get_stream("missing").await.unwrap().is_none());
    let topic = client.get_topic("s", "t").await.unwrap().unwrap();
    assert_eq!(topic.partitions.len(), 2);

    let outgoing: Vec<_> = (0..40u128)
        .map(|i| {
            let mut payload = vec![i as u8; 1_000];
            payload[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let message = SendMessage::new(Bytes::from(payload)).with_id(1000 + i);
            let message = if i % 3 == 0 {
                message.with_header("kind", HeaderValue::String("third".into()))
            } else {
                message
            };
            message.into_outgoing().unwrap()
        })
        .collect();
    client
        .send_messages("s", "t", Partitioning::PartitionId(1), &outgoing)
        .await
        .unwrap();

    let consumer = Consumer::new(7);
    let polled = client
        .poll_messages(
            "s",
            "t",
            Some(1),
            &consumer,
            PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    assert_eq!(polled.current_offset, 39);
    let messages: Vec<Message> = Message::from_polled(&polled).collect();
    assert_eq!(messages.len(), 40);
    for (i, message) in messages.iter().enumerate() {
        assert_eq!(message.offset(), i as u64);
        assert_eq!(message.id(), 1000 + i as u128);
        assert_eq!(message.payload().len(), 1_000);
        assert_eq!(message.payload()[999], i as u8);
        assert!(message.checksum_is_valid(), "message {i}");
        assert_eq!(!message.user_headers_raw().is_empty(), i % 3 == 0);
    }

    assert!(
        client
            .get_consumer_offset(&consumer, "s", "t", Some(1))
            .await
            .unwrap()
            .is_none()
    );
    client
        .store_consumer_offset(&consumer, "s", "t", Some(1), 20)
        .await
        .unwrap();
    let offset = client
        .get_consumer_offset(&consumer, "s", "t", Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((offset.stored_offset, offset.current_offset), (20, 39));
    let next = client
        .poll_messages(
            "s",
            "t",
            Some(1),
            &consumer,
            PollingStrategy::next(),
            5,
            true,
        )
        .await
        .unwrap();
    let offsets: Vec<u64> = Message::from_polled(&next).map(|m| m.offset()).collect();
    assert_eq!(offsets, [21, 22, 23, 24, 25]);

    let stats = client.get_stats().await.unwrap();
    assert_eq!(stats.streams_count, 1);
    assert_eq!(stats.messages_count, 40);
    assert!(stats.memory_usage > 0);
    // A refusal keeps its code, and the connection stays usable.
    let error = client.create_stream("s").await.unwrap_err();
    assert_eq!(
        error.server_code(),
        Some(ErrorCode::StreamNameAlreadyExists),
        "{error}"
    );
    client.ping().await.unwrap();
}
