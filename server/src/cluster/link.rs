//! What the rest of the server knows of the cluster: the roster with each node's live role and
//! health (`ClusterView`, read by GetClusterMetadata), and the channels between shard 0's
//! control lane and the cluster thread (proposals out, committed changes in).

use crate::config::{ClusterConfig, NodePorts};
use crate::metadata::{Leadership, Metadata};
use crate::shard::table::PartitionKey;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One replicated change of the metadata: a `MetadataOp` in the metadata log's binary form
/// (`metadata/codec.rs`), so every node applies exactly the bytes the leader validated.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub op: Vec<u8>,
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Command({} bytes)", self.op.len())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One committed metadata change on its way to the control lane, in log order.
pub struct Applied {
    /// The entry's log id: index, term and the leader that appended it.
    pub index: u64,
    pub term: u64,
    pub leader: u64,
    pub command: Command,
    /// Answered by the lane once the change is applied (or skipped as applied before).
    pub done: flume::Sender<()>,
}

/// Why a proposal was not committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposeError {
    /// This node is not the leader (the leader's replica id, when one is known).
    NotLeader(Option<u64>),
    /// Leadership was lost or the cluster thread stopped before the change committed. It may
    /// still commit later (under the next leader) and then arrive as `Applied`.
    Failed(String),
}

/// A metadata change the leader's control lane wants committed.
pub struct Proposal {
    pub command: Command,
    /// The committed entry's index.
    pub reply: flume::Sender<Result<u64, ProposeError>>,
}

/// A metadata change asked of a follower, sent to the leader's control lane as it is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forwarded {
    pub user_id: u32,
    pub client_id: u32,
    pub command: ForwardedCommand,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ForwardedCommand {
    /// A protocol request: its command code and payload.
    Request { code: u32, payload: Vec<u8> },
    /// `ControlCommand::CreateTopic`: the CreateTopic payload and the topic's segment size.
    CreateTopic { payload: Vec<u8>, segment_size: u64 },
    /// A password change verified on the follower (`ControlCommand::SetPassword`).
    SetPassword {
        user_id: u32,
        verified_hash: String,
        new_hash: String,
    },
}

/// The leader's answer: the reply's payload and the index its change was committed at (the
/// follower answers once it has applied that far), or the status code of a refusal.
pub type ForwardAnswer = Result<(Vec<u8>, u64), u32>;

/// A forwarded change on its way from the follower's control lane to the cluster thread.
pub struct Forward {
    pub request: Forwarded,
    pub reply: flume::Sender<ForwardAnswer>,
}

/// A follower's request for the leader, or the end of a session that relayed.
pub enum Relay {
    Request {
        request: super::relay::RelayRequest,
        reply: flume::Sender<Result<super::relay::Relayed, u32>>,
    },
    Gone {
        client: u32,
    },
    /// A data call on a partition another node leads (`partition_call.rs`).
    Partition {
        leader: u64,
        key: PartitionKey,
        call: super::partition_call::NodeCall,
        reply: flume::Sender<Result<super::partition_call::NodeAnswer, u32>>,
    },
}

/// What every shard holds of the cluster: the view, and the way to the leader for relayed
/// requests.
#[derive(Clone)]
pub struct ClusterHandle {
    pub view: std::sync::Arc<ClusterView>,
    pub relay: flume::Sender<Relay>,
}

impl ClusterHandle {
    /// True when this node passes its clients' data requests to the leader.
    pub fn relays(&self) -> bool {
        !self.view.is_leader()
    }
}

/// A partition's nodes in preference order: the roster rotated by the partition's ids, so that
/// a topic's partitions start on every node in turn. The first `replication_factor` of them
/// hold the partition (its replicas), and the first of those that is reachable leads it
/// (`control/leadership.rs`).
pub fn preference(roster: &[u64], key: &PartitionKey) -> Vec<u64> {
    let n = roster.len();
    if n == 0 {
        return Vec::new();
    }
    let start = (key.stream_id as usize)
        .wrapping_mul(7)
        .wrapping_add(key.topic_id as usize)
        .wrapping_add(key.partition_id as usize)
        % n;
    (0..n).map(|i| roster[(start + i) % n]).collect()
}

/// The replication factor a topic's stored factor stands for: 0 and 1 are the configured
/// default (`[cluster] replication_factor`). 1 is what 0.8 servers store for 0 and what the
/// official CLI sends unless told otherwise, so it cannot mean "one copy" without making every
/// such topic unreplicated; a cluster of single copies sets the default to 1.
pub fn effective_factor(stored: u8, default: u8) -> u8 {
    if stored <= 1 { default } else { stored }
}

/// The nodes holding a partition of a topic with `replication_factor` (at least one, at most
/// the roster).
pub fn replicas(roster: &[u64], key: &PartitionKey, replication_factor: u8) -> Vec<u64> {
    let mut nodes = preference(roster, key);
    nodes.truncate(usize::from(replication_factor).max(1));
    nodes
}

