//! QUIC (protocol.md 1.6) and TLS over TCP (1.5) with the official `iggy` 0.10.0 SDK: login,
//! streams and topics, send and poll with content checks, consumer groups; QUIC clients that
//! misbehave do not disturb others; certificate problems stop the server with a clear message.

use iggy::prelude::*;
use rill_integration::binary::run_to_exit;
use rill_integration::fixtures::{expected_of, message_id, test_messages};
use rill_integration::sdk::{create_stream, create_topic, id, named};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

const OPTIONS: &str = "reconnection_retries=3&reconnection_interval=200ms";

fn quic_connection_string(server: &TestServer) -> String {
    // The official QUIC client's defaults: server name "localhost", no certificate validation.
    format!(
        "iggy+quic://iggy:iggy@{}?reconnection_max_retries=3&reconnection_interval=200ms",
        server.quic_address()
    )
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

/// Sends `count` messages in batches of 50 to partition 0, polls them back and checks ids,
/// payloads and offsets; returns how many were polled.
async fn send_and_poll_back(client: &IggyClient, stream: u32, tag: u32, count: u64) -> usize {
    let (s, t) = (id(stream), id(0));
    let mut sent = Vec::new();
    for start in (0..count).step_by(50) {
        let mut batch = test_messages(tag, start, 50.min(count - start));
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
        assert_eq!(message.header.id, expected.id);
        assert_eq!(message.header.id, message_id(tag, offset as u64));
        assert_eq!(message.payload, expected.payload, "payload at {offset}");
    }
    polled.messages.len()
}

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

/// Extra environment of a server start.
type Environment<'a> = &'a [(&'a str, String)];

#[test]
fn certificate_problems_stop_the_start_with_a_clear_message() {
    // Proves: a missing certificate file, a key file that holds no key, and certificate files
    // given without a key each stop the server at start with a message naming the section and
    // the file, instead of starting without TLS.
    let dir = tempfile::tempdir().unwrap();
    let not_a_key = dir.path().join("not-a-key.pem");
    std::fs::write(&not_a_key, "hello\n").unwrap();
    let cases: [(Environment, &[&str]); 3] = [
        (
            &[
                ("IGGY_TCP_TLS_ENABLED", "true".into()),
                (
                    "IGGY_TCP_TLS_CERT_FILE",
                    dir.path().join("missing.pem").display().to_string(),
                ),
                ("IGGY_TCP_TLS_KEY_FILE", not_a_key.display().to_string()),
            ],
            &["tcp.tls", "missing.pem"],
        ),
        (
            &[
                (
                    "IGGY_QUIC_CERTIFICATE_CERT_FILE",
                    not_a_key.display().to_string(),
                ),
                (
                    "IGGY_QUIC_CERTIFICATE_KEY_FILE",
                    not_a_key.display().to_string(),
                ),
            ],
            &["quic.certificate", "not-a-key.pem"],
        ),
        (
            &[
                ("IGGY_TCP_TLS_ENABLED", "true".into()),
                ("IGGY_TCP_TLS_CERT_FILE", not_a_key.display().to_string()),
            ],
            &["tcp.tls", "together"],
        ),
    ];
    for (env, expected) in cases {
        let mut all = vec![("IGGY_HTTP_ENABLED", "false")];
        all.extend(env.iter().map(|(k, v)| (*k, v.as_str())));
        let (started, text) = run_to_exit(dir.path(), &all);
        assert!(!started, "{env:?} must stop the start:\n{text}");
        for needle in expected {
            assert!(text.contains(needle), "{env:?}: no {needle:?} in:\n{text}");
        }
    }
}

/// A raw QUIC client (quinn), for misbehaving on purpose. It trusts the self-signed certificate
/// the server wrote at start, so the file is checked too.
mod raw_quic {
    use rill_integration::TestServer;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::sync::Arc;

    pub async fn connect(server: &TestServer) -> (quinn::Endpoint, quinn::Connection) {
        let certificate = server
            .data_path()
            .join("certs")
            .join("quic-self-signed.pem");
        let mut roots = rustls::RootCertStore::empty();
        for der in CertificateDer::pem_file_iter(&certificate).expect("the generated certificate") {
            roots
                .add(der.expect("a PEM certificate"))
                .expect("a usable certificate");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let connection = endpoint
            .connect(server.quic_address(), "localhost")
            .unwrap()
            .await
            .expect("QUIC handshake validating the generated certificate");
        (endpoint, connection)
    }

    /// One request on a new stream: the frame, FIN, then the whole response.
    pub async fn request(connection: &quinn::Connection, frame: &[u8]) -> Vec<u8> {
        let (mut send, mut recv) = connection.open_bi().await.expect("open stream");
        send.write_all(frame).await.expect("write frame");
        send.finish().expect("finish");
        recv.read_to_end(1 << 20).await.expect("read response")
    }

    pub fn frame(code: u32, payload: &[u8]) -> Vec<u8> {
        let mut frame = ((payload.len() + 4) as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&code.to_le_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    pub fn status(response: &[u8]) -> u32 {
        u32::from_le_bytes(response[..4].try_into().expect("a response header"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_quic_clients_do_not_disturb_others() {
    // Proves: QUIC clients that open hundreds of streams and abandon them mid-frame, reset
    // streams, declare huge lengths or vanish without closing cost only themselves: official
    // clients over QUIC and TCP keep sending and polling without a single error meanwhile, a
    // connection whose stream was reset or refused goes on serving its next streams, and the
    // server is healthy afterwards.
    const PING: u32 = 1;
    let server = TestServer::start(ServerOptions::new().env("IGGY_TCP_READ_TIMEOUT", "2 s"));
    let quic_client = connect(&quic_connection_string(&server)).await;
    let stream = create_stream(&quic_client, "steady").await;
    create_topic(&quic_client, stream, "t", 1).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let steady = {
        let stop = stop.clone();
        let tcp = rill_integration::sdk::root_client(&server).await;
        tokio::spawn(async move {
            let mut rounds = 0u64;
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for client in [&quic_client, &tcp] {
                    let mut batch = test_messages(9, sent, 10);
                    client
                        .send_messages(&id(0), &id(0), &Partitioning::partition_id(0), &mut batch)
                        .await
                        .unwrap_or_else(|error| panic!("steady send in round {rounds}: {error}"));
                    sent += 10;
                    let polled = client
                        .poll_messages(
                            &id(0),
                            &id(0),
                            Some(0),
                            &Consumer::new(id(1)),
                            &PollingStrategy::offset(sent - 10),
                            10,
                            false,
                        )
                        .await
                        .unwrap_or_else(|error| panic!("steady poll in round {rounds}: {error}"));
                    assert_eq!(polled.messages.len(), 10, "round {rounds}");
                    assert_eq!(polled.messages[0].header.id, message_id(9, sent - 10));
                }
                rounds += 1;
            }
            (rounds, quic_client)
        })
    };

    // 1. Hundreds of streams, each abandoned mid-frame, then the client vanishes without a close.
    {
        let (endpoint, connection) = raw_quic::connect(&server).await;
        let mut streams = Vec::new();
        for _ in 0..300 {
            let (mut send, recv) = connection.open_bi().await.expect("open stream");
            // Declares 1000 payload bytes, sends 10.
            let mut partial = 1004u32.to_le_bytes().to_vec();
            partial.extend_from_slice(&201u32.to_le_bytes());
            partial.extend_from_slice(&[7u8; 10]);
            send.write_all(&partial).await.expect("write partial frame");
            streams.push((send, recv));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // No CONNECTION_CLOSE: the server only learns by its idle timeout.
        drop(streams);
        drop(connection);
        drop(endpoint);
    }

    // 2. Reset streams, a huge declared length and a short frame: each answered or dropped on
    //    its own, and the same connection keeps serving.
    let (_endpoint, connection) = raw_quic::connect(&server).await;
    for _ in 0..50 {
        let (mut send, _recv) = connection.open_bi().await.expect("open stream");
        send.write_all(&raw_quic::frame(PING, b"")[..6])
            .await
            .expect("write");
        send.reset(0u32.into()).expect("reset");
    }
    let huge = {
        let mut frame = u32::MAX.to_le_bytes().to_vec();
        frame.extend_from_slice(&PING.to_le_bytes());
        raw_quic::request(&connection, &frame).await
    };
    assert_ne!(
        raw_quic::status(&huge),
        0,
        "a huge declared length is refused"
    );
    let short = raw_quic::request(&connection, &[1, 0, 0, 0, 1, 0, 0, 0]).await;
    assert_ne!(raw_quic::status(&short), 0, "a length below 4 is refused");
    // After the bad streams, the connection still works (a Ping needs no login).
    let pong = raw_quic::request(&connection, &raw_quic::frame(PING, b"")).await;
    assert_eq!(raw_quic::status(&pong), 0, "ping after bad streams");
    // A request that needs a login is refused with 40, not served.
    let streams = raw_quic::request(&connection, &raw_quic::frame(201, b"")).await;
    assert_eq!(raw_quic::status(&streams), 40);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (rounds, quic_client) = steady.await.expect("steady clients saw no error");
    assert!(rounds > 0, "the steady clients made progress");
    assert_eq!(
        quic_client
            .get_streams()
            .await
            .expect("server healthy")
            .len(),
        1
    );
}

#[test]
fn a_second_server_on_a_taken_port_is_refused() {
    // Proves: the listeners use SO_REUSEPORT, which would let a second broker started by the same
    // user share a port silently and take half its clients; the start-up probe refuses that for
    // QUIC (UDP) and TCP alike, naming the address.
    let server = TestServer::start(ServerOptions::new());
    let dir = tempfile::tempdir().unwrap();
    for (tcp, quic, needle) in [
        (
            "127.0.0.1:0".to_string(),
            server.quic_address().to_string(),
            "QUIC",
        ),
        (server.tcp_address(), "127.0.0.1:0".to_string(), "TCP"),
    ] {
        let env = [
            ("IGGY_TCP_ADDRESS", tcp.as_str()),
            ("IGGY_QUIC_ADDRESS", quic.as_str()),
            ("IGGY_HTTP_ENABLED", "false"),
        ];
        let (started, text) = run_to_exit(dir.path(), &env);
        assert!(
            !started,
            "{needle}: a taken port must stop the start:\n{text}"
        );
        assert!(
            text.contains(needle) && text.contains("in use"),
            "{needle}:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_cli_over_quic() {
    // Proves: the official CLI (iggy-cli 0.13.0) with `--transport quic` manages streams and
    // topics, sends and polls messages, and exits non-zero on a server error, against our QUIC
    // endpoint.
    use rill_integration::official_cli::{Auth, Transport, iggy_via};
    let server = TestServer::start(ServerOptions::new());
    let home = tempfile::tempdir().expect("CLI home");
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

/// `[tcp.socket]` and `[quic.socket]` (upstream's keys), read back from the server's sockets with `ss`.
mod socket_options {
    use rill_integration::raw::RawClient;
    use rill_integration::{ServerOptions, TestServer};
    use std::io::{ErrorKind, Read};
    use std::net::SocketAddr;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// What `ss <options> state <state>` prints of the server's end of the connection from
    /// `client`, on one line (empty when the kernel no longer has that socket).
    fn ss(options: &str, state: &str, server: SocketAddr, client: SocketAddr) -> String {
        let filter = format!(
            "( sport = :{} and dport = :{} )",
            server.port(),
            client.port()
        );
        let output = Command::new("ss")
            .args([options, "state", state, &filter])
            .output()
            .expect("run ss (iproute2; scripts/install-deps.sh installs it)");
        assert!(output.status.success(), "ss {options} failed");
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .replace('\n', " ")
    }

    /// The server's end of an established connection, with its memory and timers.
    fn server_side(server: SocketAddr, client: SocketAddr) -> String {
        let text = ss("-tnmoH", "established", server, client);
        assert!(!text.is_empty(), "ss finds the connection");
        text
    }

    /// A number after `key` in an ss `skmem:(...)` list, e.g. `rb` in `rb204800`.
    fn skmem(line: &str, key: &str) -> u64 {
        let list = &line[line.find("skmem:(").expect("skmem in ss output")..];
        list[7..]
            .split([',', ')'])
            .find_map(|item| item.strip_prefix(key)?.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line}"))
    }

    /// The state of the server's end of the connection from `client`, if the kernel still has it.
    fn server_state(server: SocketAddr, client: SocketAddr) -> Option<String> {
        let text = ss("-tanH", "all", server, client);
        text.split_whitespace().next().map(str::to_string)
    }

    /// Waits for the server to close the connection (the client never logs in, and the tests
    /// set a 1 s `unauthenticated_timeout`). Returns whether the server's socket is then gone at
    /// once (SO_LINGER 0 aborts it with a reset) rather than waiting in FIN-WAIT-2 for our FIN,
    /// as an orderly close leaves it.
    fn server_socket_is_aborted(mut client: RawClient, server: SocketAddr) -> bool {
        let local = client.local_address();
        let stream = client.stream();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut bytes = [0u8; 64];
        loop {
            match stream.read(&mut bytes) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(error) if error.kind() == ErrorKind::ConnectionReset => break,
                Err(error) => panic!("unexpected read error: {error}"),
            }
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if server_state(server, local).is_none() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    #[test]
    fn applied_to_accepted_connections_when_override_defaults_is_on() {
        let server = TestServer::start(
            ServerOptions::new()
                .env("IGGY_TCP_SOCKET_OVERRIDE_DEFAULTS", "true")
                .env("IGGY_TCP_SOCKET_RECV_BUFFER_SIZE", "100 KiB")
                .env("IGGY_TCP_SOCKET_SEND_BUFFER_SIZE", "150 KiB")
                .env("IGGY_TCP_SOCKET_KEEPALIVE", "true")
                .env("IGGY_TCP_SOCKET_LINGER", "0 s")
                .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "1 s"),
        );
        let mut client = RawClient::connect(server.address());
        client.assert_ping();
        let line = server_side(server.address(), client.local_address());
        // The kernel doubles what SO_RCVBUF / SO_SNDBUF ask for (socket(7)).
        assert_eq!(skmem(&line, "rb"), 2 * 100 * 1024, "{line}");
        assert_eq!(skmem(&line, "tb"), 2 * 150 * 1024, "{line}");
        assert!(line.contains("timer:(keepalive"), "SO_KEEPALIVE: {line}");
        let address = server.address();
        assert!(
            server_socket_is_aborted(client, address),
            "SO_LINGER 0: the server's close aborts the connection"
        );
    }

    #[test]
    fn the_system_defaults_hold_without_override_defaults() {
        let server = TestServer::start(
            ServerOptions::new()
                .env("IGGY_TCP_SOCKET_RECV_BUFFER_SIZE", "100 KiB")
                .env("IGGY_TCP_SOCKET_KEEPALIVE", "true")
                .env("IGGY_TCP_SOCKET_LINGER", "0 s")
                .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "1 s"),
        );
        let mut client = RawClient::connect(server.address());
        client.assert_ping();
        let line = server_side(server.address(), client.local_address());
        assert_ne!(skmem(&line, "rb"), 2 * 100 * 1024, "{line}");
        assert!(!line.contains("keepalive"), "{line}");
        let address = server.address();
        assert!(
            !server_socket_is_aborted(client, address),
            "an orderly close, without linger"
        );
    }

    /// `skmem` of every UDP socket bound to the server's QUIC port (one per shard).
    fn quic_sockets(server: &TestServer) -> Vec<String> {
        let filter = format!("( sport = :{} )", server.quic_address().port());
        let output = Command::new("ss")
            .args(["-uanmH", &filter])
            .output()
            .expect("run ss (iproute2; scripts/install-deps.sh installs it)");
        assert!(output.status.success(), "ss -uanmH failed");
        let text = String::from_utf8_lossy(&output.stdout).replace("\n\t", " ");
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 2, "one socket per shard: {text}");
        lines
    }

    /// `[quic.socket]` (upstream's keys) replaces `quic.socket_buffer_size` on every shard's
    /// socket when override_defaults is on; without it, socket_buffer_size holds.
    #[test]
    fn quic_sockets_follow_quic_socket_when_override_defaults_is_on() {
        let options = || {
            ServerOptions::new()
                .shards(2)
                .env("IGGY_QUIC_SOCKET_BUFFER_SIZE", "50 KiB")
                .env("IGGY_QUIC_SOCKET_RECV_BUFFER_SIZE", "100 KiB")
                .env("IGGY_QUIC_SOCKET_SEND_BUFFER_SIZE", "80 KiB")
                .env("IGGY_QUIC_SOCKET_KEEPALIVE", "true")
        };
        let server = TestServer::start(options().env("IGGY_QUIC_SOCKET_OVERRIDE_DEFAULTS", "true"));
        for line in quic_sockets(&server) {
            assert_eq!(skmem(&line, "rb"), 2 * 100 * 1024, "{line}");
            assert_eq!(skmem(&line, "tb"), 2 * 80 * 1024, "{line}");
        }
        drop(server);
        let server = TestServer::start(options());
        for line in quic_sockets(&server) {
            assert_eq!(skmem(&line, "rb"), 2 * 50 * 1024, "{line}");
            assert_eq!(skmem(&line, "tb"), 2 * 50 * 1024, "{line}");
        }
    }
}
