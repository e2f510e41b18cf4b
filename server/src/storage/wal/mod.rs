//! The write-ahead log: one per shard, shared by the shard's partitions in `written` mode, so
//! that one write makes the small rounds of many partitions durable at once (group commit
//! across partitions).
//!
//! Without it every acknowledged round is an O_DIRECT write to its own segment file: eight
//! producers of 10-message batches on eight partitions made eight small writes in flight at a
//! time, each costing a shard ~40 µs of CPU (the virtio notification alone ~18 µs on this
//! project's VM) plus its wait, and the written mode ran at half the memory mode's speed. With
//! the log, a partition's round of at most `max_record_bytes` is copied into one record, the
//! records of every partition that asked while the previous log write was in flight are written
//! together, and the appends are acknowledged when that write completes; the segment files are
//! written later, in large rounds, as memory mode writes them (by size, count, the message
//! saver, rotation, a flush, backpressure, close, or the log's need for space).
//!
//! What is acknowledged is therefore in the segment files or in the log, and a read of what is
//! only in the log is answered from memory (the partition keeps every batch it has not written
//! to its segments, as memory mode does). Rounds too large for a record, rounds while the log is
//! starting, full, or off after a write error, go to the segment files as they always did.
//!
//! **Space.** The file has a fixed size (`size_bytes`) and is used as a ring of block-aligned
//! records ([`record`]). A record is needed until its partition's segment files hold its
//! messages (the partition's written end is past them); the oldest needed record bounds the
//! ring. Past half full, the log asks the partitions behind its oldest records to write their
//! segments; a record that does not fit is refused and its round written directly.
//!
//! **Recovery.** At boot, before the shards start, every log file is scanned ([`recovery`]);
//! each partition, when it opens, appends the messages of its records that its recovered
//! segments lack (checked like a replica's copy: offsets continue the log, checksums hold) and
//! writes them to its segments. No log is written until every shard has opened its partitions
//! ([`Wal::start`] runs after the shards' start-up barrier), so nothing is overwritten before
//! it is replayed. Records name their partition by directory and by the incarnation of its log
//! ([`incarnation`]), which changes whenever a log's offsets could mean other messages (a cut,
//! a reopen after a failure, records left unapplied), so a record is never applied to a log
//! that did not write it.

pub(crate) mod incarnation;
pub(crate) mod record;
pub(crate) mod recovery;

use crate::storage::error::StorageError;
use crate::storage::file::{DirectFile, sync_directory};
use crate::storage::pool::{BLOCK_SIZE, PooledBuf};
use crate::storage::wait::WaitList;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::sync::Arc;

pub use recovery::WalRecovery;

/// What a shard's partitions are given of the logs: the shard's log (None: every round goes to
/// the segment files) and the records the logs held at boot, which a partition replays when it
/// opens (None: nothing to replay, e.g. a partition outside any server's data directory).
#[derive(Clone, Default)]
pub struct WalLink {
    pub wal: Option<Rc<Wal>>,
    pub recovery: Option<Arc<WalRecovery>>,
}

/// The log's configuration (`[system.wal]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalConfig {
    /// The file's size: the ring.
    pub size_bytes: u64,
    /// The largest record (header and directory included); larger rounds are written directly.
    pub max_record_bytes: u64,
}

impl WalConfig {
    pub fn validate(&self) -> Result<(), StorageError> {
        let block = BLOCK_SIZE as u64;
        if !self.size_bytes.is_multiple_of(block) || self.size_bytes < 16 * block {
            return Err(StorageError::InvalidConfig(format!(
                "the write-ahead log size must be a multiple of {block} bytes and at least {}, got {}",
                16 * block,
                self.size_bytes
            )));
        }
        if self.max_record_bytes < block || self.max_record_bytes > self.size_bytes / 4 {
            return Err(StorageError::InvalidConfig(format!(
                "the largest write-ahead log record must lie between {block} bytes and a quarter of the log ({}), got {}",
                self.size_bytes / 4,
                self.max_record_bytes
            )));
        }
        Ok(())
    }
}

