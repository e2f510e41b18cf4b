//! One group's membership and its rebalancing: which member holds which partition, and which
//! partitions are on their way from one member to another.
//!
//! **Target.** After every change (join, leave, disconnect, the partition count changing) each
//! of the `m` members is meant to hold `n / m` or `n / m + 1` of the `n` partitions. The target
//! is sticky: members keep what they hold (or are about to receive) up to their share, only the
//! surplus moves, lowest partition ids to the members with the fewest.
//!
//! **Cooperative hand-over.** A partition nobody holds (new, or its member left) goes to its
//! target member at once. A partition another member still holds is *revoked*: the holder keeps
//! it (it may still poll it by id and commit), round-robin polls stop handing it out, and it
//! moves once the group's stored offset covers everything polled from it, or after the
//! rebalancing timeout. So a member that commits what it processed never sees its messages
//! processed again by the next owner. A partition is held by at most one member at any time.

use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub(super) struct Member {
    pub(super) client_id: u32,
    /// What it holds, sorted, including partitions being revoked from it.
    pub(super) partitions: Vec<u32>,
    /// Round-robin position for polls without an explicit partition.
    pub(super) cursor: usize,
    /// The partition this member polled last (used by offset commands without a partition).
    pub(super) current: Option<u32>,
}

/// A partition on its way from one member to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Revocation {
    pub(super) partition: u32,
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) since: Instant,
}

/// What the group has done with one partition, as far as the hand-over needs to know.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// The last offset a poll handed out.
    polled: Option<u64>,
    /// The group's stored offset, as last written.
    committed: Option<u64>,
    /// Polls that picked the partition and have not returned yet.
    polls_in_flight: u32,
}

#[derive(Debug, Default)]
pub(super) struct Membership {
    pub(super) partitions_count: u32,
    pub(super) members: Vec<Member>,
    pub(super) pending: Vec<Revocation>,
    progress: HashMap<u32, Progress>,
}

impl Membership {
    pub(super) fn new(partitions_count: u32) -> Membership {
        Membership {
            partitions_count,
            ..Membership::default()
        }
    }

    pub(super) fn position(&self, client_id: u32) -> Option<usize> {
        self.members
            .iter()
            .position(|member| member.client_id == client_id)
    }

    pub(super) fn is_revoked(&self, partition: u32) -> bool {
        self.pending
            .iter()
            .any(|revocation| revocation.partition == partition)
    }

