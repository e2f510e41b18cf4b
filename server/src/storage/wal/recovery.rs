//! What the write-ahead logs hold at boot: every valid record of every log file, by partition
//! directory and incarnation, found before the shards start and read back by each partition
//! when it opens (`Partition::replay_logged`). The logs are not written again until every shard
//! has opened its partitions, so a record stays where the scan found it until it is replayed.

use super::record::{self, RecordHeader};
use crate::storage::error::{IoOperation, StorageError};
use crate::storage::pool::BLOCK_SIZE;
use bytes::Bytes;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The directory of a data directory's logs.
pub(crate) fn wal_dir(root: &Path) -> PathBuf {
    root.join("wal")
}

/// A valid record found at boot: in which file, where.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) path: PathBuf,
    pub(crate) position: u64,
    pub(crate) header: RecordHeader,
}

/// Records found at boot, taken by the partitions they belong to as they open.
#[derive(Debug, Default)]
pub struct WalRecovery {
    /// The data directory: records name partitions relative to it.
    root: PathBuf,
    records: Mutex<HashMap<(String, u64), Vec<Located>>>,
}

impl WalRecovery {
    /// Nothing to recover (tests, or a data directory without logs).
    pub fn empty(root: PathBuf) -> Arc<WalRecovery> {
        Arc::new(WalRecovery {
            root,
            records: Mutex::new(HashMap::new()),
        })
    }

    /// Scans every `*.wal` file of `<root>/wal`. Boot code: it runs before the shards.
    #[allow(
        clippy::disallowed_methods,
        reason = "boot, before the shards start: reads the write-ahead logs once"
    )]
    pub fn scan(root: &Path) -> io::Result<Arc<WalRecovery>> {
        let recovery = WalRecovery::empty(root.to_path_buf());
        let dir = wal_dir(root);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(recovery),
            Err(error) => return Err(error),
        };
        let mut found = 0usize;
        let mut map = HashMap::<(String, u64), Vec<Located>>::new();
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_none_or(|extension| extension != "wal") {
                continue;
            }
            for located in scan_file(&path)? {
                found += 1;
                map.entry((located.header.dir.clone(), located.header.incarnation))
                    .or_default()
                    .push(located);
            }
        }
        for records in map.values_mut() {
            records.sort_by_key(|located| located.header.first_offset);
        }
        if found > 0 {
            tracing::info!(
                records = found,
                partitions = map.len(),
                dir = %dir.display(),
                "write-ahead log records found; partitions apply what their segments lack as they open"
            );
        }
        *recovery
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = map;
        Ok(recovery)
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The records of the log in `dir` (relative to the data directory) with `incarnation`,
    /// by first offset; each is handed out once.
    pub(crate) fn take(&self, dir: &str, incarnation: u64) -> Vec<Located> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(dir.to_owned(), incarnation))
            .unwrap_or_default()
    }

    /// Drops what no partition took (deleted partitions, older incarnations).
    pub fn forget_the_rest(&self) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// Every valid record of one log file, wherever it lies: records are block-aligned, so each
/// block is a candidate header; a valid record is skipped whole, anything else block by block.
/// Read a chunk at a time, so a boot never holds a whole log in memory.
#[allow(clippy::disallowed_methods, reason = "boot, before the shards start")]
fn scan_file(path: &Path) -> io::Result<Vec<Located>> {
    use std::os::unix::fs::FileExt;
    const CHUNK: usize = 1 << 20;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut chunk = vec![0u8; CHUNK];
    let (mut chunk_start, mut chunk_len) = (0u64, 0usize);
    let mut found = Vec::new();
    let mut at = 0u64;
    while at + BLOCK_SIZE as u64 <= len {
        if at + BLOCK_SIZE as u64 > chunk_start + chunk_len as u64 {
            chunk_len = (len - at).min(CHUNK as u64) as usize;
            file.read_exact_at(&mut chunk[..chunk_len], at)?;
            chunk_start = at;
        }
        let within = (at - chunk_start) as usize;
        let Some(header) = record::decode_header(&chunk[within..within + BLOCK_SIZE]) else {
            at += BLOCK_SIZE as u64;
            continue;
        };
        let footprint = header.footprint();
        let valid = if at + footprint > len {
            false
        } else if within + footprint as usize <= chunk_len {
            record::verify(&chunk[within..within + footprint as usize], &header)
        } else {
            let mut whole = vec![0u8; footprint as usize];
            file.read_exact_at(&mut whole, at)?;
            record::verify(&whole, &header)
        };
        if valid {
            found.push(Located {
                path: path.to_path_buf(),
                position: at,
                header,
            });
            at += footprint;
        } else {
            at += BLOCK_SIZE as u64;
        }
    }
    Ok(found)
}

/// The messages of a record found at boot, read again and checked.
pub(crate) async fn read_messages(located: &Located) -> Result<Bytes, StorageError> {
    let header: &RecordHeader = &located.header;
    let path = located.path.clone();
    let position = located.position;
    let footprint = header.footprint() as usize;
    let bytes = crate::storage::blocking::run(move || {
        #[allow(clippy::disallowed_methods, reason = "on the blocking pool")]
        let file = std::fs::File::open(&path)?;
        let mut bytes = vec![0u8; footprint];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, position)?;
        Ok(bytes)
    })
    .await
    .map_err(|error| StorageError::io(IoOperation::Read, &located.path, error))?;
    if !record::verify(&bytes, header) {
        return Err(StorageError::Corrupted {
            path: located.path.clone(),
            position: located.position,
            reason: "a write-ahead log record changed since the boot scan",
        });
    }
    let start = header.data_start();
    Ok(Bytes::from(bytes).slice(start..start + header.data_len as usize))
}
