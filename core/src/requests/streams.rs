//! Stream commands (protocol.md 4.4).

use crate::codec::wire_struct;
use crate::primitives::{Identifier, Name};

wire_struct! {
    /// GetStream (200).
    pub struct GetStream { pub stream_id: Identifier }
}
wire_struct! {
    /// GetStreams (201).
    pub struct GetStreams {}
}
wire_struct! {
    /// CreateStream (202): the server assigns the id.
    pub struct CreateStream { pub name: Name }
}
wire_struct! {
    /// DeleteStream (203).
    pub struct DeleteStream { pub stream_id: Identifier }
}
wire_struct! {
    /// UpdateStream (204).
    pub struct UpdateStream { pub stream_id: Identifier, pub name: Name }
}
wire_struct! {
    /// PurgeStream (205).
    pub struct PurgeStream { pub stream_id: Identifier }
}
