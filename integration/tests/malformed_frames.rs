//! Bad input on the TCP front-end (protocol.md 1.3): unknown codes, impossible lengths, truncated
//! payloads, oversized frames, garbage, and clients that stall mid-frame. After each case the
//! server must still be running and a well-behaved official client must still work. Also
//! well-formed requests that arrive together, or a few bytes at a time, as a socket may
//! deliver them: the server reads ahead of the frame it is on.

use iggy::prelude::*;
use rill_integration::fixtures::{SentBatch, assert_batches, poll_partition, send_series};
use rill_integration::raw::{RawClient, Response, codes, frame, name, send_one_message, status};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::{Duration, Instant};

/// 10 MiB: the largest payload a command other than SendMessages may declare.
const CONTROL_PAYLOAD_LIMIT: u32 = 10 * 1024 * 1024;

/// Asserts that the server process is alive and that an official client can create a stream,
/// send to it and read back.
async fn assert_server_healthy(server: &mut TestServer, stream_name: &str) {
    assert!(
        server.is_running(),
        "the server process died; log:\n{}",
        server.log_tail()
    );
    let client = root_client(server).await;
    let stream = create_stream(&client, stream_name).await;
    create_topic(&client, stream, "t", 1).await;
    let sent = send_series(
        &client,
        &id(stream),
        &id(0),
        &Partitioning::partition_id(0),
        (1, 0, 20),
        20,
    )
    .await;
    let polled = poll_partition(&client, &id(stream), &id(0), 0, 100).await;
    assert_batches(
        &polled,
        &sent.iter().collect::<Vec<&SentBatch>>(),
        0,
        "healthy check",
    );
}

/// A response status, or the fact that the server closed the connection.
#[derive(Debug, PartialEq)]
enum Outcome {
    Status(u32),
    Closed,
}

fn outcome(raw: &mut RawClient) -> Outcome {
    match raw.read_response() {
        Ok(Response { status, .. }) => Outcome::Status(status),
        Err(error) => match error.kind() {
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted => Outcome::Closed,
            _ => panic!("no response and no close within the timeout: {error}"),
        },
    }
}

#[tokio::test]
async fn unknown_command_code_gets_3_and_the_connection_stays_usable() {
    // Proves: an unknown command code (9999) answers 3 with an empty error frame, its payload is
    // discarded, and the connection stays in sync, before and after login. How: raw client sends
    // code 9999 with and without payload, then Ping and a real command on the same connection.
    let mut server = TestServer::start(ServerOptions::new());
    let mut raw = RawClient::connect(server.address());
    // The example from protocol.md: 04 00 00 00 0f 27 00 00 -> 03 00 00 00 00 00 00 00.
    raw.write_raw(&[0x04, 0, 0, 0, 0x0f, 0x27, 0, 0])
        .expect("write");
    assert_eq!(outcome(&mut raw), Outcome::Status(status::INVALID_COMMAND));
    raw.assert_ping();
    raw.login_root();
    let response = raw.request(9999, b"ten bytes!");
    assert_eq!(
        response.status,
        status::INVALID_COMMAND,
        "unknown code with payload"
    );
    raw.assert_ping();
    for code in [0u32, 2, 13, 40, 45, 606, u32::MAX] {
        let response = raw.request(code, &[1, 2, 3]);
        assert_eq!(
            response.status,
            status::INVALID_COMMAND,
            "code {code} does not exist in 0.8.0"
        );
    }
    let response = raw.request(codes::GET_STREAMS, &[]);
    assert_eq!(
        response.status,
        status::OK,
        "GetStreams after unknown codes"
    );
    assert_server_healthy(&mut server, "after-unknown-code").await;
}

#[tokio::test]
async fn length_below_4_gets_3_and_the_connection_stays_usable() {
    // Proves: a frame whose length field is < 4 (it must count the code) answers 3, and only the
    // 8 header bytes are consumed, so the next frame is read correctly. How: raw client sends
    // headers with length 0, 1 and 3, each followed by a Ping check.
    let mut server = TestServer::start(ServerOptions::new());
    let mut raw = RawClient::connect(server.address());
    for length in [0u32, 1, 3] {
        let mut bytes = length.to_le_bytes().to_vec();
        bytes.extend_from_slice(&codes::PING.to_le_bytes());
        raw.write_raw(&bytes).expect("write");
        assert_eq!(
            outcome(&mut raw),
            Outcome::Status(status::INVALID_COMMAND),
            "length {length}"
        );
        raw.assert_ping();
    }
    raw.login_root();
    raw.assert_ping();
    assert_server_healthy(&mut server, "after-short-length").await;
}

