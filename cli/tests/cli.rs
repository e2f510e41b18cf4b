//! End-to-end tests of the `iggy` binary against the real server: every command group, the
//! output modes, exit codes and credential handling.

use rill_testkit as common;

use assert_cmd::Command;
use common::TestServer;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

struct Env {
    server: TestServer,
    home: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            server: TestServer::start_default(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// `iggy` with root credentials for this server.
    fn iggy(&self) -> Command {
        let mut command = self.anonymous();
        command.args(["-u", "iggy", "-p", "iggy"]);
        command
    }

    /// `iggy` pointed at this server without credentials.
    fn anonymous(&self) -> Command {
        let mut command = Command::cargo_bin("iggy").unwrap();
        command
            .env("IGGY_HOME", self.home.path())
            .env_remove("IGGY_USERNAME")
            .env_remove("IGGY_PASSWORD")
            .args(["--tcp-server-address", &self.server.tcp_address()]);
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output = self.iggy().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "iggy {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.run(&all)).unwrap()
    }

    /// Runs and expects the given exit code; returns stderr.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let output = self.iggy().args(args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(code),
            "iggy {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stderr).unwrap()
    }
}

#[test]
fn help_and_completions_need_no_server() {
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for command in [
        "stream",
        "topic",
        "partition",
        "segment",
        "ping",
        "me",
        "stats",
        "snapshot",
        "pat",
        "user",
        "client",
        "cluster",
        "consumer-group",
        "consumer-offset",
        "message",
        "context",
        "login",
        "logout",
        "--tcp-server-address",
        "--quic-server-address",
        "--transport",
        "--username",
        "--password",
        "--token",
        "Exit codes",
    ] {
        assert!(help.contains(command), "help lacks {command}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let output = Command::cargo_bin("iggy")
            .unwrap()
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(output.status.success());
        assert!(String::from_utf8_lossy(&output.stdout).contains("iggy"));
    }
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .args(["--generate", "bash"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("complete"));
    // Usage errors exit with 2.
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .args(["stream", "frobnicate"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn streams_topics_partitions_and_segments() {
    let env = Env::new();
    let created = env.run(&["stream", "create", "orders"]);
    assert!(
        created.contains("Stream with name: orders and ID: 0 created"),
        "{created}"
    );
    assert!(
        env.fails(&["stream", "create", "orders"], 1)
            .contains("1012")
    );
    let table = env.run(&["stream", "list"]);
    assert!(table.contains("| orders"), "{table}");
    let list = env.run(&["stream", "list", "-l", "list"]);
    assert!(
        list.lines()
            .any(|line| line.starts_with("0|") && line.contains("|orders|")),
        "{list}"
    );
    // Quiet mode prints nothing, as the official CLI.
    assert!(env.run(&["-q", "stream", "list"]).is_empty());
    let streams = env.json(&["stream", "list"]);
    assert_eq!(streams[0]["name"], "orders");
    env.run(&["stream", "update", "orders", "orders2"]);
    assert_eq!(env.json(&["stream", "get", "0"])["name"], "orders2");
    assert!(
        env.fails(&["stream", "get", "nope"], 5)
            .contains("was not found")
    );

    env.run(&[
        "topic", "create", "orders2", "events", "2", "none", "1day", "1h",
    ]);
    let topic = env.json(&["topic", "get", "orders2", "events"]);
    assert_eq!(topic["partitions_count"], 2);
    assert_eq!(topic["message_expiry"], 90_000_000_000u64);
    assert_eq!(topic["partitions"].as_array().unwrap().len(), 2);
    env.run(&[
        "topic",
        "update",
        "orders2",
        "events",
        "events2",
        "gzip",
        "unlimited",
    ]);
    let topics = env.json(&["topic", "list", "orders2"]);
    assert_eq!(topics[0]["name"], "events2");
    assert_eq!(topics[0]["compression_algorithm"], "gzip");
    assert!(env.run(&["topic", "list", "orders2"]).contains("events2"));

    env.run(&["partition", "create", "orders2", "events2", "3"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["partitions_count"],
        5
    );
    env.run(&["partition", "delete", "orders2", "events2", "4"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["partitions_count"],
        1
    );
    env.run(&["segment", "delete", "orders2", "events2", "0", "1"]);

    env.run(&["message", "send", "-p", "0", "orders2", "events2", "x"]);
    env.run(&["topic", "purge", "orders2", "events2"]);
    env.run(&["stream", "purge", "orders2"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["messages_count"],
        0
    );
    env.run(&["topic", "delete", "orders2", "events2"]);
    assert!(
        env.fails(&["topic", "get", "orders2", "events2"], 5)
            .contains("not found")
    );
    env.run(&["stream", "delete", "orders2"]);
    assert!(
        env.fails(&["stream", "delete", "orders2"], 5)
            .contains("1009")
    );
}

#[test]
fn messages_send_poll_flush_and_follow() {
    let env = Env::new();
    env.run(&["stream", "create", "s"]);
    env.run(&["topic", "create", "s", "t", "2", "none"]);

    // Arguments, with headers, to an explicit partition.
    env.run(&[
        "message",
        "send",
        "-p",
        "1",
        "-H",
        "k:string:v,n:uint32:7",
        "s",
        "t",
        "hello",
        "world",
    ]);
    let polled = env.json(&["message", "poll", "--first", "-m", "10", "s", "t", "1"]);
    let messages = polled.as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["payload"], "hello");
    assert_eq!(messages[1]["offset"], 1);
    assert_eq!(messages[0]["headers"][0]["key"], "k");
    assert_eq!(messages[0]["headers"][1]["value"], "7");
    let table = env.run(&[
        "message", "poll", "--offset", "0", "-m", "2", "-s", "s", "t", "1",
    ]);
    assert!(
        table.contains("hello") && table.contains("Header: k"),
        "{table}"
    );
    let hex = env.run(&[
        "message", "poll", "--first", "--format", "hex", "s", "t", "1",
    ]);
    assert!(hex.contains("68656c6c6f"), "{hex}");

    // Standard input, one message per line, with a key.
    env.iggy()
        .args(["message", "send", "-m", "key-1", "s", "t"])
        .write_stdin("one\ntwo\nthree\n")
        .assert()
        .success();
    let total: u64 = (0..2)
        .map(|p| {
            env.json(&["topic", "get", "s", "t"])["partitions"][p]["messages_count"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(total, 5);

    // A whole file as one message, then a binary dump and replay.
    let payload = env.home.path().join("payload.bin");
    std::fs::write(&payload, [0u8, 1, 2, 255]).unwrap();
    env.run(&[
        "message",
        "send",
        "-p",
        "0",
        "--payload-file",
        payload.to_str().unwrap(),
        "s",
        "t",
    ]);
    let dump = env.home.path().join("dump.bin");
    env.run(&[
        "message",
        "poll",
        "--first",
        "-m",
        "100",
        "--output-file",
        dump.to_str().unwrap(),
        "s",
        "t",
        "0",
    ]);
    assert!(std::fs::metadata(&dump).unwrap().len() > 64);
    env.run(&["stream", "create", "copy"]);
    env.run(&["topic", "create", "copy", "t", "1", "none"]);
    env.run(&[
        "message",
        "send",
        "--input-file",
        dump.to_str().unwrap(),
        "copy",
        "t",
    ]);
    let original = env.json(&["message", "poll", "--first", "-m", "100", "s", "t", "0"]);
    let replayed = env.json(&["message", "poll", "--first", "-m", "100", "copy", "t", "0"]);
    let payloads = |value: &Value| {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["payload"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(payloads(&original), payloads(&replayed));
    assert_eq!(original[0]["id"], replayed[0]["id"]);

    env.run(&["message", "flush", "s", "t", "0"]);
    env.run(&["message", "flush", "--fsync", "s", "t", "1"]);
    assert!(
        env.fails(&["message", "flush", "s", "t", "9"], 5)
            .contains("3007")
    );

    // --next with auto-commit moves the consumer's offset.
    env.run(&["message", "poll", "--next", "-a", "-c", "5", "s", "t", "1"]);
    let offset = env.json(&["consumer-offset", "get", "5", "s", "t", "1"]);
    assert_eq!(offset["stored_offset"], 0);

    // --follow prints messages sent after it started, like tail -f.
    let mut follower = std::process::Command::new(assert_cmd::cargo::cargo_bin("iggy"))
        .env("IGGY_HOME", env.home.path())
        .args([
            "--tcp-server-address",
            &env.server.tcp_address(),
            "-u",
            "iggy",
            "-p",
            "iggy",
            "--json",
        ])
        .args([
            "message",
            "poll",
            "--last",
            "--follow",
            "--follow-interval",
            "50ms",
            "s",
            "t",
            "1",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = follower.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines_tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The follower is running once it has printed the partition's last message; what is sent
    // after that must be followed.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = vec![
        lines_rx
            .recv_timeout(Duration::from_secs(15))
            .expect("follow prints the last stored message first"),
    ];
    env.run(&[
        "message",
        "send",
        "-p",
        "1",
        "s",
        "t",
        "followed-1",
        "followed-2",
    ]);
    while !seen.iter().any(|line: &String| line.contains("followed-2")) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(remaining) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("follow did not print the new messages: {seen:?}"),
        }
    }
    follower.kill().unwrap();
    let _ = follower.wait();
    assert!(
        seen.iter().any(|line| line.contains("followed-1")),
        "{seen:?}"
    );
}

#[test]
fn consumer_groups_and_offsets() {
    let env = Env::new();
    env.run(&["stream", "create", "s"]);
    env.run(&["topic", "create", "s", "t", "3", "none"]);
    let out = env.run(&["consumer-group", "create", "s", "t", "workers"]);
    assert!(
        out.contains("Consumer group with ID: 0, name: workers created"),
        "{out}"
    );
    assert!(
        env.fails(&["consumer-group", "create", "s", "t", "workers"], 1)
            .contains("5004")
    );
    let group = env.json(&["consumer-group", "get", "s", "t", "workers"]);
    assert_eq!(group["partitions_count"], 3);
    assert_eq!(group["members"].as_array().unwrap().len(), 0);
    assert_eq!(
        env.json(&["consumer-group", "list", "s", "t"])[0]["name"],
        "workers"
    );
    assert!(
        env.run(&["consumer-group", "list", "-l", "list", "s", "t"])
            .contains("0|workers|3|0")
    );

    env.run(&["message", "send", "-p", "2", "s", "t", "a", "b", "c"]);
    env.run(&["consumer-offset", "set", "7", "s", "t", "2", "1"]);
    let offset = env.json(&["consumer-offset", "get", "7", "s", "t", "2"]);
    assert_eq!(offset["stored_offset"], 1);
    assert_eq!(offset["current_offset"], 2);
    assert!(
        env.run(&["consumer-offset", "get", "7", "s", "t", "2"])
            .contains("Stored offset")
    );
    env.fails(&["consumer-offset", "get", "8", "s", "t", "2"], 5);
    env.fails(
        &[
            "consumer-offset",
            "get",
            "--kind",
            "consumer-group",
            "workers",
            "s",
            "t",
            "1",
        ],
        5,
    );

    env.run(&["consumer-group", "delete", "s", "t", "workers"]);
    env.fails(&["consumer-group", "get", "s", "t", "workers"], 5);
}

#[test]
fn users_tokens_login_and_contexts() {
    let env = Env::new();
    env.run(&[
        "user",
        "create",
        "alice",
        "secret1",
        "-g",
        "r_str,read_topics",
        "-s",
        "0:p_msg#0:s_msg",
    ]);
    let user = env.json(&["user", "get", "alice"]);
    assert_eq!(user["status"], "active");
    assert_eq!(user["permissions"]["global"]["read_streams"], true);
    assert_eq!(user["permissions"]["global"]["manage_users"], false);
    assert_eq!(
        user["permissions"]["streams"][0]["topics"][0]["send_messages"],
        true
    );
    assert_eq!(env.json(&["user", "list"]).as_array().unwrap().len(), 2);
    env.run(&["user", "name", "alice", "alicia"]);
    env.run(&["user", "status", "alicia", "inactive"]);
    assert_eq!(env.json(&["user", "get", "alicia"])["status"], "inactive");
    env.run(&["user", "status", "alicia", "active"]);
    env.run(&["user", "permissions", "alicia", "-g", "m_str"]);
    assert_eq!(
        env.json(&["user", "get", "alicia"])["permissions"]["global"]["manage_streams"],
        true
    );
    env.run(&["user", "password", "alicia", "secret1", "secret2"]);

    // The new password works, the old one does not (exit 4 names code 42).
    env.anonymous()
        .args(["-u", "alicia", "-p", "secret2", "me"])
        .assert()
        .success();
    let output = env
        .anonymous()
        .args(["-u", "alicia", "-p", "secret1", "me"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&output.stderr).contains("42"));
    // No password on the command line: it is read (here from standard input, not a terminal).
    env.anonymous()
        .args(["-u", "alicia", "me"])
        .write_stdin("secret2\n")
        .assert()
        .success();
    // No credentials at all.
    assert_eq!(
        env.anonymous()
            .args(["stream", "list"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(4)
    );

    // Personal access tokens.
    let token = env.json(&["pat", "create", "ci-token"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(env.json(&["pat", "list"])[0]["name"], "ci-token");
    env.anonymous()
        .args(["-t", &token, "stream", "list"])
        .assert()
        .success();
    env.run(&["pat", "create", "--store-token", "stored"]);
    env.anonymous()
        .args(["-n", "stored", "me"])
        .assert()
        .success();
    env.run(&["pat", "delete", "ci-token"]);
    assert_eq!(
        env.anonymous()
            .args(["-t", &token, "me"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(5)
    );

    // login stores a session used by later commands; logout removes it.
    env.run(&["login", "1h"]);
    env.anonymous().args(["stream", "list"]).assert().success();
    assert!(
        env.json(&["pat", "list"])
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "iggy-cli-session")
    );
    env.anonymous().arg("logout").assert().success();
    assert_eq!(
        env.anonymous()
            .args(["stream", "list"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(4)
    );

    // Contexts supply the server address and credentials.
    Command::cargo_bin("iggy")
        .unwrap()
        .env("IGGY_HOME", env.home.path())
        .args([
            "context",
            "create",
            "local",
            "--tcp-server-address",
            &env.server.tcp_address(),
            "-u",
            "iggy",
            "-p",
            "iggy",
        ])
        .assert()
        .success();
    let in_home = || {
        let mut command = Command::cargo_bin("iggy").unwrap();
        command.env("IGGY_HOME", env.home.path());
        command
    };
    in_home()
        .args(["context", "use", "local"])
        .assert()
        .success();
    let contexts = in_home()
        .args(["--json", "context", "list"])
        .output()
        .unwrap();
    let contexts: Value = serde_json::from_slice(&contexts.stdout).unwrap();
    assert!(
        contexts
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "local" && c["active"] == true)
    );
    in_home().args(["me"]).assert().success();
    in_home()
        .args(["context", "delete", "local"])
        .assert()
        .success();
    assert_eq!(
        in_home()
            .args(["context", "use", "missing"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(5)
    );

    env.run(&["user", "delete", "alicia"]);
    assert!(env.fails(&["user", "delete", "iggy"], 1).contains("48"));
}

#[test]
fn system_commands() {
    let env = Env::new();
    let ping = env.anonymous().args(["ping", "-c", "2"]).output().unwrap();
    assert!(ping.status.success());
    assert!(String::from_utf8_lossy(&ping.stdout).contains("Ping statistics for 2"));
    let me = env.json(&["me"]);
    assert_eq!(me["user_id"], 0);
    assert_eq!(me["transport"], "TCP");
    let stats = env.json(&["stats"]);
    assert!(stats["process_id"].as_u64().unwrap() > 0);
    assert!(
        env.run(&["stats", "-o", "toml"])
            .contains("streams_count = 0")
    );
    assert!(
        env.run(&["stats", "-o", "list"])
            .contains("Streams Count|0")
    );
    // An open (unauthenticated) connection is a client that outlives the CLI's own sessions.
    let _session = std::net::TcpStream::connect(env.server.address()).unwrap();
    let clients = env.json(&["client", "list"]);
    let idle = clients
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["user_id"].is_null())
        .unwrap_or_else(|| panic!("no unauthenticated client in {clients}"));
    let client_id = idle["client_id"].as_u64().unwrap().to_string();
    assert_eq!(
        env.json(&["client", "get", &client_id])["client_id"].to_string(),
        client_id
    );
    env.fails(&["client", "get", "1"], 5);
    assert!(
        !env.json(&["cluster", "metadata"])["nodes"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let out_dir = env.home.path().join("snapshots");
    env.run(&["snapshot", "-s", "test", "-o", out_dir.to_str().unwrap()]);
    let snapshot = std::fs::read_dir(&out_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(&std::fs::read(snapshot.path()).unwrap()[..2], b"PK");
}

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
