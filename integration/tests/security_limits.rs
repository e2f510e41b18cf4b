//! Hardening (issue 21), resources: every client resource has a named limit checked before
//! allocation (connections, request bodies in flight, body size without send permission,
//! logins, idle and half-sent requests, the HTTP endpoint), files are private, and hitting a
//! limit never harms another client.

mod support;

use iggy::prelude::*;
use rill_integration::raw::{RawClient, frame, status};
use rill_integration::sdk::{create_stream, create_topic, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::str::FromStr;
use std::time::{Duration, Instant};
use support::{global_only, no_global};

const PASSWORD: &str = "secret-pass";
const SEND_MESSAGES: u32 = 101;

fn rss_kib(server: &TestServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid().unwrap()))
        .expect("server status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// A connection from `source` (an address of the loopback network) to `server`.
fn connect_from(source: &str, server: SocketAddr) -> TcpStream {
    let socket = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Stream,
        nix::sys::socket::SockFlag::empty(),
        None,
    )
    .unwrap();
    let local: SocketAddr = format!("{source}:0").parse().unwrap();
    nix::sys::socket::bind(
        std::os::fd::AsRawFd::as_raw_fd(&socket),
        &nix::sys::socket::SockaddrStorage::from(local),
    )
    .unwrap();
    nix::sys::socket::connect(
        std::os::fd::AsRawFd::as_raw_fd(&socket),
        &nix::sys::socket::SockaddrStorage::from(server),
    )
    .unwrap();
    let stream = TcpStream::from(socket);
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Whether a ping on `stream` is answered (false: closed by the server).
fn answers_ping(stream: &mut TcpStream) -> bool {
    if stream.write_all(&frame(1, &[])).is_err() {
        return false;
    }
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).is_ok() && header == [0; 8]
}

#[test]
fn connection_limits_close_the_connection_past_them_and_spare_the_rest() {
    // Proves finding 7 (connection limit): total and per-address caps close new connections at
    // once with a WARN line, while connections already open keep working.
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_LIMITS_MAX_CONNECTIONS", "12")
            .env("IGGY_LIMITS_MAX_CONNECTIONS_PER_ADDRESS", "6"),
    );
    let mut logged_in = RawClient::connect(server.address());
    logged_in.login_root();
    let mut from_one: Vec<TcpStream> = (0..5)
        .map(|_| connect_from("127.0.0.1", server.address()))
        .collect();
    for stream in &mut from_one {
        assert!(answers_ping(stream));
    }
    let mut over = connect_from("127.0.0.1", server.address());
    assert!(!answers_ping(&mut over), "the 7th from 127.0.0.1 is closed");
    let mut others: Vec<TcpStream> = (0..6)
        .map(|_| connect_from("127.0.0.2", server.address()))
        .collect();
    for stream in &mut others {
        assert!(answers_ping(stream), "another address has its own share");
    }
    let mut total_over = connect_from("127.0.0.3", server.address());
    assert!(
        !answers_ping(&mut total_over),
        "the 13th connection is closed"
    );
    logged_in.assert_ping();
    drop(others.pop());
    let mut after = connect_from("127.0.0.3", server.address());
    let mut answered = false;
    for _ in 0..50 {
        if answers_ping(&mut after) {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        after = connect_from("127.0.0.3", server.address());
    }
    assert!(answered, "a freed slot is usable again");
    assert!(
        server.log().contains("limits.max_connections"),
        "WARN names the limit"
    );
}

