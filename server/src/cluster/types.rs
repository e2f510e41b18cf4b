//! The Raft group's types: what an entry carries and the openraft type configuration.

pub use super::link::Command;
use std::io::Cursor;

openraft::declare_raft_types!(
    /// The metadata group: node ids are the roster's replica ids, a node's address is its
    /// `ip:tcp_replica`.
    pub TypeConfig:
        D = Command,
        R = (),
);

pub type NodeId = u64;
pub type Node = openraft::BasicNode;
pub type LogId = openraft::LogId<NodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type Vote = openraft::Vote<NodeId>;
pub type Raft = openraft::Raft<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type Membership = openraft::StoredMembership<NodeId, Node>;