#[tokio::test]
async fn truncated_or_invalid_create_stream_payloads_are_rejected() {
    // Proves: a CreateStream payload cut short (name length says 10, 3 bytes follow) answers 3; an
    // empty name answers 4 (InvalidFormat); non-UTF-8 name bytes answer 3; none creates a stream
    // and the connection stays usable. How: raw client after login, then GetStreams.
    let mut server = TestServer::start(ServerOptions::new());
    let mut raw = RawClient::connect(server.address());
    raw.login_root();
    let response = raw.request(codes::CREATE_STREAM, &[10, b'a', b'b', b'c']);
    assert_eq!(response.status, status::INVALID_COMMAND, "truncated name");
    raw.assert_ping();
    let response = raw.request(codes::CREATE_STREAM, &[]);
    assert_eq!(response.status, status::INVALID_COMMAND, "missing name");
    let response = raw.request(codes::CREATE_STREAM, &[0]);
    assert_eq!(response.status, status::INVALID_FORMAT, "empty name");
    let response = raw.request(codes::CREATE_STREAM, &[2, 0xff, 0xfe]);
    assert_eq!(
        response.status,
        status::INVALID_COMMAND,
        "name is not UTF-8"
    );
    raw.assert_ping();
    let response = raw.request(codes::GET_STREAMS, &[]);
    assert_eq!(response.status, status::OK);
    assert!(response.payload.is_empty(), "no stream was created");
    // A well-formed request on the same connection still works.
    let response = raw.request(codes::CREATE_STREAM, &name("fine"));
    assert_eq!(response.status, status::OK);
    assert_server_healthy(&mut server, "after-truncated").await;
}

#[tokio::test]
async fn oversized_control_frame_is_refused() {
    // Proves: a control command declaring more than 10 MiB of payload is refused with 3 and/or the
    // connection is closed (the body is never read, so continuing would desynchronise), without
    // the server trying to buffer it, and other clients are unaffected. How: raw client declares
    // 10 MiB + 1 bytes for CreateStream (sending only 100 of them), and 1 GiB for GetStreams.
    let mut server = TestServer::start(ServerOptions::new());
    for (code, payload_bytes) in [
        (codes::CREATE_STREAM, CONTROL_PAYLOAD_LIMIT + 1),
        (codes::GET_STREAMS, 1 << 30),
    ] {
        let mut raw = RawClient::connect(server.address());
        raw.login_root();
        let mut bytes = (payload_bytes + 4).to_le_bytes().to_vec();
        bytes.extend_from_slice(&code.to_le_bytes());
        bytes.extend_from_slice(&[b'x'; 100]);
        let _ = raw.write_raw(&bytes);
        match outcome(&mut raw) {
            Outcome::Status(code) => {
                assert_eq!(code, status::INVALID_COMMAND, "oversized frame status");
            }
            Outcome::Closed => {}
        }
        assert_server_healthy(&mut server, &format!("after-oversized-{code}")).await;
    }
    // A payload of exactly 10 MiB is allowed (and then fails to decode as a stream name with 3 or
    // is accepted with trailing bytes ignored; either way the connection stays in sync).
    let mut raw = RawClient::connect(server.address());
    raw.login_root();
    let mut payload = name("exactly-ten-mib");
    payload.resize(CONTROL_PAYLOAD_LIMIT as usize, 0);
    let response = raw.request(codes::CREATE_STREAM, &payload);
    assert!(
        [status::OK, status::INVALID_COMMAND].contains(&response.status),
        "10 MiB control payload answered {}",
        response.status
    );
    raw.assert_ping();
}

#[tokio::test]
async fn garbage_bytes_do_not_hurt_the_server() {
    // Proves: arbitrary bytes on a connection (before and after login) end in error frames or a
    // closed connection, never a crash, and other clients keep working. How: raw clients send
    // 4 KiB of pseudo-random bytes and read until the server answers or closes; a client that
    // sends garbage and disconnects immediately is also harmless.
    let mut server = TestServer::start(ServerOptions::new());
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut garbage = vec![0u8; 4096];
    for byte in &mut garbage {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *byte = seed as u8;
    }
    for login_first in [false, true] {
        let mut raw = RawClient::connect(server.address());
        if login_first {
            raw.login_root();
        }
        let _ = raw.write_raw(&garbage);
        raw.shutdown_write();
        // Drain whatever the server answers until it closes (or stops answering).
        while let Ok(response) = raw.read_response() {
            assert_ne!(
                response.status,
                status::OK,
                "garbage answered OK: {response:?}"
            );
        }
        assert_server_healthy(&mut server, &format!("after-garbage-{login_first}")).await;
    }
    {
        let mut raw = RawClient::connect(server.address());
        let _ = raw.write_raw(&garbage[..1000]);
    }
    assert_server_healthy(&mut server, "after-garbage-and-close").await;
}

