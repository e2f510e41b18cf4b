//! Consumer group membership: which session (client) holds which partitions of a topic.
//!
//! Groups themselves are metadata (created and deleted through the control lane, persisted);
//! membership is runtime state, as upstream: it lives here, shared by all shards, and ends when
//! a session leaves or disconnects. How partitions are spread and handed over between members
//! (cooperative rebalancing, `[consumer_group] rebalancing_timeout`) is in `assignment.rs`.
//! Every change of a group happens in one step under that group's map entry. Offsets are stored
//! per group, not per member, so a partition's new holder continues where the group committed.

mod assignment;

use assignment::{Member, Membership};
use dashmap::DashMap;
use rill_core::ErrorCode;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub stream_id: u32,
    pub topic_id: u32,
    pub group_id: u32,
}

#[derive(Debug)]
pub struct ConsumerGroups {
    groups: DashMap<GroupKey, Membership>,
    /// How long a revoked partition waits for its holder's commit (zero: it moves at once).
    rebalancing_timeout: Duration,
}

/// A poll a member is about to make of one of its partitions. The hand-over of a revoked
/// partition waits for polls under way: finish the ticket with what the poll handed out
/// (dropping it unfinished counts as a poll that handed out nothing).
pub struct PollTicket<'a> {
    groups: &'a ConsumerGroups,
    key: GroupKey,
    pub partition: u32,
    done: bool,
}

impl PollTicket<'_> {
    /// `last`: the last offset handed out; `committed`: whether the poll stored it.
    pub fn finish(mut self, last: Option<u64>, committed: bool) {
        self.done = true;
        // The group may have been deleted meanwhile: then there is nothing to record.
        let _ = self.groups.with(&self.key, |membership| {
            membership.poll_done(self.partition, last, committed);
            // An auto-committed poll may have been all a hand-over waited for.
            membership.complete_ready(Instant::now(), self.groups.rebalancing_timeout);
        });
    }
}

impl Drop for PollTicket<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.groups.with(&self.key, |membership| {
                membership.poll_done(self.partition, None, false);
                membership.complete_ready(Instant::now(), self.groups.rebalancing_timeout);
            });
        }
    }
}

impl ConsumerGroups {
    pub fn new(rebalancing_timeout: Duration) -> ConsumerGroups {
        ConsumerGroups {
            groups: DashMap::new(),
            rebalancing_timeout,
        }
    }

