//! The metadata log: every acknowledged metadata change, checksummed and fsynced before the
//! change is published or acknowledged, replayed at boot, and compacted into a snapshot once it
//! grows past a threshold.
//!
//! ```text
//! state/metadata.log        records back to back:
//!   length   u32   payload size
//!   sequence u64   1, 2, 3, ... without gaps
//!   checksum u64   XXH3-64 over the sequence bytes and the payload
//!   payload        one encoded MetadataOp (codec.rs)
//! state/metadata.snapshot   magic "RILLMETA", version u32 (1), covered_sequence u64,
//!                           checksum u64 (XXH3-64 of the records), then records as above
//!                           rebuilding the whole state (their sequence fields are 0..n)
//! ```
//! With `[system.encryption]` on, each payload is sealed (`encryption::RecordCipher`: nonce,
//! AES-256-GCM ciphertext, tag), bound to where it sits (`Place`: a log record to its sequence,
//! a snapshot record to its index and the snapshot's covered_sequence, which authenticates that
//! header field too), and the checksum covers the sealed bytes.
//! A snapshot is written to a temporary file, fsynced and renamed over the old one, so it is
//! either the old or the new one. Log records with a sequence at or below the snapshot's
//! `covered_sequence` are skipped at replay, so a crash between the rename and the log's
//! truncation replays nothing twice. Only the log's tail can be torn (each append is fsynced
//! before the next starts): replay stops at the first record that is short or fails its
//! checksum, and the file is truncated there.

use super::codec;
use super::model::{Metadata, MetadataOp};
use crate::encryption::RecordCipher;
use compio::io::AsyncWriteAtExt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

const RECORD_HEADER_SIZE: usize = 4 + 8 + 8;
const SNAPSHOT_MAGIC: &[u8; 8] = b"RILLMETA";
const SNAPSHOT_VERSION: u32 = 1;
const SNAPSHOT_HEADER_SIZE: usize = 8 + 4 + 8 + 8;
/// A single op is small; anything larger is corruption, not data.
const MAX_RECORD_BYTES: usize = 1 << 20;

pub const LOG_FILE: &str = "metadata.log";
pub const SNAPSHOT_FILE: &str = "metadata.snapshot";

fn record_checksum(sequence: u64, payload: &[u8]) -> u64 {
    rill_core::hash::xxh3_64_of(&[&sequence.to_le_bytes(), payload])
}

/// Where a record sits, which a sealed record is bound to: a log record to its sequence, a
/// snapshot record to its index and to the sequence its snapshot covers. A record therefore
/// cannot be moved from the log into a snapshot, or from one snapshot into another.
#[derive(Debug, Clone, Copy)]
enum Place {
    Log,
    Snapshot { covered_sequence: u64 },
}

impl Place {
    fn aad(self, sequence: u64) -> Vec<u8> {
        let mut aad = Vec::with_capacity(24);
        match self {
            Place::Log => aad.extend_from_slice(b"log\0"),
            Place::Snapshot { covered_sequence } => {
                aad.extend_from_slice(b"snapshot");
                aad.extend_from_slice(&covered_sequence.to_le_bytes());
            }
        }
        aad.extend_from_slice(&sequence.to_le_bytes());
        aad
    }
}

