//! A partition log's incarnation: a random id kept in `<partition>/wal_id` that every record
//! the partition logs carries, so recovery applies a record only to the log that wrote it.
//!
//! A directory can hold several logs in turn (a partition deleted and created again under the
//! same ids), and one log can reuse offsets (a cluster replica cutting a tail it does not share
//! with its leader, a log reopened after a write failure): a record naming the directory and
//! an offset could then belong to other messages. Whatever ends a log's offsets' meaning takes
//! a new incarnation, once everything the log acknowledged is in its segment files, so records
//! written before are never applied again.
//!
//! ```text
//! wal_id    incarnation u64 LE | XXH3-64 of those 8 bytes, u64 LE
//! ```

use crate::storage::blocking;
use crate::storage::error::{IoOperation, StorageError};
use rill_core::hash::xxh3_64;
use std::io;
use std::path::Path;

pub(crate) const FILE_NAME: &str = "wal_id";

fn encode(incarnation: u64) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[0..8].copy_from_slice(&incarnation.to_le_bytes());
    let checksum = xxh3_64(&bytes[0..8]);
    bytes[8..16].copy_from_slice(&checksum.to_le_bytes());
    bytes
}

fn decode(bytes: &[u8]) -> Option<u64> {
    let bytes: &[u8; 16] = bytes.try_into().ok()?;
    let checksum = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    (xxh3_64(&bytes[0..8]) == checksum)
        .then(|| u64::from_le_bytes(bytes[0..8].try_into().expect("8 bytes")))
}

/// The incarnation of the log in `dir`, or a new one (written durably) when the directory has
/// none yet (a log created before the write-ahead log existed logged nothing).
pub(crate) async fn read_or_create(dir: &Path) -> Result<u64, StorageError> {
    let path = dir.join(FILE_NAME);
    match blocking::read(&path).await {
        Ok(bytes) => match decode(&bytes) {
            Some(incarnation) => Ok(incarnation),
            None => {
                // Only a damaged disk makes this: the file is replaced whole, never edited.
                tracing::warn!(path = %path.display(), "unreadable log incarnation; taking a new one (records of the old one are not applied)");
                renew(dir).await
            }
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => renew(dir).await,
        Err(error) => Err(StorageError::io(IoOperation::Read, &path, error)),
    }
}

/// Gives the log in `dir` a new incarnation and returns it, durably: the file is replaced
/// whole (`blocking::replace_file`), so a crash leaves the old id or the new one.
pub(crate) async fn renew(dir: &Path) -> Result<u64, StorageError> {
    let incarnation = loop {
        let id: u64 = rand::random();
        if id != 0 {
            break id;
        }
    };
    let path = dir.join(FILE_NAME);
    blocking::replace_file(&path, encode(incarnation).to_vec())
        .await
        .map_err(|error| StorageError::io(IoOperation::Write, &path, error))?;
    Ok(incarnation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incarnation_is_kept_until_renewed_and_a_damaged_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let first = read_or_create(dir.path()).await.unwrap();
            assert_eq!(read_or_create(dir.path()).await.unwrap(), first);
            let renewed = renew(dir.path()).await.unwrap();
            assert_ne!(renewed, first);
            assert_eq!(read_or_create(dir.path()).await.unwrap(), renewed);
            #[allow(clippy::disallowed_methods, reason = "tests")]
            std::fs::write(dir.path().join(FILE_NAME), b"not sixteen bytes").unwrap();
            let replaced = read_or_create(dir.path()).await.unwrap();
            assert_ne!(replaced, renewed);
            assert_eq!(read_or_create(dir.path()).await.unwrap(), replaced);
        });
        assert_eq!(decode(&encode(7)), Some(7));
        let mut damaged = encode(7);
        damaged[3] ^= 1;
        assert_eq!(decode(&damaged), None);
    }
}
