//! The `iggy` binary over the HTTP REST API (`--transport http --http-api-url`) against the
//! real server: commands, messages and offsets; what HTTP cannot do is a clear failure.

use rill_testkit as common;

use assert_cmd::Command;
use common::TestServer;
use serde_json::Value;

/// `iggy --transport http` with root credentials, pointed at `server`'s HTTP API.
fn iggy_http(server: &TestServer, home: &tempfile::TempDir) -> Command {
    let mut command = Command::cargo_bin("iggy").unwrap();
    command
        .env("IGGY_HOME", home.path())
        .env_remove("IGGY_USERNAME")
        .env_remove("IGGY_PASSWORD")
        .args(["--transport", "http", "--http-api-url"])
        .arg(format!(
            "http://{}",
            server.http_address().expect("the HTTP API listens")
        ))
        .args(["-u", "iggy", "-p", "iggy"]);
    command
}

fn run(mut command: Command, args: &[&str]) -> String {
    let output = command.args(args).output().unwrap();
    assert!(
        output.status.success(),
        "iggy {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn commands_over_http() {
    let server = TestServer::start_default();
    let home = tempfile::tempdir().unwrap();
    let iggy = || iggy_http(&server, &home);
    let json = |args: &[&str]| -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&run(iggy(), &all)).unwrap()
    };
    run(iggy(), &["ping"]);
    run(iggy(), &["stream", "create", "over-http"]);
    run(iggy(), &["topic", "create", "over-http", "t", "2", "none"]);
    run(
        iggy(),
        &["message", "send", "-p", "1", "over-http", "t", "one", "two"],
    );
    let polled = json(&[
        "message",
        "poll",
        "--first",
        "-m",
        "10",
        "over-http",
        "t",
        "1",
    ]);
    let payloads: Vec<_> = polled
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["payload"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(payloads, ["one", "two"]);
    run(
        iggy(),
        &["consumer-offset", "set", "5", "over-http", "t", "1", "1"],
    );
    let offset = json(&["consumer-offset", "get", "5", "over-http", "t", "1"]);
    assert_eq!(offset["stored_offset"], 1, "{offset}");
    let topic = json(&["topic", "get", "over-http", "t"]);
    assert_eq!(topic["messages_count"], 2, "{topic}");
    run(iggy(), &["user", "create", "alice", "secret-pw"]);
    let users = json(&["user", "list"]);
    assert_eq!(users.as_array().unwrap().len(), 2, "{users}");
    let stats = json(&["stats"]);
    assert_eq!(stats["messages_count"], 2, "{stats}");
    // GetMe has no HTTP call (as upstream's CLI over HTTP): a failing exit that says why.
    let output = iggy().arg("me").output().unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stderr).to_string()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(text.to_lowercase().contains("unavailable"), "{text}");
}