fn put_record(
    out: &mut Vec<u8>,
    sequence: u64,
    op: &MetadataOp,
    sealing: Option<(&RecordCipher, Place)>,
) {
    let encoded = codec::encode(op);
    let payload = match sealing {
        Some((cipher, place)) => cipher.seal(&place.aad(sequence), &encoded),
        None => encoded,
    };
    let payload = &payload[..];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&sequence.to_le_bytes());
    out.extend_from_slice(&record_checksum(sequence, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Reads records until the bytes end or stop being valid (a torn tail). Returns (sequence, op,
/// end position) triples and the length of the valid prefix. A record whose checksum holds but
/// whose payload cannot be opened or decoded is not a torn write: it was written under another
/// key or encryption setting, or by a newer version. That is an error, never a truncation.
#[allow(clippy::type_complexity)]
fn read_records(
    bytes: &[u8],
    sealing: Option<(&RecordCipher, Place)>,
) -> Result<(Vec<(u64, MetadataOp, usize)>, usize), String> {
    let mut records = Vec::new();
    let mut position = 0;
    while bytes.len() - position >= RECORD_HEADER_SIZE {
        let header = &bytes[position..position + RECORD_HEADER_SIZE];
        let length = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
        let sequence = u64::from_le_bytes(header[4..12].try_into().expect("8 bytes"));
        let checksum = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
        let start = position + RECORD_HEADER_SIZE;
        if length > MAX_RECORD_BYTES || bytes.len() - start < length {
            break;
        }
        let payload = &bytes[start..start + length];
        if record_checksum(sequence, payload) != checksum {
            break;
        }
        let opened;
        let plain = match sealing {
            Some((cipher, place)) => {
                opened = cipher.open(&place.aad(sequence), payload).ok_or_else(|| {
                    format!("record {sequence} cannot be decrypted with the configured key")
                })?;
                &opened[..]
            }
            None => payload,
        };
        let op = codec::decode(plain).map_err(|_| {
            format!(
                "record {sequence} cannot be decoded (written with encryption at rest on, or by \
                 a newer version)"
            )
        })?;
        position = start + length;
        records.push((sequence, op, position));
    }
    Ok((records, position))
}

/// What boot-time recovery found.
#[derive(Debug)]
pub struct Recovered {
    pub metadata: Metadata,
    pub log_len: u64,
    pub next_sequence: u64,
    pub replayed_records: usize,
    pub truncated_bytes: u64,
}

#[derive(Debug)]
pub struct MetadataLogError(pub String);

impl std::fmt::Display for MetadataLogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MetadataLogError {}

fn io_error(context: &str, path: &Path, error: io::Error) -> MetadataLogError {
    MetadataLogError(format!("{context} {}: {error}", path.display()))
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Rebuilds the metadata from the snapshot and log in `dir` (created if missing), truncating a
/// torn log tail. Runs at boot, before the shards start.
pub fn recover(dir: &Path, cipher: Option<&RecordCipher>) -> Result<Recovered, MetadataLogError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error("cannot create", dir, e))?;
    let mut metadata = Metadata::default();
    let mut covered_sequence = 0;
    let snapshot_path = dir.join(SNAPSHOT_FILE);
    match std::fs::read(&snapshot_path) {
        Ok(bytes) => {
            if bytes.len() < SNAPSHOT_HEADER_SIZE || &bytes[0..8] != SNAPSHOT_MAGIC {
                return Err(MetadataLogError(format!(
                    "{} is not a metadata snapshot",
                    snapshot_path.display()
                )));
            }
            let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
            if version != SNAPSHOT_VERSION {
                return Err(MetadataLogError(format!(
                    "{}: unsupported snapshot version {version}",
                    snapshot_path.display()
                )));
            }
            covered_sequence = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
            let checksum = u64::from_le_bytes(bytes[20..28].try_into().expect("8 bytes"));
            let body = &bytes[SNAPSHOT_HEADER_SIZE..];
            let place = Place::Snapshot { covered_sequence };
            let (records, valid) = read_records(body, cipher.map(|cipher| (cipher, place)))
                .map_err(|error| {
                    MetadataLogError(format!("{}: {error}", snapshot_path.display()))
                })?;
            if rill_core::hash::xxh3_64(body) != checksum || valid != body.len() {
                return Err(MetadataLogError(format!(
                    "{} is corrupted (checksum mismatch); restore it from a backup or remove it to start from the log alone",
                    snapshot_path.display()
                )));
            }
            for (_, op, _) in records {
                metadata.apply(&op);
            }
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error("cannot read", &snapshot_path, error)),
    }

    let log_path = dir.join(LOG_FILE);
    let bytes = match std::fs::read(&log_path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(io_error("cannot read", &log_path, error)),
    };
    let (records, valid) = read_records(&bytes, cipher.map(|cipher| (cipher, Place::Log)))
        .map_err(|error| MetadataLogError(format!("{}: {error}", log_path.display())))?;
    let mut next_sequence = covered_sequence + 1;
    let mut replayed_records = 0;
    let mut valid_len = 0;
    for (sequence, op, position) in records {
        if sequence <= covered_sequence {
            valid_len = position;
            continue;
        }
        if sequence != next_sequence {
            // A gap means the rest does not follow from what we have: keep the prefix.
            break;
        }
        metadata.apply(&op);
        next_sequence += 1;
        replayed_records += 1;
        valid_len = position;
    }
    debug_assert!(valid_len <= valid);
    let truncated_bytes = (bytes.len() - valid_len) as u64;
    if truncated_bytes > 0 {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_path)
            .map_err(|e| io_error("cannot open", &log_path, e))?;
        file.set_len(valid_len as u64)
            .map_err(|e| io_error("cannot truncate", &log_path, e))?;
        file.sync_all()
            .map_err(|e| io_error("cannot sync", &log_path, e))?;
    }
    Ok(Recovered {
        metadata,
        log_len: valid_len as u64,
        next_sequence,
        replayed_records,
        truncated_bytes,
    })
}

/// The open log, owned by shard 0's control lane.
pub struct MetadataLog {
    dir: PathBuf,
    file: compio::fs::File,
    len: u64,
    next_sequence: u64,
    snapshot_threshold: u64,
    scratch: Vec<u8>,
    cipher: Option<RecordCipher>,
}

impl MetadataLog {
    pub async fn open(
        dir: &Path,
        recovered: &Recovered,
        snapshot_threshold: u64,
        cipher: Option<RecordCipher>,
    ) -> io::Result<Self> {
        let file = compio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .open(dir.join(LOG_FILE))
            .await?;
        Ok(MetadataLog {
            dir: dir.to_path_buf(),
            file,
            len: recovered.log_len,
            next_sequence: recovered.next_sequence,
            snapshot_threshold,
            scratch: Vec::with_capacity(256),
            cipher,
        })
    }

    /// Appends one op and makes it durable before returning.
    pub async fn append(&mut self, op: &MetadataOp) -> io::Result<()> {
        let mut record = std::mem::take(&mut self.scratch);
        record.clear();
        let sealing = self.cipher.as_ref().map(|cipher| (cipher, Place::Log));
        put_record(&mut record, self.next_sequence, op, sealing);
        let record_len = record.len() as u64;
        let mut file = &self.file;
        let compio::BufResult(result, record) = file.write_all_at(record, self.len).await;
        self.scratch = record;
        result?;
        self.file.sync_data().await?;
        self.len += record_len;
        self.next_sequence += 1;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn needs_snapshot(&self) -> bool {
        self.len >= self.snapshot_threshold
    }

    /// Writes `state` as the new snapshot and empties the log. The writes, renames and fsyncs
    /// run on the runtime's blocking pool: the shard's event loop (shard 0, which also serves
    /// connections and partitions) never waits on the disk for them.
    pub async fn snapshot(&mut self, state: &Metadata) -> io::Result<()> {
        let mut body = Vec::new();
        let place = Place::Snapshot {
            covered_sequence: self.next_sequence - 1,
        };
        let sealing = self.cipher.as_ref().map(|cipher| (cipher, place));
        for (index, op) in state.to_ops().iter().enumerate() {
            put_record(&mut body, index as u64, op, sealing);
        }
        let mut bytes = Vec::with_capacity(SNAPSHOT_HEADER_SIZE + body.len());
        bytes.extend_from_slice(SNAPSHOT_MAGIC);
        bytes.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(self.next_sequence - 1).to_le_bytes());
        bytes.extend_from_slice(&rill_core::hash::xxh3_64(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let dir = self.dir.clone();
        compio::runtime::spawn_blocking(move || write_snapshot(&dir, &bytes))
            .await
            .map_err(|_| io::Error::other("the snapshot writer panicked"))??;
        self.len = 0;
        Ok(())
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "runs on the blocking pool (MetadataLog::snapshot)"
)]
/// Replaces the snapshot with `bytes` (temporary file, fsync, rename, directory fsync), then
/// empties the log the snapshot now covers. Blocking: runs on the blocking pool.
fn write_snapshot(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let temporary = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join(SNAPSHOT_FILE))?;
    std::fs::File::open(dir)?.sync_all()?;
    // Records up to the snapshot's sequence are covered by it; the log can go.
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(LOG_FILE))?;
    log.set_len(0)?;
    log.sync_all()
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: u32) -> MetadataOp {
        MetadataOp::CreateStream {
            id,
            name: format!("s{id}"),
            created_at: u64::from(id),
        }
    }

    #[test]
    fn appended_ops_are_replayed_and_a_torn_tail_is_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let recovered = recover(dir.path(), None).unwrap();
        assert_eq!(recovered.next_sequence, 1);
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let mut log = MetadataLog::open(dir.path(), &recovered, 1 << 20, None)
                .await
                .unwrap();
            for id in 0..3 {
                log.append(&op(id)).await.unwrap();
            }
        });
        let log_path = dir.path().join(LOG_FILE);
        let full_len = std::fs::metadata(&log_path).unwrap().len();
        // Tear the last record in half.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&log_path)
            .unwrap();
        file.set_len(full_len - 5).unwrap();
        let recovered = recover(dir.path(), None).unwrap();
        assert_eq!(recovered.metadata.streams.len(), 2);
        assert_eq!(recovered.replayed_records, 2);
        assert!(recovered.truncated_bytes > 0);
        assert_eq!(
            std::fs::metadata(&log_path).unwrap().len(),
            recovered.log_len
        );
        assert_eq!(recovered.next_sequence, 3);
    }

    #[test]
    fn corrupted_record_stops_replay_at_the_last_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let recovered = recover(dir.path(), None).unwrap();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let mut log = MetadataLog::open(dir.path(), &recovered, 1 << 20, None)
                .await
                .unwrap();
            log.append(&op(0)).await.unwrap();
            log.append(&op(1)).await.unwrap();
        });
        let log_path = dir.path().join(LOG_FILE);
        let mut bytes = std::fs::read(&log_path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&log_path, &bytes).unwrap();
        let recovered = recover(dir.path(), None).unwrap();
        assert_eq!(
            recovered
                .metadata
                .streams
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            [0]
        );
    }

    #[test]
    fn snapshot_then_more_ops_replays_everything_once() {
        let dir = tempfile::tempdir().unwrap();
        let recovered = recover(dir.path(), None).unwrap();
        let mut state = Metadata::default();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let mut log = MetadataLog::open(dir.path(), &recovered, 1, None)
                .await
                .unwrap();
            for id in 0..3 {
                log.append(&op(id)).await.unwrap();
                state.apply(&op(id));
            }
            assert!(log.needs_snapshot());
            log.snapshot(&state).await.unwrap();
            assert!(log.is_empty());
            log.append(&MetadataOp::DeleteStream { id: 1 })
                .await
                .unwrap();
            state.apply(&MetadataOp::DeleteStream { id: 1 });
        });
        let recovered = recover(dir.path(), None).unwrap();
        assert_eq!(recovered.metadata, state);
        assert_eq!(recovered.next_sequence, 5);
    }

    fn cipher(key: &str) -> RecordCipher {
        crate::encryption::MasterKey::from_base64(key)
            .unwrap()
            .metadata_log()
    }

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const OTHER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    #[test]
    fn an_encrypted_log_and_snapshot_replay_with_the_key_and_only_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let recovered = recover(dir.path(), Some(&cipher(KEY))).unwrap();
        let mut state = Metadata::default();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let mut log = MetadataLog::open(dir.path(), &recovered, 1, Some(cipher(KEY)))
                .await
                .unwrap();
            log.append(&op(0)).await.unwrap();
            state.apply(&op(0));
            log.snapshot(&state).await.unwrap();
            log.append(&op(1)).await.unwrap();
            state.apply(&op(1));
        });
        for file in [LOG_FILE, SNAPSHOT_FILE] {
            let bytes = std::fs::read(dir.path().join(file)).unwrap();
            assert!(!bytes.is_empty());
            assert!(
                !bytes
                    .windows(2)
                    .any(|window| window == b"s0" || window == b"s1")
            );
        }
        let log_len = std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len();
        let recovered = recover(dir.path(), Some(&cipher(KEY))).unwrap();
        assert_eq!(recovered.metadata, state);
        // Without the key, or with another, the start is refused and nothing is truncated.
        let error = recover(dir.path(), None).unwrap_err();
        assert!(error.0.contains("cannot be decoded"), "{error}");
        let error = recover(dir.path(), Some(&cipher(OTHER_KEY))).unwrap_err();
        assert!(error.0.contains("cannot be decrypted"), "{error}");
        assert_eq!(
            std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len(),
            log_len
        );
        // The snapshot's covered_sequence is authenticated by its records: changed by hand
        // (to skip log records), the snapshot no longer opens.
        let snapshot_path = dir.path().join(SNAPSHOT_FILE);
        let mut snapshot = std::fs::read(&snapshot_path).unwrap();
        snapshot[12] ^= 1;
        std::fs::write(&snapshot_path, &snapshot).unwrap();
        let error = recover(dir.path(), Some(&cipher(KEY))).unwrap_err();
        assert!(error.0.contains("cannot be decrypted"), "{error}");
    }
}
