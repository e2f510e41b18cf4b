//! The official CLI of both generations (`iggy` from iggy-cli 0.13.0 on the 0.8 protocol and from
//! iggy-cli 0.14.0 on the 0.9 protocol) driven against our server: stream and topic
//! create/list/get/update/delete, message send/poll/flush. Each test runs once per generation.
//! Results are checked both in the CLI's output and, independently, with the official SDK 0.10.0.
//! The CLI runner is `rill_integration::official_cli`.

use iggy::prelude::*;
use rill_integration::fixtures::poll_partition;
use rill_integration::official_cli::{CliGeneration, CliHome, iggy};
use rill_integration::sdk::{id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

async fn creates_lists_updates_and_deletes_streams_and_topics(generation: CliGeneration) {
    // Proves: the official CLI's stream and topic commands work against our server end to end:
    // create, list (table and list mode), get, update, delete, plus failing exit codes for a
    // duplicate stream and an unknown stream. How: run `iggy ...` and check its exit code and
    // output, and check the resulting state with the official SDK.
    let server = TestServer::start(ServerOptions::new());
    let home = CliHome::of(generation);
    let client = root_client(&server).await;
    eprintln!("using iggy-cli {}", generation.version());

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

async fn sends_polls_and_flushes_messages(generation: CliGeneration) {
    // Proves: the official CLI's message commands work against our server: send with a partition
    // id (with a user header), with a message key and balanced; poll with offset, first, last and
    // next with auto-commit (a second Next finds nothing); flush with fsync. How: CLI output is
    // checked for the payloads and counts, and the official SDK reads the stored messages back.
    let server = TestServer::start(ServerOptions::new());
    let home = CliHome::of(generation);
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

rill_integration::for_each_cli_generation!(
    creates_lists_updates_and_deletes_streams_and_topics,
    sends_polls_and_flushes_messages,
);
