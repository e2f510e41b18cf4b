//! The control lane in a cluster: a change is committed through the metadata group before it
//! is applied, and every node applies the committed changes in log order.
//!
//! On the leader, a command validates against the metadata as today, then [`commit`] proposes
//! its op and, while waiting for the commit, applies every committed change the cluster thread
//! hands over (its own among them: the proposal's answer comes after its entry was applied).
//! On every node, a committed change is written to the local metadata log wrapped in
//! `MetadataOp::Replicated`, whose log id makes a restart resume exactly after it. A change this
//! lane did not propose (a follower's, or one from an earlier leader) gets its side effects from
//! the difference between the metadata before and after (`reconcile`): partitions opened or
//! closed, directories removed, group membership and user sessions ended; a proposed change gets
//! them from the command that made it, as on a single node.
//!
//! [`commit`]: ControlPlane::commit

use super::ControlPlane;
use super::streams::remove_dir;
use crate::cluster::link::{
    Applied, Command, Forward, Forwarded, ForwardedCommand, Proposal, ProposeError,
    held_partition_keys,
};
use crate::groups::GroupKey;
use crate::layout::{stream_dir, topic_dir};
use crate::metadata::{Metadata, MetadataOp, RaftLogId, codec};
use crate::shard::message::ControlCommand;
use crate::shard::table::PartitionKey;
use futures_util::future::{Either, select};
use rill_core::ErrorCode;
use std::collections::BTreeSet;
use std::pin::pin;

/// Every partition the metadata holds.
pub fn partition_keys(metadata: &Metadata) -> Vec<PartitionKey> {
    metadata
        .streams
        .values()
        .flat_map(PartitionKey::of_stream)
        .collect()
}

impl ControlPlane {
    /// Commits `op` through the metadata group and returns once it is applied here.
    pub(super) async fn commit_replicated(&mut self, op: MetadataOp) -> Result<(), ErrorCode> {
        let link = self.link.as_ref().expect("a cluster member");
        if !link.view.is_leader() {
            return Err(not_leader(link.view.leader()));
        }
        let bytes = codec::encode(&op);
        let (reply, answer) = flume::bounded(1);
        link.proposals
            .send_async(Proposal {
                command: Command { op: bytes.clone() },
                reply,
            })
            .await
            .map_err(|_| ErrorCode::Error)?;
        let answer = self
            .answer_while_applying(&answer, Some(&bytes), COMMIT_TIMEOUT)
            .await?;
        match answer {
            Some(Ok(index)) => {
                // The answer follows the entry's application, so it was applied just now (or,
                // after a restart in between, before).
                tracing::debug!(index, "metadata change committed");
                debug_assert!(self.replicated_index() >= index);
                Ok(())
            }
            Some(Err(error)) => {
                tracing::warn!(?error, "metadata change not committed");
                Err(match error {
                    ProposeError::NotLeader(leader) => not_leader(leader),
                    ProposeError::Failed(_) => ErrorCode::Error,
                })
            }
            None => {
                // A leader cut off from the majority commits nothing; the lane must not wait
                // for the partition to heal. The change may still commit later: it then
                // arrives as any other's, side effects reconciled.
                tracing::warn!(
                    timeout = ?COMMIT_TIMEOUT,
                    "a metadata change was not committed in time (no majority?)"
                );
                Err(ErrorCode::TransientNotCommitted)
            }
        }
    }

    /// Waits up to `wait` for `answer` from the cluster thread while applying the committed
    /// changes that keep arriving (the answer may depend on them: openraft answers a proposal
    /// after applying it). `proposed` is this lane's own proposal, whose side effects its
    /// command does itself. None when `wait` ran out.
    async fn answer_while_applying<T>(
        &mut self,
        answer: &flume::Receiver<T>,
        proposed: Option<&[u8]>,
        wait: std::time::Duration,
    ) -> Result<Option<T>, ErrorCode> {
        let committed = self
            .link
            .as_ref()
            .expect("a cluster member")
            .applied
            .clone();
        let deadline = std::time::Instant::now() + wait;
        let mut mine_applied = false;
        loop {
            let wait = deadline.saturating_duration_since(std::time::Instant::now());
            let next = {
                let answered = pin!(answer.recv_async());
                let applied = pin!(committed.recv_async());
                match compio::time::timeout(wait, select(answered, applied)).await {
                    Ok(Either::Left((answer, _))) => Either::Left(answer),
                    Ok(Either::Right((applied, _))) => Either::Right(applied),
                    Err(_) => return Ok(None),
                }
            };
            match next {
                Either::Left(Ok(answer)) => return Ok(Some(answer)),
                Either::Left(Err(_)) | Either::Right(Err(_)) => return Err(ErrorCode::Error),
                Either::Right(Ok(applied)) => {
                    let mine = !mine_applied && proposed == Some(applied.command.op.as_slice());
                    mine_applied |= mine;
                    self.apply_committed(applied, mine).await;
                }
            }
        }
    }