    /// The partitions member `index` holds and is not handing over: the ones it polls.
    pub(super) fn kept(&self, index: usize) -> impl Iterator<Item = u32> + '_ {
        self.members[index]
            .partitions
            .iter()
            .copied()
            .filter(|&partition| !self.is_revoked(partition))
    }

    /// Recomputes the target assignment and starts the hand-overs it needs.
    pub(super) fn rebalance(&mut self, now: Instant, timeout: Duration) {
        let count = self.partitions_count;
        for member in &mut self.members {
            member.partitions.retain(|&partition| partition < count);
        }
        self.progress.retain(|&partition, _| partition < count);
        let members = &self.members;
        let holds = |client: u32, partition: u32| {
            members
                .iter()
                .any(|m| m.client_id == client && m.partitions.contains(&partition))
        };
        let is_member = |client: u32| members.iter().any(|m| m.client_id == client);
        let pending: Vec<Revocation> = self
            .pending
            .iter()
            .copied()
            .filter(|r| r.partition < count && holds(r.from, r.partition) && is_member(r.to))
            .collect();
        self.pending = pending;
        if self.members.is_empty() {
            return;
        }
        // Where each partition is headed today: its revocation's target, else its holder.
        let destined: Vec<Vec<u32>> = self
            .members
            .iter()
            .enumerate()
            .map(|(index, member)| {
                let mut partitions: Vec<u32> = self
                    .kept(index)
                    .chain(
                        self.pending
                            .iter()
                            .filter(|r| r.to == member.client_id)
                            .map(|r| r.partition),
                    )
                    .collect();
                partitions.sort_unstable();
                partitions
            })
            .collect();
        let target = even_split(count, destined);
        let mut holder: Vec<Option<usize>> = vec![None; count as usize];
        for (index, member) in self.members.iter().enumerate() {
            for &partition in &member.partitions {
                holder[partition as usize] = Some(index);
            }
        }
        let previous = std::mem::take(&mut self.pending);
        for (index, partitions) in target.iter().enumerate() {
            for &partition in partitions {
                match holder[partition as usize] {
                    None => self.members[index].partitions.push(partition),
                    Some(held) if held == index => {}
                    Some(held) => {
                        let from = self.members[held].client_id;
                        let to = self.members[index].client_id;
                        // A revocation already under way keeps its start: the timeout bounds
                        // the whole wait of the holder's partition, not each re-plan.
                        let since = previous
                            .iter()
                            .find(|r| r.partition == partition && r.from == from)
                            .map_or(now, |r| r.since);
                        self.pending.push(Revocation {
                            partition,
                            from,
                            to,
                            since,
                        });
                    }
                }
            }
        }
        self.complete_ready(now, timeout);
        self.tidy();
    }

    /// Moves every revoked partition whose holder has committed what it polled, or whose
    /// revocation is older than `timeout`.
    pub(super) fn complete_ready(&mut self, now: Instant, timeout: Duration) {
        if self.pending.is_empty() {
            return;
        }
        let (ready, waiting): (Vec<Revocation>, Vec<Revocation>) =
            self.pending.iter().partition(|revocation| {
                now.saturating_duration_since(revocation.since) >= timeout
                    || self.settled(revocation.partition)
            });
        if ready.is_empty() {
            return;
        }
        self.pending = waiting;
        for revocation in ready {
            if let Some(from) = self.position(revocation.from) {
                self.members[from]
                    .partitions
                    .retain(|&partition| partition != revocation.partition);
            }
            if let Some(to) = self.position(revocation.to) {
                self.members[to].partitions.push(revocation.partition);
            }
        }
        self.tidy();
    }

    /// Whether the group's stored offset covers everything handed out from `partition`, with
    /// no poll of it under way.
    fn settled(&self, partition: u32) -> bool {
        let Some(progress) = self.progress.get(&partition) else {
            return true;
        };
        progress.polls_in_flight == 0
            && match (progress.polled, progress.committed) {
                (None, _) => true,
                (Some(polled), Some(committed)) => committed >= polled,
                (Some(_), None) => false,
            }
    }

    pub(super) fn poll_started(&mut self, partition: u32) {
        self.progress.entry(partition).or_default().polls_in_flight += 1;
    }

    /// A poll that `poll_started` announced returned; `last` is the last offset it handed out
    /// (None: nothing, or it failed), `committed` whether the poll stored it (auto-commit).
    pub(super) fn poll_done(&mut self, partition: u32, last: Option<u64>, committed: bool) {
        let progress = self.progress.entry(partition).or_default();
        progress.polls_in_flight = progress.polls_in_flight.saturating_sub(1);
        if let Some(last) = last {
            progress.polled = Some(last);
            if committed {
                progress.committed = Some(last);
            }
        }
    }

    /// The group's offset for `partition` was stored (Some) or deleted (None).
    pub(super) fn committed(&mut self, partition: u32, offset: Option<u64>) {
        self.progress.entry(partition).or_default().committed = offset;
    }

    fn tidy(&mut self) {
        for member in &mut self.members {
            member.partitions.sort_unstable();
            member.partitions.dedup();
            if member.cursor >= member.partitions.len() {
                member.cursor = 0;
            }
        }
    }
}

/// The sticky even split: each member keeps its own partitions up to its share (the members
/// holding the most get the larger shares), the rest go to the members below their share,
/// lowest ids first. `holdings` are sorted and disjoint.
fn even_split(count: u32, mut holdings: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    let members = holdings.len();
    let base = count as usize / members;
    let extra = count as usize % members;
    let mut order: Vec<usize> = (0..members).collect();
    order.sort_by_key(|&index| std::cmp::Reverse(holdings[index].len()));
    let mut share = vec![base; members];
    for &index in order.iter().take(extra) {
        share[index] += 1;
    }
    let mut owned = vec![false; count as usize];
    for (index, partitions) in holdings.iter_mut().enumerate() {
        partitions.truncate(share[index]);
        for &partition in partitions.iter() {
            owned[partition as usize] = true;
        }
    }
    // Unowned partitions, highest first, so `pop` hands out the lowest ids first.
    let mut free: Vec<u32> = (0..count)
        .rev()
        .filter(|&partition| !owned[partition as usize])
        .collect();
    for (index, partitions) in holdings.iter_mut().enumerate() {
        while partitions.len() < share[index] {
            partitions.push(free.pop().expect("shares add up to the partition count"));
        }
        partitions.sort_unstable();
    }
    holdings
}
