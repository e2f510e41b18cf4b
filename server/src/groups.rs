//! Consumer group membership: which session (client) owns which partitions of a topic.
//!
//! Groups themselves are metadata (created and deleted through the control lane, persisted);
//! membership is runtime state, as upstream: it lives here, shared by all shards, and ends when
//! a session leaves or disconnects.
//!
//! **Rebalance rule.** After every change (join, leave, disconnect, the topic's partition count
//! changing) each of the `m` members gets `n / m` or `n / m + 1` of the `n` partitions. The
//! assignment is sticky: members keep what they hold up to their share, only the surplus of
//! members over their share and the partitions of departed members move, lowest partition ids
//! to the members with the fewest. Every reassignment of a group happens in one step under that
//! group's map entry, so two members never own the same partition at the same time. Offsets are stored per group, not per member,
//! so a partition's new owner continues where the previous one committed.

use dashmap::DashMap;
use rill_core::ErrorCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub stream_id: u32,
    pub topic_id: u32,
    pub group_id: u32,
}

#[derive(Debug, Clone, Default)]
struct Member {
    client_id: u32,
    partitions: Vec<u32>,
    /// Round-robin position for polls without an explicit partition.
    cursor: usize,
    /// The partition this member polled last (used by offset commands without a partition).
    current: Option<u32>,
}

#[derive(Debug, Default)]
struct Membership {
    partitions_count: u32,
    members: Vec<Member>,
}

impl Membership {
    /// Sticky, even assignment: members keep the partitions they have where the even split
    /// allows, and only the surplus moves, so a join or leave moves as few partitions (and
    /// causes as few re-reads of uncommitted messages) as possible.
    fn rebalance(&mut self) {
        let partitions_count = self.partitions_count;
        let members = self.members.len();
        if members == 0 {
            return;
        }
        let base = partitions_count as usize / members;
        let extra = partitions_count as usize % members;
        // The members already holding the most keep the larger shares.
        let mut order: Vec<usize> = (0..members).collect();
        order.sort_by_key(|&index| std::cmp::Reverse(self.members[index].partitions.len()));
        let mut target = vec![base; members];
        for &index in order.iter().take(extra) {
            target[index] += 1;
        }
        let mut owned = vec![false; partitions_count as usize];
        for (index, member) in self.members.iter_mut().enumerate() {
            member
                .partitions
                .retain(|&partition| partition < partitions_count);
            member.partitions.sort_unstable();
            member.partitions.truncate(target[index]);
            for &partition in &member.partitions {
                owned[partition as usize] = true;
            }
        }
        // Unowned partitions, highest first, so `pop` hands out the lowest ids first.
        let mut free: Vec<u32> = (0..partitions_count)
            .rev()
            .filter(|&partition| !owned[partition as usize])
            .collect();
        for (index, member) in self.members.iter_mut().enumerate() {
            while member.partitions.len() < target[index] {
                member
                    .partitions
                    .push(free.pop().expect("targets add up to the partition count"));
            }
            member.partitions.sort_unstable();
            if member.cursor >= member.partitions.len() {
                member.cursor = 0;
            }
        }
    }

    fn member_mut(&mut self, client_id: u32) -> Result<&mut Member, ErrorCode> {
        self.members
            .iter_mut()
            .find(|member| member.client_id == client_id)
            .ok_or(ErrorCode::ConsumerGroupMemberNotFound)
    }
}

#[derive(Debug, Default)]
pub struct ConsumerGroups {
    groups: DashMap<GroupKey, Membership>,
}

impl ConsumerGroups {
    /// Registers a group (at creation or boot) with no members.
    pub fn register(&self, key: GroupKey, partitions_count: u32) {
        self.groups.entry(key).or_insert_with(|| Membership {
            partitions_count,
            members: Vec::new(),
        });
    }

