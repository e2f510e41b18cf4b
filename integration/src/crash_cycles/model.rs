//! What a crash-cycle run is configured with, counts and remembers: the configuration, the
//! tally of problems, the seeded RNG, the numbered messages and the records the workers keep.

use crate::server::{ROOT_PASSWORD, ROOT_USERNAME};
use bytes::Bytes;
use iggy::prelude::*;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

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

    pub(super) fn problem(&mut self, text: String) {
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

pub(super) const STREAM: &str = "crash";
pub(super) const SEGMENT_SIZE: &str = "16 KiB";
pub(super) const TOPIC_MAX_SIZE: u64 = 512 << 10;

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

pub(super) fn checksum(bytes: &[u8]) -> u64 {
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

pub(super) fn ident(value: &str) -> Identifier {
    Identifier::named(value).expect("identifier")
}

pub(super) fn numeric(value: u32) -> Identifier {
    Identifier::numeric(value).expect("identifier")
}

/// What the harness knows about one partition.
#[derive(Debug, Default)]
pub(super) struct PartitionModel {
    pub(super) topic: String,
    pub(super) partition: u32,
    pub(super) tag: u32,
    pub(super) consumer_id: u32,
    pub(super) next_sequence: u64,
    /// The partition as read at the last check: (offset, sequence), dense offsets.
    pub(super) known: Vec<(u64, u64)>,
    /// The first offset and the end offset at the last check.
    pub(super) first: u64,
    pub(super) end: u64,
    /// This cycle's acknowledged and unacknowledged messages: sequence -> checksum.
    pub(super) acked: BTreeMap<u64, u64>,
    pub(super) unacked: BTreeMap<u64, u64>,
    /// The consumer's stored offset as found at the last check, and this cycle's record.
    pub(super) stored_offset: Option<u64>,
    pub(super) shown: Vec<(u64, u128)>,
    pub(super) store_acked: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Kind {
    Stream,
    Topic,
    User,
    Group,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    Present,
    Absent,
    /// A change was in flight at the kill.
    Either,
}

pub(super) struct ProducerRecord {
    pub(super) acked: Vec<(u64, u64)>,
    pub(super) unacked: Vec<(u64, u64)>,
    pub(super) next_sequence: u64,
}

pub(super) struct ConsumerRecord {
    pub(super) shown: Vec<(u64, u128)>,
    pub(super) store_acked: Option<u64>,
}

pub(super) struct MetadataRecord {
    /// (kind, name, present afterwards, acknowledged)
    pub(super) changes: Vec<(Kind, String, bool, bool)>,
    pub(super) next_name: u64,
}
