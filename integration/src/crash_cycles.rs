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

use crate::server::{ROOT_PASSWORD, ROOT_USERNAME, ServerOptions, TestServer};
use bytes::Bytes;
use iggy::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

async fn produce(
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

async fn consume(
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

async fn churn_metadata(
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

/// Reads a whole partition: (offset, id, payload) in order, dense from the first stored
/// offset. A read that a concurrent retention cut (a gap appears) is started again.
async fn read_partition(
    client: &IggyClient,
    topic: &str,
    partition: u32,
) -> Result<Vec<(u64, u128, Bytes)>, String> {
    let (stream, topic_id) = (ident(STREAM), ident(topic));
    let consumer = Consumer::new(numeric(9_999));
    let mut last_problem = String::new();
    for _attempt in 0..3 {
        let mut messages: Vec<(u64, u128, Bytes)> = Vec::new();
        let mut offset = 0;
        let mut gap = false;
        loop {
            let polled = client
                .poll_messages(
                    &stream,
                    &topic_id,
                    Some(partition),
                    &consumer,
                    &PollingStrategy::offset(offset),
                    1000,
                    false,
                )
                .await
                .map_err(|error| format!("poll {topic}/{partition} at {offset}: {error}"))?;
            if polled.messages.is_empty() {
                break;
            }
            for message in polled.messages {
                if let Some((previous, _, _)) = messages.last()
                    && message.header.offset != previous + 1
                {
                    gap = true;
                    last_problem = format!(
                        "{topic}/{partition}: offset {} follows {previous}",
                        message.header.offset
                    );
                }
                offset = message.header.offset + 1;
                messages.push((message.header.offset, message.header.id, message.payload));
            }
            if gap {
                break;
            }
        }
        if !gap {
            return Ok(messages);
        }
    }
    Err(last_problem)
}

async fn check_partition(
    client: &IggyClient,
    model: &mut PartitionModel,
    cycle: u64,
    tally: &mut Tally,
) {
    let name = format!("cycle {cycle}, {}/{}", model.topic, model.partition);
    let stored = match read_partition(client, &model.topic, model.partition).await {
        Ok(stored) => stored,
        Err(problem) => {
            tally.corrupt += 1;
            tally.problem(format!("{name}: {problem}"));
            return;
        }
    };
    tally.acked_messages += model.acked.len() as u64;
    tally.unacked_messages += model.unacked.len() as u64;
    tally.shown_messages += model.shown.len() as u64;
    let first = stored.first().map_or(model.end, |(offset, _, _)| *offset);
    let end = stored.last().map_or(first, |(offset, _, _)| offset + 1);
    // Sequence at each stored offset; checks ids, payloads and order.
    let mut at_offset: HashMap<u64, u64> = HashMap::with_capacity(stored.len());
    let mut seen: HashMap<u64, u64> = HashMap::with_capacity(stored.len());
    let mut previous_sequence: Option<u64> = None;
    let mut unacked_stored = 0;
    for (offset, id, payload) in &stored {
        let tag = ((id >> 64) as u32).wrapping_sub(1);
        let sequence = *id as u64;
        if tag != model.tag || payload.as_ref() != self::payload(tag, sequence).as_ref() {
            tally.corrupt += 1;
            tally.problem(format!(
                "{name}: offset {offset} holds id {id:#x} with a payload of {} bytes that does not match",
                payload.len()
            ));
            continue;
        }
        if let Some(previous) = seen.insert(sequence, *offset) {
            tally.duplicated += 1;
            tally.problem(format!(
                "{name}: sequence {sequence} stored at offsets {previous} and {offset}"
            ));
        } else if previous_sequence.is_some_and(|previous| sequence < previous) {
            tally.corrupt += 1;
            tally.problem(format!(
                "{name}: sequence {sequence} at offset {offset} comes after a later one"
            ));
        }
        previous_sequence = Some(sequence);
        at_offset.insert(*offset, sequence);
        if *offset >= model.end {
            if let Some(expected) = model.acked.get(&sequence) {
                if *expected != checksum(payload) {
                    tally.corrupt += 1;
                }
            } else if model.unacked.contains_key(&sequence) {
                unacked_stored += 1;
            } else {
                tally.corrupt += 1;
                tally.problem(format!(
                    "{name}: offset {offset} holds sequence {sequence}, which was not sent this cycle"
                ));
            }
        }
    }
    tally.unacked_stored += unacked_stored;
    // Messages found at earlier checks.
    for &(offset, sequence) in &model.known {
        if offset < first {
            tally.retained += 1;
            continue;
        }
        match at_offset.get(&offset) {
            Some(&found) if found == sequence => {}
            Some(&found) => {
                tally.corrupt += 1;
                tally.problem(format!(
                    "{name}: offset {offset} held sequence {sequence} and now holds {found}"
                ));
            }
            None => {
                tally.lost += 1;
                tally.problem(format!(
                    "{name}: offset {offset} (sequence {sequence}, stored before) is missing"
                ));
            }
        }
    }
    // Messages acknowledged this cycle. Those before the first stored message can only have
    // been deleted by the retention, and only as many as offsets it deleted past the old end.
    let first_sequence = stored
        .first()
        .map(|(_, id, _)| *id as u64)
        .unwrap_or(u64::MAX);
    let mut retention_allowance = first.saturating_sub(model.end);
    for &sequence in model.acked.keys() {
        if seen.contains_key(&sequence) {
            continue;
        }
        if sequence < first_sequence && retention_allowance > 0 {
            retention_allowance -= 1;
            tally.retained += 1;
            continue;
        }
        tally.lost += 1;
        tally.problem(format!(
            "{name}: acknowledged sequence {sequence} is missing (stored offsets {first}..{end})"
        ));
    }
    // What the consumer was shown.
    for &(offset, id) in &model.shown {
        if offset < first {
            continue;
        }
        if at_offset
            .get(&offset)
            .map(|&sequence| message_id(model.tag, sequence))
            != Some(id)
        {
            tally.shown_missing += 1;
            tally.problem(format!(
                "{name}: the consumer was shown id {id:#x} at offset {offset}, now gone"
            ));
        }
    }
    // The consumer's stored offset.
    let consumer = Consumer::new(numeric(model.consumer_id));
    let offset_info = client
        .get_consumer_offset(
            &consumer,
            &ident(STREAM),
            &ident(&model.topic),
            Some(model.partition),
        )
        .await;
    let stored_offset = match offset_info {
        Ok(info) => info.map(|info| info.stored_offset),
        Err(error) => {
            tally.offsets_ahead += 1;
            tally.problem(format!("{name}: get_consumer_offset failed: {error}"));
            None
        }
    };
    if let Some(stored_offset) = stored_offset
        && (stored.is_empty() || stored_offset >= end)
    {
        tally.offsets_ahead += 1;
        tally.problem(format!(
            "{name}: stored consumer offset {stored_offset} is past the data (end {end})"
        ));
    }
    let floor = model.store_acked.or(model.stored_offset);
    if let Some(floor) = floor
        && stored_offset.is_none_or(|stored| stored < floor)
    {
        tally.offsets_regressed += 1;
        tally.problem(format!(
            "{name}: stored consumer offset {stored_offset:?} is below the acknowledged {floor}"
        ));
    }
    model.known = stored
        .iter()
        .map(|(offset, id, _)| (*offset, *id as u64))
        .collect();
    model.first = first;
    model.end = end;
    model.stored_offset = stored_offset;
    model.acked.clear();
    model.unacked.clear();
    model.shown.clear();
    model.store_acked = None;
}

async fn check_metadata(
    client: &IggyClient,
    topics: &[&str],
    expected: &mut BTreeMap<(Kind, String), Expect>,
    cycle: u64,
    tally: &mut Tally,
) {
    let mut actual: Vec<(Kind, String)> = Vec::new();
    match client.get_streams().await {
        Ok(streams) => actual.extend(
            streams
                .into_iter()
                .filter(|stream| stream.name != STREAM)
                .map(|stream| (Kind::Stream, stream.name)),
        ),
        Err(error) => tally.problem(format!("cycle {cycle}: get_streams: {error}")),
    }
    match client.get_topics(&ident(STREAM)).await {
        Ok(found) => {
            for topic in topics {
                if !found.iter().any(|t| t.name == *topic) {
                    tally.metadata_mismatches += 1;
                    tally.problem(format!("cycle {cycle}: topic {topic} is missing"));
                }
            }
            actual.extend(
                found
                    .into_iter()
                    .filter(|topic| !topics.contains(&topic.name.as_str()))
                    .map(|topic| (Kind::Topic, topic.name)),
            )
        }
        Err(error) => tally.problem(format!("cycle {cycle}: get_topics: {error}")),
    }
    match client.get_users().await {
        Ok(users) => actual.extend(
            users
                .into_iter()
                .filter(|user| user.username != ROOT_USERNAME)
                .map(|user| (Kind::User, user.username)),
        ),
        Err(error) => tally.problem(format!("cycle {cycle}: get_users: {error}")),
    }
    match client
        .get_consumer_groups(&ident(STREAM), &ident(topics[0]))
        .await
    {
        Ok(groups) => actual.extend(groups.into_iter().map(|group| (Kind::Group, group.name))),
        Err(error) => tally.problem(format!("cycle {cycle}: get_consumer_groups: {error}")),
    }
    for key in &actual {
        match expected.get(key) {
            Some(Expect::Present) | Some(Expect::Either) => {}
            Some(Expect::Absent) | None => {
                tally.metadata_mismatches += 1;
                tally.problem(format!(
                    "cycle {cycle}: {:?} {:?} exists but its deletion was acknowledged (or it was never created)",
                    key.0, key.1
                ));
            }
        }
    }
    for (key, expect) in expected.iter_mut() {
        let exists = actual.contains(key);
        match *expect {
            Expect::Present if !exists => {
                tally.metadata_mismatches += 1;
                tally.problem(format!(
                    "cycle {cycle}: {:?} {:?} was created (acknowledged) but is missing",
                    key.0, key.1
                ));
            }
            Expect::Either => {
                *expect = if exists {
                    Expect::Present
                } else {
                    Expect::Absent
                };
            }
            _ => {}
        }
    }
    // Absent entries need no further tracking.
    expected.retain(|_, expect| *expect != Expect::Absent);
}
