//! Consumer group commands (protocol.md 4.7).

use crate::codec::wire_struct;
use crate::primitives::{Identifier, Name};

wire_struct! {
    /// GetConsumerGroup (600).
    pub struct GetConsumerGroup { pub stream_id: Identifier, pub topic_id: Identifier, pub group_id: Identifier }
}
wire_struct! {
    /// GetConsumerGroups (601).
    pub struct GetConsumerGroups { pub stream_id: Identifier, pub topic_id: Identifier }
}
wire_struct! {
    /// CreateConsumerGroup (602): the server assigns the id.
    pub struct CreateConsumerGroup { pub stream_id: Identifier, pub topic_id: Identifier, pub name: Name }
}
wire_struct! {
    /// DeleteConsumerGroup (603).
    pub struct DeleteConsumerGroup { pub stream_id: Identifier, pub topic_id: Identifier, pub group_id: Identifier }
}
wire_struct! {
    /// JoinConsumerGroup (604): makes the session a member.
    pub struct JoinConsumerGroup { pub stream_id: Identifier, pub topic_id: Identifier, pub group_id: Identifier }
}
wire_struct! {
    /// LeaveConsumerGroup (605).
    pub struct LeaveConsumerGroup { pub stream_id: Identifier, pub topic_id: Identifier, pub group_id: Identifier }
}
