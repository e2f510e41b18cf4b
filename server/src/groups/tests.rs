//! Membership and rebalancing: even spread, stickiness, round robin, cooperative hand-over.

use super::*;
use proptest::prelude::*;

/// Hand-overs happen at once, as before cooperative rebalancing (`rebalancing_timeout = 0`).
fn immediate() -> ConsumerGroups {
    ConsumerGroups::new(Duration::ZERO)
}

fn cooperative() -> ConsumerGroups {
    ConsumerGroups::new(Duration::from_secs(3600))
}

fn held(groups: &ConsumerGroups, client: u32) -> Vec<u32> {
    groups
        .members(&KEY)
        .into_iter()
        .find(|(member, _)| *member == client)
        .map(|(_, partitions)| partitions)
        .unwrap_or_default()
}

/// One round-robin poll by `client` that hands out offsets up to `last` (None: nothing).
fn poll(groups: &ConsumerGroups, client: u32, last: Option<u64>) -> Option<u32> {
    let ticket = groups.next_partition(&KEY, client).unwrap()?;
    let partition = ticket.partition;
    ticket.finish(last, false);
    Some(partition)
}

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
    let groups = immediate();
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
    let groups = immediate();
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
    let groups = immediate();
    groups.register(KEY, 3);
    groups.join(&KEY, 1).unwrap();
    let polled: Vec<_> = (0..4)
        .map(|_| groups.next_partition(&KEY, 1).unwrap().unwrap().partition)
        .collect();
    assert_eq!(polled, [0, 1, 2, 0]);
    assert_eq!(groups.current_partition(&KEY, 1).unwrap(), Some(0));
    assert_eq!(
        groups.next_partition(&KEY, 2).err(),
        Some(ErrorCode::ConsumerGroupMemberNotFound)
    );
    let unknown = GroupKey { group_id: 9, ..KEY };
    assert_eq!(
        groups.join(&unknown, 1),
        Err(ErrorCode::ConsumerGroupIdNotFound)
    );
    groups.join(&KEY, 2).unwrap();
    groups.join(&KEY, 3).unwrap();
    groups.join(&KEY, 4).unwrap();
    assert!(groups.next_partition(&KEY, 4).unwrap().is_none());
}

#[test]
fn a_revoked_partition_moves_once_its_holder_commits_what_it_polled() {
    let groups = cooperative();
    groups.register(KEY, 2);
    groups.join(&KEY, 1).unwrap();
    assert_eq!(poll(&groups, 1, Some(9)), Some(0));
    assert_eq!(poll(&groups, 1, Some(19)), Some(1));
    groups.join(&KEY, 2).unwrap();
    // Partition 1 (the surplus) is revoked from 1: still held by it, not polled round robin.
    assert_eq!(held(&groups, 1), [0, 1]);
    assert_eq!(held(&groups, 2), Vec::<u32>::new());
    assert_eq!(
        groups.assigned(&KEY, 1),
        Some(vec![0]),
        "what 1 should poll"
    );
    assert_eq!(groups.assigned(&KEY, 9), None);
    assert!(groups.next_partition(&KEY, 2).unwrap().is_none());
    for _ in 0..3 {
        assert_eq!(poll(&groups, 1, None), Some(0));
    }
    // The holder may still poll it by id, and commits below what it polled change nothing.
    assert!(groups.poll_owned(&KEY, 1, 1).unwrap().is_some());
    groups.committed(&KEY, 1, Some(10));
    assert_eq!(held(&groups, 1), [0, 1]);
    // Once the commit covers what was polled, it moves.
    groups.committed(&KEY, 1, Some(19));
    assert_eq!(held(&groups, 1), [0]);
    assert_eq!(held(&groups, 2), [1]);
    assert_eq!(poll(&groups, 2, None), Some(1));
}

#[test]
fn partitions_nobody_polled_or_all_committed_move_at_once() {
    let groups = cooperative();
    groups.register(KEY, 4);
    groups.join(&KEY, 1).unwrap();
    // Partition 2 and 3: polled with auto-commit, and never polled.
    let ticket = groups.poll_owned(&KEY, 1, 2).unwrap().unwrap();
    ticket.finish(Some(5), true);
    groups.join(&KEY, 2).unwrap();
    assert_eq!(held(&groups, 1), [0, 1]);
    assert_eq!(held(&groups, 2), [2, 3]);
}