    /// A follower's change: run by the leader's lane, answered here once this node has
    /// applied it, so the client that made it reads it back from this node.
    pub(super) async fn forward(
        &mut self,
        command: ControlCommand,
        user_id: u32,
        client_id: u32,
    ) -> Result<Vec<u8>, ErrorCode> {
        let command = match command {
            ControlCommand::Request(request) => {
                let mut payload = Vec::with_capacity(request.payload_len());
                request.encode_payload(&mut payload);
                ForwardedCommand::Request {
                    code: request.command().code(),
                    payload,
                }
            }
            ControlCommand::CreateTopic {
                request,
                segment_size,
            } => {
                let request = rill_core::requests::Request::CreateTopic(request);
                let mut payload = Vec::with_capacity(request.payload_len());
                request.encode_payload(&mut payload);
                ForwardedCommand::CreateTopic {
                    payload,
                    segment_size,
                }
            }
            ControlCommand::SetPassword {
                user_id,
                verified_hash,
                new_hash,
            } => ForwardedCommand::SetPassword {
                user_id,
                verified_hash,
                new_hash,
            },
        };
        let link = self.link.as_ref().expect("a cluster member");
        let committed = link.applied.clone();
        let (reply, answer) = flume::bounded(1);
        link.forwards
            .send_async(Forward {
                request: Forwarded {
                    user_id,
                    client_id,
                    command,
                },
                reply,
            })
            .await
            .map_err(|_| ErrorCode::Error)?;
        let (payload, index) = match self
            .answer_while_applying(&answer, None, FORWARD_TIMEOUT)
            .await?
        {
            Some(Ok(answer)) => answer,
            Some(Err(code)) => return Err(ErrorCode::from_code(code).unwrap_or(ErrorCode::Error)),
            None => return Err(ErrorCode::Error),
        };
        let deadline = std::time::Instant::now() + CATCH_UP;
        while self.replicated_index() < index {
            let wait = deadline.saturating_duration_since(std::time::Instant::now());
            match compio::time::timeout(wait, committed.recv_async()).await {
                Ok(Ok(applied)) => self.apply_committed(applied, false).await,
                // Made, but not here yet: still a success for the client.
                _ => break,
            }
        }
        Ok(payload)
    }

    /// Hands the partitions' leaders, as the metadata now says, to the routing and the
    /// replication tasks.
    pub(super) fn publish_leaders(&self) {
        if let Some(link) = &self.link {
            let _ = self.metadata(|metadata| link.view.sync_leaders(metadata));
        }
    }

    fn replicated_index(&self) -> u64 {
        self.metadata(|metadata| metadata.replicated.map_or(0, |id| id.index))
            .unwrap_or(0)
    }

    /// Applies one committed change: logged with its log id, published, and (when `proposed`
    /// is false) its side effects reconciled. A change the metadata already includes (applied
    /// before a restart) is skipped.
    pub(super) async fn apply_committed(&mut self, applied: Applied, proposed: bool) {
        let log_id = RaftLogId {
            term: applied.term,
            leader: applied.leader,
            index: applied.index,
        };
        if self.replicated_index() >= log_id.index {
            let _ = applied.done.send(());
            return;
        }
        let op = match codec::decode(&applied.command.op) {
            Ok(op) => Some(Box::new(op)),
            Err(error) => {
                // Validated and encoded by the leader: only a bug gets here. Record the index so
                // the log moves on; the state misses this change, loudly.
                tracing::error!(index = log_id.index, %error, "cannot decode a replicated metadata change; skipped");
                None
            }
        };
        let before = if proposed {
            None
        } else {
            self.metadata(Metadata::clone).ok()
        };
        if let Err(code) = self
            .commit_local(MetadataOp::Replicated { log_id, op })
            .await
        {
            // The local log refused the write: do not answer, so openraft does not count the
            // entry as applied; it is handed over again after a restart.
            tracing::error!(index = log_id.index, %code, "cannot apply a replicated metadata change");
            return;
        }
        if let Some(before) = before {
            self.reconcile(&before).await;
        }
        self.publish_leaders();
        let _ = applied.done.send(());
    }

