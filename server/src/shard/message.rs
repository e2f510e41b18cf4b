//! What shards send each other over their `flume` inboxes. Every request carries its own reply
//! sender (a bounded(1) channel used as a one-shot), so replies need no routing.

use super::table::PartitionKey;
use bytes::Bytes;
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use rill_core::primitives::PollingStrategy;

/// Who a stored offset belongs to. Plain consumers named by string are hashed to a u32 with
/// xxHash32, as upstream does, so both forms name the same offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerKey {
    Consumer(u32),
    Group(u32),
}

/// A data-plane operation on one partition, executed by its owner.
#[derive(Debug)]
pub enum DataOp {
    /// The batch crosses shards by move: its bytes are not copied.
    Append {
        batch: MessageBatch,
    },
    Poll {
        strategy: PollingStrategy,
        count: u32,
        consumer: Option<ConsumerKey>,
        auto_commit: bool,
    },
    Flush {
        fsync: bool,
    },
    DeleteSegments {
        count: u32,
    },
    Purge,
    StoreOffset {
        consumer: ConsumerKey,
        offset: u64,
    },
    GetOffset {
        consumer: ConsumerKey,
    },
    DeleteOffset {
        consumer: ConsumerKey,
    },
}

/// The messages a poll returns, as slices of stored bytes (no copy).
#[derive(Debug, Default)]
pub struct Polled {
    pub partition_id: u32,
    pub current_offset: u64,
    pub count: u32,
    pub chunks: Vec<Bytes>,
}

#[derive(Debug)]
pub enum DataReply {
    Done,
    Polled(Polled),
    /// (partition's current offset, stored offset) or None when nothing is stored.
    Offset(Option<(u64, u64)>),
}

pub type DataResult = Result<DataReply, ErrorCode>;

/// A message to a shard's inbox.
pub enum ShardMessage {
    Data {
        key: PartitionKey,
        op: DataOp,
        reply: flume::Sender<DataResult>,
    },
    /// Create (or open, if its files exist) a partition this shard owns and mark it ready.
    OpenPartition {
        key: PartitionKey,
        reply: flume::Sender<Result<(), ErrorCode>>,
    },
    /// Stop serving a partition; delete its files if `delete`.
    ClosePartition {
        key: PartitionKey,
        delete: bool,
        reply: flume::Sender<Result<(), ErrorCode>>,
    },
    /// A plain TCP connection whose requests go to this shard's partitions: serve it here
    /// (a duplicate of its socket and its session; the sending shard has let go of it).
    AdoptConnection {
        socket: std::os::fd::OwnedFd,
        session: crate::handlers::Session,
    },
    /// Graceful shutdown.
    Stop,
}

/// A one-shot reply channel.
pub fn reply_channel<T>() -> (flume::Sender<T>, flume::Receiver<T>) {
    flume::bounded(1)
}
