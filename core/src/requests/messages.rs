//! Message commands (protocol.md 4.9). SendMessages lives in `crate::message`.

use crate::codec::wire_struct;
use crate::primitives::{Consumer, Identifier, OptionalPartition, PollingStrategy};

pub use crate::message::SendMessages;

wire_struct! {
    /// PollMessages (100).
    pub struct PollMessages {
        pub consumer: Consumer,
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: OptionalPartition,
        pub strategy: PollingStrategy,
        pub count: u32,
        pub auto_commit: bool,
    }
}
wire_struct! {
    /// FlushUnsavedBuffer (102): forces a partition's buffered messages to disk.
    pub struct FlushUnsavedBuffer {
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: u32,
        pub fsync: bool,
    }
}
