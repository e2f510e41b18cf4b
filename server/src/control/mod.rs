//! Shard 0's control lane: the only writer of the metadata.
//!
//! Metadata changes from every shard arrive here over one `flume` channel and run one at a
//! time, in arrival order, each to completion: validate against the current metadata, append
//! the op to the metadata log and fsync it, publish it through the left-right writer, then do
//! the side effects (directories, partitions opened or closed on their owners), and reply.
//! A change is therefore durable before anyone sees it, and a crash after the log append is
//! completed at the next boot (missing partition directories are created, orphaned ones
//! removed). Data-plane traffic never waits on this lane.

mod groups;
mod leadership;
mod replica;
mod streams;
mod tokens;
mod topics;
mod users;

use crate::cluster::link::held_partition_keys;
use crate::metadata::log::MetadataLog;
use crate::metadata::{Metadata, MetadataOp, User};
use crate::permissions::{Action, allowed};
use crate::shard::Shard;
use crate::shard::message::{
    ControlCommand, ControlRequest, ShardMessage, ShardWork, reply_channel,
};
use crate::shard::table::{PartitionKey, PartitionState};
use rill_core::ErrorCode;
use rill_core::requests::Request;
use std::rc::Rc;
use std::sync::atomic::Ordering;

pub use replica::partition_keys;
pub use tokens::{MAX_TOKENS_PER_USER, TOKEN_NAME_LENGTH};
pub use users::RootCredentials;

enum Event {
    Request(ControlRequest),
    Applied(crate::cluster::link::Applied),
    Tick,
    Closed,
}

pub struct ControlPlane {
    shard: Rc<Shard>,
    writer: left_right::WriteHandle<Metadata, MetadataOp>,
    log: MetadataLog,
    /// In a cluster: the channels to and from the cluster thread.
    link: Option<crate::cluster::link::Link>,
    /// The cluster thread stopped: changes are refused from then on (never made locally, which
    /// would fork this node's metadata from the cluster's).
    link_stopped: bool,
}

impl ControlPlane {
    pub fn new(
        shard: Rc<Shard>,
        writer: left_right::WriteHandle<Metadata, MetadataOp>,
        log: MetadataLog,
        link: Option<crate::cluster::link::Link>,
    ) -> Self {
        shard.metrics.metadata_log_bytes.set(log.len());
        ControlPlane {
            shard,
            writer,
            log,
            link,
            link_stopped: false,
        }
    }

    /// Serves control requests until every sender is gone, and removes expired personal access
    /// tokens between them every `token_cleanup_interval`.
    pub async fn run(
        mut self,
        requests: flume::Receiver<ControlRequest>,
        token_cleanup_interval: std::time::Duration,
        root: Option<RootCredentials>,
    ) {
        let mut next_cleanup = std::time::Instant::now() + token_cleanup_interval;
        self.publish_leaders();
        loop {
            let now = std::time::Instant::now();
            if now >= next_cleanup {
                self.delete_expired_tokens_here().await;
                next_cleanup = now + token_cleanup_interval;
            }
            let request = match self.next_event(&requests, next_cleanup - now).await {
                Event::Request(request) => request,
                Event::Applied(applied) => {
                    self.apply_committed(applied, false).await;
                    continue;
                }
                Event::Tick => {
                    // A cluster's root user is created by its first leader, once.
                    let leader = self.link.as_ref().is_some_and(|link| link.view.is_leader());
                    if let Some(root) = &root
                        && leader
                        && let Err(code) = self.ensure_root(root).await
                    {
                        tracing::warn!(%code, "cannot create the root user yet");
                    }
                    self.assign_leaders().await;
                    continue;
                }
                Event::Closed => break,
            };
            let name = request.command.name();
            let follower = self
                .link
                .as_ref()
                .is_some_and(|link| !link.view.is_leader());
            let result = if request.revoked.load(Ordering::Acquire) {
                Err(ErrorCode::Unauthenticated)
            } else if follower && !request.forwarded {
                self.forward(request.command, request.user_id, request.client_id)
                    .await
            } else {
                let result = self
                    .execute(request.command, request.user_id, request.client_id)
                    .await;
                // New partitions get their leaders before the client hears of them.
                if result.is_ok() && self.link.is_some() {
                    self.assign_leaders().await;
                }
                result
            };
            if let Err(code) = result {
                tracing::debug!(command = name, %code, "control request refused");
            }
            let _ = request.reply.send(result);
        }
    }

