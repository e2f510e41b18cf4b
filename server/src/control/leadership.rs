//! Partition leadership in a cluster. The metadata leader's lane assigns every partition a
//! leader (as Kafka's controller does) and commits the assignments through the metadata group
//! (`MetadataOp::AssignLeaders`), so every node routes a partition's data to the same node and
//! every replica follows it in the same epoch.
//!
//! * **Spread.** Each partition has a preference order over the roster, rotated by its id and
//!   its topic (`link::preference`); its first `replication_factor` nodes hold it, and only
//!   they may lead it. A topic's partitions are led by every node in turn.
//! * **Failover.** A partition whose leader is not heard from (`ClusterView::status`) moves to
//!   the first node of its order that is. Nothing is decided about a peer's health until this
//!   node has run for a few heartbeats (`ClusterView::warmed_up`), so a node that just started
//!   does not take every partition from peers it has simply not heard yet. Every node pings its
//!   peers all along, so a newly elected metadata leader judges at once.
//! * **Return.** Once a partition's preferred node has been heard from without a gap for
//!   `SETTLED`, the partition moves back to it (it caught up as a follower meanwhile).
//! * **Epochs** grow per partition and across leaders: a new epoch is above both the last one
//!   and `term << 32`, so an assignment a deposed leader proposed can never outrank one of a
//!   later term, and applying ignores any assignment not above the current epoch.

use super::ControlPlane;
use crate::cluster::link::{ClusterView, effective_factor, replicas};
use crate::metadata::{Leadership, Metadata, MetadataOp};
use crate::shard::table::PartitionKey;
use std::time::Duration;

/// How long a partition's preferred node must have been reachable before leadership returns to
/// it.
const SETTLED: Duration = Duration::from_secs(5);

/// What the plan needs to know of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not heard from lately.
    Unreachable,
    /// Reachable, for less than `SETTLED`.
    Reachable,
    /// Reachable for at least `SETTLED`.
    Settled,
}

/// The assignments that should change, one op per topic. `judge_failures` is false while
/// unreachable peers may simply not have been heard yet: then a partition only gets a leader
/// that is its preferred node, and no leader is taken away.
pub fn plan(
    metadata: &Metadata,
    roster: &[u64],
    default_factor: u8,
    health: impl Fn(u64) -> Health,
    term: u64,
    judge_failures: bool,
) -> Vec<MetadataOp> {
    let mut ops = Vec::new();
    if roster.is_empty() {
        return ops;
    }
    for stream in metadata.streams.values() {
        for topic in stream.topics.values() {
            let mut leaders = Vec::new();
            for partition in &topic.partitions {
                let key = PartitionKey::new(stream.id, topic.id, partition.id);
                // Only a replica may lead: the others hold nothing of the partition.
                let factor = effective_factor(topic.replication_factor, default_factor);
                let order = replicas(roster, &key, factor);
                let preferred = order[0];
                let current = partition.leader;
                let chosen = match current {
                    Some(current)
                        if order.contains(&current.node)
                            && (health(current.node) != Health::Unreachable || !judge_failures) =>
                    {
                        (current.node != preferred && health(preferred) == Health::Settled)
                            .then_some(preferred)
                    }
                    _ if !judge_failures => {
                        (health(preferred) != Health::Unreachable).then_some(preferred)
                    }
                    _ => order
                        .iter()
                        .copied()
                        .find(|node| health(*node) != Health::Unreachable),
                };
                if let Some(node) = chosen.filter(|node| Some(*node) != current.map(|c| c.node)) {
                    let epoch = current
                        .map_or(0, |current| current.epoch.saturating_add(1))
                        .max(term << 32);
                    leaders.push((partition.id, Leadership { node, epoch }));
                }
            }
            if !leaders.is_empty() {
                ops.push(MetadataOp::AssignLeaders {
                    stream_id: stream.id,
                    topic_id: topic.id,
                    leaders,
                });
            }
        }
    }
    ops
}

fn health_in(view: &ClusterView, node: u64) -> Health {
    let up = view.healthy_for(node);
    if up >= SETTLED {
        Health::Settled
    } else if up > Duration::ZERO {
        Health::Reachable
    } else {
        Health::Unreachable
    }
}

