//! Periodic work each shard does on the partitions it owns: writing messages buffered in
//! `memory` ack mode (the message saver) and deleting expired or oversized segments (the
//! cleaner), and publishing what only the shard can read into its metric cells. All run as tasks
//! on the shard and never block request handling.

use crate::shard::Shard;
use crate::shard::table::PartitionKey;
use rill_core::ErrorCode;
use std::rc::Rc;
use std::time::Duration;

pub fn spawn_periodic_tasks(shard: &Rc<Shard>) {
    let config = &shard.shared.config;
    if config.message_saver.enabled {
        let shard = shard.clone();
        let period = config.message_saver.interval.0;
        compio::runtime::spawn(async move {
            while !shard.is_shutting_down() {
                compio::time::sleep(period).await;
                for partition in shard.local_partitions() {
                    partition.save_buffered().await;
                }
            }
        })
        .detach();
    }
    if config.data_maintenance.messages.cleaner_enabled {
        let shard = shard.clone();
        let period = config.data_maintenance.messages.interval.0;
        compio::runtime::spawn(async move {
            while !shard.is_shutting_down() {
                compio::time::sleep(period).await;
                clean(&shard).await;
            }
        })
        .detach();
    }
}

/// Applies each local partition's retention: message expiry by segment age, and the topic's
/// max size. A topic's size spans partitions on several shards, so each shard reads the total
/// from the shared counters and deletes the oldest sealed segment of its own partitions of that
/// topic while the topic is over its limit.
async fn clean(shard: &Shard) {
    let now = crate::time::now_micros();
    for partition in shard.local_partitions() {
        match partition.apply_expiry(now).await {
            Ok(0) => {}
            Ok(segments) => {
                tracing::info!(partition = %partition.key, segments, "deleted expired segments");
            }
            Err(ErrorCode::PartitionNotFound) => continue,
            Err(code) => tracing::warn!(partition = %partition.key, %code, "retention failed"),
        }
        let key = partition.key;
        let Ok(Some(max_size)) = shard.metadata(|metadata| {
            metadata
                .topic_by_ids(key.stream_id, key.topic_id)
                .map(|topic| topic.max_topic_size)
                .filter(|&max| max != u64::MAX)
        }) else {
            continue;
        };
        let topic_size = || {
            shard
                .shared
                .shards_table
                .totals(|other: &PartitionKey| {
                    other.stream_id == key.stream_id && other.topic_id == key.topic_id
                })
                .1
        };
        while topic_size() > max_size {
            match partition.delete_oldest_segment().await {
                Ok(0) | Err(ErrorCode::PartitionNotFound) => break,
                Ok(_) => {
                    tracing::info!(partition = %key, "deleted oldest segment: topic over its max size");
                }
                Err(code) => {
                    tracing::warn!(partition = %key, %code, "cannot delete segment for max size");
                    break;
                }
            }
        }
    }
}

/// How often each shard publishes what only it can read (its buffer pool, its partitions'
/// writer counters) into its cells, and lets its read cache shed what is above its share.
const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// Starts the shard's publisher task. Request-path counters need no publishing; this covers
/// figures that live in `Rc`/`Cell` state the scraper cannot touch.
pub fn spawn_metrics_publisher(shard: &Rc<Shard>) {
    let shard = shard.clone();
    compio::runtime::spawn(async move {
        while !shard.is_shutting_down() {
            shard.publish_metrics();
            compio::time::sleep(PUBLISH_INTERVAL).await;
        }
    })
    .detach();
}
