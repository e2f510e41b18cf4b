//! The metadata group's Raft log and vote, in `<system.path>/cluster/`.
//!
//! ```text
//! raft.log    records back to back: length u32 | checksum u64 (XXH3-64 of the body) | body,
//!             the body a JSON `Record`: an entry, or the id of the last purged entry
//! vote        the current vote, JSON, replaced atomically (temporary file, fsync, rename)
//! ```
//!
//! Appends are fdatasynced before openraft is told they are durable, so a vote or an
//! acknowledgement never covers an entry a crash can take away. Loading stops at the first short
//! or corrupt record and cuts the file there (only an append in flight can be torn). Truncation
//! and purging rewrite the whole file: metadata changes are few and small.
//! All file calls block: they run on the cluster thread, never on a shard.
#![allow(
    clippy::disallowed_methods,
    reason = "the cluster thread's own files: it is not a shard, and waits on them by design"
)]

use super::types::{Entry, LogId, StorageError, TypeConfig, Vote};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{AnyError, OptionalSend, StorageIOError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Serialize, Deserialize)]
enum Record {
    Entry(Entry),
    Purged(LogId),
}

struct Inner {
    dir: PathBuf,
    file: File,
    entries: BTreeMap<u64, Entry>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
}

/// The log store; clones share it (openraft reads through a clone while it appends).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
}

fn encode(record: &Record, out: &mut Vec<u8>) {
    let body = serde_json::to_vec(record).expect("a Raft record serializes");
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    out.extend_from_slice(&body);
}

/// The records of `bytes` up to the first short or corrupt one, and where that one starts.
fn decode_all(bytes: &[u8]) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= 12 {
        let length = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let checksum = u64::from_le_bytes(bytes[at + 4..at + 12].try_into().expect("8 bytes"));
        let Some(body) = bytes.get(at + 12..at + 12 + length) else {
            break;
        };
        if xxhash_rust::xxh3::xxh3_64(body) != checksum {
            break;
        }
        let Ok(record) = serde_json::from_slice(body) else {
            break;
        };
        records.push(record);
        at += 12 + length;
    }
    (records, at)
}

fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `bytes` as `dir/name` atomically: a crash leaves the old file or the new one.
fn replace(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let temporary = dir.join(format!("{name}.tmp"));
    let mut file = File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, dir.join(name))?;
    sync_directory(dir)
}

