//! Polls that follow a partition's tail (`[system.partition] empty_poll_wait`,
//! `session::TailPolls`): a consumer polling the same partition again right after an empty
//! answer is answered by the next message as soon as it is visible, or empty once the wait is
//! over; a first poll, and a poll after a pause longer than the wait, are answered at once.
//! Official SDK 0.10.0 against the real server.

use bytes::Bytes;
use iggy::prelude::*;
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::{Duration, Instant};

/// Polls partition 0 of topic 0 of `stream`, 10 messages, auto-commit.
async fn timed_poll(
    client: &IggyClient,
    stream: u32,
    strategy: PollingStrategy,
    consumer: &Consumer,
) -> (PolledMessages, Duration) {
    let started = Instant::now();
    let polled = client
        .poll_messages(&id(stream), &id(0), Some(0), consumer, &strategy, 10, true)
        .await
        .expect("poll");
    (polled, started.elapsed())
}

#[tokio::test]
async fn a_repeated_poll_of_an_empty_tail_is_answered_by_the_next_message() {
    // Proves: in both the default `written` mode (the message becomes visible when its write
    // completes) and `memory` mode (when it is accepted), by offset and by "next", the second
    // poll of an empty partition waits and returns the message a producer sends 300 ms later,
    // instead of answering empty; the first poll is answered at once.
    for (mode, strategy) in [
        ("written", PollingStrategy::offset(0)),
        ("memory", PollingStrategy::next()),
    ] {
        let server = TestServer::start(
            ServerOptions::new()
                .env("IGGY_SYSTEM_PARTITION_EMPTY_POLL_WAIT", "5 s")
                .env("IGGY_SYSTEM_PARTITION_ACK_MODE", mode),
        );
        let admin = root_client(&server).await;
        let stream = create_stream(&admin, "tail").await;
        create_topic(&admin, stream, "t", 1).await;
        let consumer_client = root_client(&server).await;
        let consumer = Consumer::new(Identifier::numeric(7).expect("id"));

        let (polled, took) = timed_poll(&consumer_client, stream, strategy, &consumer).await;
        assert!(polled.messages.is_empty(), "{mode}: nothing sent yet");
        assert!(
            took < Duration::from_secs(2),
            "{mode}: a first poll is answered at once, took {took:?}"
        );

        let producer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut messages = vec![
                IggyMessage::builder()
                    .payload(Bytes::from_static(b"the next one"))
                    .build()
                    .expect("message"),
            ];
            admin
                .send_messages(
                    &id(stream),
                    &id(0),
                    &Partitioning::partition_id(0),
                    &mut messages,
                )
                .await
                .expect("send");
            admin
        });
        let (polled, took) = timed_poll(&consumer_client, stream, strategy, &consumer).await;
        let admin = producer.await.expect("producer task");
        assert_eq!(
            polled.messages.len(),
            1,
            "{mode}: the waiting poll got the message"
        );
        assert_eq!(&polled.messages[0].payload[..], b"the next one");
        assert_eq!(polled.messages[0].header.offset, 0);
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(4),
            "{mode}: answered when the message came, not at once or at the end of the wait: {took:?}"
        );
        drop(admin);
    }
}

#[tokio::test]
async fn a_waiting_poll_ends_empty_and_a_consumer_that_pauses_never_waits() {
    // Proves: a repeated poll of a tail that stays empty is answered empty once the wait is
    // over; a poll after a pause longer than the wait, a poll of another partition in between,
    // and any poll with the wait configured to 0 are answered at once.
    let server =
        TestServer::start(ServerOptions::new().env("IGGY_SYSTEM_PARTITION_EMPTY_POLL_WAIT", "1 s"));
    let client = root_client(&server).await;
    let stream = create_stream(&client, "tail").await;
    create_topic(&client, stream, "t", 2).await;
    let consumer = Consumer::new(Identifier::numeric(7).expect("id"));
    let strategy = PollingStrategy::offset(0);

    let (_, first) = timed_poll(&client, stream, strategy, &consumer).await;
    let (polled, repeated) = timed_poll(&client, stream, strategy, &consumer).await;
    assert!(polled.messages.is_empty());
    assert!(
        first < Duration::from_millis(500),
        "first poll took {first:?}"
    );
    assert!(
        repeated >= Duration::from_millis(900) && repeated < Duration::from_secs(5),
        "the repeated poll waits out the 1 s: {repeated:?}"
    );

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, after_pause) = timed_poll(&client, stream, strategy, &consumer).await;
    assert!(
        after_pause < Duration::from_millis(500),
        "a poll after a pause longer than the wait is answered at once: {after_pause:?}"
    );
    // Partition 1 in between: going round partitions never waits.
    client
        .poll_messages(
            &id(stream),
            &id(0),
            Some(1),
            &consumer,
            &strategy,
            10,
            false,
        )
        .await
        .expect("poll partition 1");
    let (_, round) = timed_poll(&client, stream, strategy, &consumer).await;
    assert!(
        round < Duration::from_millis(500),
        "a poll after another partition's is answered at once: {round:?}"
    );
    drop(client);
    drop(server);

    let server = TestServer::start(
        ServerOptions::new().env("IGGY_SYSTEM_PARTITION_EMPTY_POLL_WAIT", "0 ms"),
    );
    let client = root_client(&server).await;
    let stream = create_stream(&client, "tail").await;
    create_topic(&client, stream, "t", 1).await;
    let started = Instant::now();
    for _ in 0..20 {
        let (polled, _) = timed_poll(&client, stream, strategy, &consumer).await;
        assert!(polled.messages.is_empty());
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "with the wait off, 20 empty polls take {:?}",
        started.elapsed()
    );
}