#[tokio::test]
async fn a_client_stalled_mid_frame_does_not_block_others() {
    // Proves: clients that send half a header, or a header and part of its payload, and then
    // stall, do not delay other clients' requests (on any shard), and a stalled frame completed
    // later is still answered. How: 8 stalled raw connections (filling both shards), then an
    // official client performs a full create/send/poll cycle within a time bound; then one stalled
    // client completes its CreateStream frame and gets its answer.
    let mut server = TestServer::start(ServerOptions::new());
    let mut stalled = Vec::new();
    for index in 0..8 {
        let mut raw = RawClient::connect(server.address());
        raw.login_root();
        let request = frame(codes::CREATE_STREAM, &name(&format!("stalled-{index}")));
        let cut = if index % 2 == 0 { 6 } else { request.len() - 3 };
        raw.write_raw(&request[..cut]).expect("write half a frame");
        stalled.push((raw, request, cut));
    }
    let started = Instant::now();
    assert_server_healthy(&mut server, "while-others-stall").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a full request cycle took {:?} while other clients stalled",
        started.elapsed()
    );
    let (raw, request, cut) = &mut stalled[1];
    raw.write_raw(&request[*cut..]).expect("finish the frame");
    assert_eq!(
        outcome(raw),
        Outcome::Status(status::OK),
        "completed frame is answered"
    );
    raw.assert_ping();
}

#[tokio::test]
async fn stalled_and_idle_connections_are_closed_after_their_timeouts() {
    // Proves: a connection that stops sending in the middle of a frame is closed after
    // tcp.read_timeout, and one that never logs in is closed after tcp.unauthenticated_timeout,
    // so neither holds server resources forever. How: timeouts set to 1 s; raw clients stall;
    // the server must close them within 10 s.
    let mut server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_TCP_READ_TIMEOUT", "1 s")
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "1 s"),
    );
    let mut mid_frame = RawClient::connect(server.address());
    mid_frame.login_root();
    let request = frame(codes::CREATE_STREAM, &name("never-finished"));
    mid_frame
        .write_raw(&request[..request.len() - 2])
        .expect("write part of a frame");
    let mut idle = RawClient::connect(server.address());

    let started = Instant::now();
    assert!(
        mid_frame.is_closed_by_server(),
        "a connection stalled mid-frame was not closed"
    );
    assert!(
        idle.is_closed_by_server(),
        "an idle unauthenticated connection was not closed"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_server_healthy(&mut server, "after-timeouts").await;
    let client = root_client(&server).await;
    assert!(
        client
            .get_stream(&rill_integration::sdk::named("never-finished"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn requests_that_arrive_together_or_in_pieces_are_all_answered_in_order() {
    // Proves: requests pipelined in one write (sends of 10 B to 40 KB, larger than what one
    // receive reads ahead, between pings and GetStreams) are each answered, in order, and every
    // message is stored in order with its bytes; the same when the bytes arrive 1 to 13 at a
    // time, so that headers and bodies are split everywhere. How: a raw client writes the
    // frames, then reads one response per request; an official client polls the partition.
    let mut server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "pipelined").await;
    create_topic(&client, stream, "t", 1).await;
    let payload = |n: usize| -> Vec<u8> {
        let len = [10, 1000, 17_000, 40_000][n % 4];
        (0..len).map(|i| (i * 7 + n) as u8).collect()
    };
    let requests = |first: usize| -> (Vec<u8>, Vec<u32>) {
        let mut bytes = Vec::new();
        let mut codes_sent = Vec::new();
        for n in first..first + 20 {
            let body = send_one_message(stream, 0, 0, n as u128 + 1, &payload(n));
            bytes.extend_from_slice(&frame(codes::SEND_MESSAGES, &body));
            codes_sent.push(codes::SEND_MESSAGES);
            let (code, body) = if n % 3 == 0 {
                (codes::PING, Vec::new())
            } else {
                (codes::GET_STREAMS, Vec::new())
            };
            bytes.extend_from_slice(&frame(code, &body));
            codes_sent.push(code);
        }
        (bytes, codes_sent)
    };
    let mut raw = RawClient::connect(server.address());
    raw.login_root();

    let (together, sent) = requests(0);
    raw.write_raw(&together).expect("pipelined write");
    for (n, code) in sent.iter().enumerate() {
        let response = raw
            .read_response()
            .unwrap_or_else(|error| panic!("response {n} (code {code}): {error}"));
        assert_eq!(response.status, status::OK, "response {n} (code {code})");
    }

    let (pieces, sent) = requests(20);
    let mut rest = &pieces[..];
    let mut step = 0;
    while !rest.is_empty() {
        step += 1;
        let len = (step * 5 % 13 + 1).min(rest.len());
        raw.write_raw(&rest[..len]).expect("piece");
        rest = &rest[len..];
        if step % 500 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for (n, code) in sent.iter().enumerate() {
        let response = raw
            .read_response()
            .unwrap_or_else(|error| panic!("response {n} of the pieces (code {code}): {error}"));
        assert_eq!(response.status, status::OK, "response {n} of the pieces");
    }

    let polled = poll_partition(&client, &id(stream), &id(0), 0, 100).await;
    assert_eq!(polled.len(), 40, "every pipelined message stored");
    for (n, message) in polled.iter().enumerate() {
        assert_eq!(message.header.offset, n as u64);
        assert_eq!(message.header.id, n as u128 + 1, "message {n} in order");
        assert_eq!(&message.payload[..], &payload(n)[..], "message {n}'s bytes");
    }
    assert_server_healthy(&mut server, "after-pipelining").await;
}
