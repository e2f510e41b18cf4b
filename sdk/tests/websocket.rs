//! The client over WebSocket against the real server: ws and wss (the server's generated
//! certificate, validated with it as CA file), each in both protocol generations: login,
//! streams and topics, sends and polls (a reply large enough for the server to fragment),
//! consumer offsets; and the failures a wrong setup gives.

use rill_testkit as common;

use bytes::Bytes;
use common::{ServerOptions, TestServer};
use rill_sdk::types::{Consumer, Partitioning, PollingStrategy, Transport};
use rill_sdk::{Client, Error, Message, Protocol, SendMessage, TopicOptions};
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

/// Everything a producer and a consumer do, checked end to end.
async fn exercise(client: &Client) {
    client.ping().await.unwrap();
    let me = client.get_me().await.unwrap();
    assert_eq!(me.transport, Transport::WebSocket);
    assert_eq!(
        me.address,
        client.local_address().await.unwrap().to_string()
    );

    client.create_stream("s").await.unwrap();
    client
        .create_topic("s", "t", 2, TopicOptions::default())
        .await
        .unwrap();
    assert_eq!(client.get_streams().await.unwrap().len(), 1);
    // 40 messages of 10 KB: a 400 KB poll reply, several of the server's fragments.
    let outgoing: Vec<_> = (0..40u128)
        .map(|i| {
            let mut payload = vec![i as u8; 10_000];
            payload[..8].copy_from_slice(&(i as u64).to_le_bytes());
            SendMessage::new(Bytes::from(payload))
                .with_id(1000 + i)
                .into_outgoing()
                .unwrap()
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
        assert_eq!(message.payload().len(), 10_000);
        assert_eq!(message.payload()[9_999], i as u8);
        assert!(message.checksum_is_valid());
    }

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
    // An error reply travels as a message too, and the connection stays usable.
    let error = client.create_stream("s").await.unwrap_err();
    assert!(error.server_code().is_some(), "{error}");
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
