//! The official SDK's high-level clients against our server: `IggyProducer` (which probes and
//! creates its stream and topic, then sends in the background) and `IggyConsumer` in a consumer
//! group (which probes, creates and joins the group, then polls with `Next` and commits offsets).
//! These are what most applications use, and they exercise GetStream/GetTopic returning "empty"
//! for unknown names, string identifiers for groups and consumers, group polls without a
//! partition, and group offsets.

use futures_util::StreamExt;
use iggy::prelude::*;
use rill_integration::sdk::root_client;
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

const MESSAGES: u32 = 600;

// Proves: an IggyProducer creates the stream and topic it needs and everything it sends reaches
// the topic; an IggyConsumer group member reads every message exactly once and its committed
// offsets let a second consumer in the same group continue without repeating anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_and_group_consumer_round_trip() {
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;

    let producer = client
        .producer("hl-stream", "hl-topic")
        .unwrap()
        .create_stream_if_not_exists()
        .create_topic_if_not_exists(
            3,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::ServerDefault,
        )
        .partitioning(Partitioning::balanced())
        .build();
    producer.init().await.expect("producer init");
    for chunk in 0..MESSAGES / 100 {
        let messages: Vec<IggyMessage> = (0..100)
            .map(|i| IggyMessage::from_str(&format!("message-{}", chunk * 100 + i)).unwrap())
            .collect();
        producer.send(messages).await.expect("send");
    }

    let stream = Identifier::named("hl-stream").unwrap();
    let topic = Identifier::named("hl-topic").unwrap();
    // The producer may send in the background: wait until the topic holds everything.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let details = client
            .get_topic(&stream, &topic)
            .await
            .unwrap()
            .expect("topic was created");
        assert_eq!(details.partitions_count, 3);
        if details.messages_count == u64::from(MESSAGES) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "topic holds {} of {MESSAGES} messages",
            details.messages_count
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut seen = BTreeSet::new();
    consume(&client, &mut seen, MESSAGES / 2).await;
    // A second consumer instance in the same group continues from the committed offsets.
    consume(&client, &mut seen, MESSAGES / 2).await;
    let expected: BTreeSet<String> = (0..MESSAGES).map(|i| format!("message-{i}")).collect();
    assert_eq!(seen, expected);

    let group = client
        .get_consumer_group(&stream, &topic, &Identifier::named("hl-group").unwrap())
        .await
        .unwrap()
        .expect("the consumer created its group");
    assert_eq!(group.partitions_count, 3);
}

/// Runs a group consumer until it has read `count` new messages; panics on any duplicate.
async fn consume(client: &IggyClient, seen: &mut BTreeSet<String>, count: u32) {
    let mut consumer = client
        .consumer_group("hl-group", "hl-stream", "hl-topic")
        .unwrap()
        .auto_commit(AutoCommit::When(AutoCommitWhen::ConsumingEachMessage))
        .create_consumer_group_if_not_exists()
        .auto_join_consumer_group()
        .polling_strategy(PollingStrategy::next())
        .poll_interval(IggyDuration::from(Duration::from_millis(10)))
        .batch_length(50)
        .build();
    consumer.init().await.expect("consumer init");
    let mut read = 0;
    while read < count {
        let next = tokio::time::timeout(Duration::from_secs(20), consumer.next()).await;
        let message = next
            .expect("consumer stalled")
            .expect("stream ended")
            .expect("poll failed");
        let payload = String::from_utf8(message.message.payload.to_vec()).unwrap();
        assert!(seen.insert(payload.clone()), "{payload} consumed twice");
        read += 1;
    }
    // Give the auto-commit of the last message time to reach the server before leaving.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(consumer);
    tokio::time::sleep(Duration::from_millis(200)).await;
}
