//! Durability across restarts: a graceful restart (SIGTERM, exit 0, start again on the same data
//! directory) keeps all metadata, messages and stored consumer offsets; a crash (SIGKILL) keeps
//! every message the server acknowledged.

use iggy::prelude::*;
use rill_integration::fixtures::{SentBatch, assert_batches, poll_partition, send_series};
use rill_integration::sdk::{consumer, create_stream, create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

/// One stored message: offset, id, timestamp, origin timestamp, checksum, payload, user headers.
type StoredMessage = (u64, u128, u64, u64, u64, Vec<u8>, Vec<u8>);

/// Everything observable about the server's content, for before/after comparisons.
#[derive(Debug, PartialEq)]
struct Snapshot {
    /// id, name, created_at, topics_count, messages_count, size_bytes.
    streams: Vec<(u32, String, u64, u32, u64, u64)>,
    /// "stream/TopicDetails" debug strings: every topic and partition field.
    topics: Vec<String>,
    /// (stream, topic, partition, messages).
    messages: Vec<(u32, u32, u32, Vec<StoredMessage>)>,
    /// (stream, topic, partition, consumer, stored offset).
    offsets: Vec<(u32, u32, u32, u32, Option<u64>)>,
}

async fn snapshot(client: &IggyClient) -> Snapshot {
    let mut streams = Vec::new();
    let mut topics = Vec::new();
    let mut messages = Vec::new();
    let mut offsets = Vec::new();
    for stream in client.get_streams().await.expect("get_streams") {
        streams.push((
            stream.id,
            stream.name.clone(),
            stream.created_at.as_micros(),
            stream.topics_count,
            stream.messages_count,
            stream.size.as_bytes_u64(),
        ));
        let details = client
            .get_stream(&id(stream.id))
            .await
            .unwrap()
            .expect("stream");
        for topic in details.topics {
            let topic = client
                .get_topic(&id(stream.id), &id(topic.id))
                .await
                .unwrap()
                .expect("topic");
            // Topic details include every partition's id, created_at, segments, offsets, counts.
            topics.push(format!("{}/{topic:?}", stream.id));
            for partition in &topic.partitions {
                let polled =
                    poll_partition(client, &id(stream.id), &id(topic.id), partition.id, 1000).await;
                let content = polled
                    .iter()
                    .map(|m| {
                        (
                            m.header.offset,
                            m.header.id,
                            m.header.timestamp,
                            m.header.origin_timestamp,
                            m.header.checksum,
                            m.payload.to_vec(),
                            m.user_headers.clone().unwrap_or_default().to_vec(),
                        )
                    })
                    .collect();
                messages.push((stream.id, topic.id, partition.id, content));
                for consumer_id in [1, 2] {
                    let stored = client
                        .get_consumer_offset(
                            &consumer(consumer_id),
                            &id(stream.id),
                            &id(topic.id),
                            Some(partition.id),
                        )
                        .await
                        .expect("get_consumer_offset")
                        .map(|info| info.stored_offset);
                    offsets.push((stream.id, topic.id, partition.id, consumer_id, stored));
                }
            }
        }
    }
    Snapshot {
        streams,
        topics,
        messages,
        offsets,
    }
}

#[tokio::test]
async fn graceful_restart_keeps_metadata_messages_and_offsets() {
    // Proves: after SIGTERM the server exits 0, and after starting again on the same directory
    // every stream, topic (settings included), partition, message (every header field and byte)
    // and stored consumer offset is as before; renames and deletions are not undone; ids, offsets
    // and Next continue where they were. Twice, to also cover state written after a restart.
    // How: build varied state with the official client, take a full snapshot, restart, compare.
    let mut server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let keep = create_stream(&client, "keep").await;
    let doomed = create_stream(&client, "doomed").await;
    let renamed = create_stream(&client, "before-rename").await;
    client
        .update_stream(&id(renamed), "after-rename")
        .await
        .expect("rename");
    client
        .create_topic(
            &id(keep),
            "events",
            3,
            CompressionAlgorithm::Gzip,
            Some(1),
            IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(86_400))),
            MaxTopicSize::Custom(IggyByteSize::from(5u64 << 30)),
        )
        .await
        .expect("create events");
    create_topic(&client, keep, "gone", 1).await;
    create_topic(&client, renamed, "logs", 2).await;
    client
        .delete_topic(&id(keep), &id(1))
        .await
        .expect("delete topic gone");
    client
        .delete_stream(&id(doomed))
        .await
        .expect("delete stream doomed");

    let mut sent: Vec<SentBatch> = Vec::new();
    for partition in 0..3 {
        sent.extend(
            send_series(
                &client,
                &id(keep),
                &id(0),
                &Partitioning::partition_id(partition),
                (partition, 0, 700),
                100,
            )
            .await,
        );
    }
    send_series(
        &client,
        &id(renamed),
        &id(0),
        &Partitioning::balanced(),
        (10, 0, 800),
        200,
    )
    .await;
    let polled = client
        .poll_messages(
            &id(keep),
            &id(0),
            Some(1),
            &consumer(1),
            &PollingStrategy::next(),
            250,
            true,
        )
        .await
        .expect("commit consumer 1");
    assert_eq!(polled.messages.len(), 250);
    client
        .store_consumer_offset(&consumer(2), &id(renamed), &id(0), Some(1), 42)
        .await
        .expect("store consumer 2");

    let before = snapshot(&client).await;
    assert_eq!(before.streams.len(), 2);
    drop(client);

    for round in 1..=2 {
        server.restart();
        let client = root_client(&server).await;
        let after = snapshot(&client).await;
        assert_eq!(
            after.streams, before.streams,
            "streams after restart {round}"
        );
        assert_eq!(after.topics, before.topics, "topics after restart {round}");
        assert_eq!(
            after.offsets, before.offsets,
            "consumer offsets after restart {round}"
        );
        for (after, before) in after.messages.iter().zip(&before.messages) {
            assert_eq!((after.0, after.1, after.2), (before.0, before.1, before.2));
            assert!(
                after.3 == before.3,
                "messages of stream {} topic {} partition {} differ after restart {round}",
                after.0,
                after.1,
                after.2
            );
        }
        assert_eq!(after.messages.len(), before.messages.len());
        if round == 1 {
            // Keep the restarted server busy with reads only, then restart again: nothing must
            // change; the next round checks that.
            let polled = client
                .poll_messages(
                    &id(keep),
                    &id(0),
                    Some(1),
                    &consumer(3),
                    &PollingStrategy::first(),
                    10,
                    false,
                )
                .await
                .expect("poll");
            assert_eq!(polled.messages.len(), 10);
        }
    }

    let client = root_client(&server).await;
    // Next continues after the committed offset.
    let polled = client
        .poll_messages(
            &id(keep),
            &id(0),
            Some(1),
            &consumer(1),
            &PollingStrategy::next(),
            10,
            true,
        )
        .await
        .expect("next after restart");
    assert_eq!(polled.messages.first().map(|m| m.header.offset), Some(250));
    // New messages continue the offsets; a new stream takes the free id 1 (doomed's).
    let more = send_series(
        &client,
        &id(keep),
        &id(0),
        &Partitioning::partition_id(2),
        (2, 700, 10),
        10,
    )
    .await;
    let partition_2 = poll_partition(&client, &id(keep), &id(0), 2, 1000).await;
    let expected: Vec<&SentBatch> = sent[14..21].iter().chain(more.iter()).collect();
    assert_batches(&partition_2, &expected, 0, "partition 2 after restarts");
    let new_stream = create_stream(&client, "new").await;
    assert_eq!(new_stream, doomed, "the deleted stream's id is free again");
    assert!(client.get_stream(&named("doomed")).await.unwrap().is_none());
    assert!(
        client
            .get_stream(&named("before-rename"))
            .await
            .unwrap()
            .is_none()
    );
    let topic = client
        .get_topic(&id(keep), &id(0))
        .await
        .unwrap()
        .expect("events");
    assert_eq!(topic.compression_algorithm, CompressionAlgorithm::Gzip);
    assert_eq!(
        topic.max_topic_size,
        MaxTopicSize::Custom(IggyByteSize::from(5u64 << 30))
    );
    assert!(
        client.get_topic(&id(keep), &id(1)).await.unwrap().is_none(),
        "deleted topic stays deleted"
    );
}

