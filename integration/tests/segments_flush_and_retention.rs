//! Segment-level commands and retention with a tiny segment size (4 KiB, the minimum), so that
//! a few hundred messages span many segments: DeleteSegments, FlushUnsavedBuffer, and the
//! retention timer applying message expiry and max topic size.

use iggy::prelude::*;
use rill_integration::fixtures::{
    Expected, SentBatch, assert_messages, poll_from, poll_partition, send_series,
};
use rill_integration::sdk::{assert_error_code, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::{Duration, Instant};

fn small_segments() -> ServerOptions {
    ServerOptions::new()
        .env("IGGY_SYSTEM_SEGMENT_SIZE", "4 KiB")
        .env("IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", "1 s")
}

fn flatten(batches: &[SentBatch]) -> Vec<Expected> {
    batches
        .iter()
        .flat_map(|batch| batch.messages.iter().cloned())
        .collect()
}

fn window(batches: &[SentBatch]) -> (u64, u64) {
    (
        batches[0].window.0,
        batches.last().expect("batches").window.1,
    )
}

async fn partition_details(
    client: &IggyClient,
    stream: u32,
    topic: u32,
    partition: u32,
) -> Partition {
    let topic = client
        .get_topic(&id(stream), &id(topic))
        .await
        .expect("get_topic")
        .expect("topic exists");
    topic
        .partitions
        .into_iter()
        .nth(partition as usize)
        .expect("partition exists")
}

/// Checks that what partition 0 still holds, read from the First strategy's offset to the end,
/// is exactly the tail of `sent` from that offset, intact; returns that first offset.
async fn assert_suffix_intact(
    client: &IggyClient,
    stream: u32,
    topic: u32,
    sent: &[SentBatch],
) -> u64 {
    let expected = flatten(sent);
    let first = client
        .poll_messages(
            &id(stream),
            &id(topic),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::first(),
            1,
            false,
        )
        .await
        .expect("poll first")
        .messages
        .first()
        .map(|m| m.header.offset)
        .expect("the partition is not empty");
    assert!(
        (first as usize) < expected.len(),
        "first offset {first} is past what was sent"
    );
    let remaining = poll_from(client, &id(stream), &id(topic), 0, first, 1000).await;
    assert_messages(
        &remaining,
        &expected[first as usize..],
        first,
        window(sent),
        "remaining messages",
    );
    first
}

#[tokio::test]
async fn delete_segments_removes_the_oldest_sealed_segments() {
    // Proves: DeleteSegments removes the requested number of oldest segments and never the active
    // one; what remains is an intact suffix of the partition; current_offset does not move and
    // new messages continue after it; unknown partition answers 3007. How: 600 messages in
    // batches of 10 over 4 KiB segments, delete 2 segments, then "all" (1000).
    let server = TestServer::start(small_segments());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "segments").await;
    create_topic(&client, stream, "t", 1).await;
    let (s, t) = (id(stream), id(0));
    let sent = send_series(
        &client,
        &s,
        &t,
        &Partitioning::partition_id(0),
        (1, 0, 600),
        10,
    )
    .await;
    let before = partition_details(&client, stream, 0, 0).await;
    assert!(
        before.segments_count >= 4,
        "600 messages should fill several 4 KiB segments: {before:?}"
    );
    assert_eq!(before.current_offset, 599);

    client
        .delete_segments(&s, &t, 0, 2)
        .await
        .expect("delete 2 segments");
    let after = partition_details(&client, stream, 0, 0).await;
    assert_eq!(
        after.segments_count,
        before.segments_count - 2,
        "two segments fewer"
    );
    assert_eq!(after.current_offset, 599, "current_offset unchanged");
    let first = assert_suffix_intact(&client, stream, 0, &sent).await;
    assert!(first > 0, "the oldest messages are gone");
    assert_eq!(
        after.messages_count,
        600 - first,
        "messages_count counts what remains"
    );

    client
        .delete_segments(&s, &t, 0, 1000)
        .await
        .expect("delete all sealed segments");
    let after_all = partition_details(&client, stream, 0, 0).await;
    assert_eq!(after_all.segments_count, 1, "the active segment stays");
    assert_eq!(after_all.current_offset, 599);
    let first_after_all = assert_suffix_intact(&client, stream, 0, &sent).await;
    assert!(first_after_all > first);

    let more = send_series(
        &client,
        &s,
        &t,
        &Partitioning::partition_id(0),
        (2, 0, 5),
        5,
    )
    .await;
    let polled = client
        .poll_messages(
            &s,
            &t,
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(600),
            10,
            false,
        )
        .await
        .expect("poll new messages");
    assert_messages(
        &polled.messages,
        &flatten(&more),
        600,
        window(&more),
        "messages after deletion",
    );

    assert_error_code(
        client.delete_segments(&s, &t, 5, 1).await,
        3007,
        "delete segments of unknown partition",
    );
    assert_error_code(
        client.delete_segments(&s, &id(9), 0, 1).await,
        2010,
        "delete segments of unknown topic",
    );
}

