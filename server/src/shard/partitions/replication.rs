//! A replicated partition's state on this node (`replica.rs` has what it does with it): its
//! epochs (kept in `<partition dir>/epochs`), whether it leads, what it knows to be committed
//! and, on the leader, how far each follower's log reaches.

use super::epochs::Epochs;
use crate::storage::{WaitList, blocking};
use rill_core::ErrorCode;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const EPOCHS_FILE: &str = "epochs";

/// A partition's replication state, on every node of a cluster.
pub struct Replication {
    /// Nodes holding the partition (the whole roster for now); a majority of them commits.
    pub(super) voters: usize,
    pub(super) epochs: RefCell<Epochs>,
    /// The term this node leads the partition in; None while it follows.
    pub(super) leading: Cell<Option<u64>>,
    /// The highest term whose takeover this replica described its log to: it copies nothing
    /// of an older term and leads in none since (Raft's vote, Paxos' promise).
    pub(super) promised: Cell<u64>,
    /// Offsets below are held by a majority (as far as this node knows).
    pub(super) commit_end: Cell<u64>,
    /// On the leader: the end each follower's log reached, in this term.
    pub(super) matched: RefCell<HashMap<u64, u64>>,
    /// On the leader: how far each follower has deleted (`ReplicaState::deleted_through`).
    pub(super) deleted: RefCell<HashMap<u64, u64>>,
    /// The furthest leader first offset this replica deleted below (in memory: after a restart
    /// the log's own first offset stands for it).
    pub(super) deleted_through: Cell<u64>,
    /// On the leader: (term, changes) of the consumer offsets, which followers copy whole
    /// whenever the version they hold differs.
    pub(super) offsets_version: Cell<(u64, u64)>,
    /// Woken when the log grows, the commit advances or the leadership changes.
    pub(super) changed: WaitList,
}

impl Replication {
    /// Loads the epochs kept in `dir` (none yet: a new log).
    pub async fn load(dir: &Path, voters: usize) -> Replication {
        let path = dir.join(EPOCHS_FILE);
        let epochs = match blocking::read(&path).await {
            Ok(bytes) => match Epochs::decode(&bytes) {
                Some((epochs, _)) => epochs,
                None => {
                    // Looking behind only makes this replica copy more from the leader.
                    tracing::warn!(file = %path.display(), "damaged epochs file; the log will be checked against the leader's from its start");
                    Epochs::default()
                }
            },
            Err(_) => Epochs::default(),
        };
        Replication {
            voters,
            epochs: RefCell::new(epochs),
            leading: Cell::new(None),
            promised: Cell::new(0),
            commit_end: Cell::new(0),
            matched: RefCell::new(HashMap::new()),
            deleted: RefCell::new(HashMap::new()),
            deleted_through: Cell::new(0),
            offsets_version: Cell::new((0, 0)),
            changed: WaitList::default(),
        }
    }

    pub(super) fn majority(&self) -> usize {
        self.voters / 2 + 1
    }

    /// Wakes everything waiting on the partition (it is closing).
    pub(super) fn wake_all(&self) {
        self.leading.set(None);
        self.changed.notify_all();
    }
}

pub(super) async fn save_epochs(dir: &Path, epochs: &Epochs) -> Result<(), ErrorCode> {
    let mut bytes = Vec::new();
    epochs.encode(&mut bytes);
    let path: PathBuf = dir.join(EPOCHS_FILE);
    blocking::replace_file(&path, bytes).await.map_err(|error| {
        tracing::error!(file = %path.display(), %error, "cannot save the partition's epochs");
        ErrorCode::CannotAppendMessage
    })
}
