//! Encodings shared by many commands (protocol.md section 2).

mod consumer;
mod enums;
mod identifier;
mod name;
mod partitioning;
pub(crate) mod permissions;
mod polling;
pub mod user_headers;

pub use consumer::{Consumer, ConsumerKind, OptionalPartition};
pub use enums::{CompressionAlgorithm, Transport, UserStatus};
pub use identifier::Identifier;
pub use name::{Name, ShortString};
pub use partitioning::Partitioning;
pub use permissions::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};
pub use polling::{PollingKind, PollingStrategy};