    /// Forgets a group; returns its former members.
    pub fn remove(&self, key: &GroupKey) -> Vec<u32> {
        self.groups
            .remove(key)
            .map(|(_, membership)| membership.members.iter().map(|m| m.client_id).collect())
            .unwrap_or_default()
    }

    /// Forgets every group of a topic (or stream when `topic_id` is None); returns them.
    pub fn remove_where(&self, stream_id: u32, topic_id: Option<u32>) -> Vec<(GroupKey, Vec<u32>)> {
        let keys: Vec<GroupKey> = self
            .groups
            .iter()
            .map(|entry| *entry.key())
            .filter(|key| {
                key.stream_id == stream_id && topic_id.is_none_or(|topic| key.topic_id == topic)
            })
            .collect();
        keys.into_iter()
            .map(|key| (key, self.remove(&key)))
            .collect()
    }

    /// Adds a session to a group (joining twice is a no-op) and rebalances.
    pub fn join(&self, key: &GroupKey, client_id: u32) -> Result<(), ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        if membership
            .members
            .iter()
            .any(|member| member.client_id == client_id)
        {
            return Ok(());
        }
        membership.members.push(Member {
            client_id,
            ..Member::default()
        });
        membership.rebalance();
        Ok(())
    }

    pub fn leave(&self, key: &GroupKey, client_id: u32) -> Result<(), ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        let before = membership.members.len();
        membership
            .members
            .retain(|member| member.client_id != client_id);
        if membership.members.len() == before {
            return Err(ErrorCode::ConsumerGroupMemberNotFound);
        }
        membership.rebalance();
        Ok(())
    }

    /// Removes a disconnected session from every group it joined.
    pub fn leave_all(&self, client_id: u32) {
        for mut entry in self.groups.iter_mut() {
            let before = entry.members.len();
            entry.members.retain(|member| member.client_id != client_id);
            if entry.members.len() != before {
                entry.rebalance();
            }
        }
    }

    /// Rebalances a topic's groups after its partition count changed.
    pub fn set_partitions_count(&self, stream_id: u32, topic_id: u32, partitions_count: u32) {
        for mut entry in self.groups.iter_mut() {
            if entry.key().stream_id == stream_id && entry.key().topic_id == topic_id {
                entry.partitions_count = partitions_count;
                entry.rebalance();
            }
        }
    }

    /// The partition a member's next poll reads when it names none: round robin over its
    /// partitions. `Ok(None)` when it owns no partition.
    pub fn next_partition(&self, key: &GroupKey, client_id: u32) -> Result<Option<u32>, ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        let member = membership.member_mut(client_id)?;
        if member.partitions.is_empty() {
            return Ok(None);
        }
        let partition = member.partitions[member.cursor % member.partitions.len()];
        member.cursor = member.cursor.wrapping_add(1);
        member.current = Some(partition);
        Ok(Some(partition))
    }

    /// Whether a member owns `partition` (recording it as the member's current partition).
    pub fn owns(&self, key: &GroupKey, client_id: u32, partition: u32) -> Result<bool, ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        let member = membership.member_mut(client_id)?;
        let owns = member.partitions.contains(&partition);
        if owns {
            member.current = Some(partition);
        }
        Ok(owns)
    }

    /// The partition a member last polled, else its first partition.
    pub fn current_partition(
        &self,
        key: &GroupKey,
        client_id: u32,
    ) -> Result<Option<u32>, ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        let member = membership.member_mut(client_id)?;
        Ok(member
            .current
            .filter(|p| member.partitions.contains(p))
            .or(member.partitions.first().copied()))
    }

    /// (member client id, its partitions), in join order.
    pub fn members(&self, key: &GroupKey) -> Vec<(u32, Vec<u32>)> {
        self.groups
            .get(key)
            .map(|membership| {
                membership
                    .members
                    .iter()
                    .map(|m| (m.client_id, m.partitions.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: GroupKey = GroupKey {
        stream_id: 0,
        topic_id: 0,
        group_id: 0,
    };

    fn owners(groups: &ConsumerGroups) -> Vec<u32> {
        let mut owned: Vec<u32> = groups
            .members(&KEY)
            .into_iter()
            .flat_map(|(_, partitions)| partitions)
            .collect();
        owned.sort_unstable();
        owned
    }

    #[test]
    fn partitions_are_spread_evenly_and_never_shared() {
        let groups = ConsumerGroups::default();
        groups.register(KEY, 6);
        for client in [10, 20, 30] {
            groups.join(&KEY, client).unwrap();
            assert_eq!(owners(&groups), (0..6).collect::<Vec<_>>());
        }
        let members = groups.members(&KEY);
        assert!(
            members.iter().all(|(_, partitions)| partitions.len() == 2),
            "{members:?}"
        );
        groups.leave(&KEY, 20).unwrap();
        assert_eq!(owners(&groups), (0..6).collect::<Vec<_>>());
        assert!(
            groups
                .members(&KEY)
                .iter()
                .all(|(_, partitions)| partitions.len() == 3)
        );
        assert_eq!(
            groups.leave(&KEY, 20),
            Err(ErrorCode::ConsumerGroupMemberNotFound)
        );
        groups.leave_all(10);
        assert_eq!(groups.members(&KEY), vec![(30, (0..6).collect())]);
        groups.set_partitions_count(0, 0, 2);
        assert_eq!(groups.members(&KEY), vec![(30, vec![0, 1])]);
    }

    #[test]
    fn rebalancing_moves_only_what_it_must() {
        let groups = ConsumerGroups::default();
        groups.register(KEY, 6);
        groups.join(&KEY, 1).unwrap();
        groups.join(&KEY, 2).unwrap();
        let before: std::collections::BTreeMap<u32, Vec<u32>> =
            groups.members(&KEY).into_iter().collect();
        groups.join(&KEY, 3).unwrap();
        let after: std::collections::BTreeMap<u32, Vec<u32>> =
            groups.members(&KEY).into_iter().collect();
        // The newcomer takes one partition from each; the others keep two of their three.
        for client in [1, 2] {
            assert_eq!(after[&client].len(), 2);
            assert!(
                after[&client].iter().all(|p| before[&client].contains(p)),
                "{before:?} -> {after:?}"
            );
        }
        assert_eq!(owners(&groups), (0..6).collect::<Vec<_>>());
        groups.leave(&KEY, 2).unwrap();
        let last: std::collections::BTreeMap<u32, Vec<u32>> =
            groups.members(&KEY).into_iter().collect();
        for client in [1, 3] {
            assert!(
                after[&client].iter().all(|p| last[&client].contains(p)),
                "{after:?} -> {last:?}"
            );
        }
        assert_eq!(owners(&groups), (0..6).collect::<Vec<_>>());
    }

    #[test]
    fn polls_round_robin_over_owned_partitions() {
        let groups = ConsumerGroups::default();
        groups.register(KEY, 3);
        groups.join(&KEY, 1).unwrap();
        let polled: Vec<_> = (0..4)
            .map(|_| groups.next_partition(&KEY, 1).unwrap().unwrap())
            .collect();
        assert_eq!(polled, [0, 1, 2, 0]);
        assert_eq!(groups.current_partition(&KEY, 1).unwrap(), Some(0));
        assert_eq!(
            groups.next_partition(&KEY, 2),
            Err(ErrorCode::ConsumerGroupMemberNotFound)
        );
        let unknown = GroupKey { group_id: 9, ..KEY };
        assert_eq!(
            groups.join(&unknown, 1),
            Err(ErrorCode::ConsumerGroupIdNotFound)
        );
        groups.join(&KEY, 2).unwrap();
        groups.join(&KEY, 3).unwrap();
        groups.join(&KEY, 4).unwrap();
        assert_eq!(groups.next_partition(&KEY, 4).unwrap(), None);
    }
}
