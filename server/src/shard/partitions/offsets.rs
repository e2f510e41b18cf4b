//! Consumer offsets of a partition: kept in memory by its owner and persisted one file per
//! consumer (`offsets/consumers/<id>`, `offsets/groups/<id>`: a u64 LE), clamped at load to the
//! data that survived. The files of the consumers that store first stay open (up to 8 per
//! partition and 1024 per shard: `offset_files.rs`), so a poll with auto-commit costs one
//! write, not a directory check, an open, a write and a close; the others are opened for each
//! store.

use super::LocalPartition;
use crate::shard::message::{ConsumerKey, StoredOffset};
use crate::storage::blocking;
use compio::fs::File;
use compio::io::AsyncWriteAtExt;
use rill_core::ErrorCode;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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

    /// Removes a stored offset and its file. The open file is forgotten before the unlink and
    /// again after it: a store that opened the file meanwhile must not keep it, or its later
    /// stores would go to an unlinked file.
    pub(super) async fn forget_offset(&self, consumer: ConsumerKey) {
        self.offsets.borrow_mut().remove(&consumer);
        self.offset_files.borrow_mut().forget(consumer);
        self.offsets_changed();
        let _ = compio::fs::remove_file(offset_file(&self.dir, consumer)).await;
        self.offset_files.borrow_mut().forget(consumer);
    }

    /// Forgets every stored offset and removes their files (the caller holds the gate
    /// exclusively), the open files forgotten as in [`LocalPartition::forget_offset`].
    pub(super) async fn forget_all_offsets(&self) {
        self.offsets.borrow_mut().clear();
        self.offset_files.borrow_mut().forget_all();
        self.offsets_changed();
        let _ = blocking::remove_dir_all(&self.dir.join("offsets")).await;
        self.offset_files.borrow_mut().forget_all();
    }

    /// The consumer's offset file: the one kept open, else opened (and kept while there is
    /// room), its directory created first.
    async fn open_offset_file(&self, consumer: ConsumerKey) -> std::io::Result<Rc<File>> {
        if let Some(file) = self.offset_files.borrow().get(consumer) {
            return Ok(file);
        }
        let generation = self.offset_files.borrow().generation();
        let path = offset_file(&self.dir, consumer);
        if let Some(parent) = path.parent() {
            compio::fs::create_dir_all(parent).await?;
        }
        let file = Rc::new(
            compio::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .open(&path)
                .await?,
        );
        self.offset_files
            .borrow_mut()
            .keep(consumer, &file, generation);
        Ok(file)
    }

    pub(super) async fn store_offset(
        &self,
        consumer: ConsumerKey,
        offset: u64,
    ) -> Result<(), ErrorCode> {
        self.offsets.borrow_mut().insert(consumer, offset);
        self.offsets_changed();
        let write = async {
            let file = self.open_offset_file(consumer).await?;
            let mut writer = &*file;
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