/// A partition, seen from the log.
pub(crate) trait WalOwner {
    /// The offset below which the partition's segment files hold its messages; None while its
    /// state is in use (ask again later).
    fn in_segments_through(&self) -> Option<u64>;
    /// Asks the partition to write what it logged to its segment files soon.
    fn write_soon(&self);
}

/// How a record fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Logged {
    /// Written: the messages survive a crash of the process.
    Done,
    /// Not written (no room, not started, or the log is off): write the round directly.
    Refused,
}

/// Counters for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Writes of the log file (each carrying one or more records).
    pub writes: u64,
    pub records: u64,
    pub bytes: u64,
    /// Records refused (their rounds were written directly).
    pub refused: u64,
    /// Bytes of the ring still needed.
    pub used_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Until every shard has opened its partitions.
    Starting,
    Ready,
    /// After a failed open or write: rounds go to the segment files.
    Off,
}

struct Live {
    start: u64,
    owner: Weak<dyn WalOwner>,
    end_offset: u64,
}

struct Queued {
    buf: PooledBuf,
    owner: Weak<dyn WalOwner>,
    end_offset: u64,
    outcome: Rc<Cell<Option<Logged>>>,
}

struct State {
    phase: Phase,
    /// Absolute position (bytes ever written, laps included) of the next record.
    head: u64,
    live: VecDeque<Live>,
    queue: Vec<Queued>,
    stats: WalStats,
}

/// One shard's write-ahead log.
pub struct Wal {
    path: PathBuf,
    config: WalConfig,
    file: RefCell<Option<Rc<DirectFile>>>,
    state: RefCell<State>,
    /// The log's writer waits here for records.
    queued: WaitList,
    /// Partitions wait here for their record's outcome.
    answered: WaitList,
}

impl Wal {
    /// The log of shard `shard` in the data directory `root`; it takes records once
    /// [`Wal::start`] has run.
    pub fn new(root: &Path, shard: u16, config: WalConfig) -> Rc<Wal> {
        Rc::new(Wal {
            path: recovery::wal_dir(root).join(format!("shard-{shard}.wal")),
            config,
            file: RefCell::new(None),
            state: RefCell::new(State {
                phase: Phase::Starting,
                head: 0,
                live: VecDeque::new(),
                queue: Vec::new(),
                stats: WalStats::default(),
            }),
            queued: WaitList::default(),
            answered: WaitList::default(),
        })
    }

    pub fn config(&self) -> &WalConfig {
        &self.config
    }

    /// Opens the log file (creating and preallocating it the first time) and starts taking
    /// records. Call it once every shard has opened (and so replayed) its partitions. With
    /// `keep_previous` (a partition could not be opened, so its records were not replayed) the
    /// file is set aside under a name the next boot scans again, and a new one is started. If
    /// the file cannot be opened the log stays off and rounds are written directly.
    pub async fn start(self: &Rc<Self>, keep_previous: bool) {
        if keep_previous && let Err(error) = self.set_aside().await {
            tracing::error!(path = %self.path.display(), %error, "cannot set the write-ahead log aside; the log stays off so that its records are kept");
            self.state.borrow_mut().phase = Phase::Off;
            return;
        }
        match self.open_file().await {
            Ok(file) => {
                *self.file.borrow_mut() = Some(Rc::new(file));
                self.state.borrow_mut().phase = Phase::Ready;
                compio::runtime::spawn(writer_loop(Rc::clone(self))).detach();
            }
            Err(error) => {
                tracing::error!(path = %self.path.display(), %error, "cannot open the write-ahead log; partitions write every round to their segment files");
                self.state.borrow_mut().phase = Phase::Off;
            }
        }
    }

