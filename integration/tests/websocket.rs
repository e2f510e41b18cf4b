//! The WebSocket transport (`[websocket]`): the official SDK 0.10.0 `WebSocketClient` does what
//! it does over TCP (login, ping, streams and topics, send and poll with every strategy, stored
//! offsets, consumer groups, users, stats, cluster metadata naming the WebSocket port), the
//! 0.11.0 client speaks 0.9 over it, data crosses between WebSocket and TCP, wss works with the
//! generated certificate, and hostile peers (unmasked, text, oversized frames, bad handshakes)
//! are closed with the RFC's codes while another client keeps working.

use iggy::prelude::*;
use rill_integration::fixtures::{expected_of, message_id, test_messages};
use rill_integration::raw::{codes, frame, login_payload};
use rill_integration::sdk::{create_stream, create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const OPTIONS: &str = "reconnection_retries=3&reconnection_interval=200ms";

fn ws_connection_string(server: &TestServer) -> String {
    format!(
        "iggy+ws://iggy:iggy@{}?{OPTIONS}",
        server.websocket_address()
    )
}

async fn ws_client(server: &TestServer) -> IggyClient {
    connect(&ws_connection_string(server)).await
}

async fn connect(connection_string: &str) -> IggyClient {
    let client = IggyClient::from_connection_string(connection_string)
        .unwrap_or_else(|error| panic!("connection string {connection_string}: {error}"));
    client
        .connect()
        .await
        .unwrap_or_else(|error| panic!("connect with {connection_string}: {error}"));
    client
}

/// Sends `count` messages to partition 0 in batches of `per_batch`, polls them back from offset
/// 0 and checks ids, payloads and offsets.
async fn send_and_poll_back(
    client: &IggyClient,
    stream: u32,
    tag: u32,
    count: u64,
    per_batch: u64,
) {
    let (s, t) = (id(stream), id(0));
    let mut sent = Vec::new();
    for start in (0..count).step_by(per_batch as usize) {
        let mut batch = test_messages(tag, start, per_batch.min(count - start));
        sent.extend(batch.iter().map(expected_of));
        client
            .send_messages(&s, &t, &Partitioning::partition_id(0), &mut batch)
            .await
            .unwrap_or_else(|error| panic!("send from {start}: {error}"));
    }
    let polled = client
        .poll_messages(
            &s,
            &t,
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            count as u32,
            false,
        )
        .await
        .expect("poll");
    assert_eq!(polled.messages.len(), sent.len(), "polled count");
    for (offset, (message, expected)) in polled.messages.iter().zip(&sent).enumerate() {
        assert_eq!(message.header.offset, offset as u64);
        assert_eq!(message.header.id, message_id(tag, offset as u64));
        assert_eq!(message.payload, expected.payload, "payload at {offset}");
    }
}

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

// ---- a raw WebSocket client, to misbehave ----

fn upgrade_request(path: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

struct RawWs {
    stream: TcpStream,
    buffered: Vec<u8>,
}

impl RawWs {
    fn connect(address: SocketAddr) -> RawWs {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(upgrade_request("/").as_bytes()).unwrap();
        let mut ws = RawWs {
            stream,
            buffered: Vec::new(),
        };
        let head = ws.read_until_blank_line();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            "{head}"
        );
        ws
    }

    fn read_until_blank_line(&mut self) -> String {
        loop {
            if let Some(at) = self.buffered.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = self.buffered.drain(..at + 4).collect();
                return String::from_utf8_lossy(&head).into_owned();
            }
            let mut chunk = [0u8; 4096];
            let n = self
                .stream
                .read(&mut chunk)
                .expect("read the handshake answer");
            assert!(n > 0, "closed during the handshake");
            self.buffered.extend_from_slice(&chunk[..n]);
        }
    }

    fn send(&mut self, fin: bool, opcode: u8, payload: &[u8], masked: bool) {
        let mut frame = vec![(if fin { 0x80 } else { 0 }) | opcode];
        let mask_bit = if masked { 0x80 } else { 0 };
        match payload.len() {
            len if len < 126 => frame.push(mask_bit | len as u8),
            len if len <= 65_535 => {
                frame.push(mask_bit | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(mask_bit | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        if masked {
            let mask = [0x12, 0x34, 0x56, 0x78];
            frame.extend_from_slice(&mask);
            frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        } else {
            frame.extend_from_slice(payload);
        }
        self.stream.write_all(&frame).expect("write a frame");
    }

    /// Sends a frame header declaring `len` payload bytes, and no payload.
    fn send_header_only(&mut self, opcode: u8, len: u64) {
        let mut frame = vec![0x80 | opcode, 0x80 | 127];
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(&[1, 2, 3, 4]);
        self.stream.write_all(&frame).expect("write a frame header");
    }

    fn fill(&mut self, at_least: usize) -> bool {
        while self.buffered.len() < at_least {
            let mut chunk = [0u8; 65_536];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.buffered.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// The next server frame: (fin, opcode, payload).
    fn frame(&mut self) -> Option<(bool, u8, Vec<u8>)> {
        if !self.fill(2) {
            return None;
        }
        let (first, second) = (self.buffered[0], self.buffered[1]);
        assert_eq!(second & 0x80, 0, "server frames are not masked");
        let (len, header) = match second & 0x7F {
            126 => {
                self.fill(4);
                (
                    u16::from_be_bytes([self.buffered[2], self.buffered[3]]) as usize,
                    4,
                )
            }
            127 => {
                self.fill(10);
                (
                    u64::from_be_bytes(self.buffered[2..10].try_into().unwrap()) as usize,
                    10,
                )
            }
            len => (len as usize, 2),
        };
        if !self.fill(header + len) {
            return None;
        }
        let frame: Vec<u8> = self.buffered.drain(..header + len).collect();
        Some((first & 0x80 != 0, first & 0x0F, frame[header..].to_vec()))
    }

    /// The next whole binary message (its frames joined), skipping nothing else.
    fn message(&mut self) -> Vec<u8> {
        let (mut fin, opcode, mut payload) = self.frame().expect("a message");
        assert_eq!(opcode, 2, "a binary message");
        while !fin {
            let (more_fin, opcode, more) = self.frame().expect("a continuation");
            assert_eq!(opcode, 0, "a continuation frame");
            payload.extend(more);
            fin = more_fin;
        }
        payload
    }

    /// The close code the server sent, after which it closes the connection.
    fn close_code(&mut self) -> u16 {
        loop {
            let (_, opcode, payload) = self.frame().expect("a close frame");
            if opcode == 8 {
                assert!(payload.len() >= 2, "a close code");
                return u16::from_be_bytes([payload[0], payload[1]]);
            }
        }
    }
}

/// A binary request (0.8 frame) and its response message, which must be exactly one message
/// holding the whole response: returns (status, payload).
fn request(ws: &mut RawWs, code: u32, payload: &[u8]) -> (u32, Vec<u8>) {
    ws.send(true, 2, &frame(code, payload), true);
    let message = ws.message();
    let status = u32::from_le_bytes(message[0..4].try_into().unwrap());
    let length = u32::from_le_bytes(message[4..8].try_into().unwrap()) as usize;
    assert_eq!(message.len(), 8 + length, "one response per message");
    (status, message[8..].to_vec())
}

fn http_answer(address: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_websocket_peers_are_closed_and_others_keep_working() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_WEBSOCKET_MAX_FRAME_SIZE", "64 KiB")
            .env("IGGY_WEBSOCKET_MAX_MESSAGE_SIZE", "256 KiB"),
    );
    let address = server.websocket_address();
    let good = ws_client(&server).await;
    good.ping().await.expect("ping");

    // A well-behaved raw client: a request split over fragments with a ping between them,
    // answered as one message; the ping answered with a pong carrying its payload.
    let mut raw = RawWs::connect(address);
    let login = frame(codes::LOGIN_USER, &login_payload("iggy", "iggy"));
    raw.send(false, 2, &login[..5], true);
    raw.send(true, 9, b"are you there", true);
    raw.send(true, 0, &login[5..], true);
    let (fin, opcode, pong) = raw.frame().expect("pong");
    assert_eq!(
        (fin, opcode, pong.as_slice()),
        (true, 10, &b"are you there"[..])
    );
    let response = raw.message();
    assert_eq!(
        &response[..8],
        &[0, 0, 0, 0, 4, 0, 0, 0],
        "login answered OK"
    );
    assert_eq!(request(&mut raw, codes::PING, &[]), (0, Vec::new()));
    // Two requests in one message: two answers, each its own message.
    let mut two = frame(codes::PING, &[]);
    two.extend(frame(codes::GET_STATS, &[]));
    raw.send(true, 2, &two, true);
    assert_eq!(raw.message(), vec![0, 0, 0, 0, 0, 0, 0, 0]);
    let stats = raw.message();
    assert_eq!(
        u32::from_le_bytes(stats[4..8].try_into().unwrap()) as usize,
        stats.len() - 8
    );
    // A close is answered with a close.
    raw.send(true, 8, &1000u16.to_be_bytes(), true);
    assert_eq!(raw.close_code(), 1000);

    // Unmasked client frames: close 1002.
    let mut raw = RawWs::connect(address);
    raw.send(true, 2, &frame(codes::PING, &[]), false);
    assert_eq!(raw.close_code(), 1002);
    // Text frames: close 1003.
    let mut raw = RawWs::connect(address);
    raw.send(true, 1, b"{\"ping\": true}", true);
    assert_eq!(raw.close_code(), 1003);
    // A frame over max_frame_size, declared and never sent: close 1009 at once.
    let mut raw = RawWs::connect(address);
    raw.send_header_only(2, 1 << 40);
    assert_eq!(raw.close_code(), 1009);
    // A message over max_message_size in fragments each under the frame limit (a 1 MiB
    // SendMessages body, after a login): close 1009.
    let mut raw = RawWs::connect(address);
    raw.send(true, 2, &login, true);
    assert_eq!(&raw.message()[..4], &[0, 0, 0, 0], "login");
    let mut first = ((1u32 << 20) + 4).to_le_bytes().to_vec();
    first.extend_from_slice(&codes::SEND_MESSAGES.to_le_bytes());
    first.extend_from_slice(&[7u8; 60 * 1024]);
    raw.send(false, 2, &first, true);
    for _ in 0..4 {
        raw.send(false, 0, &[7u8; 60 * 1024], true);
    }
    assert_eq!(raw.close_code(), 1009);
    // A length with the top bit set: close 1002.
    let mut raw = RawWs::connect(address);
    raw.send_header_only(2, u64::MAX);
    assert_eq!(raw.close_code(), 1002);

    // Bad handshakes: 400, 405, 426.
    let no_upgrade = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert!(http_answer(address, no_upgrade).starts_with("HTTP/1.1 400"));
    let post = upgrade_request("/").replacen("GET", "POST", 1);
    assert!(http_answer(address, &post).starts_with("HTTP/1.1 405"));
    let old = upgrade_request("/").replace("Version: 13", "Version: 8");
    let answer = http_answer(address, &old);
    assert!(
        answer.starts_with("HTTP/1.1 426") && answer.contains("Sec-WebSocket-Version: 13"),
        "{answer}"
    );
    // The binary protocol spoken without the handshake: refused, not served.
    let answer = http_answer(
        address,
        std::str::from_utf8(&[8, 0, 0, 0, 1, 0, 0, 0]).unwrap(),
    );
    assert!(!answer.starts_with("HTTP/1.1 101"), "{answer}");

    // The well-behaved SDK client saw none of it.
    good.ping().await.expect("ping after the hostile peers");
    let stream = create_stream(&good, "still-fine").await;
    assert_eq!(stream, 0);
    assert!(server.log().contains("WebSocket upgrade refused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_tells_websocket_clients_and_closes() {
    let mut server = TestServer::start(ServerOptions::new());
    let mut raw = RawWs::connect(server.websocket_address());
    raw.send(
        true,
        2,
        &frame(codes::LOGIN_USER, &login_payload("iggy", "iggy")),
        true,
    );
    assert_eq!(&raw.message()[..4], &[0, 0, 0, 0], "login");
    let status = server.stop();
    assert!(status.success(), "exit status {status:?}");
    // Disconnected (status 8) as one message, as over TCP, then the close.
    assert_eq!(raw.message(), vec![8, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(raw.close_code(), 1000);
}