#[tokio::test]
async fn acknowledged_messages_survive_kill_9() {
    // Proves: with the default ack mode, every SendMessages the server acknowledged is still
    // there, byte for byte, after SIGKILL and a restart (no graceful flush); metadata created
    // before the crash too; offsets continue densely afterwards. How: 3000 messages in batches of
    // 100 over 2 partitions, SIGKILL right after the last acknowledgement, start, poll everything.
    let mut server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "crash").await;
    create_topic(&client, stream, "t", 2).await;
    let (s, t) = (id(stream), id(0));
    let mut sent = Vec::new();
    for partition in 0..2 {
        sent.push(
            send_series(
                &client,
                &s,
                &t,
                &Partitioning::partition_id(partition),
                (partition, 0, 1500),
                100,
            )
            .await,
        );
    }
    drop(client);
    server.kill();
    server.start_again();

    let client = root_client(&server).await;
    let topic = client
        .get_topic(&s, &t)
        .await
        .unwrap()
        .expect("topic survives the crash");
    assert_eq!(topic.partitions_count, 2);
    for partition in 0..2u32 {
        let polled = poll_partition(&client, &s, &t, partition, 1000).await;
        let batches: Vec<&SentBatch> = sent[partition as usize].iter().collect();
        assert_batches(
            &polled,
            &batches,
            0,
            &format!("partition {partition} after kill -9"),
        );
    }
    let more = send_series(
        &client,
        &s,
        &t,
        &Partitioning::partition_id(0),
        (0, 1500, 10),
        10,
    )
    .await;
    let polled = poll_partition(&client, &s, &t, 0, 1000).await;
    let batches: Vec<&SentBatch> = sent[0].iter().chain(more.iter()).collect();
    assert_batches(&polled, &batches, 0, "partition 0 after sending again");
}

