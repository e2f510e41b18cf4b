//! Consumer offsets of a partition: kept in memory by its owner and persisted one file per
//! consumer (`offsets/consumers/<id>`, `offsets/groups/<id>`: a u64 LE), clamped at load to the
//! data that survived.

use super::LocalPartition;
use crate::shard::message::{ConsumerKey, StoredOffset};
use crate::storage::blocking;
use compio::io::AsyncWriteAtExt;
use rill_core::ErrorCode;
use std::path::{Path, PathBuf};

fn offset_file(dir: &Path, consumer: ConsumerKey) -> PathBuf {
    match consumer {
        ConsumerKey::Consumer(id) => dir.join("offsets").join("consumers").join(id.to_string()),
        ConsumerKey::Group(id) => dir.join("offsets").join("groups").join(id.to_string()),
    }
}

impl LocalPartition {
    pub(super) async fn load_offsets(&self) {
        let current = self.storage().current_offset();
        for (kind, make) in [
            ("consumers", ConsumerKey::Consumer as fn(u32) -> ConsumerKey),
            ("groups", ConsumerKey::Group),
        ] {
            let dir = self.dir.join("offsets").join(kind);
            let Ok(names) = blocking::read_dir_names(&dir).await else {
                continue;
            };
            for name in names {
                let Some(id) = name.to_str().and_then(|name| name.parse::<u32>().ok()) else {
                    continue;
                };
                let Ok(bytes) = blocking::read(&dir.join(&name)).await else {
                    continue;
                };
                let Ok(bytes) = <[u8; 8]>::try_from(bytes.as_slice()) else {
                    continue;
                };
                let stored = u64::from_le_bytes(bytes);
                // A stored offset never runs ahead of the data that survived.
                let Some(current) = current else { continue };
                self.offsets
                    .borrow_mut()
                    .insert(make(id), stored.min(current));
            }
        }
    }

    pub async fn store_consumer_offset(
        &self,
        consumer: ConsumerKey,
        offset: u64,
    ) -> Result<(), ErrorCode> {
        let _shared = self.shared().await?;
        let Some(current) = self.storage().current_offset() else {
            return Err(ErrorCode::InvalidOffset);
        };
        if offset > current {
            return Err(ErrorCode::InvalidOffset);
        }
        self.store_offset(consumer, offset).await
    }

    pub fn consumer_offset(
        &self,
        consumer: ConsumerKey,
    ) -> Result<Option<StoredOffset>, ErrorCode> {
        if self.closed.get() {
            return Err(ErrorCode::PartitionNotFound);
        }
        let Some(stored) = self.offsets.borrow().get(&consumer).copied() else {
            return Ok(None);
        };
        Ok(Some(StoredOffset {
            current_offset: self.counters.current_offset(),
            stored_offset: stored,
        }))
    }

    pub async fn delete_consumer_offset(&self, consumer: ConsumerKey) -> Result<(), ErrorCode> {
        let _shared = self.shared().await?;
        if !self.offsets.borrow().contains_key(&consumer) {
            return Err(ErrorCode::ConsumerOffsetNotFound);
        }
        self.forget_offset(consumer).await;
        Ok(())
    }

    /// Removes a stored offset and its file.
    pub(super) async fn forget_offset(&self, consumer: ConsumerKey) {
        self.offsets.borrow_mut().remove(&consumer);
        self.offsets_changed();
        let _ = compio::fs::remove_file(offset_file(&self.dir, consumer)).await;
    }

    pub(super) async fn store_offset(
        &self,
        consumer: ConsumerKey,
        offset: u64,
    ) -> Result<(), ErrorCode> {
        self.offsets.borrow_mut().insert(consumer, offset);
        self.offsets_changed();
        let path = offset_file(&self.dir, consumer);
        let write = async {
            if let Some(parent) = path.parent() {
                compio::fs::create_dir_all(parent).await?;
            }
            let file = compio::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .open(&path)
                .await?;
            let mut writer = &file;
            writer
                .write_all_at(offset.to_le_bytes().to_vec(), 0)
                .await
                .0
        };
        write.await.map_err(|error| {
            tracing::warn!(partition = %self.key, %error, "cannot persist consumer offset");
            ErrorCode::CannotSaveIndexToSegment
        })
    }
}
