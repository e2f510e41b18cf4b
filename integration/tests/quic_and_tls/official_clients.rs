//! The official SDK over QUIC and over TLS on TCP, and the official CLI over QUIC.

use crate::helpers::{OPTIONS, connect, quic_connection_string, send_and_poll_back};
use iggy::prelude::*;
use rill_integration::official_cli::CliGeneration;
use rill_integration::sdk::{create_stream, create_topic, id, named};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdk_over_quic_logs_in_sends_polls_and_uses_groups() {
    // Proves: the official QUIC client (one bidirectional stream per request, no ALPN) works
    // against every shard's endpoint: login on connect, stream/topic creation, 500 messages sent
    // and read back byte for byte, a consumer group join and a group poll; the session shows up
    // as a QUIC client. Four shards and eight connections make the kernel spread the clients
    // over several shards' sockets.
    let server = TestServer::start(ServerOptions::new().shards(4));
    let client = connect(&quic_connection_string(&server)).await;
    let stream = create_stream(&client, "over-quic").await;
    create_topic(&client, stream, "t", 2).await;
    assert_eq!(send_and_poll_back(&client, stream, 3, 500).await, 500);

    let me = client.get_me().await.expect("get_me over QUIC");
    assert_eq!(me.transport.to_lowercase(), "quic", "transport of {me:?}");

    let (s, t) = (id(stream), id(0));
    client
        .create_consumer_group(&s, &t, "readers")
        .await
        .expect("create group");
    client
        .join_consumer_group(&s, &t, &named("readers"))
        .await
        .expect("join group");
    let polled = client
        .poll_messages(
            &s,
            &t,
            None,
            &Consumer::group(named("readers")),
            &PollingStrategy::offset(0),
            1000,
            true,
        )
        .await
        .expect("group poll over QUIC");
    // The only member owns both partitions; partition 0 holds the messages, 1 is empty.
    assert!(
        polled.messages.len() == 500 || polled.messages.is_empty(),
        "group poll returned {} messages",
        polled.messages.len()
    );

    // More sessions, each its own QUIC connection (and UDP port), all answered.
    let mut others = Vec::new();
    for _ in 0..8 {
        others.push(connect(&quic_connection_string(&server)).await);
    }
    for other in &others {
        let streams = other.get_streams().await.expect("get_streams");
        assert_eq!(streams.len(), 1);
    }
    let clients = client.get_clients().await.expect("get_clients");
    let quic = clients
        .iter()
        .filter(|c| c.transport.to_lowercase() == "quic")
        .count();
    assert_eq!(quic, 9, "QUIC sessions in {clients:?}");
    drop(others);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdk_over_quic_sends_batches_larger_than_its_send_window() {
    // Proves: request bodies that arrive in many reads (1 MB batches, ten times the official
    // client's 100 000-byte QUIC send window) are assembled intact, and polled back byte for
    // byte. Prints the time per batch: before the server prompted its ACKs (see read_body in
    // frontend/quic.rs), each window waited out quinn's 25 ms ACK delay, 250 ms per batch.
    const BATCHES: u64 = 4;
    const PER_BATCH: u64 = 10;
    let server = TestServer::start(ServerOptions::new());
    let client = connect(&quic_connection_string(&server)).await;
    let stream = create_stream(&client, "big-over-quic").await;
    create_topic(&client, stream, "t", 1).await;
    let (s, t) = (id(stream), id(0));
    let payload = |n: u64| bytes::Bytes::from(vec![(n % 251) as u8; 100_000]);
    let started = std::time::Instant::now();
    for batch in 0..BATCHES {
        let mut messages: Vec<IggyMessage> = (batch * PER_BATCH..(batch + 1) * PER_BATCH)
            .map(|n| {
                IggyMessage::builder()
                    .id(u128::from(n) + 1)
                    .payload(payload(n))
                    .build()
                    .expect("message")
            })
            .collect();
        client
            .send_messages(&s, &t, &Partitioning::partition_id(0), &mut messages)
            .await
            .unwrap_or_else(|error| panic!("send batch {batch}: {error}"));
    }
    println!(
        "official SDK over QUIC: {:.1} ms per 1 MB batch",
        started.elapsed().as_secs_f64() * 1000.0 / BATCHES as f64
    );
    let mut offset = 0;
    while offset < BATCHES * PER_BATCH {
        let polled = client
            .poll_messages(
                &s,
                &t,
                Some(0),
                &Consumer::new(id(1)),
                &PollingStrategy::offset(offset),
                PER_BATCH as u32,
                false,
            )
            .await
            .expect("poll");
        assert!(!polled.messages.is_empty(), "nothing at offset {offset}");
        for message in &polled.messages {
            assert_eq!(message.header.offset, offset);
            assert_eq!(message.header.id, u128::from(offset) + 1);
            assert_eq!(message.payload, payload(offset), "payload at {offset}");
            offset += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdk_over_tcp_tls_with_the_generated_certificate() {
    // Proves: with [tcp.tls] on, the TCP port speaks TLS: the official client validating the
    // server's certificate against the self-signed one the server wrote at start works end to
    // end (login, create, send, poll), and a client that validates without trusting it fails
    // instead of talking in clear text.
    let server = TestServer::start(ServerOptions::new().env("IGGY_TCP_TLS_ENABLED", "true"));
    let certificate = server.data_path().join("certs").join("tcp-self-signed.pem");
    assert!(
        certificate.exists(),
        "the generated certificate is written for clients to trust: {}\n{}",
        certificate.display(),
        server.log_tail()
    );
    let trusted = format!(
        "iggy+tcp://iggy:iggy@{}?tls=true&tls_domain=localhost&tls_ca_file={}&{OPTIONS}",
        server.tcp_address(),
        certificate.display()
    );
    let client = connect(&trusted).await;
    let stream = create_stream(&client, "over-tls").await;
    create_topic(&client, stream, "t", 1).await;
    assert_eq!(send_and_poll_back(&client, stream, 4, 300).await, 300);
    let me = client.get_me().await.expect("get_me over TLS");
    assert_eq!(me.transport.to_lowercase(), "tcp");

    // Validation on, the self-signed certificate not trusted: the connection must fail.
    let untrusted = IggyClient::from_connection_string(&format!(
        "iggy+tcp://iggy:iggy@{}?tls=true&tls_domain=localhost&reconnection_retries=0",
        server.tcp_address()
    ))
    .expect("connection string");
    let result = tokio::time::timeout(Duration::from_secs(20), untrusted.connect()).await;
    assert!(
        matches!(result, Ok(Err(_))),
        "an untrusted certificate must fail the connection, got {result:?}"
    );

    // A plain TCP client gets no answer it could mistake for the protocol (the official client
    // keeps reconnecting, so "not connected within 3 s" is the observable outcome).
    let plain = IggyClient::from_connection_string(&format!(
        "iggy://iggy:iggy@{}?reconnection_retries=0",
        server.tcp_address()
    ))
    .expect("connection string");
    let result = tokio::time::timeout(Duration::from_secs(3), plain.connect()).await;
    assert!(
        !matches!(result, Ok(Ok(()))),
        "plain TCP against a TLS port must not connect"
    );
    // The server is unharmed.
    assert_eq!(client.get_streams().await.expect("streams").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_cli_0_13_over_quic() {
    official_cli_over_quic(CliGeneration::V013).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_cli_0_14_over_quic() {
    official_cli_over_quic(CliGeneration::V014).await
}

async fn official_cli_over_quic(generation: CliGeneration) {
    // Proves: the official CLI of each generation (iggy-cli 0.13.0 on the 0.8 protocol, 0.14.0
    // on the 0.9 one) with `--transport quic` manages streams and topics, sends and polls
    // messages, and exits non-zero on a server error, against our QUIC endpoint.
    use rill_integration::official_cli::{Auth, CliHome, Transport, iggy_via};
    let server = TestServer::start(ServerOptions::new());
    let home = CliHome::of(generation);
    let quic = |args: &[&str]| {
        iggy_via(
            &server,
            Transport::Quic,
            &home,
            Auth::Credentials("iggy", "iggy"),
            args,
        )
    };
    quic(&["stream", "create", "q"]).success(&["Stream with name: q"]);
    quic(&["topic", "create", "q", "t", "1", "none"]).success(&["Topic with name: t"]);
    quic(&[
        "message",
        "send",
        "--partition-id",
        "0",
        "q",
        "t",
        "over-quic",
    ])
    .success(&[]);
    quic(&[
        "message",
        "poll",
        "--offset",
        "0",
        "--message-count",
        "1",
        "q",
        "t",
        "0",
    ])
    .success(&["over-quic"]);
    quic(&["stream", "list"]).success(&["q"]);
    // A server error (the stream exists) is a failing exit over QUIC too.
    quic(&["stream", "create", "q"]).failure();
    // The same state is visible over TCP.
    let client = rill_integration::sdk::root_client(&server).await;
    assert_eq!(client.get_streams().await.expect("streams").len(), 1);
}
