//! The consumer-offset files a partition keeps open (`offsets.rs`: so an auto-commit is one
//! write), within a budget per partition and per shard.

use crate::shard::message::ConsumerKey;
use compio::fs::File;
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

/// Enough for the consumer groups of a topic and a few plain consumers; a client inventing
/// consumer ids cannot make a partition hold more.
pub const OPEN_PER_PARTITION: usize = 8;
/// Bounds the descriptors all partitions of one shard hold this way (a segment at rest costs
/// one: see ARCHITECTURE.md, "Storage").
pub const OPEN_PER_SHARD: usize = 1024;

thread_local! {
    /// Offset files held open on this shard's thread (partitions are owned by one shard and
    /// never leave its thread, so the count needs no synchronisation).
    static OPEN_ON_THIS_SHARD: Cell<usize> = const { Cell::new(0) };
}

/// The files a partition keeps open, and how many times its files were forgotten: a file
/// opened while one was forgotten (deleted, or its directory removed by a purge) may be
/// unlinked already, so it is used for its store but not kept.
#[derive(Default)]
pub struct OffsetFiles {
    open: HashMap<ConsumerKey, OpenOffsetFile>,
    forgets: u64,
}

impl OffsetFiles {
    pub fn get(&self, consumer: ConsumerKey) -> Option<Rc<File>> {
        self.open.get(&consumer).map(|kept| kept.0.clone())
    }

    /// Taken before opening a file, handed to [`OffsetFiles::keep`] after.
    pub fn generation(&self) -> u64 {
        self.forgets
    }

    pub fn forget(&mut self, consumer: ConsumerKey) {
        self.open.remove(&consumer);
        self.forgets += 1;
    }

    pub fn forget_all(&mut self) {
        self.open.clear();
        self.forgets += 1;
    }

    /// Keeps `file` open for `consumer` when nothing was forgotten since `generation` and both
    /// budgets have room.
    pub fn keep(&mut self, consumer: ConsumerKey, file: &Rc<File>, generation: u64) {
        if generation != self.forgets
            || self.open.len() >= OPEN_PER_PARTITION
            || self.open.contains_key(&consumer)
        {
            return;
        }
        if let Some(kept) = OpenOffsetFile::keep(file) {
            self.open.insert(consumer, kept);
        }
    }
}

/// An offset file kept open; gives its place in the shard's budget back when dropped.
struct OpenOffsetFile(Rc<File>);

impl OpenOffsetFile {
    /// Takes a place in the shard's budget, if one is left.
    fn keep(file: &Rc<File>) -> Option<OpenOffsetFile> {
        OPEN_ON_THIS_SHARD.with(|open| {
            (open.get() < OPEN_PER_SHARD).then(|| {
                open.set(open.get() + 1);
                OpenOffsetFile(file.clone())
            })
        })
    }
}

impl Drop for OpenOffsetFile {
    fn drop(&mut self) {
        OPEN_ON_THIS_SHARD.with(|open| open.set(open.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_opened_across_a_forget_is_not_kept_and_a_partition_keeps_at_most_its_share() {
        let dir = tempfile::tempdir().unwrap();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let file = Rc::new(File::create(dir.path().join("offset")).await.unwrap());
            let mut files = OffsetFiles::default();
            let before = files.generation();
            files.forget(ConsumerKey::Consumer(7));
            files.keep(ConsumerKey::Consumer(1), &file, before);
            assert!(
                files.get(ConsumerKey::Consumer(1)).is_none(),
                "opened across a forget"
            );
            for id in 0..20 {
                files.keep(ConsumerKey::Group(id), &file, files.generation());
            }
            assert_eq!(files.open.len(), OPEN_PER_PARTITION);
            assert!(files.get(ConsumerKey::Group(0)).is_some());
            files.forget_all();
            assert!(files.get(ConsumerKey::Group(0)).is_none());
        });
    }

    #[test]
    fn the_shard_budget_of_open_offset_files_is_kept_and_given_back() {
        let dir = tempfile::tempdir().unwrap();
        compio::runtime::Runtime::new().unwrap().block_on(async {
            let file = Rc::new(File::create(dir.path().join("offset")).await.unwrap());
            let kept: Vec<_> = std::iter::from_fn(|| OpenOffsetFile::keep(&file))
                .take(OPEN_PER_SHARD + 5)
                .collect();
            assert_eq!(kept.len(), OPEN_PER_SHARD, "no more than the budget");
            assert!(OpenOffsetFile::keep(&file).is_none());
            drop(kept);
            assert!(
                OpenOffsetFile::keep(&file).is_some(),
                "dropped ones give their place back"
            );
        });
    }
}