    /// The side effects of a change made elsewhere, from what it changed.
    async fn reconcile(&self, before: &Metadata) {
        let Ok(after) = self.metadata(Metadata::clone) else {
            return;
        };
        let shared = &self.shard.shared;
        let cluster = &shared.config.cluster;
        let old: BTreeSet<_> = held_partition_keys(before, cluster).into_iter().collect();
        let new: BTreeSet<_> = held_partition_keys(&after, cluster).into_iter().collect();
        // Groups first: their membership must not outlive the partitions they point to.
        for stream in before.streams.values() {
            for topic in stream.topics.values() {
                let kept = after
                    .streams
                    .get(&stream.id)
                    .and_then(|stream| stream.topics.get(&topic.id));
                for group in topic.groups.values() {
                    if kept.is_some_and(|topic| topic.groups.contains_key(&group.id)) {
                        continue;
                    }
                    let key = GroupKey {
                        stream_id: stream.id,
                        topic_id: topic.id,
                        group_id: group.id,
                    };
                    for client_id in shared.groups.remove(&key) {
                        shared
                            .clients
                            .leave_group(client_id, (stream.id, topic.id, group.id));
                    }
                }
            }
        }
        for stream in after.streams.values() {
            for topic in stream.topics.values() {
                let previous = before
                    .streams
                    .get(&stream.id)
                    .and_then(|stream| stream.topics.get(&topic.id));
                for group in topic.groups.values() {
                    if !previous.is_some_and(|topic| topic.groups.contains_key(&group.id)) {
                        shared.groups.register(
                            GroupKey {
                                stream_id: stream.id,
                                topic_id: topic.id,
                                group_id: group.id,
                            },
                            topic.partitions.len() as u32,
                        );
                    }
                }
                if previous
                    .is_some_and(|previous| previous.partitions.len() != topic.partitions.len())
                {
                    shared.groups.set_partitions_count(
                        stream.id,
                        topic.id,
                        topic.partitions.len() as u32,
                    );
                }
            }
        }
        let removed: Vec<_> = old.difference(&new).copied().collect();
        if !removed.is_empty() {
            self.close_partitions(removed).await;
        }
        let data = &shared.config.system.path;
        for stream in before.streams.values() {
            match after.streams.get(&stream.id) {
                None => remove_dir(&stream_dir(data, stream.id)).await,
                Some(kept) => {
                    for topic in stream.topics.values() {
                        if !kept.topics.contains_key(&topic.id) {
                            remove_dir(&topic_dir(data, stream.id, topic.id)).await;
                        }
                    }
                }
            }
        }
        let added: Vec<_> = new.difference(&old).copied().collect();
        if !added.is_empty()
            && let Err(code) = self.open_partitions(added).await
        {
            tracing::error!(%code, "cannot open replicated partitions");
        }
        for user in before.users.values() {
            let ended = match after.users.get(&user.id) {
                None => Some("user deleted"),
                Some(now)
                    if now.status != user.status
                        && now.status != rill_core::primitives::UserStatus::Active =>
                {
                    Some("user deactivated")
                }
                Some(now) if now.password_hash != user.password_hash => Some("password changed"),
                Some(now) if now.created_at != user.created_at => Some("user replaced"),
                Some(_) => None,
            };
            if let Some(why) = ended {
                self.end_sessions(user.id, None, why);
            }
        }
    }
}

/// How long the leader's lane waits for a majority to commit a change.
const COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Longer than the cluster thread's own limit on a forward (30 s), which answers first.
const FORWARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(35);

/// How long a follower waits to apply a forwarded change it was told is committed.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// A metadata change asked of a node that is not the leader.
fn not_leader(leader: Option<u64>) -> ErrorCode {
    tracing::debug!(?leader, "metadata change refused: not the cluster's leader");
    ErrorCode::TransientNotAccepted
}
