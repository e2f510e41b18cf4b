//! The official CLI (`iggy` from crate iggy-cli 0.13.0) driven against our server: stream and
//! topic create/list/get/update/delete, message send/poll/flush. Results are checked both in the
//! CLI's output and, independently, with the official SDK.
//!
//! The CLI is not built by this workspace: `scripts/install-iggy-cli.sh` installs it into
//! `$CARGO_HOME/bin` (CI runs it before the tests). Set `IGGY_CLI_BIN` to use another binary.
//! If it is missing, these tests fail and say so, rather than pass without testing anything.

use iggy::prelude::*;
use rill_integration::fixtures::poll_partition;
use rill_integration::sdk::{id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CLI_VERSION: &str = "0.13.0";
/// Upper bound for one CLI invocation (the SDK inside would otherwise retry a dead server).
const CLI_TIMEOUT: Duration = Duration::from_secs(30);

/// The CLI binary: `IGGY_CLI_BIN`, else `$CARGO_HOME/bin/iggy` (`~/.cargo/bin/iggy`). Panics
/// with installation instructions when it is missing or the wrong version.
fn cli_binary() -> PathBuf {
    let path = match std::env::var_os("IGGY_CLI_BIN") {
        Some(path) => PathBuf::from(path),
        None => {
            let cargo_home = std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
                .expect("CARGO_HOME or HOME is set");
            cargo_home.join("bin").join("iggy")
        }
    };
    assert!(
        path.is_file(),
        "the official Iggy CLI is not installed at {}: run scripts/install-iggy-cli.sh \
         (cargo install iggy-cli --version {CLI_VERSION} --locked), or set IGGY_CLI_BIN",
        path.display()
    );
    let output = Command::new(&path)
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {} --version: {error}", path.display()));
    let version = String::from_utf8_lossy(&output.stdout);
    assert!(
        version.split_whitespace().any(|word| word == CLI_VERSION),
        "{} reports {version:?}, expected iggy-cli {CLI_VERSION}: run scripts/install-iggy-cli.sh",
        path.display()
    );
    path
}

/// One CLI run: exit status and captured output.
struct Run {
    args: String,
    output: Output,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    fn describe(&self) -> String {
        format!(
            "`iggy {}` exited with {}\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.output.status,
            self.stdout(),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }

    /// Asserts exit code 0 and that stdout contains every one of `needles`; returns stdout.
    #[track_caller]
    fn success(&self, needles: &[&str]) -> String {
        assert!(self.output.status.success(), "{}", self.describe());
        let stdout = self.stdout();
        for needle in needles {
            assert!(
                stdout.contains(needle),
                "missing {needle:?} in output of {}",
                self.describe()
            );
        }
        stdout
    }

    /// Asserts a non-zero exit code.
    #[track_caller]
    fn failure(&self) {
        assert!(
            !self.output.status.success(),
            "expected failure: {}",
            self.describe()
        );
    }
}

/// Runs the CLI against `server` as root, with its context directory in a temporary directory
/// (`IGGY_HOME`) and no inherited `IGGY_*` settings; bounded by [`CLI_TIMEOUT`].
fn iggy(server: &TestServer, home: &tempfile::TempDir, args: &[&str]) -> Run {
    let binary = cli_binary();
    let mut command = Command::new(&binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IGGY_") {
            command.env_remove(key);
        }
    }
    command
        .env("IGGY_HOME", home.path())
        .args([
            "--transport",
            "tcp",
            "--tcp-server-address",
            &server.tcp_address(),
        ])
        .args(["--username", "iggy", "--password", "iggy"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("run {}: {error}", binary.display()));
    let started = Instant::now();
    while child.try_wait().expect("poll CLI").is_none() {
        if started.elapsed() > CLI_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect CLI output");
            panic!(
                "`iggy {}` did not finish within {CLI_TIMEOUT:?}\nstdout:\n{}\nstderr:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("collect CLI output");
    Run {
        args: args.join(" "),
        output,
    }
}

#[tokio::test]
async fn cli_creates_lists_updates_and_deletes_streams_and_topics() {
    // Proves: the official CLI's stream and topic commands work against our server end to end:
    // create, list (table and list mode), get, update, delete, plus failing exit codes for a
    // duplicate stream and an unknown stream. How: run `iggy ...` and check its exit code and
    // output, and check the resulting state with the official SDK.
    let binary = cli_binary();
    let server = TestServer::start(ServerOptions::new());
    let home = tempfile::tempdir().expect("CLI home");
    let client = root_client(&server).await;
    eprintln!("using {}", binary.display());

    iggy(&server, &home, &["stream", "list"]).success(&["No streams found"]);
    iggy(&server, &home, &["stream", "create", "alpha"]).success(&["Stream with name: alpha"]);
    iggy(&server, &home, &["stream", "create", "second"]).success(&["second"]);
    let stream = client
        .get_stream(&named("alpha"))
        .await
        .unwrap()
        .expect("alpha exists");
    assert_eq!(stream.id, 0);
    iggy(&server, &home, &["stream", "create", "alpha"]).failure();

    let listed = iggy(&server, &home, &["stream", "list", "--list-mode", "list"]).success(&[]);
    let lines: Vec<&str> = listed.lines().filter(|line| line.contains('|')).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("0|") && l.contains("|alpha|")),
        "{listed}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("1|") && l.contains("|second|")),
        "{listed}"
    );
    iggy(&server, &home, &["stream", "list"]).success(&["alpha", "second"]);
    iggy(&server, &home, &["stream", "get", "0"]).success(&["alpha"]);
    iggy(&server, &home, &["stream", "get", "alpha"]).success(&["alpha"]);
    iggy(&server, &home, &["stream", "get", "42"]).success(&["was not found"]);

    iggy(&server, &home, &["stream", "update", "0", "beta"]).success(&["beta"]);
    assert!(client.get_stream(&named("alpha")).await.unwrap().is_none());
    assert_eq!(
        client
            .get_stream(&named("beta"))
            .await
            .unwrap()
            .expect("beta")
            .id,
        0
    );

    iggy(
        &server,
        &home,
        &["topic", "create", "beta", "orders", "3", "none"],
    )
    .success(&["orders"]);
    iggy(
        &server,
        &home,
        &[
            "topic",
            "create",
            "0",
            "logs",
            "2",
            "gzip",
            "--max-topic-size",
            "unlimited",
        ],
    )
    .success(&["logs"]);
    let orders = client
        .get_topic(&id(0), &named("orders"))
        .await
        .unwrap()
        .expect("orders");
    assert_eq!((orders.id, orders.partitions_count), (0, 3));
    assert_eq!(orders.compression_algorithm, CompressionAlgorithm::None);
    let logs = client
        .get_topic(&id(0), &named("logs"))
        .await
        .unwrap()
        .expect("logs");
    assert_eq!((logs.id, logs.partitions_count), (1, 2));
    assert_eq!(logs.compression_algorithm, CompressionAlgorithm::Gzip);
    iggy(
        &server,
        &home,
        &["topic", "create", "0", "orders", "1", "none"],
    )
    .failure();

    let listed = iggy(
        &server,
        &home,
        &["topic", "list", "0", "--list-mode", "list"],
    )
    .success(&["orders", "logs"]);
    assert_eq!(
        listed.lines().filter(|line| line.contains('|')).count(),
        2,
        "{listed}"
    );
    iggy(&server, &home, &["topic", "list", "beta"]).success(&["orders", "logs"]);
    iggy(&server, &home, &["topic", "get", "0", "orders"]).success(&["orders"]);
    iggy(
        &server,
        &home,
        &["topic", "update", "0", "orders", "orders-v2", "gzip"],
    )
    .success(&["orders-v2"]);
    let updated = client
        .get_topic(&id(0), &id(0))
        .await
        .unwrap()
        .expect("topic 0");
    assert_eq!(updated.name, "orders-v2");
    assert_eq!(updated.compression_algorithm, CompressionAlgorithm::Gzip);

    iggy(&server, &home, &["topic", "delete", "0", "logs"]).success(&["deleted"]);
    assert!(client.get_topic(&id(0), &id(1)).await.unwrap().is_none());
    iggy(&server, &home, &["topic", "delete", "0", "logs"]).failure();

    iggy(&server, &home, &["stream", "delete", "beta"]).success(&["deleted"]);
    assert!(client.get_stream(&id(0)).await.unwrap().is_none());
    iggy(&server, &home, &["stream", "delete", "42"]).failure();
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].name, "second");
}

