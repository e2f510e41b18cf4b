//! The `iggy` binary over WebSocket (`--transport ws`) against the real server: ws in both
//! protocol generations, wss with the server's generated certificate, and a wrong setup.

use rill_testkit as common;

use assert_cmd::Command;
use common::{ServerOptions, TestServer};
use serde_json::Value;

/// `iggy --transport ws` with root credentials, pointed at `server`'s WebSocket port.
fn iggy_ws(server: &TestServer, home: &tempfile::TempDir) -> Command {
    let mut command = Command::cargo_bin("iggy").unwrap();
    command
        .env("IGGY_HOME", home.path())
        .env_remove("IGGY_USERNAME")
        .env_remove("IGGY_PASSWORD")
        .args(["--transport", "ws", "--websocket-server-address"])
        .arg(server.websocket_address().to_string())
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

/// Creates a stream and topic, sends, polls and stores an offset, all through `iggy`.
fn round_trip(iggy: impl Fn() -> Command, stream: &str) {
    let json = |args: &[&str]| -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&run(iggy(), &all)).unwrap()
    };
    let me = json(&["me"]);
    assert_eq!(me["transport"], "WebSocket", "{me}");
    run(iggy(), &["stream", "create", stream]);
    run(iggy(), &["topic", "create", stream, "t", "1", "none"]);
    run(
        iggy(),
        &["message", "send", "-p", "0", stream, "t", "one", "two"],
    );
    let polled = json(&["message", "poll", "--first", "-m", "10", stream, "t", "0"]);
    let payloads: Vec<_> = polled
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["payload"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(payloads, ["one", "two"]);
    run(
        iggy(),
        &["consumer-offset", "set", "5", stream, "t", "0", "1"],
    );
    let offset = json(&["consumer-offset", "get", "5", stream, "t", "0"]);
    assert_eq!(offset["stored_offset"], 1, "{offset}");
    let streams = json(&["stream", "list"]);
    assert!(
        streams
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == stream),
        "{streams}"
    );
}

#[test]
fn commands_over_ws_in_both_generations() {
    let server = TestServer::start_default();
    let home = tempfile::tempdir().unwrap();
    round_trip(|| iggy_ws(&server, &home), "over-ws-08");
    round_trip(
        || {
            let mut command = iggy_ws(&server, &home);
            command.args(["--protocol", "0.9"]);
            command
        },
        "over-ws-09",
    );
}

#[test]
fn commands_over_wss_with_the_generated_certificate() {
    let server = TestServer::start(ServerOptions::new().env("IGGY_WEBSOCKET_TLS_ENABLED", "true"));
    let certificate = server
        .data_path()
        .join("certs")
        .join("websocket-self-signed.pem");
    let home = tempfile::tempdir().unwrap();
    let wss = || {
        let mut command = iggy_ws(&server, &home);
        command
            .args([
                "--websocket-tls-enabled",
                "--websocket-tls-domain",
                "localhost",
            ])
            .args([
                "--websocket-tls-validate-certificate",
                "--websocket-tls-ca-file",
            ])
            .arg(&certificate);
        command
    };
    round_trip(wss, "over-wss");

    // Validation without the CA file: a certificate error, exit code 3 like any connection
    // failure, naming the option to set.
    let output = iggy_ws(&server, &home)
        .args([
            "--websocket-tls-enabled",
            "--websocket-tls-validate-certificate",
        ])
        .args(["--websocket-tls-domain", "localhost", "stream", "list"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tls_ca_file"), "{stderr}");

    // A TLS flag without --websocket-tls-enabled is a usage error.
    let output = iggy_ws(&server, &home)
        .args(["--websocket-tls-domain", "localhost", "stream", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
