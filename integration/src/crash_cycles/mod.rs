//! Crash cycles: start the real server, run producers, consumers and metadata changes against
//! it, `kill -9` it at a random (seeded) moment, start it again on the same data directory and
//! check everything it acknowledged before the kill.
//!
//! One server runs for the whole run. Stream `crash` holds topic `w` (ack mode `written`)
//! and/or topic `f` (ack mode `fsync`, through `system.partition.ack_mode_overrides`), each
//! with [`CrashConfig::partitions`] partitions. Segments are 16 KiB, so segments rotate several
//! times a cycle; each topic's max size is 512 KiB and the cleaner runs every 500 ms, so the
//! retention deletes segments while the workload runs. Every cycle:
//!
//! 1. One producer per partition (official SDK, its own connection, automatic reconnection
//!    off so that the SDK never re-sends a request on its own) sends batches of 1..=10
//!    numbered messages: id = (tag + 1) << 64 | sequence, payload a function of (tag,
//!    sequence) whose XXH3 is recorded. A send that returned Ok is *acknowledged*; the one in
//!    flight when the server died is *unacknowledged*, and its numbers are never sent again.
//! 2. One plain consumer per partition polls from its stored offset + 1, records every
//!    (offset, id) it was shown, and stores its offset after each poll.
//! 3. A metadata worker creates and deletes streams, topics, users and consumer groups.
//! 4. After a random delay (seeded, printed) the server gets SIGKILL, then it is started again.
//!
//! Checks after each restart, per partition (the whole partition is read):
//! * offsets are dense from the first stored one; every message's id belongs to the partition
//!   and its payload has the recorded checksum (else `corrupt`);
//! * sequence numbers strictly increase (an id twice is `duplicated`, a step back `corrupt`):
//!   nothing, acknowledged or not, is stored twice, and the order is the send order;
//! * every message found in an earlier check is still at its offset, unless the retention
//!   deleted its segment (offset below the first stored offset); every message acknowledged
//!   this cycle is present (else `lost`; messages deleted by the retention are accounted by
//!   offset, so retention cannot hide a loss after the first stored offset);
//! * every (offset, id) a consumer was shown is still there (`shown_missing`);
//! * a stored consumer offset is not past the last stored message (`offsets_ahead`) and not
//!   below the last offset whose store was acknowledged (`offsets_regressed`);
//! * streams, topics, users and groups: each acknowledged creation exists and each acknowledged
//!   deletion is gone; the one change in flight at the kill may have happened or not; nothing
//!   else exists (`metadata_mismatches`).
//!
//! "Acknowledged" means the server answered OK: in `written` mode the message was written to
//! its file with O_DIRECT (a process crash does not lose it), in `fsync` mode fdatasynced.

mod checks;
mod model;
mod workload;

