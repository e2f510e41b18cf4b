//! The producer and consumer against the real server: a round trip, key partitioning, a
//! consumer group of 3 over 6 partitions with a member leaving mid-way, and a server restart
//! mid-stream. Each test identifies messages by a sequence number in the payload and checks
//! that every one arrives exactly once.

use rill_testkit as common;

use bytes::Bytes;
use common::TestServer;
use futures_util::StreamExt;
use rill_sdk::consumer::{AutoCommit, Consumer};
use rill_sdk::producer::{PartitionStrategy, Producer};
use rill_sdk::types::PollingStrategy;
use rill_sdk::{Client, HeaderValue, Message, ReconnectPolicy, SendMessage, TopicOptions};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, timeout};

async fn client(address: &str) -> Client {
    Client::builder()
        .address(address)
        .credentials("iggy", "iggy")
        .reconnect(ReconnectPolicy {
            enabled: true,
            max_attempts: None,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(500),
        })
        .request_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

fn sequence(message: &Message) -> u64 {
    std::str::from_utf8(&message.payload())
        .unwrap()
        .parse()
        .unwrap()
}

async fn produce(producer: &Producer, range: std::ops::Range<u64>) {
    for n in range {
        producer.send(Bytes::from(n.to_string())).await.unwrap();
    }
    producer.flush().await.unwrap();
}

#[tokio::test]
async fn producer_and_consumer_round_trip() {
    // 500 messages through a batching producer arrive once each, in order per partition,
    // with their client-assigned ids and headers; a single consumer reads one partition.
    let server = TestServer::start_default();
    let client = client(&server.tcp_address()).await;
    let producer = Producer::builder(&client, "orders", "events")
        .create_topic_if_missing(3)
        .batch_max_messages(64)
        .linger(Duration::from_millis(2))
        .queue_capacity(100)
        .build()
        .await
        .unwrap();
    for n in 0..500u64 {
        producer
            .send(
                SendMessage::new(Bytes::from(n.to_string()))
                    .with_id(10_000 + n as u128)
                    .with_header("n", HeaderValue::Uint64(n)),
            )
            .await
            .unwrap();
    }
    let stats = producer.close().await.unwrap();
    assert_eq!(stats.sent_messages, 500);
    assert!(stats.sent_batches >= 8, "batched: {stats:?}");

    let mut consumer = Consumer::builder(&client, "orders", "events")
        .group("readers")
        .batch_size(50)
        .poll_interval(Duration::from_millis(10))
        .auto_commit(AutoCommit::AfterPoll)
        .build()
        .await
        .unwrap();
    let mut seen = BTreeMap::new();
    let mut last_offset: BTreeMap<u32, u64> = BTreeMap::new();
    while seen.len() < 500 {
        let message = timeout(Duration::from_secs(20), consumer.next())
            .await
            .expect("messages keep coming")
            .unwrap()
            .unwrap();
        let n = sequence(&message);
        assert_eq!(message.id(), 10_000 + n as u128);
        assert_eq!(message.headers().unwrap()[0].value, HeaderValue::Uint64(n));
        if let Some(previous) = last_offset.insert(message.partition_id(), message.offset()) {
            assert_eq!(message.offset(), previous + 1, "in order per partition");
        }
        assert!(
            seen.insert(n, message.partition_id()).is_none(),
            "{n} twice"
        );
    }
    assert_eq!(last_offset.len(), 3, "balanced over all partitions");
    consumer.close().await.unwrap();

    // A single consumer starting at the first offset of partition 1 sees that partition only.
    let mut single = Consumer::builder(&client, "orders", "events")
        .single(7, Some(1))
        .strategy(PollingStrategy::first())
        .build()
        .await
        .unwrap();
    let first = single.next().await.unwrap().unwrap();
    assert_eq!((first.partition_id(), first.offset()), (1, 0));
}

#[tokio::test]
async fn key_partitioning_keeps_a_key_on_one_partition() {
    let server = TestServer::start_default();
    let client = client(&server.tcp_address()).await;
    let producer = Producer::builder(&client, "s", "t")
        .create_topic_if_missing(4)
        .partitioning(PartitionStrategy::MessageKey)
        .build()
        .await
        .unwrap();
    for n in 0..40u64 {
        let key = format!("user-{}", n % 4);
        producer
            .send(SendMessage::new(Bytes::from(key.clone())).with_key(Bytes::from(key)))
            .await
            .unwrap();
    }
    producer.flush().await.unwrap();
    let mut partitions_of_key: BTreeMap<String, HashSet<u32>> = BTreeMap::new();
    for partition in 0..4 {
        let polled = client
            .poll_messages(
                "s",
                "t",
                Some(partition),
                &rill_sdk::types::Consumer::new(1),
                PollingStrategy::first(),
                100,
                false,
            )
            .await
            .unwrap();
        for message in Message::from_polled(&polled) {
            let key = String::from_utf8(message.payload().to_vec()).unwrap();
            partitions_of_key.entry(key).or_default().insert(partition);
        }
    }
    assert_eq!(partitions_of_key.len(), 4);
    assert!(
        partitions_of_key
            .values()
            .all(|partitions| partitions.len() == 1)
    );
}

#[tokio::test]
async fn consumer_group_of_three_with_a_member_leaving_consumes_each_message_once() {
    // Three members split six partitions; every processed message is committed. One member
    // stops after 100 messages and leaves; the others take over its partitions from the
    // committed offsets. Every message must be processed exactly once overall.
    const TOTAL: u64 = 1200;
    let server = TestServer::start_default();
    let admin = client(&server.tcp_address()).await;
    admin.create_stream("s").await.unwrap();
    admin
        .create_topic("s", "t", 6, TopicOptions::default())
        .await
        .unwrap();
    let mut members = Vec::new();
    for _ in 0..3 {
        let client = client(&server.tcp_address()).await;
        let consumer = Consumer::builder(&client, "s", "t")
            .group("workers")
            .batch_size(10)
            .poll_interval(Duration::from_millis(20))
            .auto_commit(AutoCommit::Manual)
            .build()
            .await
            .unwrap();
        members.push((client, consumer));
    }
    // Produce only once the three members own two partitions each.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let group = admin
            .get_consumer_group("s", "t", "workers")
            .await
            .unwrap()
            .unwrap();
        if group.members.len() == 3 && group.members.iter().all(|m| m.partitions.len() == 2) {
            break;
        }
        assert!(Instant::now() < deadline, "group did not settle: {group:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Balanced partitioning picks a partition per batch: small batches spread the messages.
    let producer = Producer::builder(&admin, "s", "t")
        .batch_max_messages(10)
        .build()
        .await
        .unwrap();
    produce(&producer, 0..TOTAL).await;

    let processed: Arc<Mutex<Vec<(u32, u64, u64)>>> = Arc::default();
    let mut tasks = Vec::new();
    for (index, (client, mut consumer)) in members.into_iter().enumerate() {
        let processed = processed.clone();
        tasks.push(tokio::spawn(async move {
            let leaver = index == 2;
            let mut mine = 0;
            loop {
                if processed.lock().unwrap().len() as u64 >= TOTAL {
                    break;
                }
                let Ok(next) = timeout(Duration::from_millis(300), consumer.next()).await else {
                    continue;
                };
                let message = next.unwrap().unwrap();
                consumer.commit(&message).await.unwrap();
                processed.lock().unwrap().push((
                    message.partition_id(),
                    message.offset(),
                    sequence(&message),
                ));
                mine += 1;
                if leaver && mine == 100 {
                    consumer.close().await.unwrap();
                    client.shutdown().await;
                    break;
                }
            }
            mine
        }));
    }
    let counts = timeout(
        Duration::from_secs(60),
        futures_util::future::join_all(tasks),
    )
    .await
    .expect("all messages consumed in time");
    let counts: Vec<u64> = counts.into_iter().map(|c| c.unwrap()).collect();
    assert_eq!(counts[2], 100, "the leaving member processed exactly 100");
    let processed = processed.lock().unwrap();
    let sequences: HashSet<u64> = processed.iter().map(|(_, _, n)| *n).collect();
    let positions: HashSet<(u32, u64)> = processed.iter().map(|(p, o, _)| (*p, *o)).collect();
    assert_eq!(
        processed.len() as u64,
        TOTAL,
        "no message processed twice: {counts:?}"
    );
    assert_eq!(sequences.len() as u64, TOTAL);
    assert_eq!(positions.len() as u64, TOTAL);
    assert!(counts[0] > 0 && counts[1] > 0);
}

#[tokio::test]
async fn server_restart_mid_stream_loses_and_repeats_nothing() {
    // A group member commits every message; half-way through the first 300 messages the server
    // is stopped with SIGTERM and started again on the same data and port. The client
    // reconnects, logs in and re-joins; 300 more messages are produced after the restart.
    // All 600 arrive, each exactly once.
    let mut server = TestServer::start_default();
    let client = client(&server.tcp_address()).await;
    let producer = Producer::builder(&client, "s", "t")
        .create_topic_if_missing(2)
        .retries(50, Duration::from_millis(50))
        .build()
        .await
        .unwrap();
    produce(&producer, 0..300).await;
    let mut consumer = Consumer::builder(&client, "s", "t")
        .group("g")
        .batch_size(20)
        .poll_interval(Duration::from_millis(20))
        .auto_commit(AutoCommit::Manual)
        .build()
        .await
        .unwrap();
    let mut processed: Vec<u64> = Vec::new();
    let mut positions = HashSet::new();
    let mut restarted = false;
    while processed.len() < 600 {
        if processed.len() == 150 && !restarted {
            let mut moved = server;
            let handle = tokio::task::spawn_blocking(move || {
                moved.restart();
                moved
            });
            server = handle.await.unwrap();
            restarted = true;
            produce(&producer, 300..600).await;
        }
        let message = timeout(Duration::from_secs(30), consumer.next())
            .await
            .expect("messages keep coming after the restart")
            .unwrap()
            .unwrap();
        consumer.commit(&message).await.unwrap();
        assert!(
            positions.insert((message.partition_id(), message.offset())),
            "repeated {message:?}"
        );
        processed.push(sequence(&message));
    }
    let unique: HashSet<u64> = processed.iter().copied().collect();
    assert_eq!(unique.len(), 600, "nothing lost or repeated");
    assert!(client.connection_epoch() >= 2, "the client reconnected");
    drop(server);
}