#[tokio::test]
async fn flushed_messages_survive_kill_9_in_memory_ack_mode() {
    // Proves: in "memory" ack mode (acknowledged once in memory, periodic saver off), messages are
    // durable once FlushUnsavedBuffer (fsync) has returned: they survive SIGKILL. How: send 300
    // messages, flush with fsync, kill -9, restart, poll.
    let options = ServerOptions::new()
        .env("IGGY_SYSTEM_PARTITION_ACK_MODE", "memory")
        .env("IGGY_MESSAGE_SAVER_ENABLED", "false");
    let mut server = TestServer::start(options);
    let client = root_client(&server).await;
    let stream = create_stream(&client, "memory").await;
    create_topic(&client, stream, "t", 1).await;
    let (s, t) = (id(stream), id(0));
    let sent = send_series(
        &client,
        &s,
        &t,
        &Partitioning::partition_id(0),
        (5, 0, 300),
        100,
    )
    .await;
    client
        .flush_unsaved_buffer(&s, &t, 0, true)
        .await
        .expect("flush with fsync");
    drop(client);
    server.kill();
    server.start_again();

    let client = root_client(&server).await;
    let polled = poll_partition(&client, &s, &t, 0, 1000).await;
    assert_batches(
        &polled,
        &sent.iter().collect::<Vec<_>>(),
        0,
        "flushed messages after kill -9",
    );
}
