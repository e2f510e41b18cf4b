//! The shard's budget of consumer-offset files kept open (`offsets.rs` keeps the files of the
//! consumers that store first, so an auto-commit is one write).

use compio::fs::File;
use std::cell::Cell;
use std::rc::Rc;

/// Bounds the descriptors all partitions of one shard hold this way (a segment at rest costs
/// one: see ARCHITECTURE.md, "Storage").
pub const OPEN_PER_SHARD: usize = 1024;

thread_local! {
    /// Offset files held open on this shard's thread (partitions are owned by one shard and
    /// never leave its thread, so the count needs no synchronisation).
    static OPEN_ON_THIS_SHARD: Cell<usize> = const { Cell::new(0) };
}

/// An offset file kept open; gives its place in the shard's budget back when dropped.
pub(super) struct OpenOffsetFile(Rc<File>);

impl OpenOffsetFile {
    /// Takes a place in the shard's budget, if one is left.
    pub(super) fn keep(file: &Rc<File>) -> Option<OpenOffsetFile> {
        OPEN_ON_THIS_SHARD.with(|open| {
            (open.get() < OPEN_PER_SHARD).then(|| {
                open.set(open.get() + 1);
                OpenOffsetFile(file.clone())
            })
        })
    }

    pub(super) fn file(&self) -> &Rc<File> {
        &self.0
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
