//! Several connections at once, each a tokio task with its own official client: producers and
//! consumers running concurrently, and racing metadata changes.

use iggy::prelude::*;
use rill_integration::fixtures::{
    SentBatch, assert_batches, assert_message, poll_partition, send_series,
};
use rill_integration::sdk::{consumer, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PER_PARTITION: u64 = 1250;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_producers_and_consumers_see_every_message_once_in_order() {
    // Proves: 4 producers writing to 4 partitions while 4 consumers read them with Next and
    // auto-commit, all on separate connections, lose, duplicate and reorder nothing: each consumer
    // receives exactly its partition's 1250 messages, in order, intact; meanwhile 2 more producers
    // use balanced partitioning on another topic and every batch arrives whole. How: tokio tasks,
    // one client each; consumers poll until done (bounded by 60 s).
    let server = Arc::new(TestServer::start(ServerOptions::new()));
    let setup = root_client(&server).await;
    let stream = create_stream(&setup, "concurrent").await;
    create_topic(&setup, stream, "by-partition", 4).await;
    create_topic(&setup, stream, "balanced", 4).await;

    let mut producers = Vec::new();
    for partition in 0..4u32 {
        let server = server.clone();
        producers.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            let partitioning = Partitioning::partition_id(partition);
            let batches = send_series(
                &client,
                &id(stream),
                &id(0),
                &partitioning,
                (partition, 0, PER_PARTITION),
                50,
            )
            .await;
            (partition, batches)
        }));
    }
    let mut balanced_producers = Vec::new();
    for producer in 0..2u32 {
        let server = server.clone();
        balanced_producers.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            let tag = 50 + producer;
            send_series(
                &client,
                &id(stream),
                &id(1),
                &Partitioning::balanced(),
                (tag, 0, 1000),
                40,
            )
            .await
        }));
    }
    let mut consumers = Vec::new();
    for partition in 0..4u32 {
        let server = server.clone();
        consumers.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            let started = Instant::now();
            let mut received: Vec<IggyMessage> = Vec::new();
            while (received.len() as u64) < PER_PARTITION {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "consumer of partition {partition} got only {} messages in 60 s",
                    received.len()
                );
                let polled = client
                    .poll_messages(
                        &id(stream),
                        &id(0),
                        Some(partition),
                        &consumer(partition),
                        &PollingStrategy::next(),
                        100,
                        true,
                    )
                    .await
                    .expect("poll next");
                if polled.messages.is_empty() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                received.extend(polled.messages);
            }
            (partition, received)
        }));
    }

    let mut sent: BTreeMap<u32, Vec<SentBatch>> = BTreeMap::new();
    for producer in producers {
        let (partition, batches) = producer.await.expect("producer task");
        sent.insert(partition, batches);
    }
    for consumer_task in consumers {
        let (partition, received) = consumer_task.await.expect("consumer task");
        let batches: Vec<&SentBatch> = sent[&partition].iter().collect();
        assert_batches(
            &received,
            &batches,
            0,
            &format!("consumer of partition {partition}"),
        );
    }
    // Nothing more arrives after the last message.
    let checker = root_client(&server).await;
    for partition in 0..4u32 {
        let polled = checker
            .poll_messages(
                &id(stream),
                &id(0),
                Some(partition),
                &consumer(partition),
                &PollingStrategy::next(),
                100,
                false,
            )
            .await
            .expect("poll after the end");
        assert!(
            polled.messages.is_empty(),
            "partition {partition} has extra messages"
        );
    }

    // Balanced producers: every batch is whole, in one partition, and each producer's batches keep
    // their order within a partition.
    let mut balanced: Vec<Vec<SentBatch>> = Vec::new();
    for producer in balanced_producers {
        balanced.push(producer.await.expect("balanced producer task"));
    }
    let mut by_id = BTreeMap::new();
    for batches in &balanced {
        for batch in batches {
            for message in &batch.messages {
                by_id.insert(message.id, message.clone());
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut batch_counts = Vec::new();
    for partition in 0..4u32 {
        let polled = poll_partition(&checker, &id(stream), &id(1), partition, 1000).await;
        let mut last_sequence: BTreeMap<u64, u64> = BTreeMap::new();
        let mut batches_here = 0;
        for (offset, message) in polled.iter().enumerate() {
            let expected = by_id
                .get(&message.header.id)
                .expect("a message that was sent");
            assert_message(
                message,
                expected,
                offset as u64,
                &format!("balanced partition {partition}"),
            );
            assert!(
                seen.insert(message.header.id),
                "message {} stored twice",
                message.header.id
            );
            let tag = (message.header.id >> 64) as u64;
            let sequence = message.header.id as u64;
            if sequence.is_multiple_of(40) {
                batches_here += 1;
            }
            if let Some(previous) = last_sequence.insert(tag, sequence) {
                assert!(
                    sequence > previous,
                    "producer {tag}'s messages reordered in partition {partition}"
                );
                if !sequence.is_multiple_of(40) {
                    assert_eq!(sequence, previous + 1, "a balanced batch was split");
                }
            }
        }
        batch_counts.push(batches_here);
    }
    assert_eq!(seen.len(), 2000, "every balanced message stored once");
    let (min, max) = (
        batch_counts.iter().min().unwrap(),
        batch_counts.iter().max().unwrap(),
    );
    assert!(
        max - min <= 1,
        "round-robin spreads batches evenly: {batch_counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_metadata_changes_get_distinct_ids_and_one_winner() {
    // Proves: streams and topics created at the same time from different connections get
    // distinct ids with no gaps, and when several connections create the same name at once
    // exactly one succeeds while the others get 1012. How: concurrent tokio tasks, one client each.
    let server = Arc::new(TestServer::start(ServerOptions::new()));
    let mut tasks = Vec::new();
    for index in 0..8 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            create_stream(&client, &format!("racer-{index}")).await
        }));
    }
    let mut ids = BTreeSet::new();
    for task in tasks {
        ids.insert(task.await.expect("task"));
    }
    assert_eq!(ids, (0..8).collect::<BTreeSet<u32>>());

    let mut tasks = Vec::new();
    for _ in 0..4 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            client
                .create_stream("same")
                .await
                .map(|s| s.id)
                .map_err(|e| e.as_code())
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task"));
    }
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .filter(|r| r.is_err())
            .all(|r| *r == Err(1012)),
        "{results:?}"
    );

    let mut tasks = Vec::new();
    for index in 0..8 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let client = root_client(&server).await;
            create_topic(&client, 0, &format!("topic-{index}"), 2)
                .await
                .id
        }));
    }
    let mut ids = BTreeSet::new();
    for task in tasks {
        ids.insert(task.await.expect("task"));
    }
    assert_eq!(ids, (0..8).collect::<BTreeSet<u32>>());
    let stream = root_client(&server)
        .await
        .get_stream(&id(0))
        .await
        .unwrap()
        .expect("stream 0");
    assert_eq!(stream.topics_count, 8);
}