#[tokio::test]
async fn cli_sends_polls_and_flushes_messages() {
    // Proves: the official CLI's message commands work against our server: send with a partition
    // id (with a user header), with a message key and balanced; poll with offset, first, last and
    // next with auto-commit (a second Next finds nothing); flush with fsync. How: CLI output is
    // checked for the payloads and counts, and the official SDK reads the stored messages back.
    cli_binary();
    let server = TestServer::start(ServerOptions::new());
    let home = tempfile::tempdir().expect("CLI home");
    let client = root_client(&server).await;
    iggy(&server, &home, &["stream", "create", "cli"]).success(&[]);
    iggy(
        &server,
        &home,
        &["topic", "create", "cli", "events", "2", "none"],
    )
    .success(&[]);

    iggy(
        &server,
        &home,
        &[
            "message",
            "send",
            "--partition-id",
            "1",
            "-H",
            "source:string:cli",
            "cli",
            "events",
            "hello",
            "world",
            "third message",
        ],
    )
    .success(&["Sent messages"]);
    let partition_1 = poll_partition(&client, &id(0), &id(0), 1, 100).await;
    let payloads: Vec<&[u8]> = partition_1.iter().map(|m| m.payload.as_ref()).collect();
    assert_eq!(payloads, [&b"hello"[..], b"world", b"third message"]);
    for message in &partition_1 {
        let headers = message
            .user_headers_map()
            .expect("headers")
            .expect("present");
        let value = headers
            .get(&HeaderKey::try_from("source").unwrap())
            .expect("source header");
        assert_eq!(value.as_str().unwrap(), "cli");
        assert_ne!(
            message.header.id, 0,
            "the server assigns ids to CLI messages"
        );
    }

    iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--offset",
            "0",
            "--message-count",
            "10",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled", "hello", "world", "third message"]);
    iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--first",
            "--message-count",
            "1",
            "--show-headers",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled 1 message", "hello", "source"]);
    let last = iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--last",
            "--message-count",
            "1",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled 1 message", "third message"]);
    assert!(!last.contains("hello"), "{last}");
    iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--next",
            "--auto-commit",
            "--consumer",
            "5",
            "--message-count",
            "2",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled 2 messages", "hello", "world"]);
    let next = iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--next",
            "--auto-commit",
            "--consumer",
            "5",
            "--message-count",
            "10",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled 1 message", "third message"]);
    assert!(
        !next.contains("hello"),
        "Next continues after the committed offset: {next}"
    );
    iggy(
        &server,
        &home,
        &[
            "message",
            "poll",
            "--next",
            "--consumer",
            "5",
            "cli",
            "events",
            "1",
        ],
    )
    .success(&["Polled 0 messages"]);
    let stored = client
        .get_consumer_offset(&Consumer::new(id(5)), &id(0), &id(0), Some(1))
        .await
        .expect("offset")
        .expect("stored by the CLI's auto-commit");
    assert_eq!(stored.stored_offset, 2);

    // Key and balanced partitioning (after the polls of partition 1 above, which the key may
    // route to).
    iggy(
        &server,
        &home,
        &[
            "message",
            "send",
            "--message-key",
            "user-1",
            "cli",
            "events",
            "keyed",
        ],
    )
    .success(&["Sent messages"]);
    let keyed_partition = xxhash_rust::xxh32::xxh32(b"user-1", 0) % 2;
    let polled = poll_partition(&client, &id(0), &id(0), keyed_partition, 100).await;
    assert_eq!(
        polled.last().map(|m| m.payload.as_ref()),
        Some(&b"keyed"[..])
    );
    iggy(
        &server,
        &home,
        &["message", "send", "cli", "events", "balanced"],
    )
    .success(&["Sent messages"]);
    let topic = client
        .get_topic(&id(0), &id(0))
        .await
        .unwrap()
        .expect("topic");
    assert_eq!(topic.messages_count, 5);

    iggy(
        &server,
        &home,
        &["message", "flush", "--fsync", "cli", "events", "1"],
    )
    .success(&["Flushed messages"]);
    iggy(
        &server,
        &home,
        &["message", "poll", "--offset", "0", "cli", "events", "7"],
    )
    .failure();
}
