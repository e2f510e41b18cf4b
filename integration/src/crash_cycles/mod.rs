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
mod workload;

use crate::server::{ROOT_PASSWORD, ROOT_USERNAME, ServerOptions, TestServer};
use bytes::Bytes;
use checks::{check_metadata, check_partition};
use iggy::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use workload::{churn_metadata, consume, produce};

/// Which ack modes a run exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckModes {
    Written,
    Fsync,
    /// Both at once: topic `w` in `written` mode and topic `f` in `fsync` mode.
    Both,
}

impl FromStr for AckModes {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "written" => Ok(AckModes::Written),
            "fsync" => Ok(AckModes::Fsync),
            "both" => Ok(AckModes::Both),
            other => Err(format!(
                "unknown ack mode {other:?} (written, fsync or both)"
            )),
        }
    }
}

/// How to run crash cycles.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    pub cycles: u32,
    pub ack_modes: AckModes,
    pub seed: u64,
    /// Partitions per topic (one producer and one consumer each).
    pub partitions: u32,
    /// The kill comes this many milliseconds (uniform, inclusive) after the workload started.
    pub kill_after_ms: (u64, u64),
    /// Print one line per cycle.
    pub verbose: bool,
}

impl Default for CrashConfig {
    fn default() -> Self {
        CrashConfig {
            cycles: 10,
            ack_modes: AckModes::Both,
            seed: 1,
            partitions: 2,
            kill_after_ms: (150, 900),
            verbose: true,
        }
    }
}

/// What a run found. A clean run has every counter after `retained` at zero.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub cycles: u64,
    /// Messages acknowledged by the server (all must survive).
    pub acked_messages: u64,
    /// Messages in flight at a kill (no answer): allowed to be stored at most once.
    pub unacked_messages: u64,
    /// Of those, how many were stored.
    pub unacked_stored: u64,
    /// Messages deleted by the size retention (not a loss).
    pub retained: u64,
    /// Messages consumers were shown (all must survive).
    pub shown_messages: u64,
    /// Metadata changes acknowledged.
    pub metadata_changes: u64,
    /// Kills that hit a metadata change in flight (sent, no answer).
    pub kills_mid_metadata: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupt: u64,
    pub shown_missing: u64,
    pub offsets_ahead: u64,
    pub offsets_regressed: u64,
    pub metadata_mismatches: u64,
    /// The first problems found, described.
    pub problems: Vec<String>,
}

impl Tally {
    /// Whether nothing acknowledged was lost, duplicated or damaged.
    pub fn is_clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.corrupt == 0
            && self.shown_missing == 0
            && self.offsets_ahead == 0
            && self.offsets_regressed == 0
            && self.metadata_mismatches == 0
    }

    fn problem(&mut self, text: String) {
        if self.problems.len() < 20 {
            self.problems.push(text);
        }
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cycles:              {}", self.cycles)?;
        writeln!(f, "acked messages:      {}", self.acked_messages)?;
        writeln!(
            f,
            "unacked messages:    {} ({} stored, at most once)",
            self.unacked_messages, self.unacked_stored
        )?;
        writeln!(f, "shown to consumers:  {}", self.shown_messages)?;
        writeln!(f, "deleted by retention:{:>1} {}", "", self.retained)?;
        writeln!(
            f,
            "metadata changes:    {} acked, {} kills hit one in flight",
            self.metadata_changes, self.kills_mid_metadata
        )?;
        writeln!(f, "lost:                {}", self.lost)?;
        writeln!(f, "duplicated:          {}", self.duplicated)?;
        writeln!(f, "corrupt:             {}", self.corrupt)?;
        writeln!(f, "shown then missing:  {}", self.shown_missing)?;
        writeln!(f, "offsets ahead:       {}", self.offsets_ahead)?;
        writeln!(f, "offsets regressed:   {}", self.offsets_regressed)?;
        write!(f, "metadata mismatches: {}", self.metadata_mismatches)?;
        for problem in &self.problems {
            write!(f, "\n  problem: {problem}")?;
        }
        Ok(())
    }
}