    /// Runs `f` on a group's membership after completing the hand-overs that are due.
    fn with<T>(
        &self,
        key: &GroupKey,
        f: impl FnOnce(&mut Membership) -> T,
    ) -> Result<T, ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        membership.complete_ready(Instant::now(), self.rebalancing_timeout);
        Ok(f(&mut membership))
    }

    fn rebalance(&self, membership: &mut Membership) {
        membership.rebalance(Instant::now(), self.rebalancing_timeout);
    }

    /// Registers a group (at creation or boot) with no members.
    pub fn register(&self, key: GroupKey, partitions_count: u32) {
        self.groups
            .entry(key)
            .or_insert_with(|| Membership::new(partitions_count));
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
        if membership.position(client_id).is_some() {
            return Ok(());
        }
        membership.members.push(Member {
            client_id,
            ..Member::default()
        });
        self.rebalance(&mut membership);
        Ok(())
    }

    pub fn leave(&self, key: &GroupKey, client_id: u32) -> Result<(), ErrorCode> {
        let mut membership = self
            .groups
            .get_mut(key)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        let index = membership
            .position(client_id)
            .ok_or(ErrorCode::ConsumerGroupMemberNotFound)?;
        membership.members.remove(index);
        self.rebalance(&mut membership);
        Ok(())
    }

    /// Removes a disconnected session from every group it joined.
    pub fn leave_all(&self, client_id: u32) {
        for mut entry in self.groups.iter_mut() {
            if let Some(index) = entry.position(client_id) {
                entry.members.remove(index);
                self.rebalance(&mut entry);
            }
        }
    }

    /// Rebalances a topic's groups after its partition count changed.
    pub fn set_partitions_count(&self, stream_id: u32, topic_id: u32, partitions_count: u32) {
        for mut entry in self.groups.iter_mut() {
            if entry.key().stream_id == stream_id && entry.key().topic_id == topic_id {
                entry.partitions_count = partitions_count;
                self.rebalance(&mut entry);
            }
        }
    }

    /// The partition a member's next poll reads when it names none: round robin over the
    /// partitions it holds and is not handing over. `Ok(None)` when there is none.
    pub fn next_partition(
        &self,
        key: &GroupKey,
        client_id: u32,
    ) -> Result<Option<PollTicket<'_>>, ErrorCode> {
        let partition = self.with(key, |membership| -> Result<Option<u32>, ErrorCode> {
            let index = membership
                .position(client_id)
                .ok_or(ErrorCode::ConsumerGroupMemberNotFound)?;
            // Round robin without collecting the partitions: this runs on every group poll.
            let count = membership.kept(index).count();
            if count == 0 {
                return Ok(None);
            }
            let cursor = membership.members[index].cursor;
            let partition = membership
                .kept(index)
                .nth(cursor % count)
                .expect("fewer than count kept partitions");
            let member = &mut membership.members[index];
            member.cursor = member.cursor.wrapping_add(1);
            member.current = Some(partition);
            membership.poll_started(partition);
            Ok(Some(partition))
        })??;
        Ok(partition.map(|partition| self.ticket(key, partition)))
    }

    /// A poll of `partition` by a member that names it: a ticket if the member holds it
    /// (handing it over or not; the partition becomes the member's current one), else None.
    pub fn poll_owned(
        &self,
        key: &GroupKey,
        client_id: u32,
        partition: u32,
    ) -> Result<Option<PollTicket<'_>>, ErrorCode> {
        let holds = self.with(key, |membership| -> Result<bool, ErrorCode> {
            let index = membership
                .position(client_id)
                .ok_or(ErrorCode::ConsumerGroupMemberNotFound)?;
            let member = &mut membership.members[index];
            let holds = member.partitions.contains(&partition);
            if holds {
                member.current = Some(partition);
                membership.poll_started(partition);
            }
            Ok(holds)
        })??;
        Ok(holds.then(|| self.ticket(key, partition)))
    }

    fn ticket(&self, key: &GroupKey, partition: u32) -> PollTicket<'_> {
        PollTicket {
            groups: self,
            key: *key,
            partition,
            done: false,
        }
    }

    /// The group's offset for `partition` was stored (Some) or deleted (None): a revoked
    /// partition whose polled messages are now all committed moves to its new member.
    pub fn committed(&self, key: &GroupKey, partition: u32, offset: Option<u64>) {
        let _ = self.with(key, |membership| {
            membership.committed(partition, offset);
            membership.complete_ready(Instant::now(), self.rebalancing_timeout);
        });
    }

    /// The partition a member last polled (while it holds it), else its first partition that
    /// is not being handed over, else its first.
    pub fn current_partition(
        &self,
        key: &GroupKey,
        client_id: u32,
    ) -> Result<Option<u32>, ErrorCode> {
        self.with(key, |membership| -> Result<Option<u32>, ErrorCode> {
            let index = membership
                .position(client_id)
                .ok_or(ErrorCode::ConsumerGroupMemberNotFound)?;
            let member = &membership.members[index];
            Ok(member
                .current
                .filter(|p| member.partitions.contains(p))
                .or_else(|| membership.kept(index).next())
                .or(member.partitions.first().copied()))
        })?
    }

    /// (member client id, the partitions it holds), in join order. A partition being handed
    /// over is listed under its holder until it moves, as upstream lists it.
    pub fn members(&self, key: &GroupKey) -> Vec<(u32, Vec<u32>)> {
        self.with(key, |membership| {
            membership
                .members
                .iter()
                .map(|m| (m.client_id, m.partitions.clone()))
                .collect()
        })
        .unwrap_or_default()
    }

    /// The partitions a member holds and is not handing over: what it should poll (the 0.9
    /// SyncConsumerGroup answer). None when it is not a member.
    pub fn assigned(&self, key: &GroupKey, client_id: u32) -> Option<Vec<u32>> {
        self.with(key, |membership| {
            let index = membership.position(client_id)?;
            Some(membership.kept(index).collect())
        })
        .ok()
        .flatten()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests;
