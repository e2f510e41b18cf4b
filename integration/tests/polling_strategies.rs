//! Every polling strategy (protocol.md 5.3) and auto-commit (5.4) against a partition with known
//! content: 3000 messages in 10 batches sent a few milliseconds apart, so that batches have
//! distinct server timestamps.

use iggy::prelude::*;
use rill_integration::fixtures::{SentBatch, assert_messages, send_series};
use rill_integration::raw::{RawClient, codes, numeric_identifier, status};
use rill_integration::sdk::{consumer, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

const PARTITION: u32 = 1;
const TOTAL: u64 = 3000;
const BATCH: u64 = 300;

struct Fixture {
    server: TestServer,
    client: IggyClient,
    stream: Identifier,
    topic: Identifier,
    batches: Vec<SentBatch>,
}

impl Fixture {
    /// A 2-partition topic: partition 0 stays empty, partition 1 gets 3000 messages.
    async fn new() -> Fixture {
        let server = TestServer::start(ServerOptions::new());
        let client = root_client(&server).await;
        let stream = create_stream(&client, "polling").await;
        create_topic(&client, stream, "t", 2).await;
        let (s, t) = (id(stream), id(0));
        let mut batches = Vec::new();
        for number in 0..TOTAL / BATCH {
            let partitioning = Partitioning::partition_id(PARTITION);
            batches.extend(
                send_series(
                    &client,
                    &s,
                    &t,
                    &partitioning,
                    (3, number * BATCH, BATCH),
                    BATCH,
                )
                .await,
            );
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        Fixture {
            server,
            client,
            stream: s,
            topic: t,
            batches,
        }
    }

    async fn poll(
        &self,
        partition: Option<u32>,
        consumer_id: u32,
        strategy: PollingStrategy,
        count: u32,
        auto_commit: bool,
    ) -> PolledMessages {
        self.client
            .poll_messages(
                &self.stream,
                &self.topic,
                partition,
                &consumer(consumer_id),
                &strategy,
                count,
                auto_commit,
            )
            .await
            .unwrap_or_else(|error| panic!("poll {strategy:?} count {count}: {error}"))
    }

    /// Asserts that `polled` is messages `first..first + count` of partition 1, as sent.
    #[track_caller]
    fn assert_range(&self, polled: &PolledMessages, first: u64, count: u64, what: &str) {
        assert_eq!(polled.partition_id, PARTITION, "{what}: partition_id");
        assert_eq!(polled.current_offset, TOTAL - 1, "{what}: current_offset");
        assert_eq!(
            polled.count as usize,
            polled.messages.len(),
            "{what}: count field"
        );
        assert_eq!(
            polled.messages.len() as u64,
            count,
            "{what}: number of messages"
        );
        let expected: Vec<_> = self
            .batches
            .iter()
            .flat_map(|batch| batch.messages.iter().cloned())
            .skip(first as usize)
            .take(count as usize)
            .collect();
        let window = (
            self.batches[0].window.0,
            self.batches.last().unwrap().window.1,
        );
        assert_messages(&polled.messages, &expected, first, window, what);
    }

    async fn stored_offset(&self, consumer_id: u32, partition: u32) -> Option<u64> {
        self.client
            .get_consumer_offset(
                &consumer(consumer_id),
                &self.stream,
                &self.topic,
                Some(partition),
            )
            .await
            .expect("get_consumer_offset")
            .map(|info| {
                assert_eq!(info.partition_id, partition);
                assert_eq!(
                    info.current_offset,
                    TOTAL - 1,
                    "consumer offset reports the partition end"
                );
                info.stored_offset
            })
    }
}

#[tokio::test]
async fn offset_strategy_returns_consecutive_messages_from_the_offset() {
    // Proves: Offset(v) returns up to `count` messages from offset v, fewer at the end, none past
    // the end (still naming the partition and its current offset); count 0 returns nothing.
    // How: polls at the start, in the middle across batch boundaries, at the tail and past it.
    let fixture = Fixture::new().await;
    let polled = fixture
        .poll(Some(PARTITION), 1, PollingStrategy::offset(0), 100, false)
        .await;
    fixture.assert_range(&polled, 0, 100, "offset 0");
    let polled = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::offset(1234),
            500,
            false,
        )
        .await;
    fixture.assert_range(&polled, 1234, 500, "offset 1234");
    let polled = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::offset(2990),
            100,
            false,
        )
        .await;
    fixture.assert_range(&polled, 2990, 10, "offset 2990, tail");
    for past_end in [TOTAL, TOTAL + 1000] {
        let polled = fixture
            .poll(
                Some(PARTITION),
                1,
                PollingStrategy::offset(past_end),
                100,
                false,
            )
            .await;
        fixture.assert_range(&polled, past_end, 0, "offset past the end");
    }
    // count 0 (the SDK refuses to send it, so over a raw connection): an empty 16-byte result
    // carrying the partition id and its current offset.
    let mut raw = RawClient::connect(fixture.server.address());
    raw.login_root();
    let mut payload = vec![1]; // consumer kind: plain consumer
    payload.extend(numeric_identifier(1));
    payload.extend(numeric_identifier(0)); // stream 0
    payload.extend(numeric_identifier(0)); // topic 0
    payload.push(1); // partition present
    payload.extend(PARTITION.to_le_bytes());
    payload.push(1); // strategy: offset
    payload.extend(10u64.to_le_bytes());
    payload.extend(0u32.to_le_bytes()); // count
    payload.push(0); // auto_commit
    let response = raw.request(codes::POLL_MESSAGES, &payload);
    assert_eq!(response.status, status::OK, "poll with count 0");
    let mut expected = PARTITION.to_le_bytes().to_vec();
    expected.extend((TOTAL - 1).to_le_bytes());
    expected.extend(0u32.to_le_bytes());
    assert_eq!(
        response.payload, expected,
        "count 0: partition, current offset, no messages"
    );
    let polled = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::offset(0),
            TOTAL as u32,
            false,
        )
        .await;
    fixture.assert_range(&polled, 0, TOTAL, "the whole partition in one poll");
}

