//! Thousands of messages through each partitioning kind, read back byte for byte.
//!
//! Every test sends 5000 messages with the official SDK, then polls every partition from offset 0
//! and compares each message with what was sent: id, payload bytes, user-header bytes, origin
//! timestamp, dense offsets from 0, and server timestamps that are monotonic and taken while the
//! request was in flight.

use iggy::prelude::*;
use rill_integration::fixtures::{
    SentBatch, assert_batches, poll_partition, send_batch, send_series, test_messages,
};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeSet;

/// xxHash32 (seed 0) of the key modulo the partition count (protocol.md 5.1).
fn key_partition(key: &[u8], partitions: u32) -> u32 {
    xxhash_rust::xxh32::xxh32(key, 0) % partitions
}

#[tokio::test]
async fn partition_id_partitioning_stores_each_batch_where_asked() {
    // Proves: with explicit partition ids, each partition holds exactly the messages sent to it,
    // unchanged, at offsets 0..n, with one server timestamp per batch; partition and topic counts
    // match. How: 5000 messages over 3 partitions in batches of 1000, 500 and 100, then a full
    // poll of each partition in pages of 700.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "by-id").await;
    create_topic(&client, stream, "t", 3).await;
    let (s, t) = (id(stream), id(0));

    let plan = [(0u32, 2000u64, 1000u64), (1, 2000, 500), (2, 1000, 100)];
    let mut sent: Vec<Vec<SentBatch>> = Vec::new();
    for (partition, count, batch) in plan {
        sent.push(
            send_series(
                &client,
                &s,
                &t,
                &Partitioning::partition_id(partition),
                (partition, 0, count),
                batch,
            )
            .await,
        );
    }

    for (partition, count, _) in plan {
        let polled = poll_partition(&client, &s, &t, partition, 700).await;
        let batches: Vec<&SentBatch> = sent[partition as usize].iter().collect();
        assert_batches(&polled, &batches, 0, &format!("partition {partition}"));
        assert_eq!(polled.len() as u64, count);
    }

    let topic = client.get_topic(&s, &t).await.unwrap().expect("topic");
    assert_eq!(topic.messages_count, 5000);
    for (partition, count, _) in plan {
        let details = &topic.partitions[partition as usize];
        assert_eq!(
            details.messages_count, count,
            "partition {partition} messages_count"
        );
        assert_eq!(
            details.current_offset,
            count - 1,
            "partition {partition} current_offset"
        );
    }
}

#[tokio::test]
async fn balanced_partitioning_rotates_over_partitions_per_batch() {
    // Proves: balanced partitioning sends each SendMessages request to the next partition of a
    // per-topic round-robin that starts at partition 0 (protocol.md 5.1), keeping batches whole
    // and in order. How: 50 batches of 100 messages to a 4-partition topic; batch i must be found,
    // complete, in partition i mod 4.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "balanced").await;
    create_topic(&client, stream, "t", 4).await;
    let (s, t) = (id(stream), id(0));

    let batches = send_series(
        &client,
        &s,
        &t,
        &Partitioning::balanced(),
        (7, 0, 5000),
        100,
    )
    .await;
    assert_eq!(batches.len(), 50);
    for partition in 0..4u32 {
        let expected: Vec<&SentBatch> = batches
            .iter()
            .enumerate()
            .filter(|(index, _)| *index as u32 % 4 == partition)
            .map(|(_, batch)| batch)
            .collect();
        let polled = poll_partition(&client, &s, &t, partition, 1000).await;
        assert_batches(
            &polled,
            &expected,
            0,
            &format!("balanced partition {partition}"),
        );
    }
}

#[tokio::test]
async fn messages_key_partitioning_routes_each_key_to_one_partition() {
    // Proves: all messages sent with the same key land in the same partition, namely
    // xxHash32(key) mod partitions (protocol.md 5.1), in send order. How: 20 keys x 5 batches of
    // 50 messages (5000 in all, keys interleaved) to a 5-partition topic; each partition must hold
    // exactly the batches of its keys, in the order they were sent.
    assert_eq!(
        xxhash_rust::xxh32::xxh32(b"user-1", 0),
        2_755_638_957,
        "protocol.md test vector"
    );
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "keyed").await;
    create_topic(&client, stream, "t", 5).await;
    let (s, t) = (id(stream), id(0));

    let keys: Vec<String> = (0..20).map(|k| format!("user-{k}")).collect();
    let mut sent: Vec<(u32, SentBatch)> = Vec::new();
    for round in 0..5u64 {
        for (k, key) in keys.iter().enumerate() {
            let partitioning = Partitioning::messages_key_str(key).expect("key");
            let messages = test_messages(100 + k as u32, round * 50, 50);
            let batch = send_batch(&client, &s, &t, &partitioning, messages).await;
            sent.push((key_partition(key.as_bytes(), 5), batch));
        }
    }
    let used: BTreeSet<u32> = sent.iter().map(|(partition, _)| *partition).collect();
    assert!(
        used.len() > 1,
        "the keys should spread over several partitions"
    );

    for partition in 0..5u32 {
        let expected: Vec<&SentBatch> = sent
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, batch)| batch)
            .collect();
        let polled = poll_partition(&client, &s, &t, partition, 1000).await;
        assert_batches(
            &polled,
            &expected,
            0,
            &format!("keyed partition {partition}"),
        );
    }
}

#[tokio::test]
async fn messages_without_id_get_distinct_server_ids() {
    // Proves: a message sent with id 0 is given a random non-zero id by the server (protocol.md
    // 5.5), distinct across messages, while payloads stay intact. How: 300 messages without ids
    // in three batches, polled back.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "ids").await;
    create_topic(&client, stream, "t", 1).await;
    let (s, t) = (id(stream), id(0));

    let mut sent_payloads = Vec::new();
    for batch in 0..3 {
        let mut messages: Vec<IggyMessage> = (0..100)
            .map(|i| {
                IggyMessage::builder()
                    .payload(bytes::Bytes::from(format!("anonymous {batch}/{i}")))
                    .build()
                    .expect("message")
            })
            .collect();
        assert!(messages.iter().all(|m| m.header.id == 0));
        sent_payloads.extend(messages.iter().map(|m| m.payload.clone()));
        client
            .send_messages(&s, &t, &Partitioning::partition_id(0), &mut messages)
            .await
            .expect("send");
    }
    let polled = poll_partition(&client, &s, &t, 0, 1000).await;
    assert_eq!(polled.len(), 300);
    let ids: BTreeSet<u128> = polled.iter().map(|m| m.header.id).collect();
    assert!(!ids.contains(&0), "no message keeps id 0");
    assert_eq!(ids.len(), 300, "server-assigned ids are distinct");
    let payloads: Vec<_> = polled.iter().map(|m| m.payload.clone()).collect();
    assert_eq!(payloads, sent_payloads);
}
