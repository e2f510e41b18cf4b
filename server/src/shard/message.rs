//! What shards send each other over their `flume` inboxes, and what goes to shard 0's control
//! lane. Every request carries its own typed reply sender (a bounded(1) channel used as a
//! one-shot), so replies need no routing and no catch-all arms.

use super::table::PartitionKey;
use crate::session::Session;
use bytes::Bytes;
use rill_core::ErrorCode;
use rill_core::message::MessageBatch;
use rill_core::primitives::PollingStrategy;
use rill_core::requests::Request;
use std::sync::Arc;
use std::time::Duration;

/// Who a stored offset belongs to. Plain consumers named by string are hashed to a u32 with
/// xxHash32, as upstream does, so both forms name the same offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerKey {
    Consumer(u32),
    Group(u32),
}

/// Where a reply goes: a one-shot channel.
pub type Reply<T> = flume::Sender<Result<T, ErrorCode>>;

/// What a poll asks for.
#[derive(Debug, Clone, Copy)]
pub struct PollArgs {
    pub strategy: PollingStrategy,
    pub count: u32,
    pub consumer: Option<ConsumerKey>,
    pub auto_commit: bool,
    /// How long a poll by offset or "next" that finds nothing new may wait for the next
    /// message before answering empty (`[system.partition] empty_poll_wait`, given to sessions
    /// that keep polling a partition's tail); zero answers at once.
    pub wait_for_data: Duration,
}

/// The messages a poll returns, as slices of stored bytes (no copy).
#[derive(Debug, Default)]
pub struct Polled {
    pub partition_id: u32,
    pub current_offset: u64,
    pub count: u32,
    /// The offset of the last message handed out, when there is one.
    pub last_offset: Option<u64>,
    pub chunks: Vec<Bytes>,
    /// Beside each chunk, the 0.9 frame checksums a 0.9 poll may send back for it
    /// (`ReadOutcome::frame_checksums`); empty when there are none.
    pub frame_checksums: Vec<Option<Arc<[u64]>>>,
}

/// A consumer's stored offset with the partition's current offset beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredOffset {
    pub current_offset: u64,
    pub stored_offset: u64,
}

/// A typed call on one partition, executed by its owner. The batch of an append crosses
/// shards by move: its bytes are not copied.
#[derive(Debug)]
pub enum PartitionCall {
    Append {
        batch: MessageBatch,
        /// The offset of the batch's first message; None when deduplication dropped it all.
        reply: Reply<Option<u64>>,
    },
    Poll {
        args: PollArgs,
        reply: Reply<Polled>,
    },
    Flush {
        fsync: bool,
        reply: Reply<()>,
    },
    DeleteSegments {
        count: u32,
        reply: Reply<()>,
    },
    Purge {
        reply: Reply<()>,
    },
    StoreOffset {
        consumer: ConsumerKey,
        offset: u64,
        reply: Reply<()>,
    },
    GetOffset {
        consumer: ConsumerKey,
        reply: Reply<Option<StoredOffset>>,
    },
    DeleteOffset {
        consumer: ConsumerKey,
        reply: Reply<()>,
    },
}

impl PartitionCall {
    /// Answers the call with `code` without executing it (the partition is not served here).
    pub fn refuse(self, code: ErrorCode) {
        match self {
            PartitionCall::Append { reply, .. } => {
                let _ = reply.send(Err(code));
            }
            PartitionCall::Flush { reply, .. }
            | PartitionCall::DeleteSegments { reply, .. }
            | PartitionCall::Purge { reply }
            | PartitionCall::StoreOffset { reply, .. }
            | PartitionCall::DeleteOffset { reply, .. } => {
                let _ = reply.send(Err(code));
            }
            PartitionCall::Poll { reply, .. } => {
                let _ = reply.send(Err(code));
            }
            PartitionCall::GetOffset { reply, .. } => {
                let _ = reply.send(Err(code));
            }
        }
    }
}

/// Work a shard does for another: calls on partitions it owns, and opening or closing them.
pub enum ShardWork {
    Partition {
        key: PartitionKey,
        call: PartitionCall,
        /// The request's span on the sending shard (disabled unless traces are exported), so
        /// that the owner's work shows up inside it.
        span: tracing::Span,
    },
    /// Create (or open, if its files exist) a partition this shard owns and mark it ready.
    OpenPartition { key: PartitionKey, reply: Reply<()> },
    /// Stop serving a partition; delete its files if `delete`.
    ClosePartition {
        key: PartitionKey,
        delete: bool,
        reply: Reply<()>,
    },
}

/// A message to a shard's inbox.
pub enum ShardMessage {
    Work(ShardWork),
    /// A plain TCP connection whose requests go to this shard's partitions: serve it here
    /// (a duplicate of its socket and its session; the sending shard has let go of it). Taken
    /// by the front-end, which owns sockets.
    AdoptConnection {
        socket: std::os::fd::OwnedFd,
        session: Session,
    },
    /// Graceful shutdown.
    Stop,
}

/// A metadata change for shard 0's control lane.
pub enum ControlCommand {
    /// A protocol request that changes metadata (streams, topics, users, tokens, groups).
    Request(Request),
    /// A 0.9 CreateTopic with its own segment size (bytes), which 0.8's request cannot carry.
    CreateTopic {
        request: rill_core::requests::CreateTopic,
        segment_size: u64,
    },
    /// ChangePassword, verified on the caller's shard: store `new_hash` if the user's hash is
    /// still `verified_hash` (another change in between fails it with InvalidCredentials).
    SetPassword {
        user_id: u32,
        verified_hash: String,
        new_hash: String,
    },
}

impl ControlCommand {
    /// The command's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            ControlCommand::Request(request) => request.command().name(),
            ControlCommand::CreateTopic { .. } => "CreateTopic",
            ControlCommand::SetPassword { .. } => "ChangePassword",
        }
    }
}

/// A metadata change sent to shard 0's control lane, with who asked.
pub struct ControlRequest {
    pub command: ControlCommand,
    pub user_id: u32,
    /// The asking session's client id (a password change keeps that session, ends the others).
    pub client_id: u32,
    /// The asking session's revocation flag: a session whose user was deleted or changed
    /// while its request waited in the lane is refused, never served as a user that reuses
    /// the id.
    pub revoked: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// In a cluster: the request came from a follower, so this lane runs it or refuses it,
    /// never forwards it again.
    pub forwarded: bool,
    pub reply: Reply<Vec<u8>>,
}

/// A one-shot reply channel.
pub fn reply_channel<T>() -> (flume::Sender<T>, flume::Receiver<T>) {
    flume::bounded(1)
}
