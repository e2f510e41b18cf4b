//! Raw WebSocket peers: hostile frames and handshakes are closed while others keep working,
//! and shutdown tells clients and closes.

use crate::helpers::ws_client;
use crate::raw_ws::{RawWs, http_answer, request, upgrade_request};
use iggy::prelude::*;
use rill_integration::raw::{codes, frame, login_payload};
use rill_integration::sdk::create_stream;
use rill_integration::{ServerOptions, TestServer};

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
