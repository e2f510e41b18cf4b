//! Clustering: the metadata replicated through one Raft group (openraft) among the nodes of
//! `[cluster]`'s roster.
//!
//! `link` is what the rest of the server sees (the view of the roster, the channels to and from
//! shard 0's control lane); the rest runs on the cluster thread (`node`): the replica port's
//! bytes (`wire`) and its listener (`replica_port`), openraft's RPCs to peers (`network`), the
//! Raft log (`store`) and the state machine that hands committed changes to the control lane
//! (`machine`), the calls a follower makes to its leader (`leader_calls`, `relay`) and to a partition's
//! leader (`partition_call`), the
//! partitions' replication tasks (`replication`), and TLS on replica connections (`tls`).

mod leader_calls;
pub mod link;
mod machine;
mod network;
mod node;
pub mod partition_call;
mod reader;
pub mod relay;
mod replica_port;
mod replication;
mod store;
mod tls;
mod types;
mod wire;

pub use node::start;
