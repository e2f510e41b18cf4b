//! Consumer offset commands (protocol.md 4.8).

use crate::codec::wire_struct;
use crate::primitives::{Consumer, Identifier, OptionalPartition};

wire_struct! {
    /// GetConsumerOffset (120).
    pub struct GetConsumerOffset {
        pub consumer: Consumer,
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: OptionalPartition,
    }
}
wire_struct! {
    /// StoreConsumerOffset (121).
    pub struct StoreConsumerOffset {
        pub consumer: Consumer,
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: OptionalPartition,
        pub offset: u64,
    }
}
wire_struct! {
    /// DeleteConsumerOffset (122).
    pub struct DeleteConsumerOffset {
        pub consumer: Consumer,
        pub stream_id: Identifier,
        pub topic_id: Identifier,
        pub partition_id: OptionalPartition,
    }
}
