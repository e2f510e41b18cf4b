//! The figures the server reports (messages_count, size_bytes, current_offset, partition and
//! topic counts, GetStats) against what was actually sent, and what PurgeTopic / PurgeStream reset.

use iggy::prelude::*;
use rill_integration::fixtures::{SentBatch, assert_batches, poll_partition, send_series};
use rill_integration::sdk::{consumer, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};

fn total_size(batches: &[SentBatch]) -> u64 {
    batches
        .iter()
        .flat_map(|batch| &batch.messages)
        .map(|message| message.size_bytes())
        .sum()
}

fn total_count(batches: &[SentBatch]) -> u64 {
    batches
        .iter()
        .map(|batch| batch.messages.len() as u64)
        .sum()
}

#[tokio::test]
async fn reported_counts_and_sizes_match_what_was_sent() {
    // Proves: for each partition, messages_count, current_offset and size_bytes (64-byte header +
    // payload + user headers per message) match what was sent; topics and streams report the
    // sums, in GetTopic, GetTopics, GetStream and GetStreams alike; GetStats counts streams,
    // topics, partitions, segments and messages. How: 2 streams, 3 topics, 6 partitions with
    // different amounts of messages (one left empty).
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let first = create_stream(&client, "first").await;
    let second = create_stream(&client, "second").await;
    create_topic(&client, first, "a", 3).await;
    create_topic(&client, first, "b", 2).await;
    create_topic(&client, second, "c", 1).await;

    // (stream, topic, partition, messages); partition (first, a, 2) stays empty.
    let plan = [
        (first, 0u32, 0u32, 1200u64),
        (first, 0, 1, 700),
        (first, 1, 0, 150),
        (first, 1, 1, 2000),
        (second, 0, 0, 950),
    ];
    let mut sent = Vec::new();
    for (tag, (stream, topic, partition, count)) in plan.into_iter().enumerate() {
        let batches = send_series(
            &client,
            &id(stream),
            &id(topic),
            &Partitioning::partition_id(partition),
            (tag as u32, 0, count),
            250,
        )
        .await;
        sent.push(((stream, topic, partition), batches));
    }
    let sent_to = |stream: u32, topic: u32, partition: u32| -> (u64, u64) {
        sent.iter()
            .filter(|((s, t, p), _)| (*s, *t, *p) == (stream, topic, partition))
            .map(|(_, batches)| (total_count(batches), total_size(batches)))
            .fold((0, 0), |(c, s), (count, size)| (c + count, s + size))
    };

    let mut stream_totals = [(0u64, 0u64); 2];
    for (stream, topic, partitions) in [(first, 0u32, 3u32), (first, 1, 2), (second, 0, 1)] {
        let details = client
            .get_topic(&id(stream), &id(topic))
            .await
            .unwrap()
            .expect("topic");
        assert_eq!(details.partitions_count, partitions);
        let (mut topic_count, mut topic_size) = (0, 0);
        for partition in &details.partitions {
            let (count, size) = sent_to(stream, topic, partition.id);
            let what = format!("stream {stream} topic {topic} partition {}", partition.id);
            assert_eq!(partition.messages_count, count, "{what}: messages_count");
            assert_eq!(partition.size.as_bytes_u64(), size, "{what}: size_bytes");
            assert_eq!(
                partition.current_offset,
                count.saturating_sub(1),
                "{what}: current_offset"
            );
            assert!(partition.segments_count >= 1, "{what}: segments_count");
            topic_count += count;
            topic_size += size;
        }
        assert_eq!(
            details.messages_count, topic_count,
            "topic {stream}/{topic} messages_count"
        );
        assert_eq!(
            details.size.as_bytes_u64(),
            topic_size,
            "topic {stream}/{topic} size"
        );
        let listed = client.get_topics(&id(stream)).await.unwrap();
        let header = listed.iter().find(|t| t.id == topic).expect("listed topic");
        assert_eq!(header.messages_count, topic_count);
        assert_eq!(header.size.as_bytes_u64(), topic_size);
        assert_eq!(header.partitions_count, partitions);
        stream_totals[stream as usize].0 += topic_count;
        stream_totals[stream as usize].1 += topic_size;
    }

    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 2);
    for stream in &streams {
        let (count, size) = stream_totals[stream.id as usize];
        assert_eq!(
            stream.messages_count, count,
            "stream {} messages_count",
            stream.id
        );
        assert_eq!(
            stream.size.as_bytes_u64(),
            size,
            "stream {} size",
            stream.id
        );
        let details = client
            .get_stream(&id(stream.id))
            .await
            .unwrap()
            .expect("stream");
        assert_eq!(details.messages_count, count);
        assert_eq!(details.size.as_bytes_u64(), size);
        assert_eq!(details.topics_count, stream.topics_count);
        assert_eq!(details.topics.len() as u32, details.topics_count);
    }
    assert_eq!(streams[0].topics_count, 2);
    assert_eq!(streams[1].topics_count, 1);

    let stats = client.get_stats().await.expect("stats");
    assert_eq!(stats.streams_count, 2);
    assert_eq!(stats.topics_count, 3);
    assert_eq!(stats.partitions_count, 6);
    assert!(
        stats.segments_count >= 6,
        "segments_count {}",
        stats.segments_count
    );
    let (all_count, all_size) = (
        stream_totals[0].0 + stream_totals[1].0,
        stream_totals[0].1 + stream_totals[1].1,
    );
    assert_eq!(stats.messages_count, all_count, "stats messages_count");
    assert_eq!(
        stats.messages_size_bytes.as_bytes_u64(),
        all_size,
        "stats messages_size_bytes"
    );
}

