//! The one routing point for data requests: a partition's owner is looked up once, giving
//! [`Route::Local`] (the partition itself, on this thread), [`Route::Remote`] (the owning
//! shard) or, in a cluster, [`Route::Node`] (the node that leads the partition), and the
//! request is a typed call on the resulting [`Target`].

use super::Shard;
use super::message::{
    ConsumerKey, PartitionCall, PollArgs, Polled, Reply, ShardMessage, ShardWork, StoredOffset,
    reply_channel,
};
use super::partitions::LocalPartition;
use super::table::PartitionKey;
use crate::cluster::link::Relay;
use crate::cluster::partition_call::{NodeAnswer, NodeCall};
use crate::views::{CounterSource, Counts};
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use std::rc::Rc;

pub enum Route {
    Local(Rc<LocalPartition>),
    Remote(u16),
    /// Another cluster node leads the partition: the call goes there over a replica
    /// connection (`cluster::partition_call`).
    Node(u64),
}

/// A routed partition: where a data request on it runs.
pub struct Target<'a> {
    shard: &'a Shard,
    key: PartitionKey,
    route: Route,
}

impl Shard {
    /// Routes a data request: one look-up in the shards table (the partition must be ready),
    /// then this shard's own partitions when it is the owner. The owner checks again that it
    /// still serves the partition when a call arrives through its inbox.
    pub fn route(&self, key: PartitionKey) -> Result<Target<'_>, ErrorCode> {
        let cluster = self.shared.cluster.as_ref();
        if let Some(cluster) = cluster
            && let Some(leader) = cluster.view.partition_leader(&key)
            && leader != cluster.view.me
        {
            return Ok(Target {
                shard: self,
                key,
                route: Route::Node(leader),
            });
        }
        // Without a known leader, a replica serves the partition here (its appends wait for
        // one); another node can only ask again later.
        let owner = self
            .shared
            .shards_table
            .ready_owner(&key)
            .ok_or(match cluster {
                Some(_) => ErrorCode::TransientNotAccepted,
                None => ErrorCode::PartitionNotFound,
            })?;
        let route = if owner == self.id {
            Route::Local(
                self.local_partition(&key)
                    .ok_or(ErrorCode::PartitionNotFound)?,
            )
        } else {
            Route::Remote(owner)
        };
        Ok(Target {
            shard: self,
            key,
            route,
        })
    }
}

