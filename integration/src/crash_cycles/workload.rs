//! What runs against the server during a cycle: a producer and a consumer per partition, and a
//! worker changing metadata, each recording what the server acknowledged.

use super::model::*;
use iggy::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub(super) async fn produce(
    client: Result<IggyClient, IggyError>,
    topic: &str,
    partition: u32,
    tag: u32,
    start: u64,
    seed: u64,
    stop: &AtomicBool,
) -> ProducerRecord {
    let mut record = ProducerRecord {
        acked: Vec::new(),
        unacked: Vec::new(),
        next_sequence: start,
    };
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            if std::env::var_os("CRASH_DEBUG").is_some() {
                eprintln!("producer {tag}: connect: {error}");
            }
            return record;
        }
    };
    let mut rng = Rng::new(seed);
    let (stream, topic) = (ident(STREAM), ident(topic));
    let partitioning = Partitioning::partition_id(partition);
    while !stop.load(Ordering::Relaxed) {
        let count = rng.range(1, 10);
        let first = record.next_sequence;
        let mut sent = Vec::with_capacity(count as usize);
        let mut messages = Vec::with_capacity(count as usize);
        for sequence in first..first + count {
            let payload = payload(tag, sequence);
            sent.push((sequence, checksum(&payload)));
            messages.push(
                IggyMessage::builder()
                    .id(message_id(tag, sequence))
                    .payload(payload)
                    .build()
                    .expect("message"),
            );
        }
        // These numbers are never sent again, whatever the outcome.
        record.next_sequence = first + count;
        match client
            .send_messages(&stream, &topic, &partitioning, &mut messages)
            .await
        {
            Ok(()) => record.acked.extend(sent),
            Err(error) => {
                if std::env::var_os("CRASH_DEBUG").is_some() {
                    eprintln!("producer {tag}: {error} after {} acked", record.acked.len());
                }
                record.unacked.extend(sent);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.range(2, 15))).await;
    }
    record
}

pub(super) async fn consume(
    client: Result<IggyClient, IggyError>,
    topic: &str,
    partition: u32,
    consumer_id: u32,
    from: u64,
    stop: &AtomicBool,
) -> ConsumerRecord {
    let mut record = ConsumerRecord {
        shown: Vec::new(),
        store_acked: None,
    };
    let Ok(client) = client else {
        return record;
    };
    let (stream, topic) = (ident(STREAM), ident(topic));
    let consumer = Consumer::new(numeric(consumer_id));
    let mut next = from;
    while !stop.load(Ordering::Relaxed) {
        let polled = match client
            .poll_messages(
                &stream,
                &topic,
                Some(partition),
                &consumer,
                &PollingStrategy::offset(next),
                50,
                false,
            )
            .await
        {
            Ok(polled) => polled,
            Err(_) => break,
        };
        let Some(last) = polled.messages.last().map(|m| m.header.offset) else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        record.shown.extend(
            polled
                .messages
                .iter()
                .map(|m| (m.header.offset, m.header.id)),
        );
        match client
            .store_consumer_offset(&consumer, &stream, &topic, Some(partition), last)
            .await
        {
            Ok(()) => record.store_acked = Some(last),
            Err(_) => break,
        }
        next = last + 1;
    }
    record
}

pub(super) async fn churn_metadata(
    client: Result<IggyClient, IggyError>,
    group_topic: &str,
    mut present: Vec<(Kind, String)>,
    mut next_name: u64,
    seed: u64,
    stop: &AtomicBool,
) -> MetadataRecord {
    let mut record = MetadataRecord {
        changes: Vec::new(),
        next_name,
    };
    let Ok(client) = client else {
        return record;
    };
    let mut rng = Rng::new(seed);
    let stream = ident(STREAM);
    let group_topic = ident(group_topic);
    while !stop.load(Ordering::Relaxed) {
        let delete =
            !present.is_empty() && rng.range(0, 99) < if present.len() > 24 { 70 } else { 35 };
        let (kind, name, creates, result) = if delete {
            let index = rng.range(0, present.len() as u64 - 1) as usize;
            let (kind, name) = present.swap_remove(index);
            let result = match kind {
                Kind::Stream => client.delete_stream(&ident(&name)).await,
                Kind::Topic => client.delete_topic(&stream, &ident(&name)).await,
                Kind::User => client.delete_user(&ident(&name)).await,
                Kind::Group => {
                    client
                        .delete_consumer_group(&stream, &group_topic, &ident(&name))
                        .await
                }
            };
            (kind, name, false, result)
        } else {
            next_name += 1;
            record.next_name = next_name;
            let (kind, name) = match rng.range(0, 3) {
                0 => (Kind::Stream, format!("s{next_name}")),
                1 => (Kind::Topic, format!("t{next_name}")),
                2 => (Kind::User, format!("u{next_name}")),
                _ => (Kind::Group, format!("g{next_name}")),
            };
            let result = match kind {
                Kind::Stream => client.create_stream(&name).await.map(drop),
                Kind::Topic => client
                    .create_topic(
                        &stream,
                        &name,
                        1,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::NeverExpire,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
                    .map(drop),
                Kind::User => client
                    .create_user(&name, "secret-pass", UserStatus::Active, None)
                    .await
                    .map(drop),
                Kind::Group => client
                    .create_consumer_group(&stream, &group_topic, &name)
                    .await
                    .map(drop),
            };
            if result.is_ok() {
                present.push((kind, name.clone()));
            }
            (kind, name, true, result)
        };
        let acked = result.is_ok();
        record.changes.push((kind, name, creates, acked));
        if !acked {
            break;
        }
        tokio::time::sleep(Duration::from_millis(rng.range(5, 40))).await;
    }
    record
}