impl ControlPlane {
    /// On the metadata leader: commits whatever partition leadership should change now.
    pub(super) async fn assign_leaders(&mut self) {
        let Some(link) = self.link.as_ref() else {
            return;
        };
        let view = link.view.clone();
        if !view.is_leader() {
            return;
        }
        let judge_failures = view.warmed_up();
        let roster = view.roster();
        // A leader that hears from no majority commits nothing: proposing would only hold the
        // lane for the commit timeout, again and again, while it is cut off.
        let heard = roster
            .iter()
            .filter(|node| health_in(&view, **node) != Health::Unreachable)
            .count();
        if heard < roster.len() / 2 + 1 {
            return;
        }
        let Ok(ops) = self.metadata(|metadata| {
            plan(
                metadata,
                &roster,
                view.default_factor,
                |node| health_in(&view, node),
                view.term(),
                judge_failures,
            )
        }) else {
            return;
        };
        for op in ops {
            if let MetadataOp::AssignLeaders {
                stream_id,
                topic_id,
                leaders,
            } = &op
            {
                tracing::info!(stream_id, topic_id, ?leaders, "assigning partition leaders");
            }
            if let Err(code) = self.commit(op).await {
                tracing::warn!(%code, "partition leaders not assigned");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::TopicSettings;
    use rill_core::primitives::CompressionAlgorithm;

    fn metadata(partitions: u32) -> Metadata {
        let mut metadata = Metadata::default();
        metadata.apply(&MetadataOp::CreateStream {
            id: 0,
            name: "s".into(),
            created_at: 0,
        });
        metadata.apply(&MetadataOp::CreateTopic {
            stream_id: 0,
            id: 0,
            created_at: 0,
            settings: TopicSettings {
                name: "t".into(),
                compression: CompressionAlgorithm::None,
                message_expiry: u64::MAX,
                max_topic_size: u64::MAX,
                replication_factor: 3,
            },
            partitions_count: partitions,
            segment_size: 0,
        });
        metadata
    }

    fn leaders(metadata: &Metadata) -> Vec<Option<Leadership>> {
        metadata.streams[&0].topics[&0]
            .partitions
            .iter()
            .map(|partition| partition.leader)
            .collect()
    }

    fn apply_plan(metadata: &mut Metadata, health: impl Fn(u64) -> Health, term: u64) {
        for op in plan(metadata, &[1, 2, 3], 3, health, term, true) {
            metadata.apply(&op);
        }
    }

    #[test]
    fn leaders_spread_over_the_nodes() {
        let mut metadata = metadata(6);
        apply_plan(&mut metadata, |_| Health::Settled, 2);
        let mut counts = std::collections::BTreeMap::new();
        for leader in leaders(&metadata) {
            let leader = leader.expect("every partition led");
            assert_eq!(leader.epoch, 2 << 32);
            *counts.entry(leader.node).or_insert(0) += 1;
        }
        assert_eq!(counts.into_values().collect::<Vec<_>>(), vec![2, 2, 2]);
        assert!(
            plan(&metadata, &[1, 2, 3], 3, |_| Health::Settled, 2, true).is_empty(),
            "a settled assignment stays"
        );
    }

    #[test]
    fn an_unreachable_leader_is_replaced_and_its_partitions_return_once_it_settled() {
        let mut metadata = metadata(3);
        apply_plan(&mut metadata, |_| Health::Settled, 2);
        let before = leaders(&metadata);
        let lost = before[0].unwrap().node;
        apply_plan(
            &mut metadata,
            |node| {
                if node == lost {
                    Health::Unreachable
                } else {
                    Health::Settled
                }
            },
            2,
        );
        let during = leaders(&metadata);
        assert!(during.iter().all(|leader| leader.unwrap().node != lost));
        assert!(during[0].unwrap().epoch > before[0].unwrap().epoch);
        assert_eq!(
            during[1], before[1],
            "partitions led elsewhere keep their leader"
        );
        // Back, but not settled yet: nothing moves.
        let back = |health| {
            move |node| {
                if node == lost {
                    health
                } else {
                    Health::Settled
                }
            }
        };
        assert!(plan(&metadata, &[1, 2, 3], 3, back(Health::Reachable), 3, true).is_empty());
        apply_plan(&mut metadata, back(Health::Settled), 3);
        let after = leaders(&metadata);
        assert_eq!(after[0].unwrap().node, lost);
        assert_eq!(after[0].unwrap().epoch, 3 << 32, "a later term's epoch");
    }

    #[test]
    fn a_fresh_leader_takes_nothing_from_peers_it_has_not_heard_yet() {
        let mut metadata = metadata(3);
        apply_plan(&mut metadata, |_| Health::Settled, 2);
        let assigned = leaders(&metadata);
        let unheard = |node| {
            if node == 1 {
                Health::Reachable
            } else {
                Health::Unreachable
            }
        };
        assert!(plan(&metadata, &[1, 2, 3], 3, unheard, 3, false).is_empty());
        // A new partition gets its preferred node only.
        metadata.apply(&MetadataOp::CreatePartitions {
            stream_id: 0,
            topic_id: 0,
            count: 3,
            created_at: 0,
        });
        for op in plan(&metadata, &[1, 2, 3], 3, unheard, 3, false) {
            metadata.apply(&op);
        }
        let now = leaders(&metadata);
        assert_eq!(&now[..3], &assigned[..]);
        assert_eq!(
            now[3..].iter().filter(|leader| leader.is_some()).count(),
            1,
            "only the partition preferring node 1"
        );
    }

    #[test]
    fn an_older_epoch_is_ignored_when_applied() {
        let mut metadata = metadata(1);
        let assign = |node, epoch| MetadataOp::AssignLeaders {
            stream_id: 0,
            topic_id: 0,
            leaders: vec![(0, Leadership { node, epoch })],
        };
        metadata.apply(&assign(2, 5 << 32));
        metadata.apply(&assign(3, 4 << 32));
        assert_eq!(leaders(&metadata)[0].unwrap().node, 2);
    }
}