#[tokio::test]
async fn sessions_per_user_are_capped() {
    let server =
        TestServer::start(ServerOptions::new().env("IGGY_LIMITS_MAX_SESSIONS_PER_USER", "2"));
    let root = root_client(&server).await;
    root.create_user("capped", PASSWORD, UserStatus::Active, None)
        .await
        .unwrap();
    let mut first = RawClient::connect(server.address());
    let mut second = RawClient::connect(server.address());
    let mut third = RawClient::connect(server.address());
    assert_eq!(first.login("capped", PASSWORD).status, status::OK);
    assert_eq!(second.login("capped", PASSWORD).status, status::OK);
    assert_eq!(
        third.login("capped", PASSWORD).status,
        41,
        "a third session"
    );
    drop(first);
    let mut freed = false;
    for _ in 0..50 {
        if third.login("capped", PASSWORD).status == status::OK {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(freed, "a closed session frees its place");
    assert!(server.log().contains("limits.max_sessions_per_user"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_declared_bodies_neither_grow_memory_nor_slow_other_clients() {
    // Proves finding 5: a user with no permissions, 20 connections each declaring a 60 MiB
    // SendMessages and never finishing it, took RSS from 268 MB to 1.33 GB before the fix. Now
    // such a body is refused before it is read (no send permission), and a user who may send is
    // bounded by the global in-flight budget; another client keeps working throughout.
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_LIMITS_MAX_REQUEST_BYTES_IN_FLIGHT", "64 MiB")
            .env("IGGY_TCP_READ_TIMEOUT", "8 s"),
    );
    let root = root_client(&server).await;
    let stream = create_stream(&root, "s").await;
    create_topic(&root, stream, "t", 1).await;
    root.create_user(
        "nobody",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(no_global())),
    )
    .await
    .unwrap();
    let mut sender = no_global();
    sender.send_messages = true;
    root.create_user(
        "sender",
        PASSWORD,
        UserStatus::Active,
        Some(global_only(sender)),
    )
    .await
    .unwrap();
    let before = rss_kib(&server);
    let declare = |user: &str| {
        let mut client = RawClient::connect(server.address());
        assert_eq!(client.login(user, PASSWORD).status, status::OK);
        let length: u32 = 60 * 1024 * 1024;
        let mut bytes = length.to_le_bytes().to_vec();
        bytes.extend(SEND_MESSAGES.to_le_bytes());
        bytes.extend(vec![7u8; 1024 * 1024]);
        let _ = client.write_raw(&bytes);
        client
    };
    let started = Instant::now();
    println!("setup done");
    let mut refused = Vec::new();
    for _ in 0..20 {
        refused.push(declare("nobody"));
    }
    for client in &mut refused {
        let answer = client.read_response().expect("an answer before the close");
        assert_eq!(answer.status, 41, "refused before the body is read");
        assert!(client.is_closed_by_server(), "and closed");
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "refused at once"
    );
    // 20 senders each push 30 MiB of their 60 MiB body and stall: before the budget the server
    // held all of it (600 MiB); now one body at a time is read, the rest wait unread.
    let pending: Vec<_> = (0..20)
        .map(|_| {
            let mut client = declare("sender");
            std::thread::spawn(move || {
                let chunk = vec![7u8; 1024 * 1024];
                for _ in 0..29 {
                    if client.write_raw(&chunk).is_err() {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_secs(4));
                client
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = rss_kib(&server);
    // Root keeps sending while 20 bodies of 60 MiB are pending.
    for round in 0..20 {
        let mut batch = [IggyMessage::from_str(&format!("m{round}")).unwrap()];
        root.send_messages(
            &Identifier::numeric(stream).unwrap(),
            &Identifier::numeric(0).unwrap(),
            &Partitioning::partition_id(0),
            &mut batch,
        )
        .await
        .expect("another client is unaffected");
    }
    let sends_done = Instant::now();
    for sender in pending {
        let _ = sender.join();
    }
    println!("senders joined after {:?}", sends_done.elapsed());
    println!("RSS before {before} KiB, during {during} KiB");
    assert!(
        during < before + 160 * 1024,
        "RSS grew from {before} to {during} KiB with 40 pending 60 MiB bodies"
    );
    assert!(
        server
            .log()
            .contains("limits.max_request_size_without_send")
    );
}

#[test]
fn failed_logins_are_throttled_and_cost_the_same_for_unknown_users() {
    // Proves finding 6: a connection is closed after limits.login.max_failures_per_connection
    // failures, failures are logged at WARN, further attempts from the address are delayed,
    // and an unknown user costs about what a known one does (no enumeration by timing).
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_LIMITS_LOGIN_MAX_FAILURES_PER_CONNECTION", "3")
            .env("IGGY_LIMITS_LOGIN_FAILURES_BEFORE_DELAY", "100")
            .env("IGGY_LIMITS_LOGIN_DELAY", "200 ms"),
    );
    let time_login = |user: &str| {
        let mut client = RawClient::connect(server.address());
        let started = Instant::now();
        assert_eq!(
            client.login(user, "wrong-password").status,
            status::INVALID_CREDENTIALS
        );
        started.elapsed()
    };
    let mut known: Vec<_> = (0..5).map(|_| time_login("iggy")).collect();
    let mut unknown: Vec<_> = (0..5).map(|_| time_login("nosuchuser")).collect();
    known.sort();
    unknown.sort();
    let (known, unknown) = (known[2], unknown[2]);
    println!("median failed login: known {known:?}, unknown {unknown:?}");
    assert!(
        unknown * 3 > known && known * 3 > unknown,
        "known {known:?} vs unknown {unknown:?}"
    );

    let mut client = RawClient::connect(server.address());
    for _ in 0..3 {
        assert_eq!(
            client.login("iggy", "wrong-password").status,
            status::INVALID_CREDENTIALS
        );
    }
    assert!(client.is_closed_by_server(), "closed after 3 failures");
    assert!(server.log().contains("WARN") && server.log().contains("login failed"));
}

#[test]
fn repeated_failures_delay_further_attempts_from_the_address() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_LIMITS_LOGIN_FAILURES_BEFORE_DELAY", "2")
            .env("IGGY_LIMITS_LOGIN_DELAY", "400 ms")
            .env("IGGY_LIMITS_LOGIN_MAX_DELAY", "2 s"),
    );
    let attempt = |password: &str| {
        let mut client = RawClient::connect(server.address());
        let started = Instant::now();
        let status = client.login("iggy", password).status;
        (status, started.elapsed())
    };
    let (_, first) = attempt("wrong-1");
    let (_, second) = attempt("wrong-2");
    let (_, third) = attempt("wrong-3");
    let (status, fourth) = attempt("wrong-4");
    assert_eq!(status, status::INVALID_CREDENTIALS);
    println!("attempts: {first:?} {second:?} {third:?} {fourth:?}");
    assert!(
        third >= Duration::from_millis(400),
        "third delayed: {third:?}"
    );
    assert!(
        fourth >= Duration::from_millis(800),
        "fourth delayed more: {fourth:?}"
    );
    // The right password still works (after its own delay), and success clears the count.
    let (status, _) = attempt("iggy");
    assert_eq!(status, status::OK);
    let (_, after_success) = attempt("wrong-5");
    assert!(
        after_success < Duration::from_millis(400),
        "{after_success:?}"
    );
}

#[test]
fn half_sent_requests_and_idle_sessions_are_closed() {
    // Proves the low finding: a logged-in session that sends half a header is closed after
    // tcp.read_timeout; limits.idle_timeout closes logged-in sessions that send nothing.
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_TCP_READ_TIMEOUT", "1 s")
            .env("IGGY_LIMITS_IDLE_TIMEOUT", "3 s"),
    );
    let mut half = RawClient::connect(server.address());
    half.login_root();
    half.write_raw(&[8, 0, 0, 0]).unwrap();
    let started = Instant::now();
    assert!(half.is_closed_by_server());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let mut idle = RawClient::connect(server.address());
    idle.login_root();
    std::thread::sleep(Duration::from_millis(1500));
    idle.assert_ping();
    let started = Instant::now();
    assert!(idle.is_closed_by_server());
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn anonymous_sockets_cost_little_memory() {
    // Proves finding 7 (memory): each anonymous socket allocated a 64 KiB buffer before login
    // (5,000 idle sockets: RSS 36 -> 353 MB). Buffers are now allocated on first need.
    let server = TestServer::start(
        ServerOptions::new().env("IGGY_LIMITS_MAX_CONNECTIONS_PER_ADDRESS", "5000"),
    );
    let before = rss_kib(&server);
    let sockets: Vec<_> = (0..1000)
        .map(|_| TcpStream::connect(server.address()).unwrap())
        .collect();
    let mut probe = RawClient::connect(server.address());
    probe.assert_ping();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(&server);
    println!("RSS with 1000 anonymous sockets: {before} -> {after} KiB");
    assert!(
        after < before + 24 * 1024,
        "1000 idle sockets took {} KiB",
        after - before
    );
    drop(sockets);
}

#[test]
fn data_files_are_private() {
    // Proves finding 10: the data directory is 0700 and the metadata log and segments 0600.
    use std::os::unix::fs::PermissionsExt;
    let server = TestServer::start(ServerOptions::new());
    let mut client = RawClient::connect(server.address());
    client.login_root();
    let mut create = rill_integration::raw::name("private");
    assert_eq!(client.request(202, &create).status, status::OK);
    create = rill_integration::raw::numeric_identifier(0);
    create.extend(1u32.to_le_bytes()); // partitions
    create.push(1); // compression: none
    create.extend(0u64.to_le_bytes()); // message expiry
    create.extend(0u64.to_le_bytes()); // max topic size
    create.push(1); // replication factor
    create.extend(rill_integration::raw::name("t"));
    assert_eq!(client.request(302, &create).status, status::OK);
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let data = server.data_path();
    assert_eq!(mode(&data), 0o700, "data directory");
    assert_eq!(mode(&data.join("state/metadata.log")), 0o600);
    let segment = data.join("streams/0/topics/0/partitions/0/00000000000000000000.log");
    assert_eq!(mode(&segment), 0o600);
}

#[test]
fn the_http_endpoint_survives_slow_clients() {
    // Proves finding 13: 8 connections sending a byte every 4 s kept /metrics at 503. Heads now
    // have an overall deadline (http.request_head_timeout), and slow heads hold no thread: each
    // connection is a task of the HTTP thread's runtime, up to http.max_connections.
    let server = TestServer::start(ServerOptions::new());
    let http = server.http_address().expect("HTTP endpoint");
    let slow: Vec<_> = (0..16)
        .map(|_| {
            let mut stream = TcpStream::connect(http).unwrap();
            stream.write_all(b"G").unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let mut stream = TcpStream::connect(http).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 200"), "{response:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(slow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_password_changes_do_not_stall_metadata_changes() {
    // Proves finding 11: ChangePassword checked the current password (Argon2id) inside shard 0's
    // serialised control lane, so a user with no permissions, from 40 connections, held up every
    // metadata change (root's CreateStream took 1.15 s). The check now runs on the caller's shard
    // and only a verified change enters the lane.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let user = root
        .create_user(
            "guesser",
            PASSWORD,
            UserStatus::Active,
            Some(global_only(no_global())),
        )
        .await
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut guessers = Vec::new();
    for _ in 0..60 {
        let address = server.address();
        let stop = stop.clone();
        guessers.push(std::thread::spawn(move || {
            let mut client = RawClient::connect(address);
            assert_eq!(client.login("guesser", PASSWORD).status, status::OK);
            // ChangePassword (37): user id, current password, new password (u8-length strings).
            let mut payload = rill_integration::raw::numeric_identifier(user.id);
            for password in ["wrong-guess", "new-password"] {
                payload.push(password.len() as u8);
                payload.extend_from_slice(password.as_bytes());
            }
            let mut answered = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let response = client.request(37, &payload);
                assert_eq!(response.status, status::INVALID_CREDENTIALS);
                answered += 1;
            }
            answered
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut slowest = Duration::ZERO;
    for round in 0..5 {
        let started = Instant::now();
        create_stream(&root, &format!("during-the-storm-{round}")).await;
        slowest = slowest.max(started.elapsed());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let answered: u32 = guessers.into_iter().map(|g| g.join().unwrap()).sum();
    println!(
        "60 connections answered {answered} wrong ChangePasswords; slowest CreateStream {slowest:?}"
    );
    assert!(answered > 0);
    assert!(
        slowest < Duration::from_millis(1500),
        "a CreateStream waited {slowest:?} behind password checks"
    );
}