    /// The next thing to do: a request, a change the cluster committed, or, after `wait` (at
    /// most half a second in a cluster), a tick.
    async fn next_event(
        &mut self,
        requests: &flume::Receiver<ControlRequest>,
        wait: std::time::Duration,
    ) -> Event {
        use futures_util::future::{Either, select};
        let Some(link) = self.link.as_ref().filter(|_| !self.link_stopped) else {
            return match compio::time::timeout(wait, requests.recv_async()).await {
                Ok(Ok(request)) => Event::Request(request),
                Ok(Err(_)) => Event::Closed,
                Err(_) => Event::Tick,
            };
        };
        let wait = wait.min(std::time::Duration::from_millis(500));
        let next = {
            let request = std::pin::pin!(requests.recv_async());
            let applied = std::pin::pin!(link.applied.recv_async());
            match compio::time::timeout(wait, select(request, applied)).await {
                Ok(Either::Left((request, _))) => Some(Either::Left(request)),
                Ok(Either::Right((applied, _))) => Some(Either::Right(applied)),
                Err(_) => None,
            }
        };
        match next {
            Some(Either::Left(Ok(request))) => Event::Request(request),
            Some(Either::Left(Err(_))) => Event::Closed,
            Some(Either::Right(Ok(applied))) => Event::Applied(applied),
            Some(Either::Right(Err(_))) => {
                tracing::error!(
                    "the cluster thread stopped: this node applies and accepts no more metadata \
                     changes until it restarts"
                );
                self.link_stopped = true;
                Event::Tick
            }
            None => Event::Tick,
        }
    }

    /// Deletes expired personal access tokens (in a cluster, the leader does, for everyone).
    async fn delete_expired_tokens_here(&mut self) {
        if self
            .link
            .as_ref()
            .is_some_and(|link| !link.view.is_leader())
        {
            return;
        }
        match self.delete_expired_tokens().await {
            Ok(0) => {}
            Ok(count) => tracing::info!(count, "deleted expired personal access tokens"),
            Err(code) => tracing::warn!(%code, "cannot delete expired personal access tokens"),
        }
    }

    async fn execute(
        &mut self,
        command: ControlCommand,
        user_id: u32,
        client_id: u32,
    ) -> Result<Vec<u8>, ErrorCode> {
        let user = self.user(user_id)?;
        let request = match command {
            ControlCommand::Request(request) => request,
            ControlCommand::CreateTopic {
                request,
                segment_size,
            } => return self.create_topic(&user, request, segment_size).await,
            ControlCommand::SetPassword {
                user_id: target,
                verified_hash,
                new_hash,
            } => {
                return self
                    .set_password(target, &verified_hash, new_hash, client_id)
                    .await;
            }
        };
        match request {
            Request::CreateStream(request) => self.create_stream(&user, request).await,
            Request::UpdateStream(request) => self.update_stream(&user, request).await,
            Request::DeleteStream(request) => self.delete_stream(&user, request).await,
            Request::CreateTopic(request) => self.create_topic(&user, request, 0).await,
            Request::UpdateTopic(request) => self.update_topic(&user, request).await,
            Request::DeleteTopic(request) => self.delete_topic(&user, request).await,
            Request::CreatePartitions(request) => self.create_partitions(&user, request).await,
            Request::DeletePartitions(request) => self.delete_partitions(&user, request).await,
            Request::CreateUser(request) => self.create_user(&user, request).await,
            Request::DeleteUser(request) => self.delete_user(&user, request).await,
            Request::UpdateUser(request) => self.update_user(&user, request).await,
            Request::UpdatePermissions(request) => self.update_permissions(&user, request).await,
            Request::CreatePersonalAccessToken(request) => self.create_token(&user, request).await,
            Request::DeletePersonalAccessToken(request) => self.delete_token(&user, request).await,
            Request::CreateConsumerGroup(request) => self.create_group(&user, request).await,
            Request::DeleteConsumerGroup(request) => self.delete_group(&user, request).await,
            other => {
                tracing::error!(command = %other.command(), "not a control-plane command");
                Err(ErrorCode::InvalidCommand)
            }
        }
    }

    fn metadata<R>(&self, read: impl FnOnce(&Metadata) -> R) -> Result<R, ErrorCode> {
        self.shard.metadata(read)
    }

    fn user(&self, user_id: u32) -> Result<User, ErrorCode> {
        self.metadata(|metadata| metadata.users.get(&user_id).cloned())?
            .ok_or(ErrorCode::Unauthenticated)
    }