#[tokio::test]
async fn flush_unsaved_buffer_works_and_validates_its_target() {
    // Proves: FlushUnsavedBuffer succeeds with and without fsync on existing partitions (empty or
    // not) and answers 3007/2010/1009 for an unknown partition/topic/stream. How: official client.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "flush").await;
    create_topic(&client, stream, "t", 2).await;
    let (s, t) = (id(stream), id(0));
    send_series(
        &client,
        &s,
        &t,
        &Partitioning::partition_id(0),
        (1, 0, 100),
        100,
    )
    .await;
    for fsync in [false, true] {
        client
            .flush_unsaved_buffer(&s, &t, 0, fsync)
            .await
            .expect("flush partition 0");
        client
            .flush_unsaved_buffer(&s, &t, 1, fsync)
            .await
            .expect("flush empty partition 1");
    }
    assert_error_code(
        client.flush_unsaved_buffer(&s, &t, 2, true).await,
        3007,
        "flush unknown partition",
    );
    assert_error_code(
        client.flush_unsaved_buffer(&s, &id(5), 0, true).await,
        2010,
        "flush unknown topic",
    );
    assert_error_code(
        client.flush_unsaved_buffer(&id(5), &t, 0, true).await,
        1009,
        "flush unknown stream",
    );
    assert_eq!(poll_partition(&client, &s, &t, 0, 1000).await.len(), 100);
}

/// Polls `condition` every 200 ms for up to `limit`; returns whether it became true.
async fn eventually<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < limit {
        if condition().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[tokio::test]
async fn retention_deletes_expired_segments_and_keeps_topics_within_max_size() {
    // Proves: the retention timer deletes sealed segments older than the topic's message expiry
    // and the oldest sealed segments of a topic over its max size, leaves topics without limits
    // alone, and never loses the newest messages. How: three topics filled over 4 KiB segments
    // with the cleaner running every second: expiry 4 s, max size 16 KiB, no limits.
    let server = TestServer::start(small_segments());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "retention").await;
    let s = id(stream);
    let four_seconds = IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(4)));
    client
        .create_topic(
            &s,
            "expiring",
            1,
            CompressionAlgorithm::None,
            None,
            four_seconds,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("create expiring topic");
    let max_size = 16 * 1024;
    client
        .create_topic(
            &s,
            "bounded",
            1,
            CompressionAlgorithm::None,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::Custom(IggyByteSize::from(max_size)),
        )
        .await
        .expect("create bounded topic");
    create_topic(&client, stream, "kept", 1).await;

    // The expiring topic is filled last and checked at once, so that its first segments have
    // not expired yet even on a slow, loaded machine.
    let mut sent = [Vec::new(), Vec::new(), Vec::new()];
    for topic in [2u32, 1, 0] {
        sent[topic as usize] = send_series(
            &client,
            &s,
            &id(topic),
            &Partitioning::partition_id(0),
            (topic, 0, 600),
            10,
        )
        .await;
    }
    let expiring_before = partition_details(&client, stream, 0, 0).await;
    assert!(expiring_before.segments_count >= 4);

    let expired = eventually(Duration::from_secs(15), || async {
        partition_details(&client, stream, 0, 0)
            .await
            .segments_count
            == 1
    })
    .await;
    assert!(
        expired,
        "sealed segments of the expiring topic were not deleted: {:?}",
        partition_details(&client, stream, 0, 0).await
    );
    let first = assert_suffix_intact(&client, stream, 0, &sent[0]).await;
    assert!(first > 0);

    let bounded = eventually(Duration::from_secs(15), || async {
        let topic = client
            .get_topic(&s, &id(1))
            .await
            .unwrap()
            .expect("bounded topic");
        topic.size.as_bytes_u64() <= max_size
    })
    .await;
    let topic = client
        .get_topic(&s, &id(1))
        .await
        .unwrap()
        .expect("bounded topic");
    assert!(
        bounded,
        "bounded topic is still {} bytes (max {max_size}): {topic:?}",
        topic.size
    );
    assert_eq!(topic.partitions[0].current_offset, 599);
    assert_suffix_intact(&client, stream, 1, &sent[1]).await;

    let kept = partition_details(&client, stream, 2, 0).await;
    assert_eq!(
        kept.messages_count, 600,
        "a topic without limits keeps everything"
    );
    assert_eq!(assert_suffix_intact(&client, stream, 2, &sent[2]).await, 0);
}
