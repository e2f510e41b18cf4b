//! `[tcp.socket]` and `[quic.socket]` (upstream's keys), read back from the server's sockets with `ss`.

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
/// set a 3 s `unauthenticated_timeout`: 1 s left a busy machine little room between the ping
/// and `ss`, and one run found no connection). Returns whether the server's socket is then gone at
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
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "3 s"),
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
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "3 s"),
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
