//! A 4-shard server (more shards than this machine's cores): partitions are spread over shards,
//! so one connection, served by whichever shard accepted it, must reach partitions owned by every
//! other shard; metadata changes made on any shard must be visible on all.

use bytes::Bytes;
use iggy::prelude::*;
use rill_integration::fixtures::{
    SentBatch, assert_batches, poll_partition, send_batch, send_series, test_messages,
};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};

const PARTITIONS: u32 = 12;

#[tokio::test]
async fn one_connection_sends_to_and_polls_from_partitions_on_every_shard() {
    // Proves: with 4 shards and a 12-partition topic (so, whatever the placement rule, several
    // shards own partitions), a single connection can send to and poll from every partition, by
    // partition id, balanced and key partitioning, with the same guarantees as on one shard
    // (exact content, dense offsets, counts). How: one official client sends 2400 messages and
    // reads every partition back.
    let mut server = TestServer::start(ServerOptions::new().shards(4));
    let client = root_client(&server).await;
    let stream = create_stream(&client, "sharded").await;
    let topic = create_topic(&client, stream, "t", PARTITIONS).await;
    assert_eq!(topic.partitions.len() as usize, PARTITIONS as usize);
    let (s, t) = (id(stream), id(0));

    // Per partition, in the order they were appended.
    let mut expected: Vec<Vec<SentBatch>> = (0..PARTITIONS).map(|_| Vec::new()).collect();
    for partition in 0..PARTITIONS {
        let batches = send_series(
            &client,
            &s,
            &t,
            &Partitioning::partition_id(partition),
            (partition, 0, 100),
            50,
        )
        .await;
        expected[partition as usize].extend(batches);
    }
    // Balanced: 24 batches rotate over the 12 partitions twice, starting at partition 0.
    for batch in 0..24u64 {
        let sent = send_batch(
            &client,
            &s,
            &t,
            &Partitioning::balanced(),
            test_messages(100, batch * 25, 25),
        )
        .await;
        expected[(batch % PARTITIONS as u64) as usize].push(sent);
    }
    // Keyed: 12 keys, each routed by xxHash32(key) mod 12.
    for key in 0..12u32 {
        let key_bytes = format!("device-{key}");
        let partition = xxhash_rust::xxh32::xxh32(key_bytes.as_bytes(), 0) % PARTITIONS;
        let partitioning = Partitioning::messages_key_str(&key_bytes).expect("key");
        let sent = send_batch(
            &client,
            &s,
            &t,
            &partitioning,
            test_messages(200 + key, 0, 50),
        )
        .await;
        expected[partition as usize].push(sent);
    }

    let mut total = 0;
    for partition in 0..PARTITIONS {
        let polled = poll_partition(&client, &s, &t, partition, 1000).await;
        let batches: Vec<&SentBatch> = expected[partition as usize].iter().collect();
        assert_batches(
            &polled,
            &batches,
            0,
            &format!("partition {partition} of 4 shards"),
        );
        total += polled.len() as u64;
        // Next with auto-commit across shards, then the stored offset is visible.
        let consumer = Consumer::new(id(1));
        let polled = client
            .poll_messages(
                &s,
                &t,
                Some(partition),
                &consumer,
                &PollingStrategy::next(),
                10,
                true,
            )
            .await
            .expect("next");
        assert_eq!(polled.messages.len(), 10);
        let stored = client
            .get_consumer_offset(&consumer, &s, &t, Some(partition))
            .await
            .expect("offset")
            .expect("stored");
        assert_eq!(stored.stored_offset, 9, "partition {partition}");
    }
    assert_eq!(total, 1200 + 600 + 600);
    let topic = client.get_topic(&s, &t).await.unwrap().expect("topic");
    assert_eq!(topic.messages_count, total);
    let stats = client.get_stats().await.expect("stats");
    assert_eq!(stats.messages_count, total);
    assert_eq!(stats.partitions_count, PARTITIONS);
    drop(client);

    // A graceful restart with 4 shards: every shard hands its partitions back intact.
    server.restart();
    let shards_with_partitions = shards_owning_partitions(&server.log());
    assert!(
        shards_with_partitions.len() >= 2,
        "expected partitions on several shards; the server's shutdown log lines \
         (`shard stopped shard=N partitions=K`) show {shards_with_partitions:?}; log:\n{}",
        server.log_tail()
    );
    let client = root_client(&server).await;
    for partition in 0..PARTITIONS {
        let polled = poll_partition(&client, &s, &t, partition, 1000).await;
        let batches: Vec<&SentBatch> = expected[partition as usize].iter().collect();
        assert_batches(
            &polled,
            &batches,
            0,
            &format!("partition {partition} after restart"),
        );
    }
}