    fn require(user: &User, action: Action) -> Result<(), ErrorCode> {
        if allowed(user, action) {
            Ok(())
        } else {
            Err(ErrorCode::Unauthorized)
        }
    }

    /// Makes `op` durable, then visible: committed through the metadata group first in a
    /// cluster (`replica.rs`).
    async fn commit(&mut self, op: MetadataOp) -> Result<(), ErrorCode> {
        if self.link.is_some() {
            self.commit_replicated(op).await
        } else {
            self.commit_local(op).await
        }
    }

    /// Makes `op` durable in the local metadata log, then visible. Compacts the log when it has
    /// grown past its threshold.
    async fn commit_local(&mut self, op: MetadataOp) -> Result<(), ErrorCode> {
        self.log.append(&op).await.map_err(|error| {
            tracing::error!(%error, "cannot append to the metadata log");
            ErrorCode::IoError
        })?;
        self.writer.append(op);
        self.writer.publish();
        let metrics = &self.shard.metrics;
        metrics.metadata_log_appends.inc();
        metrics.metadata_log_bytes.set(self.log.len());
        if self.log.needs_snapshot() {
            let state = self.metadata(Metadata::clone)?;
            let before = self.log.len();
            match self.log.snapshot(&state).await {
                Ok(()) => {
                    metrics.metadata_snapshots.inc();
                    metrics.metadata_log_bytes.set(self.log.len());
                    tracing::info!(log_bytes = before, "metadata log compacted into a snapshot")
                }
                Err(error) => {
                    tracing::error!(%error, "cannot write metadata snapshot; the log keeps growing")
                }
            }
        }
        Ok(())
    }

    /// Drops the runtime membership of a deleted stream's or topic's groups.
    fn forget_groups(&self, stream_id: u32, topic_id: Option<u32>) {
        let shared = &self.shard.shared;
        for (key, members) in shared.groups.remove_where(stream_id, topic_id) {
            for client_id in members {
                shared
                    .clients
                    .leave_group(client_id, (key.stream_id, key.topic_id, key.group_id));
            }
        }
    }

    /// Registers new partitions as creating, has their owners open them, then marks them ready.
    async fn open_partitions(
        &self,
        keys: impl IntoIterator<Item = PartitionKey>,
    ) -> Result<(), ErrorCode> {
        let shared = &self.shard.shared;
        let mut pending = Vec::new();
        // In a cluster, only the partitions this node is a replica of.
        let held: std::collections::HashSet<PartitionKey> = self
            .metadata(|metadata| held_partition_keys(metadata, &shared.config.cluster))?
            .into_iter()
            .collect();
        for key in keys.into_iter().filter(|key| held.contains(key)) {
            let owner = key.owner(shared.shard_count);
            shared.shards_table.insert_creating(key, owner);
            let (reply, response) = reply_channel();
            shared.inboxes[owner as usize]
                .send_async(ShardMessage::Work(ShardWork::OpenPartition { key, reply }))
                .await
                .map_err(|_| ErrorCode::ShardCommunicationError)?;
            pending.push((key, response));
        }
        let mut result = Ok(());
        for (key, response) in pending {
            match response.recv_async().await {
                Ok(Ok(())) => {}
                Ok(Err(code)) => {
                    tracing::error!(partition = %key, %code, "partition could not be opened");
                    result = Err(code);
                }
                Err(_) => result = Err(ErrorCode::ShardCommunicationError),
            }
        }
        result
    }

    /// Fences partitions (no new request reaches them), has their owners close them and delete
    /// their files, then forgets them.
    async fn close_partitions(&self, keys: Vec<PartitionKey>) {
        let shared = &self.shard.shared;
        let mut pending = Vec::new();
        for key in &keys {
            shared.shards_table.set_state(key, PartitionState::Deleting);
        }
        for key in keys {
            let Some(slot) = shared.shards_table.get(&key) else {
                continue;
            };
            let (reply, response) = reply_channel();
            if shared.inboxes[slot.shard as usize]
                .send_async(ShardMessage::Work(ShardWork::ClosePartition {
                    key,
                    delete: true,
                    reply,
                }))
                .await
                .is_ok()
            {
                pending.push((key, response));
            }
        }
        for (key, response) in pending {
            if let Ok(Err(code)) = response.recv_async().await {
                tracing::error!(partition = %key, %code, "partition could not be deleted cleanly");
            }
            shared.shards_table.remove(&key);
        }
    }
}