/// The partitions this node holds: all of them on a single node; in a cluster, those whose
/// replicas (from the topic's replication factor) include this node.
pub fn held_partition_keys(metadata: &Metadata, cluster: &ClusterConfig) -> Vec<PartitionKey> {
    let me = cluster.replica_id.filter(|_| cluster.enabled);
    let roster: Vec<u64> = cluster.nodes.iter().map(|node| node.replica_id).collect();
    let mut keys = Vec::new();
    for stream in metadata.streams.values() {
        for topic in stream.topics.values() {
            keys.extend(
                PartitionKey::of_topic(stream.id, topic)
                    .into_iter()
                    .filter(|key| {
                        me.is_none_or(|me| {
                            let factor = effective_factor(
                                topic.replication_factor,
                                cluster.replication_factor,
                            );
                            replicas(&roster, key, factor).contains(&me)
                        })
                    }),
            );
        }
    }
    keys
}

/// Status codes of protocol.md §7.10.
pub const STATUS_HEALTHY: u8 = 0;
pub const STATUS_UNREACHABLE: u8 = 3;
pub const ROLE_LEADER: u8 = 0;
pub const ROLE_FOLLOWER: u8 = 1;

const NO_LEADER: u64 = u64::MAX;

pub struct NodeView {
    pub replica_id: u64,
    pub name: String,
    /// The address clients are given (advertised_address, else ip).
    pub host: String,
    pub ports: NodePorts,
    /// Milliseconds since the view was made when this node was last heard from; 0 = never.
    heard_at: AtomicU64,
    /// When it was first heard from after a silence (or ever).
    up_at: AtomicU64,
}

/// Where a partition lives: its replicas, and the one that leads it.
struct Placement {
    leader: Option<Leadership>,
    replicas: Vec<u64>,
}

/// The roster and what this node currently believes about it.
pub struct ClusterView {
    pub name: String,
    pub me: u64,
    pub nodes: Vec<NodeView>,
    leader: AtomicU64,
    term: AtomicU64,
    /// Every partition's leader and replicas, from the applied metadata (`sync_leaders`).
    partitions: DashMap<PartitionKey, Placement>,
    leaders_changed: tokio::sync::Notify,
    /// A peer not heard from for this long is reported unreachable.
    pub freshness: Duration,
    /// `[cluster] replication_factor`.
    pub default_factor: u8,
    since: Instant,
}

impl ClusterView {
    pub fn new(config: &ClusterConfig, me: u64) -> ClusterView {
        ClusterView {
            name: config.name.clone(),
            me,
            nodes: config
                .nodes
                .iter()
                .map(|node| NodeView {
                    replica_id: node.replica_id,
                    name: node.name.clone(),
                    host: node.client_host().to_string(),
                    ports: node.ports,
                    heard_at: AtomicU64::new(0),
                    up_at: AtomicU64::new(0),
                })
                .collect(),
            leader: AtomicU64::new(NO_LEADER),
            term: AtomicU64::new(0),
            partitions: DashMap::new(),
            leaders_changed: tokio::sync::Notify::new(),
            // Peers ping each other every heartbeat and wait up to two for the answer; three
            // heartbeats (at least 1.5 s) without a word is unreachable.
            freshness: (config.commit_broadcast_interval.0 * 3).max(Duration::from_millis(1500)),
            default_factor: config.replication_factor,
            since: Instant::now(),
        }
    }

    /// Records that `replica_id` answered or spoke just now.
    pub fn heard(&self, replica_id: u64) {
        if let Some(node) = self.nodes.iter().find(|node| node.replica_id == replica_id) {
            let now = self.since.elapsed().as_millis() as u64;
            let before = node.heard_at.swap(now.max(1), Ordering::Relaxed);
            if before == 0 || now.saturating_sub(before) > self.freshness.as_millis() as u64 {
                node.up_at.store(now, Ordering::Relaxed);
            }
        }
    }

    pub fn set_leader(&self, leader: Option<u64>) {
        self.leader
            .store(leader.unwrap_or(NO_LEADER), Ordering::Release);
    }

    /// The metadata group's current Raft term, as this node last saw it.
    pub fn term(&self) -> u64 {
        self.term.load(Ordering::Acquire)
    }

    pub fn set_term(&self, term: u64) {
        self.term.fetch_max(term, Ordering::AcqRel);
    }

    pub fn leader(&self) -> Option<u64> {
        Some(self.leader.load(Ordering::Acquire)).filter(|id| *id != NO_LEADER)
    }

    pub fn is_leader(&self) -> bool {
        self.leader() == Some(self.me)
    }

    /// The roster's replica ids, in roster order.
    pub fn roster(&self) -> Vec<u64> {
        self.nodes.iter().map(|node| node.replica_id).collect()
    }

    /// The node that leads `key`'s partition, as far as this node knows.
    pub fn partition_leader(&self, key: &PartitionKey) -> Option<u64> {
        self.partitions
            .get(key)?
            .leader
            .map(|leadership| leadership.node)
    }

