//! The one routing point for data requests: a partition's owner is looked up once, giving
//! [`Route::Local`] (the partition itself, on this thread) or [`Route::Remote`] (the owning
//! shard), and the request is a typed call on the resulting [`Target`].

use super::Shard;
use super::message::{
    ConsumerKey, PartitionCall, PollArgs, Polled, Reply, ShardMessage, ShardWork, StoredOffset,
    reply_channel,
};
use super::partitions::LocalPartition;
use super::table::PartitionKey;
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use std::rc::Rc;

pub enum Route {
    Local(Rc<LocalPartition>),
    Remote(u16),
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
        let owner = self
            .shared
            .shards_table
            .ready_owner(&key)
            .ok_or(ErrorCode::PartitionNotFound)?;
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
            Route::Local(_) => self.shard.id,
            Route::Remote(owner) => owner,
        }
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
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Append { batch, reply })
                    .await
            }
        }
    }

    pub async fn poll(self, args: PollArgs) -> Result<Polled, ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.poll(args).await,
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Poll { args, reply })
                    .await
            }
        }
    }

    pub async fn flush(self, fsync: bool) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.flush(fsync).await,
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Flush { fsync, reply })
                    .await
            }
        }
    }

    pub async fn delete_segments(self, count: u32) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.delete_segments(count).await,
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
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::Purge { reply })
                    .await
            }
        }
    }

    pub async fn store_offset(self, consumer: ConsumerKey, offset: u64) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.store_consumer_offset(consumer, offset).await,
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
            Route::Remote(owner) => {
                self.remote(*owner, |reply| PartitionCall::GetOffset { consumer, reply })
                    .await
            }
        }
    }

    pub async fn delete_offset(self, consumer: ConsumerKey) -> Result<(), ErrorCode> {
        match &self.route {
            Route::Local(partition) => partition.delete_consumer_offset(consumer).await,
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