/// Shards that reported owning partitions when they stopped, from the server's shutdown log
/// lines `... shard stopped shard=N partitions=K ...` (only the first run's lines).
fn shards_owning_partitions(log: &str) -> Vec<u32> {
    let field = |line: &str, name: &str| -> Option<u32> {
        let start = line.find(name)? + name.len();
        let digits: String = line[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let mut shards: Vec<u32> = log
        .lines()
        .filter(|line| line.contains("shard stopped"))
        .filter(|line| field(line, " partitions=").is_some_and(|count| count > 0))
        .filter_map(|line| field(line, " shard="))
        .collect();
    shards.sort_unstable();
    shards.dedup();
    shards
}

#[tokio::test]
async fn metadata_changes_from_any_connection_are_seen_by_all() {
    // Proves: streams and topics created through connections accepted by different shards (the
    // kernel spreads connections over the 4 listening shards) get distinct ids and are visible to
    // every other connection immediately after the creating request returns; a partition created
    // through one connection accepts messages sent through another. How: 8 clients take turns
    // creating a stream and a topic, and after each step every client reads the metadata.
    let server = TestServer::start(ServerOptions::new().shards(4));
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(root_client(&server).await);
    }
    for (index, creator) in clients.iter().enumerate() {
        let stream = create_stream(creator, &format!("stream-{index}")).await;
        assert_eq!(stream, index as u32, "ids are assigned in creation order");
        create_topic(creator, stream, "t", 3).await;
        for (reader_index, reader) in clients.iter().enumerate() {
            let topic = reader
                .get_topic(&id(stream), &id(0))
                .await
                .expect("get_topic")
                .unwrap_or_else(|| {
                    panic!("client {reader_index} does not see the topic of client {index}")
                });
            assert_eq!(topic.partitions_count, 3);
        }
        // Another connection writes into the new topic, the creator reads it back.
        let writer = &clients[(index + 1) % clients.len()];
        let sent = send_series(
            writer,
            &id(stream),
            &id(0),
            &Partitioning::partition_id(2),
            (index as u32, 0, 30),
            30,
        )
        .await;
        let polled = poll_partition(creator, &id(stream), &id(0), 2, 100).await;
        assert_batches(
            &polled,
            &sent.iter().collect::<Vec<_>>(),
            0,
            "cross-connection write",
        );
    }
    let streams = clients[3].get_streams().await.expect("streams");
    assert_eq!(streams.len(), 8);
    // Deletion is visible everywhere too, and sending to the deleted topic fails.
    clients[0]
        .delete_stream(&id(5))
        .await
        .expect("delete stream 5");
    for client in &clients {
        assert!(client.get_stream(&id(5)).await.unwrap().is_none());
        let mut messages = test_messages(1, 0, 1);
        let result = client
            .send_messages(
                &id(5),
                &id(0),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await;
        assert_eq!(
            result.map_err(|e| e.as_code()),
            Err(1009),
            "send to a deleted stream"
        );
    }
}

/// Sum of the samples of `name` in the server's /metrics whose labels include `label`.
fn metric_sum(server: &TestServer, name: &str, label: &str) -> f64 {
    use std::io::{Read, Write};
    let address = server.http_address().expect("HTTP endpoint logged");
    let mut http = std::net::TcpStream::connect(address).expect("connect to /metrics");
    write!(
        http,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    http.read_to_string(&mut body).expect("read /metrics");
    body.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) && line.contains(label))
        .map(|line| {
            let value = line.rsplit(' ').next().expect("a value");
            value.parse::<f64>().expect("a number")
        })
        .sum()
}

#[tokio::test]
async fn connections_move_to_the_shard_owning_their_partitions() {
    // Proves: a TCP connection whose requests keep going to partitions another shard owns is
    // handed over to that shard (tcp.rs MOVE_AFTER_REMOTE_REQUESTS = 4), so of 8 connections that
    // each send 30 batches to one partition and poll them back, none forwards more than 4
    // requests (without the move, the 3 in 4 connections accepted by a non-owner would forward
    // all 31); the handed-over sessions keep their client id, login and messages, are listed
    // once each by GetClients, and leave the clients table when they disconnect. How: official
    // SDK clients on a 4-shard server, /metrics for the forward and move counters.
    let server = TestServer::start(ServerOptions::new().shards(4));
    let admin = root_client(&server).await;
    let stream = create_stream(&admin, "moves").await;
    create_topic(&admin, stream, "t", 8).await;
    let (s, t) = (id(stream), id(0));
    let forwards_before = metric_sum(&server, "iggy_shard_forwards_total", "kind=\"data\"");

    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(root_client(&server).await);
    }
    for (partition, client) in clients.iter().enumerate() {
        let partition = partition as u32;
        let me_before = client.get_me().await.expect("me").client_id;
        let sent = send_series(
            client,
            &s,
            &t,
            &Partitioning::partition_id(partition),
            (partition, 0, 300),
            10,
        )
        .await;
        assert_eq!(sent.len(), 30);
        let polled = poll_partition(client, &s, &t, partition, 1000).await;
        assert_batches(
            &polled,
            &sent.iter().collect::<Vec<_>>(),
            0,
            &format!("partition {partition}"),
        );
        let me_after = client.get_me().await.expect("me after the sends");
        assert_eq!(
            me_after.client_id, me_before,
            "a moved session keeps its id"
        );
        assert_eq!(me_after.user_id, Some(0), "and its login");
    }
    let forwards =
        metric_sum(&server, "iggy_shard_forwards_total", "kind=\"data\"") - forwards_before;
    let moves = metric_sum(&server, "iggy_shard_connections_moved_total", "shard=");
    assert!(
        forwards <= 8.0 * 4.0,
        "{forwards} data forwards for 8 connections ({moves} moved)"
    );
    assert!(moves <= 8.0, "{moves} moves for 8 connections");
    let listed = admin.get_clients().await.expect("clients");
    assert_eq!(
        listed.len(),
        9,
        "8 clients and the admin, once each: {listed:?}"
    );

    for client in clients {
        client.shutdown().await.expect("disconnect");
    }
    let mut remaining = usize::MAX;
    for _ in 0..100 {
        remaining = admin.get_clients().await.expect("clients").len();
        if remaining == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        remaining, 1,
        "moved sessions leave the clients table on disconnect"
    );
}