/// splitmix64: small, seedable, good enough to pick delays and sizes.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

const STREAM: &str = "crash";
const SEGMENT_SIZE: &str = "16 KiB";
const TOPIC_MAX_SIZE: u64 = 512 << 10;

/// The id of message `sequence` of series `tag`.
pub fn message_id(tag: u32, sequence: u64) -> u128 {
    ((tag as u128 + 1) << 64) | sequence as u128
}

/// The payload of message `sequence` of series `tag`: 16..=400 bytes.
pub fn payload(tag: u32, sequence: u64) -> Bytes {
    let mut rng = Rng::new((u64::from(tag) << 48) ^ sequence);
    let len = rng.range(16, 400) as usize;
    let mut bytes = format!("{tag}:{sequence}:").into_bytes();
    while bytes.len() < len {
        bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    bytes.truncate(len);
    Bytes::from(bytes)
}

fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// A client on its own connection, logged in as root, that never re-sends a request the dead
/// server may or may not have executed: the official SDK re-sends a request after it
/// reconnected, so reconnection gets zero retries, and since the server is started again only
/// after every worker has stopped, a reconnection attempt always meets a dead server.
/// `token` logs in with root's personal access token (SHA-256, fast) instead of the password
/// (Argon2id: seconds per login in a debug build on a loaded machine).
pub async fn client_without_reconnection(
    address: &str,
    token: Option<&str>,
) -> Result<IggyClient, IggyError> {
    let credentials = match token {
        Some(token) => token.to_string(),
        None => format!("{ROOT_USERNAME}:{ROOT_PASSWORD}"),
    };
    let connection_string = format!(
        "iggy://{credentials}@{address}?nodelay=true&reconnection_retries=0&reconnection_interval=100ms&reestablish_after=1ms"
    );
    // Connecting is retried here (nothing was sent yet), a few times, for a server that is
    // busy starting.
    let mut attempts = 0;
    loop {
        let client = IggyClient::from_connection_string(&connection_string)?;
        match client.connect().await {
            Ok(()) => return Ok(client),
            Err(error) if attempts >= 20 => return Err(error),
            Err(error) => {
                if std::env::var_os("CRASH_DEBUG").is_some() {
                    eprintln!("connect attempt {attempts}: {error}");
                }
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn ident(value: &str) -> Identifier {
    Identifier::named(value).expect("identifier")
}

fn numeric(value: u32) -> Identifier {
    Identifier::numeric(value).expect("identifier")
}

/// What the harness knows about one partition.
#[derive(Debug, Default)]
struct PartitionModel {
    topic: String,
    partition: u32,
    tag: u32,
    consumer_id: u32,
    next_sequence: u64,
    /// The partition as read at the last check: (offset, sequence), dense offsets.
    known: Vec<(u64, u64)>,
    /// The first offset and the end offset at the last check.
    first: u64,
    end: u64,
    /// This cycle's acknowledged and unacknowledged messages: sequence -> checksum.
    acked: BTreeMap<u64, u64>,
    unacked: BTreeMap<u64, u64>,
    /// The consumer's stored offset as found at the last check, and this cycle's record.
    stored_offset: Option<u64>,
    shown: Vec<(u64, u128)>,
    store_acked: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Stream,
    Topic,
    User,
    Group,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Present,
    Absent,
    /// A change was in flight at the kill.
    Either,
}

struct ProducerRecord {
    acked: Vec<(u64, u64)>,
    unacked: Vec<(u64, u64)>,
    next_sequence: u64,
}

struct ConsumerRecord {
    shown: Vec<(u64, u128)>,
    store_acked: Option<u64>,
}

struct MetadataRecord {
    /// (kind, name, present afterwards, acknowledged)
    changes: Vec<(Kind, String, bool, bool)>,
    next_name: u64,
}

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
