//! Transports: an unreachable server, an unsupported transport, and the protocol
//! generation the `--protocol` flag puts on the wire.

use rill_testkit as common;

use crate::env::Env;
use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

#[test]
fn unreachable_server_and_unsupported_transport() {
    let home = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .env("IGGY_HOME", home.path())
        .args([
            "--tcp-server-address",
            &format!("127.0.0.1:{port}"),
            "--tcp-reconnection-max-retries",
            "1",
            "--tcp-reconnection-interval",
            "10ms",
            "-u",
            "iggy",
            "-p",
            "iggy",
            "stream",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot connect"));
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .env("IGGY_HOME", home.path())
        .args([
            "--transport",
            "smtp",
            "-u",
            "iggy",
            "-p",
            "iggy",
            "stream",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not supported"));
    // Nobody answers QUIC on that UDP port: the handshake times out (5 s connect timeout).
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .env("IGGY_HOME", home.path())
        .args([
            "--transport",
            "quic",
            "--quic-server-address",
            &format!("127.0.0.1:{port}"),
            "--quic-reconnection-max-retries",
            "0",
            "-u",
            "iggy",
            "-p",
            "iggy",
            "stream",
            "list",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("QUIC handshake"), "{stderr}");
}

#[test]
fn the_protocol_flag_chooses_the_generation_on_the_wire() {
    // What the CLI writes first tells the generations apart (protocol-0.9.md 1.2): a listener
    // that answers nothing sees the first request's bytes.
    let home = tempfile::tempdir().unwrap();
    let first_bytes = |protocol: &str| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let reader = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut first = [0u8; 8];
            std::io::Read::read_exact(&mut socket, &mut first).unwrap();
            first
        });
        // The CLI fails once the listener hangs up; only its first bytes matter here.
        let _ = Command::cargo_bin("iggy")
            .unwrap()
            .env("IGGY_HOME", home.path())
            .args(["--protocol", protocol, "--tcp-server-address", &address])
            .args(["--tcp-reconnection-max-retries", "0", "ping"])
            .timeout(Duration::from_secs(5))
            .output();
        reader.join().unwrap()
    };
    assert_eq!(first_bytes("0.8"), [4, 0, 0, 0, 1, 0, 0, 0], "a 0.8 Ping");
    assert_eq!(
        first_bytes("0.9"),
        [0; 8],
        "a 0.9 header starts with zero checksums"
    );

    // Against the server, 0.9 does what 0.8 does, and each reads what the other wrote.
    let env = Env::new();
    let v09 = |args: &[&str]| {
        let mut all = vec!["--protocol", "0.9"];
        all.extend_from_slice(args);
        env.run(&all)
    };
    v09(&["stream", "create", "s"]);
    v09(&["topic", "create", "s", "t", "1", "none"]);
    v09(&["message", "send", "-p", "0", "s", "t", "from-0.9"]);
    env.run(&["message", "send", "-p", "0", "s", "t", "from-0.8"]);
    let polled: Value = serde_json::from_str(&v09(&[
        "--json", "message", "poll", "--first", "-m", "10", "s", "t", "0",
    ]))
    .unwrap();
    let payloads: Vec<_> = polled
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["payload"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(payloads, ["from-0.9", "from-0.8"]);
    let topic: Value = serde_json::from_str(&v09(&["--json", "topic", "get", "s", "t"])).unwrap();
    assert_eq!(topic["messages_count"], 2, "{topic}");
    let output = env
        .iggy()
        .args(["--protocol", "1.0", "stream", "list"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "an unknown generation is a usage error"
    );
}
