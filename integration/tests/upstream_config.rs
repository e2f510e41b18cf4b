//! An upstream Iggy 0.8.0 configuration starts this server: every key of upstream's default
//! file at upstream's default values (tests/fixtures/upstream-0.8.0-defaults.toml), with the
//! environment variables upstream's Docker image and Helm chart set. Keys we do not honour are
//! named in one WARN each where their value asks for something we do not do; keys that ask for
//! something we do not offer (JWTs signed with RSA or ECDSA keys), or encryption without a usable key, stop the start with
//! a clear message, from the file and from the environment alike.

use iggy::prelude::*;
use rill_integration::binary::run_to_exit;
use rill_integration::fixtures::{poll_from, send_batch, test_messages};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::path::PathBuf;

fn upstream_defaults() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-0.8.0-defaults.toml")
}

#[tokio::test]
async fn upstream_default_file_and_docker_variables_start_the_server() {
    let file = upstream_defaults();
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_CONFIG_PATH", file.to_str().unwrap())
            // Upstream's Dockerfile and Helm chart (the harness sets the TCP, QUIC and HTTP
            // addresses to free ports the same way).
            .env("IGGY_WEBSOCKET_ADDRESS", "127.0.0.1:0")
            .env("RUST_LOG", "info")
            // Upstream skips empty values ("not set"), as compose files often leave them.
            .env("IGGY_HEARTBEAT_ENABLED", ""),
    );
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;
    let messages = test_messages(1, 0, 5);
    send_batch(
        &client,
        &id(0),
        &id(0),
        &Partitioning::partition_id(0),
        messages,
    )
    .await;
    assert_eq!(poll_from(&client, &id(0), &id(0), 0, 0, 10).await.len(), 5);

    let log = server.log();
    // Upstream's file turns file logging on (system.logging.file_enabled), under system.path.
    assert!(
        server.data_path().join("logs").is_dir(),
        "file logging on: {log}"
    );
    // Upstream's file turns WebSocket on: it is served, with no warning about it.
    assert!(
        log.contains("listening for WebSocket connections")
            && !log.contains("configuration key websocket"),
        "{log}"
    );
    assert!(!log.contains("ignoring environment variable"), "{log}");
    for quiet in [
        "http.jwt",
        "http.cors",
        "consumer_group",
        "memory_pool",
        "telemetry",
    ] {
        assert!(
            !log.contains(&format!("configuration key {quiet}")),
            "{quiet} is at upstream's default and must not warn:\n{log}"
        );
    }
    // The certificate files named by upstream's file do not exist here: QUIC generates one.
    assert!(
        log.contains("generating a self-signed certificate"),
        "{log}"
    );
}

fn start_expecting_refusal(file: Option<&str>, env: &[(&str, &str)]) -> String {
    start_in(&tempfile::tempdir().unwrap(), file, env)
}

/// Runs the server in `dir` (its working directory), which must refuse to start, storing
/// nothing; returns what it printed.
fn start_in(dir: &tempfile::TempDir, file: Option<&str>, env: &[(&str, &str)]) -> String {
    let path = dir.path().join("server.toml");
    let mut env = env.to_vec();
    if let Some(text) = file {
        std::fs::write(&path, text).unwrap();
        env.push(("IGGY_CONFIG_PATH", path.to_str().unwrap()));
    }
    let (started, text) = run_to_exit(dir.path(), &env);
    assert!(!started, "must not start:\n{text}");
    assert!(
        !dir.path().join("data").join("state").exists(),
        "nothing stored before refusing: {text}"
    );
    text
}

#[test]
fn protections_that_cannot_be_given_stop_the_start() {
    // Encryption at rest is given (tests/encryption_at_rest.rs); a key it cannot use stops the
    // start without being shown.
    let text = start_expecting_refusal(
        Some("[system.encryption]\nenabled = true\nkey = \"super-secret-key-material\"\n"),
        &[],
    );
    assert!(text.contains("system.encryption.key"), "{text}");
    assert!(
        !text.contains("super-secret-key-material"),
        "the key is never shown: {text}"
    );
    let text = start_expecting_refusal(None, &[("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true")]);
    assert!(text.contains("needs system.encryption.key"), "{text}");
    // JWTs signed with RSA or ECDSA keys are not offered: named, rather than tokens that never
    // verify.
    let text = start_expecting_refusal(None, &[("IGGY_HTTP_JWT_ALGORITHM", "RS256")]);
    assert!(text.contains("http.jwt.algorithm"), "{text}");
    // A key that is neither ours nor upstream's still stops the start, naming it.
    let text = start_expecting_refusal(Some("[system]\npaht = \"x\"\n"), &[]);
    assert!(text.contains("system.paht"), "{text}");
}

/// Where upstream finds its configuration and environment without being told: an `.env` file in
/// the working directory (or IGGY_ENV_PATH), and `core/server/config.toml` there or above. Each
/// is proven read by a value in it that stops the start.
#[test]
fn env_files_and_the_default_config_path_are_read_as_upstream_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "# upstream's env file\nexport IGGY_SYSTEM_ENCRYPTION_ENABLED=\"true\"\n",
    )
    .unwrap();
    let text = start_in(&dir, None, &[]);
    assert!(
        text.contains("needs system.encryption.key"),
        ".env was read: {text}"
    );
    // A variable already set wins over the file: encryption is off, and an RSA JWT asked for.
    let text = start_in(
        &dir,
        None,
        &[
            ("IGGY_SYSTEM_ENCRYPTION_ENABLED", "false"),
            ("IGGY_HTTP_JWT_ALGORITHM", "RS256"),
        ],
    );
    assert!(
        text.contains("http.jwt.algorithm") && !text.contains("needs system.encryption.key"),
        "{text}"
    );

    let other = tempfile::tempdir().unwrap();
    let env_file = other.path().join("iggy.env");
    std::fs::write(&env_file, "IGGY_HTTP_JWT_ALGORITHM=RS256\n").unwrap();
    let text = start_in(&dir, None, &[("IGGY_ENV_PATH", env_file.to_str().unwrap())]);
    assert!(
        text.contains("http.jwt.algorithm"),
        "IGGY_ENV_PATH was read, and only it: {text}"
    );
    let text = start_in(&dir, None, &[("IGGY_ENV_PATH", "/nonexistent/iggy.env")]);
    assert!(text.contains("IGGY_ENV_PATH"), "{text}");

    // core/server/config.toml in a parent of the working directory.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("core/server")).unwrap();
    std::fs::create_dir_all(root.path().join("deploy/run")).unwrap();
    std::fs::write(
        root.path().join("core/server/config.toml"),
        "[system.encryption]\nenabled = true\n",
    )
    .unwrap();
    let cwd = tempfile::TempDir::new_in(root.path().join("deploy/run")).unwrap();
    let text = start_in(&cwd, None, &[]);
    assert!(
        text.contains("needs system.encryption.key"),
        "the default path was found: {text}"
    );
}
