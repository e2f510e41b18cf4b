//! The metadata group's state machine: the server's metadata itself.
//!
//! A committed entry is handed, in log order, to shard 0's control lane (`Applied`), which
//! applies it like a local change (metadata log, left-right publish, side effects) and records
//! the entry's index in the same metadata-log record, so what a node has applied and the
//! metadata it holds never disagree after a crash. This side only waits for the lane to say
//! done, and keeps the membership (the roster as Raft knows it) in `membership`.
#![allow(
    clippy::disallowed_methods,
    reason = "the cluster thread's own files: it is not a shard"
)]

use super::link::Applied;
use super::types::{LogId, Membership, StorageError, TypeConfig};
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{AnyError, EntryPayload, OptionalSend, SnapshotMeta, StorageIOError};
use std::io::{self, Cursor};
use std::path::PathBuf;

pub struct StateMachine {
    dir: PathBuf,
    applied: Option<LogId>,
    membership: Membership,
    lane: flume::Sender<Applied>,
}

impl StateMachine {
    /// `applied` is what the metadata says was applied last (its index, recorded by the lane).
    pub fn open(
        dir: PathBuf,
        applied: Option<LogId>,
        lane: flume::Sender<Applied>,
    ) -> io::Result<StateMachine> {
        let membership: Membership = match std::fs::read(dir.join("membership")) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(io::Error::other)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => Membership::default(),
            Err(error) => return Err(error),
        };
        // Entries are applied in order and each waits for the lane, so the later of the two
        // covers everything before it.
        let applied = applied.max(*membership.log_id());
        Ok(StateMachine {
            dir,
            applied,
            membership,
            lane,
        })
    }

    fn save_membership(&self) -> io::Result<()> {
        let bytes = serde_json::to_vec(&self.membership).expect("a membership serializes");
        let temporary = self.dir.join("membership.tmp");
        std::fs::write(&temporary, bytes)?;
        std::fs::File::open(&temporary)?.sync_all()?;
        std::fs::rename(&temporary, self.dir.join("membership"))?;
        std::fs::File::open(&self.dir)?.sync_all()
    }
}

fn unsupported() -> StorageError {
    StorageIOError::read_snapshot(
        None,
        AnyError::error("metadata snapshots are not offered yet: the log is never purged"),
    )
    .into()
}

/// Snapshots are never built (`SnapshotPolicy::Never`, the log is kept whole), so a lagging
/// node always catches up from the log.
pub struct NoSnapshots;

impl RaftSnapshotBuilder<TypeConfig> for NoSnapshots {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        Err(unsupported())
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = NoSnapshots;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        Ok((self.applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut replies = Vec::new();
        for entry in entries {
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(command) => {
                    let (done, finished) = flume::bounded(1);
                    let applied = Applied {
                        index: entry.log_id.index,
                        term: entry.log_id.leader_id.term,
                        leader: entry.log_id.leader_id.node_id,
                        command,
                        done,
                    };
                    let gone = || {
                        StorageError::from(StorageIOError::apply(
                            entry.log_id,
                            AnyError::error("the control lane is gone (shutting down)"),
                        ))
                    };
                    self.lane.send_async(applied).await.map_err(|_| gone())?;
                    finished.recv_async().await.map_err(|_| gone())?;
                }
                EntryPayload::Membership(membership) => {
                    self.membership = Membership::new(Some(entry.log_id), membership);
                    self.save_membership().map_err(|error| {
                        StorageIOError::write_state_machine(AnyError::new(&error))
                    })?;
                }
            }
            self.applied = Some(entry.log_id);
            replies.push(());
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        NoSnapshots
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta<u64, openraft::BasicNode>,
        _snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        Err(unsupported())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(None)
    }
}