impl LogStore {
    /// Opens (or creates) the log in `dir`, cutting a torn tail.
    pub fn open(dir: &Path) -> io::Result<LogStore> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("raft.log");
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (records, valid) = decode_all(&bytes);
        if valid < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                cut_bytes = bytes.len() - valid,
                "the Raft log ends with a torn record; cutting it"
            );
            file.set_len(valid as u64)?;
            file.sync_all()?;
        }
        let mut entries = BTreeMap::new();
        let mut last_purged = None;
        for record in records {
            match record {
                Record::Entry(entry) => {
                    // A later record for an index replaces the earlier one and everything
                    // after it: that is what a truncation followed by appends looks like.
                    entries.split_off(&entry.log_id.index);
                    entries.insert(entry.log_id.index, entry);
                }
                Record::Purged(log_id) => {
                    entries = entries.split_off(&(log_id.index + 1));
                    last_purged = Some(log_id);
                }
            }
        }
        let vote = match std::fs::read(dir.join("vote")) {
            Ok(bytes) => Some(serde_json::from_slice(&bytes).map_err(io::Error::other)?),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(error),
        };
        Ok(LogStore {
            inner: Arc::new(Mutex::new(Inner {
                dir: dir.to_path_buf(),
                file,
                entries,
                last_purged,
                vote,
            })),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// True when this node has never voted nor logged anything: a first start.
    pub fn is_pristine(&self) -> bool {
        let inner = self.lock();
        inner.vote.is_none() && inner.entries.is_empty() && inner.last_purged.is_none()
    }
}

impl Inner {
    /// Rewrites the whole file from memory (after a truncation or a purge).
    fn rewrite(&mut self) -> io::Result<()> {
        let mut bytes = Vec::new();
        if let Some(purged) = self.last_purged {
            encode(&Record::Purged(purged), &mut bytes);
        }
        for entry in self.entries.values() {
            encode(&Record::Entry(entry.clone()), &mut bytes);
        }
        replace(&self.dir, "raft.log", &bytes)?;
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(self.dir.join("raft.log"))?;
        Ok(())
    }
}

fn write_error(error: io::Error) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&error)).into()
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(self
            .lock()
            .entries
            .range(range)
            .map(|(_, entry)| entry.clone())
            .collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let inner = self.lock();
        let last = inner
            .entries
            .values()
            .next_back()
            .map(|entry| entry.log_id)
            .or(inner.last_purged);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut inner = self.lock();
        let bytes = serde_json::to_vec(vote).expect("a vote serializes");
        replace(&inner.dir, "vote", &bytes)
            .map_err(|error| StorageIOError::write_vote(AnyError::new(&error)))?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.lock().vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut inner = self.lock();
        let mut bytes = Vec::new();
        let mut appended = Vec::new();
        for entry in entries {
            encode(&Record::Entry(entry.clone()), &mut bytes);
            appended.push(entry);
        }
        let written = inner
            .file
            .write_all(&bytes)
            .and_then(|()| inner.file.sync_data());
        match written {
            Ok(()) => {
                for entry in appended {
                    inner.entries.insert(entry.log_id.index, entry);
                }
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(error) => {
                let kind = error.kind();
                let text = error.to_string();
                callback.log_io_completed(Err(io::Error::new(kind, text)));
                Err(write_error(error))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut inner = self.lock();
        inner.entries.split_off(&log_id.index);
        inner.rewrite().map_err(write_error)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut inner = self.lock();
        inner.entries = inner.entries.split_off(&(log_id.index + 1));
        inner.last_purged = Some(log_id);
        inner.rewrite().map_err(write_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::types::Command;
    use openraft::{CommittedLeaderId, EntryPayload};

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 0), index),
            payload: EntryPayload::Normal(Command {
                op: vec![index as u8],
            }),
        }
    }

    fn indexes(store: &LogStore) -> Vec<(u64, u64)> {
        store
            .lock()
            .entries
            .values()
            .map(|entry| (entry.log_id.leader_id.term, entry.log_id.index))
            .collect()
    }

    fn push(store: &LogStore, entries: Vec<Entry>) {
        let mut inner = store.lock();
        let mut bytes = Vec::new();
        for entry in entries {
            encode(&Record::Entry(entry.clone()), &mut bytes);
            inner.entries.insert(entry.log_id.index, entry);
        }
        inner.file.write_all(&bytes).unwrap();
    }

    #[test]
    fn entries_truncation_purge_and_vote_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        assert!(store.is_pristine());
        push(&store, (1..=5).map(|index| entry(1, index)).collect());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut handle = store.clone();
        runtime.block_on(async {
            handle
                .truncate(LogId::new(CommittedLeaderId::new(1, 0), 4))
                .await
                .unwrap();
            handle
                .purge(LogId::new(CommittedLeaderId::new(1, 0), 1))
                .await
                .unwrap();
            handle.save_vote(&Vote::new(3, 2)).await.unwrap();
        });
        push(&store, vec![entry(2, 4)]);
        drop(store);
        let reopened = LogStore::open(dir.path()).unwrap();
        assert_eq!(indexes(&reopened), [(1, 2), (1, 3), (2, 4)]);
        assert_eq!(reopened.lock().last_purged.unwrap().index, 1);
        assert_eq!(reopened.lock().vote, Some(Vote::new(3, 2)));
        assert!(!reopened.is_pristine());
    }

    #[test]
    fn a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        push(&store, vec![entry(1, 1), entry(1, 2)]);
        drop(store);
        let path = dir.path().join("raft.log");
        let length = std::fs::metadata(&path).unwrap().len();
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(length - 3).unwrap();
        let reopened = LogStore::open(dir.path()).unwrap();
        assert_eq!(indexes(&reopened), [(1, 1)]);
        push(&reopened, vec![entry(1, 2)]);
        drop(reopened);
        assert_eq!(
            indexes(&LogStore::open(dir.path()).unwrap()),
            [(1, 1), (1, 2)]
        );
    }
}
