//! JSON log lines with shard ids, slow requests, log file rotation, and no HTTP listener when
//! disabled.

use iggy::prelude::*;
use rill_integration::sdk::{create_stream, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

fn free_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("free port")
}

fn json_lines(text: &str, what: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|line| !line.starts_with("===== rill-integration"))
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|error| panic!("{what}: not JSON ({error}): {line}"))
        })
        .collect()
}

#[tokio::test]
async fn json_logs_carry_shard_ids_slow_requests_and_rotate() {
    // Proves: with logging.format = json every line on stdout and in the log files is one JSON
    // object; lines from shard threads carry shard_id; a request over the slow threshold is
    // logged at WARN with its command, status and duration; the log file rotates by size and
    // keeps at most max_files rotated files; with http.enabled = false nothing listens. How:
    // 2 shards, threshold 0 ms (every request is slow), 8 KiB files, 2 kept, a burst of pings.
    const PINGS: usize = 200;
    let http_address = free_address();
    let mut server = TestServer::start(
        ServerOptions::new()
            .shards(2)
            .env("IGGY_HTTP_ENABLED", "false")
            .env("IGGY_HTTP_ADDRESS", &http_address.to_string())
            .env("IGGY_LOGGING_FORMAT", "json")
            .env("IGGY_LOGGING_SLOW_REQUEST_THRESHOLD", "0 ms")
            .env("IGGY_LOGGING_FILE_ENABLED", "true")
            .env("IGGY_LOGGING_FILE_MAX_SIZE", "8 KiB")
            .env("IGGY_LOGGING_FILE_MAX_FILES", "2"),
    );
    assert!(
        TcpStream::connect_timeout(&http_address, Duration::from_millis(300)).is_err(),
        "http.enabled = false must not listen"
    );
    let client = root_client(&server).await;
    let stream_id = create_stream(&client, "logged").await;
    assert!(client.get_stream(&id(stream_id)).await.unwrap().is_some());
    assert!(client.delete_stream(&id(4242)).await.is_err());
    for _ in 0..PINGS {
        client.ping().await.expect("ping");
    }
    drop(client);
    let status = server.stop();
    assert!(status.success(), "clean stop");

    let stdout = json_lines(&server.log(), "stdout");
    assert!(
        stdout.iter().all(|line| line["timestamp"].is_string()
            && line["level"].is_string()
            && line["message"].is_string()),
        "every line has timestamp, level and message"
    );
    let shard_lines: Vec<_> = stdout
        .iter()
        .filter(|line| {
            line["thread"]
                .as_str()
                .is_some_and(|t| t.starts_with("shard-"))
        })
        .collect();
    assert!(!shard_lines.is_empty());
    for line in &shard_lines {
        let thread = line["thread"].as_str().unwrap();
        assert_eq!(
            line["shard_id"]
                .as_u64()
                .map(|id| format!("shard-{id}"))
                .as_deref(),
            Some(thread),
            "shard lines carry their shard id: {line}"
        );
    }
    let started: HashSet<u64> = stdout
        .iter()
        .filter(|line| line["message"] == "shard started")
        .map(|line| line["shard_id"].as_u64().expect("shard_id"))
        .collect();
    assert_eq!(started, HashSet::from([0, 1]));

    let slow: Vec<_> = stdout
        .iter()
        .filter(|line| line["message"] == "slow request")
        .collect();
    let slow_of = |command: &str, status: &str| {
        slow.iter()
            .filter(|line| {
                line["fields"]["command"] == command && line["fields"]["status"] == status
            })
            .count()
    };
    assert!(
        slow_of("Ping", "ok") >= PINGS,
        "every ping was slow at 0 ms"
    );
    assert_eq!(slow_of("CreateStream", "ok"), 1);
    assert_eq!(slow_of("GetStream", "ok"), 1);
    assert_eq!(slow_of("DeleteStream", "StreamIdNotFound"), 1);
    for line in &slow {
        assert_eq!(line["level"], "WARN");
        assert!(line["fields"]["duration_ms"].as_f64().is_some(), "{line}");
        assert!(line["shard_id"].as_u64().is_some(), "{line}");
    }

    // Files: the current one and at most 2 rotated ones, each at most 8 KiB, all JSON lines,
    // together holding the end of what stdout got.
    let directory = server.data_path().join("logs");
    let mut names: Vec<String> = std::fs::read_dir(&directory)
        .expect("log directory")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["iggy-server.log", "iggy-server.log.1", "iggy-server.log.2"],
        "rotation keeps the current file and 2 rotated ones"
    );
    let mut file_lines = Vec::new();
    for name in ["iggy-server.log.2", "iggy-server.log.1", "iggy-server.log"] {
        let text = std::fs::read_to_string(directory.join(name)).unwrap();
        assert!(text.len() <= 8 * 1024, "{name} is {} bytes", text.len());
        file_lines.extend(json_lines(&text, name));
    }
    let last = stdout.last().unwrap();
    assert_eq!(
        file_lines.last(),
        Some(last),
        "the files end where stdout ends"
    );
    assert!(
        file_lines.len() < stdout.len(),
        "older lines were rotated away"
    );
}