impl Target<'_> {
    /// The shard that owns the partition.
    pub fn owner(&self) -> u16 {
        match self.route {
            Route::Local(_) | Route::Node(_) => self.shard.id,
            Route::Remote(owner) => owner,
        }
    }

    /// Sends a call to the node that leads the partition and waits for its answer.
    async fn node(&self, leader: u64, call: NodeCall) -> Result<NodeAnswer, ErrorCode> {
        self.shard.metrics.data_forwards.inc();
        let cluster = self
            .shard
            .shared
            .cluster
            .as_ref()
            .ok_or(ErrorCode::PartitionNotFound)?;
        let (reply, answer) = reply_channel();
        cluster
            .relay
            .send_async(Relay::Partition {
                leader,
                key: self.key,
                call,
                reply,
            })
            .await
            .map_err(|_| ErrorCode::TransientNotAccepted)?;
        answer
            .recv_async()
            .await
            .map_err(|_| ErrorCode::TransientNotAccepted)?
            .map_err(|code| ErrorCode::from_code(code).unwrap_or(ErrorCode::Error))
    }

    async fn node_done(&self, leader: u64, call: NodeCall) -> Result<(), ErrorCode> {
        self.node_expect(leader, call, |answer| {
            matches!(answer, NodeAnswer::Done).then_some(())
        })
        .await
    }

    /// A node call whose answer must be `pick`'s kind.
    async fn node_expect<T>(
        &self,
        leader: u64,
        call: NodeCall,
        pick: impl FnOnce(NodeAnswer) -> Option<T>,
    ) -> Result<T, ErrorCode> {
        pick(self.node(leader, call).await?).ok_or(ErrorCode::Error)
    }

    /// Sends a call to the owner's inbox and waits for its typed reply.
    async fn remote<T>(
        &self,
        owner: u16,
        call: impl FnOnce(Reply<T>) -> PartitionCall,
    ) -> Result<T, ErrorCode> {
        self.shard.metrics.data_forwards.inc();
        let (reply, response) = reply_channel();
        let message = ShardMessage::Work(ShardWork::Partition {
            key: self.key,
            call: call(reply),
            span: tracing::Span::current(),
        });
        self.shard.shared.inboxes[owner as usize]
            .send_async(message)
            .await
            .map_err(|_| ErrorCode::ShardCommunicationError)?;
        response
            .recv_async()
            .await
            .map_err(|_| ErrorCode::ShardCommunicationError)?
    }

    /// Appends a batch; returns the offset of its first message, None when deduplication
    /// dropped every message.
    pub async fn append(self, batch: MessageBatch) -> Result<Option<u64>, ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.append(batch).await,
            Route::Node(leader) => {
                self.node_expect(*leader, NodeCall::Append(batch), |answer| match answer {
                    NodeAnswer::Appended(base) => Some(base),
                    _ => None,
                })
                .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Append { batch, reply })
                    .await
            }
        }
    }

    pub async fn poll(self, args: PollArgs) -> Result<Polled, ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.poll(args).await,
            Route::Node(leader) => {
                self.node_expect(*leader, NodeCall::Poll(args), |answer| match answer {
                    NodeAnswer::Polled(polled) => Some(polled),
                    _ => None,
                })
                .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Poll { args, reply })
                    .await
            }
        }
    }

    pub async fn flush(self, fsync: bool) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.flush(fsync).await,
            Route::Node(leader) => self.node_done(*leader, NodeCall::Flush { fsync }).await,
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Flush { fsync, reply })
                    .await
            }
        }
    }

    pub async fn delete_segments(self, count: u32) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.delete_segments(count).await,
            Route::Node(leader) => {
                self.node_done(*leader, NodeCall::DeleteSegments { count })
                    .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::DeleteSegments {
                    count,
                    reply,
                })
                .await
            }
        }
    }

    pub async fn purge(self) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.purge().await,
            Route::Node(leader) => self.node_done(*leader, NodeCall::Purge).await,
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Purge { reply })
                    .await
            }
        }
    }

    pub async fn store_offset(self, consumer: ConsumerKey, offset: u64) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.store_consumer_offset(consumer, offset).await,
            Route::Node(leader) => {
                self.node_done(*leader, NodeCall::StoreOffset { consumer, offset })
                    .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::StoreOffset {
                    consumer,
                    offset,
                    reply,
                })
                .await
            }
        }
    }

    pub async fn offset(self, consumer: ConsumerKey) -> Result<Option<StoredOffset>, ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.consumer_offset(consumer),
            Route::Node(leader) => {
                self.node_expect(
                    *leader,
                    NodeCall::GetOffset(consumer),
                    |answer| match answer {
                        NodeAnswer::Offset(offset) => Some(offset),
                        _ => None,
                    },
                )
                .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::GetOffset { consumer, reply })
                    .await
            }
        }
    }

    /// The counters stream and topic reads show.
    pub async fn counts(self) -> Result<Counts, ErrorCode> {
        match &self.route {
            Route::Node(leader) => {
                self.node_expect(*leader, NodeCall::Counters, |answer| match answer {
                    NodeAnswer::Counts(counts) => Some(counts),
                    _ => None,
                })
                .await
            }
            Route::Local(_) | Route::Remote(_) => {
                Ok(self.shard.shared.shards_table.counts(&self.key))
            }
        }
    }

    pub async fn delete_offset(self, consumer: ConsumerKey) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.delete_consumer_offset(consumer).await,
            Route::Node(leader) => {
                self.node_done(*leader, NodeCall::DeleteOffset(consumer))
                    .await
            }
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::DeleteOffset {
                    consumer,
                    reply,
                })
                .await
            }
        }
    }
}