#[tokio::test]
async fn consumers_of_large_polls_move_to_their_partitions_and_large_senders_stay() {
    // Proves: the move rule looks at request bodies only (session.rs SMALL_REQUEST_BYTES). A
    // consumer whose polls bring 100 KB back moves to its partition's owner like a small
    // request's connection does (so its socket copies run on the core that owns its data, not
    // wherever the kernel's hash put it), while a producer sending 100 KB batches never moves
    // (its shard receives while the owner stores). How: official SDK clients on a 4-shard
    // server, 8 partitions; 8 producers send 12 batches of 100 x 1000-byte messages each, then
    // 8 consumers poll their partition back 100 at a time (13 polls each); /metrics counts
    // moves and data forwards. Without the move, 3 in 4 consumers would be on a non-owner and
    // forward all 13 polls (about 78 forwards); with it none forwards more than 4.
    const BATCHES: u64 = 12;
    const PER_BATCH: u64 = 100;
    let server = TestServer::start(ServerOptions::new().shards(4));
    let admin = root_client(&server).await;
    let stream = create_stream(&admin, "large-moves").await;
    create_topic(&admin, stream, "t", 8).await;
    let (s, t) = (id(stream), id(0));
    let payload = |partition: u32, sequence: u64| {
        let mut bytes = format!("{partition}:{sequence}:").into_bytes();
        bytes.resize(1000, b'x');
        Bytes::from(bytes)
    };

    let moves_before = metric_sum(&server, "iggy_shard_connections_moved_total", "shard=");
    let mut producers = Vec::new();
    for _ in 0..8 {
        producers.push(root_client(&server).await);
    }
    for (partition, producer) in producers.iter().enumerate() {
        let partition = partition as u32;
        for batch in 0..BATCHES {
            let mut messages: Vec<IggyMessage> = (0..PER_BATCH)
                .map(|i| {
                    IggyMessage::builder()
                        .payload(payload(partition, batch * PER_BATCH + i))
                        .build()
                        .expect("message")
                })
                .collect();
            producer
                .send_messages(
                    &s,
                    &t,
                    &Partitioning::partition_id(partition),
                    &mut messages,
                )
                .await
                .expect("send");
        }
    }
    let moves_after_sends = metric_sum(&server, "iggy_shard_connections_moved_total", "shard=");
    assert_eq!(
        moves_after_sends, moves_before,
        "producers of 100 KB batches stay where they were accepted"
    );

    let forwards_before = metric_sum(&server, "iggy_shard_forwards_total", "kind=\"data\"");
    let mut consumers = Vec::new();
    for _ in 0..8 {
        consumers.push(root_client(&server).await);
    }
    for (partition, consumer) in consumers.iter().enumerate() {
        let partition = partition as u32;
        let polled = poll_partition(consumer, &s, &t, partition, PER_BATCH as u32).await;
        assert_eq!(
            polled.len() as u64,
            BATCHES * PER_BATCH,
            "partition {partition}"
        );
        for (offset, message) in polled.iter().enumerate() {
            assert_eq!(message.header.offset, offset as u64);
            assert_eq!(
                message.payload,
                payload(partition, offset as u64),
                "partition {partition} offset {offset}"
            );
        }
    }
    let forwards =
        metric_sum(&server, "iggy_shard_forwards_total", "kind=\"data\"") - forwards_before;
    let moves =
        metric_sum(&server, "iggy_shard_connections_moved_total", "shard=") - moves_after_sends;
    assert!(
        forwards <= 8.0 * 4.0,
        "{forwards} data forwards for 8 consumers ({moves} moved)"
    );
    assert!(moves <= 8.0, "{moves} moves for 8 consumers");
}