#[tokio::test]
async fn purge_empties_topics_and_restarts_offsets() {
    // Proves: PurgeTopic deletes a topic's messages, resets its partitions to offset 0 and its
    // counts to 0, and clears stored consumer offsets, without touching other topics or the
    // metadata; new messages then start again at offset 0. PurgeStream does the same for all
    // topics of a stream. How: two topics with messages and a committed consumer offset, purged
    // one after the other.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "purge").await;
    create_topic(&client, stream, "a", 2).await;
    create_topic(&client, stream, "b", 1).await;
    let (s, a, b) = (id(stream), id(0), id(1));
    for partition in 0..2 {
        send_series(
            &client,
            &s,
            &a,
            &Partitioning::partition_id(partition),
            (partition, 0, 500),
            100,
        )
        .await;
    }
    let kept = send_series(
        &client,
        &s,
        &b,
        &Partitioning::partition_id(0),
        (9, 0, 300),
        100,
    )
    .await;
    let polled = client
        .poll_messages(
            &s,
            &a,
            Some(0),
            &consumer(1),
            &PollingStrategy::next(),
            100,
            true,
        )
        .await
        .expect("commit an offset");
    assert_eq!(polled.messages.len(), 100);

    client.purge_topic(&s, &a).await.expect("purge topic a");
    let topic = client
        .get_topic(&s, &a)
        .await
        .unwrap()
        .expect("topic a still exists");
    assert_eq!(topic.partitions_count, 2);
    assert_eq!(topic.messages_count, 0);
    assert_eq!(topic.size.as_bytes_u64(), 0);
    for partition in &topic.partitions {
        assert_eq!(partition.messages_count, 0);
        assert_eq!(partition.current_offset, 0);
        assert!(
            poll_partition(&client, &s, &a, partition.id, 100)
                .await
                .is_empty()
        );
    }
    let offset = client
        .get_consumer_offset(&consumer(1), &s, &a, Some(0))
        .await
        .expect("get offset");
    assert!(
        offset.is_none(),
        "purge clears consumer offsets: {offset:?}"
    );
    let untouched = poll_partition(&client, &s, &b, 0, 1000).await;
    assert_batches(
        &untouched,
        &kept.iter().collect::<Vec<_>>(),
        0,
        "topic b after purging a",
    );

    let fresh = send_series(
        &client,
        &s,
        &a,
        &Partitioning::partition_id(0),
        (20, 0, 50),
        50,
    )
    .await;
    let polled = poll_partition(&client, &s, &a, 0, 100).await;
    assert_batches(
        &polled,
        &fresh.iter().collect::<Vec<_>>(),
        0,
        "topic a after purge",
    );
    let polled = client
        .poll_messages(
            &s,
            &a,
            Some(0),
            &consumer(1),
            &PollingStrategy::next(),
            100,
            false,
        )
        .await
        .expect("next after purge");
    assert_eq!(
        polled.messages.first().map(|m| m.header.offset),
        Some(0),
        "Next restarts at 0"
    );

    client.purge_stream(&s).await.expect("purge stream");
    let details = client
        .get_stream(&s)
        .await
        .unwrap()
        .expect("stream still exists");
    assert_eq!(details.topics_count, 2);
    assert_eq!(details.messages_count, 0);
    assert_eq!(details.size.as_bytes_u64(), 0);
    for topic in [&a, &b] {
        let topic = client.get_topic(&s, topic).await.unwrap().expect("topic");
        assert_eq!(topic.messages_count, 0);
        for partition in &topic.partitions {
            assert_eq!(partition.current_offset, 0);
            assert!(
                poll_partition(&client, &s, &id(topic.id), partition.id, 100)
                    .await
                    .is_empty()
            );
        }
    }
    let stats = client.get_stats().await.expect("stats");
    assert_eq!(stats.messages_count, 0);
    assert_eq!(stats.partitions_count, 3);
}