    /// Renames the file to `shard-N.kept-<nanoseconds>-<attempt>.wal`, beside it.
    async fn set_aside(&self) -> Result<(), StorageError> {
        let exists = crate::storage::blocking::exists(&self.path)
            .await
            .unwrap_or(false);
        if !exists {
            return Ok(());
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let stem = self
            .path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or("shard")
            .to_owned();
        let from = self.path.clone();
        // A name no earlier set-aside has: a server failing to open a partition may restart
        // again and again, and each kept log may hold what the others do not.
        let kept = crate::storage::blocking::run(move || {
            #[allow(clippy::disallowed_methods, reason = "on the blocking pool")]
            {
                let mut attempt = 0u32;
                loop {
                    let kept = from.with_file_name(format!("{stem}.kept-{nanos}-{attempt}.wal"));
                    if !std::fs::exists(&kept)? {
                        std::fs::rename(&from, &kept)?;
                        return Ok(kept);
                    }
                    attempt += 1;
                }
            }
        })
        .await
        .map_err(|error| StorageError::io(crate::storage::IoOperation::Write, &self.path, error))?;
        tracing::warn!(kept = %kept.display(), "a partition could not be opened: the write-ahead log is kept for the next start, and a new one begun");
        Ok(())
    }

    async fn open_file(&self) -> Result<DirectFile, StorageError> {
        let dir = self.path.parent().expect("the log lies in a directory");
        compio::fs::create_dir_all(dir).await.map_err(|error| {
            StorageError::io(crate::storage::IoOperation::Directory, dir, error)
        })?;
        let exists = crate::storage::blocking::exists(&self.path)
            .await
            .unwrap_or(false);
        let file = DirectFile::open(&self.path, !exists).await?;
        // Reserved whole once, so a log write never runs out of space.
        file.allocate(self.config.size_bytes)?;
        if !exists {
            sync_directory(dir).await?;
        }
        Ok(file)
    }

    /// Whether a record of `footprint` bytes may be offered now.
    pub(crate) fn accepts(&self, footprint: u64) -> bool {
        footprint <= self.config.max_record_bytes && self.state.borrow().phase == Phase::Ready
    }

    /// Writes a record (whole blocks, from [`record::encode`]) for `owner`, whose messages end
    /// at `end_offset`, together with whatever other partitions log meanwhile.
    pub(crate) async fn log(
        &self,
        buf: PooledBuf,
        owner: Weak<dyn WalOwner>,
        end_offset: u64,
    ) -> Logged {
        debug_assert!(buf.len().is_multiple_of(BLOCK_SIZE) && !buf.is_empty());
        let outcome = Rc::new(Cell::new(None));
        {
            let mut state = self.state.borrow_mut();
            if state.phase != Phase::Ready {
                state.stats.refused += 1;
                return Logged::Refused;
            }
            state.queue.push(Queued {
                buf,
                owner,
                end_offset,
                outcome: Rc::clone(&outcome),
            });
        }
        self.queued.notify_all();
        self.answered.wait_until(|| outcome.get().is_some()).await;
        outcome.get().expect("answered")
    }

    pub fn stats(&self) -> WalStats {
        let mut state = self.state.borrow_mut();
        let tail = state.live.front().map_or(state.head, |live| live.start);
        state.stats.used_bytes = state.head - tail;
        state.stats
    }

    /// Forgets the oldest records whose partitions' segments hold them (or that are gone);
    /// returns the oldest position still needed.
    fn reclaim(state: &mut State) -> u64 {
        while let Some(front) = state.live.front() {
            let done = match front.owner.upgrade() {
                None => true,
                Some(owner) => owner
                    .in_segments_through()
                    .is_some_and(|end| end >= front.end_offset),
            };
            if !done {
                break;
            }
            state.live.pop_front();
        }
        state.live.front().map_or(state.head, |live| live.start)
    }

    /// Past half full, asks the partitions behind the oldest quarter of the ring to write their
    /// segments, so their records can go.
    fn relieve(&self, state: &State, tail: u64) {
        let size = self.config.size_bytes;
        if state.head - tail <= size / 2 {
            return;
        }
        let until = tail + size / 4;
        for live in state.live.iter().take_while(|live| live.start < until) {
            if let Some(owner) = live.owner.upgrade() {
                owner.write_soon();
            }
        }
    }
}

/// Removes the log files no shard writes any more (those of shards beyond `shard_count`, and
/// files set aside at an earlier start), once every partition has replayed them: call only
/// after a start at which every partition opened.
pub async fn remove_spent(root: &Path, shard_count: u16) {
    let dir = recovery::wal_dir(root);
    let Ok(names) = crate::storage::blocking::read_dir_names(&dir).await else {
        return;
    };
    for name in names {
        let Some(name) = name.to_str() else {
            continue;
        };
        let current = (0..shard_count).any(|shard| name == format!("shard-{shard}.wal"));
        if current || !name.ends_with(".wal") {
            continue;
        }
        let path = dir.join(name);
        match compio::fs::remove_file(&path).await {
            Ok(()) => {
                tracing::info!(path = %path.display(), "removed a write-ahead log no shard writes any more")
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot remove a spent write-ahead log")
            }
        }
    }
}

/// The log's writer: takes every queued record, places as many as fit after the head (a
/// write never wraps: one that would cross the end of the file starts the next lap), writes
/// them with one vectored write, and answers each.
async fn writer_loop(wal: Rc<Wal>) {
    let size = wal.config.size_bytes;
    loop {
        wal.queued
            .wait_until(|| !wal.state.borrow().queue.is_empty())
            .await;
        let (position, placed, refused) = {
            let mut state = wal.state.borrow_mut();
            let queue = std::mem::take(&mut state.queue);
            let tail = Wal::reclaim(&mut state);
            let mut position = state.head;
            let mut placed: Vec<Queued> = Vec::with_capacity(queue.len());
            let mut refused: Vec<Queued> = Vec::new();
            let mut length = 0u64;
            for queued in queue {
                let footprint = queued.buf.len() as u64;
                let mut start = position;
                if placed.is_empty() && start % size + footprint > size {
                    // To the next lap: the rest of this one stays unused.
                    start = start.next_multiple_of(size);
                }
                let fits_lap = start % size + length + footprint <= size;
                let fits_ring = start + length + footprint - tail <= size;
                if fits_lap && fits_ring {
                    position = start;
                    length += footprint;
                    placed.push(queued);
                } else {
                    refused.push(queued);
                }
            }
            state.stats.refused += refused.len() as u64;
            (position, placed, refused)
        };
        for queued in &refused {
            queued.outcome.set(Some(Logged::Refused));
        }
        if !refused.is_empty() {
            wal.answered.notify_all();
        }
        if !placed.is_empty() {
            write_placed(&wal, position, placed).await;
        }
        {
            let state = wal.state.borrow();
            let tail = state.live.front().map_or(state.head, |live| live.start);
            wal.relieve(&state, tail);
        }
        wal.answered.notify_all();
    }
}

async fn write_placed(wal: &Wal, position: u64, placed: Vec<Queued>) {
    let size = wal.config.size_bytes;
    let file = wal
        .file
        .borrow()
        .clone()
        .expect("the file is open while ready");
    let mut answers = Vec::with_capacity(placed.len());
    let mut buffers = Vec::with_capacity(placed.len());
    let mut at = position;
    for queued in placed {
        let footprint = queued.buf.len() as u64;
        answers.push((
            Live {
                start: at,
                owner: queued.owner,
                end_offset: queued.end_offset,
            },
            queued.outcome,
        ));
        buffers.push(queued.buf);
        at += footprint;
    }
    let bytes = at - position;
    let (result, _buffers) = file.write_all_vectored(buffers, position % size).await;
    let mut state = wal.state.borrow_mut();
    match result {
        Ok(()) => {
            state.head = at;
            state.stats.writes += 1;
            state.stats.records += answers.len() as u64;
            state.stats.bytes += bytes;
            for (live, outcome) in answers {
                state.live.push_back(live);
                outcome.set(Some(Logged::Done));
            }
        }
        Err(error) => {
            // The rounds go to their segments instead; a record that reached the disk holds
            // the same messages at the same offsets as those writes.
            tracing::error!(path = %wal.path.display(), %error, "write-ahead log write failed; the log is off until the server restarts");
            state.phase = Phase::Off;
            state.stats.refused += answers.len() as u64;
            for (_, outcome) in answers {
                outcome.set(Some(Logged::Refused));
            }
            for queued in state.queue.drain(..) {
                queued.outcome.set(Some(Logged::Refused));
            }
        }
    }
}