use crate::server::{ServerOptions, TestServer};
use checks::{check_metadata, check_partition};
use iggy::prelude::*;
use model::*;
pub use model::{
    AckModes, CrashConfig, Rng, Tally, client_without_reconnection, message_id, payload,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use workload::{churn_metadata, consume, produce};

/// Runs `config.cycles` crash cycles on one server and returns the tally.
pub async fn run(config: &CrashConfig) -> Tally {
    let topics: Vec<&str> = match config.ack_modes {
        AckModes::Written => vec!["w"],
        AckModes::Fsync => vec!["f"],
        AckModes::Both => vec!["w", "f"],
    };
    let options = ServerOptions::new()
        .env("IGGY_SYSTEM_SEGMENT_SIZE", SEGMENT_SIZE)
        .env("IGGY_SYSTEM_PARTITION_ACK_MODE", "written")
        .env(
            "IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES",
            &format!("{STREAM}/f=fsync"),
        )
        .env("IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL", "500 ms");
    let mut server = tokio::task::block_in_place(|| TestServer::start(options));
    let address = server.tcp_address();
    let mut rng = Rng::new(config.seed);
    let mut tally = Tally::default();
    let mut partitions: Vec<PartitionModel> = Vec::new();
    let mut metadata: BTreeMap<(Kind, String), Expect> = BTreeMap::new();
    let mut next_name = 0u64;
    let token: String;
    {
        let client = client_without_reconnection(&address, None)
            .await
            .expect("connect for setup");
        token = client
            .create_personal_access_token("crash-cycles", PersonalAccessTokenExpiry::NeverExpire)
            .await
            .expect("create a personal access token")
            .token;
        client.create_stream(STREAM).await.expect("create stream");
        for (topic_index, topic) in topics.iter().enumerate() {
            client
                .create_topic(
                    &ident(STREAM),
                    topic,
                    config.partitions,
                    CompressionAlgorithm::None,
                    None,
                    IggyExpiry::NeverExpire,
                    MaxTopicSize::Custom(IggyByteSize::from(TOPIC_MAX_SIZE)),
                )
                .await
                .expect("create topic");
            for partition in 0..config.partitions {
                let tag = topic_index as u32 * 100 + partition;
                partitions.push(PartitionModel {
                    topic: topic.to_string(),
                    partition,
                    tag,
                    consumer_id: tag + 1,
                    ..PartitionModel::default()
                });
            }
        }
    }

    for cycle in 1..=u64::from(config.cycles) {
        let started = Instant::now();
        let kill_after = rng.range(config.kill_after_ms.0, config.kill_after_ms.1);
        let stop_flag = Arc::new(AtomicBool::new(false));
        // Workers connect and log in first (Argon2 is slow in debug builds); the kill timer
        // starts once all of them are ready.
        let ready = Arc::new(tokio::sync::Barrier::new(partitions.len() * 2 + 2));
        let mut producers = Vec::new();
        let mut consumers = Vec::new();
        for model in &partitions {
            let address = address.clone();
            let producer_token = token.clone();
            let stop = Arc::clone(&stop_flag);
            let (topic, partition, tag, start) = (
                model.topic.clone(),
                model.partition,
                model.tag,
                model.next_sequence,
            );
            let seed = rng.next_u64();
            let barrier = Arc::clone(&ready);
            producers.push(tokio::spawn(async move {
                let client = client_without_reconnection(&address, Some(&producer_token)).await;
                barrier.wait().await;
                produce(client, &topic, partition, tag, start, seed, &stop).await
            }));
            let address = server.tcp_address();
            let token = token.clone();
            let stop = Arc::clone(&stop_flag);
            let topic = model.topic.clone();
            let from = model.stored_offset.map_or(model.first, |stored| stored + 1);
            let consumer_id = model.consumer_id;
            let barrier = Arc::clone(&ready);
            consumers.push(tokio::spawn(async move {
                let client = client_without_reconnection(&address, Some(&token)).await;
                barrier.wait().await;
                consume(client, &topic, partition, consumer_id, from, &stop).await
            }));
        }
        let present: Vec<(Kind, String)> = metadata
            .iter()
            .filter(|(_, expect)| **expect == Expect::Present)
            .map(|(key, _)| key.clone())
            .collect();
        let metadata_task = {
            let address = address.clone();
            let token = token.clone();
            let stop = Arc::clone(&stop_flag);
            let seed = rng.next_u64();
            let group_topic = topics[0].to_string();
            let barrier = Arc::clone(&ready);
            tokio::spawn(async move {
                let client = client_without_reconnection(&address, Some(&token)).await;
                barrier.wait().await;
                churn_metadata(client, &group_topic, present, next_name, seed, &stop).await
            })
        };
        ready.wait().await;

        tokio::time::sleep(Duration::from_millis(kill_after)).await;
        tokio::task::block_in_place(|| server.kill());
        stop_flag.store(true, Ordering::Relaxed);

        for (model, producer) in partitions.iter_mut().zip(producers) {
            let record = producer.await.expect("producer task");
            model.acked = record.acked.into_iter().collect();
            model.unacked = record.unacked.into_iter().collect();
            model.next_sequence = record.next_sequence;
        }
        for (model, consumer) in partitions.iter_mut().zip(consumers) {
            let record = consumer.await.expect("consumer task");
            model.shown = record.shown;
            model.store_acked = record.store_acked;
        }
        let record = metadata_task.await.expect("metadata task");
        next_name = record.next_name;
        if record.changes.iter().any(|(_, _, _, acked)| !acked) {
            tally.kills_mid_metadata += 1;
        }
        for (kind, name, present, acked) in record.changes {
            let expect = match (acked, present) {
                (false, _) => Expect::Either,
                (true, true) => Expect::Present,
                (true, false) => Expect::Absent,
            };
            if acked {
                tally.metadata_changes += 1;
            }
            metadata.insert((kind, name), expect);
        }

        tokio::task::block_in_place(|| server.start_again());
        let client = client_without_reconnection(&address, Some(&token))
            .await
            .expect("connect after restart");
        let before = (
            tally.lost,
            tally.duplicated,
            tally.corrupt,
            tally.metadata_mismatches,
        );
        let mut acked_this_cycle = 0;
        for model in partitions.iter_mut() {
            acked_this_cycle += model.acked.len();
            check_partition(&client, model, cycle, &mut tally).await;
        }
        check_metadata(&client, &topics, &mut metadata, cycle, &mut tally).await;
        tally.cycles = cycle;
        if config.verbose {
            let after = (
                tally.lost,
                tally.duplicated,
                tally.corrupt,
                tally.metadata_mismatches,
            );
            println!(
                "cycle {cycle}: killed after {kill_after} ms, {acked_this_cycle} messages acked, cycle took {:.1} s{}",
                started.elapsed().as_secs_f64(),
                if after == before { "" } else { ", PROBLEMS" }
            );
        }
    }
    if !tally.is_clean() {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    tally
}