#[tokio::test]
async fn timestamp_strategy_starts_at_the_first_message_not_older() {
    // Proves: Timestamp(v) starts at the first message whose server timestamp is >= v. How: the
    // batches were sent milliseconds apart, so the exact timestamp of batch k's first message
    // selects offset k * 300; one microsecond later selects batch k + 1; 0 selects offset 0; a
    // future timestamp selects nothing.
    let fixture = Fixture::new().await;
    let all = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::offset(0),
            TOTAL as u32,
            false,
        )
        .await;
    let stamp = |offset: u64| all.messages[offset as usize].header.timestamp;
    for k in [1u64, 5, 9] {
        let first = k * BATCH;
        assert!(
            stamp(first) > stamp(first - 1),
            "batches {k} and {} share a timestamp",
            k - 1
        );
        let polled = fixture
            .poll(
                Some(PARTITION),
                1,
                PollingStrategy::timestamp(stamp(first).into()),
                50,
                false,
            )
            .await;
        fixture.assert_range(&polled, first, 50, &format!("timestamp of batch {k}"));
        let polled = fixture
            .poll(
                Some(PARTITION),
                1,
                PollingStrategy::timestamp((stamp(first - 1) + 1).into()),
                50,
                false,
            )
            .await;
        fixture.assert_range(&polled, first, 50, &format!("just after batch {}", k - 1));
    }
    let polled = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::timestamp(0.into()),
            20,
            false,
        )
        .await;
    fixture.assert_range(&polled, 0, 20, "timestamp 0");
    let future = IggyTimestamp::now().as_micros() + 3_600_000_000;
    let polled = fixture
        .poll(
            Some(PARTITION),
            1,
            PollingStrategy::timestamp(future.into()),
            20,
            false,
        )
        .await;
    fixture.assert_range(&polled, 0, 0, "future timestamp");
}