#[test]
fn a_poll_under_way_holds_the_hand_over_until_it_returns() {
    let groups = cooperative();
    groups.register(KEY, 2);
    groups.join(&KEY, 1).unwrap();
    let first = groups.next_partition(&KEY, 1).unwrap().unwrap();
    let second = groups.next_partition(&KEY, 1).unwrap().unwrap();
    assert_eq!(second.partition, 1);
    groups.join(&KEY, 2).unwrap();
    // Nothing was polled from partition 1 before, but a poll of it is under way.
    assert_eq!(held(&groups, 2), Vec::<u32>::new());
    first.finish(Some(3), false);
    second.finish(Some(7), false);
    assert_eq!(held(&groups, 2), Vec::<u32>::new());
    groups.committed(&KEY, 1, Some(7));
    assert_eq!(held(&groups, 2), [1]);
    // A ticket dropped unfinished (the connection went away mid-poll) holds nothing up.
    groups.join(&KEY, 3).unwrap();
    groups.leave(&KEY, 3).unwrap();
    let dropped = groups.next_partition(&KEY, 2).unwrap().unwrap();
    drop(dropped);
    groups.leave(&KEY, 1).unwrap();
    groups.join(&KEY, 1).unwrap();
    assert_eq!(held(&groups, 1).len() + held(&groups, 2).len(), 2);
}

#[test]
fn the_timeout_moves_a_partition_whose_holder_never_commits() {
    let groups = ConsumerGroups::new(Duration::from_millis(50));
    groups.register(KEY, 2);
    groups.join(&KEY, 1).unwrap();
    assert_eq!(poll(&groups, 1, Some(9)), Some(0));
    assert_eq!(poll(&groups, 1, Some(9)), Some(1));
    groups.join(&KEY, 2).unwrap();
    assert_eq!(held(&groups, 2), Vec::<u32>::new());
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(held(&groups, 1).len(), 1);
    assert_eq!(held(&groups, 2).len(), 1);
}

#[test]
fn leaving_cancels_or_completes_what_it_was_part_of() {
    let groups = cooperative();
    groups.register(KEY, 2);
    groups.join(&KEY, 1).unwrap();
    poll(&groups, 1, Some(9));
    poll(&groups, 1, Some(9));
    groups.join(&KEY, 2).unwrap();
    // The target leaves: the partition simply stays.
    groups.leave(&KEY, 2).unwrap();
    assert_eq!(held(&groups, 1), [0, 1]);
    groups.join(&KEY, 3).unwrap();
    assert_eq!(held(&groups, 3), Vec::<u32>::new());
    // The holder disconnects: what it held goes at once (it can no longer commit).
    groups.leave_all(1);
    assert_eq!(held(&groups, 3), [0, 1]);
}

#[derive(Debug, Clone)]
enum Op {
    Join(u32),
    Leave(u32),
    Poll(u32, u64),
    Commit(u32, u64),
    Partitions(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..5u32).prop_map(Op::Join),
        (0..5u32).prop_map(Op::Leave),
        (0..5u32, 0..50u64).prop_map(|(c, o)| Op::Poll(c, o)),
        (0..8u32, 0..50u64).prop_map(|(p, o)| Op::Commit(p, o)),
        (0..8u32).prop_map(Op::Partitions),
    ]
}

proptest! {
    /// Whatever members do, no partition is ever held by two of them, every partition below
    /// the count is held while anyone is a member, and once every revocation has completed the
    /// split is even.
    #[test]
    fn never_shared_always_held_even_once_settled(ops in proptest::collection::vec(op(), 1..60)) {
        let groups = cooperative();
        let mut count = 4;
        groups.register(KEY, count);
        for op in ops {
            match op {
                Op::Join(client) => groups.join(&KEY, client).unwrap(),
                Op::Leave(client) => { let _ = groups.leave(&KEY, client); }
                Op::Poll(client, last) => {
                    if let Ok(Some(ticket)) = groups.next_partition(&KEY, client) {
                        ticket.finish(Some(last), false);
                    }
                }
                Op::Commit(partition, offset) => groups.committed(&KEY, partition, Some(offset)),
                Op::Partitions(new) => {
                    count = new;
                    groups.set_partitions_count(0, 0, new);
                }
            }
            let members = groups.members(&KEY);
            let mut all: Vec<u32> = members.iter().flat_map(|(_, p)| p.clone()).collect();
            all.sort_unstable();
            let expected: Vec<u32> = if members.is_empty() { Vec::new() } else { (0..count).collect() };
            prop_assert_eq!(all, expected);
        }
        // Commit everything: every hand-over completes and the split is even.
        for partition in 0..count {
            groups.committed(&KEY, partition, Some(u64::MAX));
        }
        let members = groups.members(&KEY);
        if let (Some(min), Some(max)) = (
            members.iter().map(|(_, p)| p.len()).min(),
            members.iter().map(|(_, p)| p.len()).max(),
        ) {
            prop_assert!(max - min <= 1, "{:?}", members);
        }
    }
}