    /// The partition's leader and epoch, as last applied here.
    pub fn leadership(&self, key: &PartitionKey) -> Option<Leadership> {
        self.partitions.get(key)?.leader
    }

    /// The nodes holding the partition.
    pub fn replicas(&self, key: &PartitionKey) -> Option<Vec<u64>> {
        Some(self.partitions.get(key)?.replicas.clone())
    }

    /// Takes the partitions' leaders and replicas from the metadata, after every change
    /// applied to it.
    pub fn sync_leaders(&self, metadata: &Metadata) {
        let mut present = std::collections::HashSet::new();
        let mut changed = false;
        let roster = self.roster();
        for stream in metadata.streams.values() {
            for topic in stream.topics.values() {
                for partition in &topic.partitions {
                    let key = PartitionKey::new(stream.id, topic.id, partition.id);
                    present.insert(key);
                    let placement = Placement {
                        leader: partition.leader,
                        replicas: replicas(
                            &roster,
                            &key,
                            effective_factor(topic.replication_factor, self.default_factor),
                        ),
                    };
                    let before = self.partitions.insert(key, placement);
                    changed |= before.is_none_or(|before| before.leader != partition.leader);
                }
            }
        }
        self.partitions.retain(|key, _| {
            let keep = present.contains(key);
            changed |= !keep;
            keep
        });
        if changed {
            self.leaders_changed.notify_one();
        }
    }

    /// Returns once a partition's leader changed (since the last call returned).
    pub async fn leaders_changed(&self) {
        self.leaders_changed.notified().await;
    }

    /// Whether this node has run long enough to have heard from every reachable peer (they
    /// are pinged every heartbeat): before that, a peer not heard from may simply not have been
    /// asked yet.
    pub fn warmed_up(&self) -> bool {
        self.since.elapsed() >= self.freshness * 2
    }

    /// How long `replica_id` has been heard from without a gap (zero while unreachable).
    pub fn healthy_for(&self, replica_id: u64) -> Duration {
        if replica_id == self.me {
            return self.since.elapsed();
        }
        if self.status(replica_id) != STATUS_HEALTHY {
            return Duration::ZERO;
        }
        self.nodes
            .iter()
            .find(|node| node.replica_id == replica_id)
            .map_or(Duration::ZERO, |node| {
                let up = node.up_at.load(Ordering::Relaxed);
                let now = self.since.elapsed().as_millis() as u64;
                Duration::from_millis(now.saturating_sub(up))
            })
    }

    pub fn role(&self, replica_id: u64) -> u8 {
        if self.leader() == Some(replica_id) {
            ROLE_LEADER
        } else {
            ROLE_FOLLOWER
        }
    }

    pub fn status(&self, replica_id: u64) -> u8 {
        if replica_id == self.me {
            return STATUS_HEALTHY;
        }
        let Some(node) = self.nodes.iter().find(|node| node.replica_id == replica_id) else {
            return STATUS_UNREACHABLE;
        };
        let heard = node.heard_at.load(Ordering::Relaxed);
        let now = self.since.elapsed().as_millis() as u64;
        if heard != 0 && now.saturating_sub(heard) <= self.freshness.as_millis() as u64 {
            STATUS_HEALTHY
        } else {
            STATUS_UNREACHABLE
        }
    }
}

/// Shard 0's ends of the cluster thread's channels.
pub struct Link {
    pub view: std::sync::Arc<ClusterView>,
    pub proposals: flume::Sender<Proposal>,
    pub applied: flume::Receiver<Applied>,
    pub forwards: flume::Sender<Forward>,
    pub relay: flume::Sender<Relay>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ClusterView {
        let table: toml::Table = r#"
            enabled = true
            name = "c"
            heartbeat_timeout = "2 s"
            commit_broadcast_interval = "200 ms"
            auth = { enabled = false, shared_secret = "", previous_shared_secret = "" }
            nodes = [
                { name = "a", ip = "127.0.0.1", replica_id = 0, ports = { tcp = 1, tcp_replica = 2 } },
                { name = "b", ip = "127.0.0.1", replica_id = 5, ports = { tcp = 3, tcp_replica = 4 } },
            ]
        "#
        .parse()
        .unwrap();
        ClusterView::new(&table.try_into().unwrap(), 0)
    }

    #[test]
    fn roles_follow_the_leader_and_health_follows_what_was_heard() {
        let view = view();
        assert_eq!(view.leader(), None);
        assert_eq!(view.role(0), ROLE_FOLLOWER);
        view.set_leader(Some(5));
        assert_eq!((view.role(5), view.role(0)), (ROLE_LEADER, ROLE_FOLLOWER));
        assert!(!view.is_leader());
        assert_eq!(view.status(0), STATUS_HEALTHY, "itself");
        assert_eq!(view.status(5), STATUS_UNREACHABLE, "never heard");
        view.heard(5);
        assert_eq!(view.status(5), STATUS_HEALTHY);
        assert_eq!(view.status(9), STATUS_UNREACHABLE, "not in the roster");
    }
}