#[tokio::test]
async fn first_and_last_strategies() {
    // Proves: First starts at offset 0; Last returns the last `count` messages (all of them when
    // count exceeds the partition); on an empty partition both return nothing with
    // current_offset 0. How: polls on the full partition 1 and the empty partition 0.
    let fixture = Fixture::new().await;
    let polled = fixture
        .poll(Some(PARTITION), 1, PollingStrategy::first(), 10, false)
        .await;
    fixture.assert_range(&polled, 0, 10, "first 10");
    let polled = fixture
        .poll(Some(PARTITION), 1, PollingStrategy::last(), 10, false)
        .await;
    fixture.assert_range(&polled, TOTAL - 10, 10, "last 10");
    let polled = fixture
        .poll(Some(PARTITION), 1, PollingStrategy::last(), 1, false)
        .await;
    fixture.assert_range(&polled, TOTAL - 1, 1, "last 1");
    let polled = fixture
        .poll(Some(PARTITION), 1, PollingStrategy::last(), 5000, false)
        .await;
    fixture.assert_range(&polled, 0, TOTAL, "last 5000 of 3000");

    for strategy in [
        PollingStrategy::first(),
        PollingStrategy::last(),
        PollingStrategy::next(),
    ] {
        let polled = fixture.poll(Some(0), 1, strategy, 10, false).await;
        assert_eq!(polled.partition_id, 0, "{strategy:?} on empty partition");
        assert_eq!(polled.current_offset, 0, "{strategy:?} on empty partition");
        assert!(
            polled.messages.is_empty(),
            "{strategy:?} on empty partition"
        );
    }
    // No partition given: a plain consumer reads partition 0 (protocol.md 5.2).
    let polled = fixture
        .poll(None, 1, PollingStrategy::first(), 10, false)
        .await;
    assert_eq!(polled.partition_id, 0);
    assert!(polled.messages.is_empty());
}

#[tokio::test]
async fn next_with_auto_commit_consumes_each_message_once() {
    // Proves: Next starts at the consumer's stored offset + 1 (offset 0 when nothing is stored);
    // auto-commit stores the offset of the last returned message, per consumer; without
    // auto-commit nothing is stored; auto-commit also works with other strategies; an explicitly
    // stored offset moves Next. How: several consumers walk partition 1 with Next in pages of
    // 1000 and check the stored offsets after each poll.
    let fixture = Fixture::new().await;
    assert_eq!(
        fixture.stored_offset(7, PARTITION).await,
        None,
        "nothing stored yet"
    );

    // Without auto-commit, Next keeps returning the start.
    for _ in 0..2 {
        let polled = fixture
            .poll(Some(PARTITION), 7, PollingStrategy::next(), 100, false)
            .await;
        fixture.assert_range(&polled, 0, 100, "next without commit");
    }
    assert_eq!(fixture.stored_offset(7, PARTITION).await, None);

    for page in 0..3u64 {
        let polled = fixture
            .poll(Some(PARTITION), 7, PollingStrategy::next(), 1000, true)
            .await;
        fixture.assert_range(&polled, page * 1000, 1000, &format!("next page {page}"));
        assert_eq!(
            fixture.stored_offset(7, PARTITION).await,
            Some(page * 1000 + 999)
        );
    }
    let polled = fixture
        .poll(Some(PARTITION), 7, PollingStrategy::next(), 1000, true)
        .await;
    fixture.assert_range(&polled, TOTAL, 0, "next after the end");
    assert_eq!(
        fixture.stored_offset(7, PARTITION).await,
        Some(TOTAL - 1),
        "unchanged by an empty poll"
    );

    // Another consumer has its own offset.
    let polled = fixture
        .poll(Some(PARTITION), 8, PollingStrategy::next(), 10, true)
        .await;
    fixture.assert_range(&polled, 0, 10, "second consumer");
    assert_eq!(fixture.stored_offset(8, PARTITION).await, Some(9));

    // Auto-commit with the Offset strategy stores the last returned offset too.
    let polled = fixture
        .poll(Some(PARTITION), 9, PollingStrategy::offset(100), 10, true)
        .await;
    fixture.assert_range(&polled, 100, 10, "offset with commit");
    assert_eq!(fixture.stored_offset(9, PARTITION).await, Some(109));
    let polled = fixture
        .poll(Some(PARTITION), 9, PollingStrategy::next(), 5, false)
        .await;
    fixture.assert_range(&polled, 110, 5, "next after offset commit");

    // An explicitly stored offset moves Next.
    fixture
        .client
        .store_consumer_offset(
            &consumer(10),
            &fixture.stream,
            &fixture.topic,
            Some(PARTITION),
            1500,
        )
        .await
        .expect("store offset");
    assert_eq!(fixture.stored_offset(10, PARTITION).await, Some(1500));
    let polled = fixture
        .poll(Some(PARTITION), 10, PollingStrategy::next(), 10, true)
        .await;
    fixture.assert_range(&polled, 1501, 10, "next after store");

    // Offsets are per partition: nothing is stored for partition 0.
    let other_partition = fixture
        .client
        .get_consumer_offset(&consumer(7), &fixture.stream, &fixture.topic, Some(0))
        .await
        .expect("get offset of partition 0");
    assert!(other_partition.is_none(), "{other_partition:?}");
}
