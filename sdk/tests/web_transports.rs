//! The client over its web transports against the real server. WebSocket: ws and wss (the
//! server's generated certificate, validated with it as CA file), each in both protocol
//! generations, and the failures a wrong setup gives. The HTTP API: HTTP and HTTPS, the data
//! read back over TCP, and what HTTP has no call for refused clearly. Each runs the same
//! round trip: login, streams and topics, sends and polls (a WebSocket reply large enough for
//! the server to fragment), consumer offsets.

use rill_testkit as common;

use bytes::Bytes;
use common::{ServerOptions, TestServer};
use rill_core::ErrorCode;
use rill_sdk::types::{Consumer, Partitioning, PollingStrategy, Transport};
use rill_sdk::{Client, Error, HeaderValue, Message, Protocol, SendMessage, TopicOptions};
use std::time::Duration;

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

both_protocols!(commands_over_ws, commands_over_wss);

fn wss_server() -> (TestServer, String) {
    let server = TestServer::start(ServerOptions::new().env("IGGY_WEBSOCKET_TLS_ENABLED", "true"));
    let certificate = server
        .data_path()
        .join("certs")
        .join("websocket-self-signed.pem");
    assert!(certificate.is_file(), "{}", certificate.display());
    let certificate = certificate.to_str().unwrap().to_owned();
    (server, certificate)
}

async fn connect(text: &str) -> Client {
    let client = Client::from_connection_string(text).unwrap();
    client.connect().await.unwrap();
    client
}

async fn commands_over_ws(protocol: Protocol) {
    let server = TestServer::start_default();
    let client = connect(&format!(
        "iggy+ws://iggy:iggy@{}?protocol={protocol}",
        server.websocket_address()
    ))
    .await;
    exercise(&client).await;
}

async fn commands_over_wss(protocol: Protocol) {
    let (server, certificate) = wss_server();
    let client = connect(&format!(
        "iggy+ws://iggy:iggy@{}?protocol={protocol}&tls=true&tls_domain=localhost&\
         tls_validate_certificate=true&tls_ca_file={certificate}",
        server.websocket_address()
    ))
    .await;
    exercise(&client).await;
}

/// Everything a WebSocket client does, checked end to end.
async fn exercise(client: &Client) {
    client.ping().await.unwrap();
    let me = client.get_me().await.unwrap();
    assert_eq!(me.transport, Transport::WebSocket);
    assert_eq!(
        me.address,
        client.local_address().await.unwrap().to_string()
    );
    // 40 messages of 10 KB: a 400 KB poll reply, several of the server's fragments.
    round_trip(client, 10_000).await;
}

/// Streams, topics, 40 messages of `size` bytes (headers on every third) sent and polled back
/// with valid checksums, consumer offsets and auto-commit, and a refusal that keeps its code
/// and leaves the connection usable.
async fn round_trip(client: &Client, size: usize) {
    client.create_stream("s").await.unwrap();
    client
        .create_topic("s", "t", 2, TopicOptions::default())
        .await
        .unwrap();
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].topics_count, 1);
    assert!(client.get_stream("missing").await.unwrap().is_none());
    let outgoing: Vec<_> = (0..40u128)
        .map(|i| {
            let mut payload = vec![i as u8; size];
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
        assert_eq!(message.payload().len(), size);
        assert_eq!(message.payload()[size - 1], i as u8);
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
    let error = client.create_stream("s").await.unwrap_err();
    assert_eq!(
        error.server_code(),
        Some(ErrorCode::StreamNameAlreadyExists),
        "{error}"
    );
    client.ping().await.unwrap();
}

#[tokio::test]
async fn wss_failures_are_named() {
    let (server, _) = wss_server();
    let address = server.websocket_address();

    // Validation without the CA file: the self-signed certificate is refused, permanently.
    let client = Client::from_connection_string(&format!(
        "iggy+ws://iggy:iggy@{address}?tls=true&tls_domain=localhost&\
         tls_validate_certificate=true&reconnection_retries=5"
    ))
    .unwrap();
    let error = client.connect().await.unwrap_err();
    assert!(matches!(error, Error::Tls { .. }), "{error}");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");

    // Plain ws on the wss port: the server waits for a ClientHello, never answers the upgrade.
    let client = Client::from_connection_string(&format!(
        "iggy+ws://iggy:iggy@{address}?connect_timeout=2s&reconnection=false"
    ))
    .unwrap();
    let started = std::time::Instant::now();
    assert!(client.connect().await.is_err());
    assert!(started.elapsed() < Duration::from_secs(20));

    // The default (no validation, as upstream) connects.
    let client = connect(&format!(
        "iggy+ws://iggy:iggy@{address}?tls=true&tls_domain=localhost"
    ))
    .await;
    client.ping().await.unwrap();
}

fn http_address(server: &TestServer) -> std::net::SocketAddr {
    server.http_address().expect("the HTTP API listens")
}

#[tokio::test]
async fn commands_over_http() {
    let server = TestServer::start_default();
    let client = connect(&format!("iggy+http://iggy:iggy@{}", http_address(&server))).await;
    round_trip(&client, 1_000).await;
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
    round_trip(&client, 1_000).await;
}
