//! Partition assignment and rebalancing on join / leave / disconnect / partition changes, and
//! group polls reading only the member's partitions.

use crate::helpers::{assert_assignment, fixture, group_details, polled_offsets};
use crate::support::eventually;
use iggy::prelude::*;
use rill_integration::fixtures::test_messages;
use rill_integration::sdk::{create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeSet;
use std::time::Duration;

#[tokio::test]
async fn joins_leaves_disconnects_and_partition_changes_rebalance() {
    // Proves: partitions are spread evenly over members and never owned twice, after every
    // membership change: joins (1, 2, 3 members over 6 partitions → 6 / 3+3 / 2+2+2), a leave,
    // a disconnect (the session's membership ends when its connection closes — observed within
    // 5 s), and the topic's partition count changing (CreatePartitions / DeletePartitions
    // rebalance to the new count); GetMe of each member lists the group. How: three official SDK
    // sessions; GetConsumerGroup is checked after each step.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    fixture(&root, 6).await;
    root.create_consumer_group(&id(0), &id(0), "workers")
        .await
        .expect("group");
    let group = named("workers");
    let members = [
        root_client(&server).await,
        root_client(&server).await,
        root_client(&server).await,
    ];
    for (count, member) in members.iter().enumerate() {
        member
            .join_consumer_group(&id(0), &id(0), &group)
            .await
            .expect("join");
        let details = group_details(&root, &group).await;
        assert_assignment(
            &details,
            6,
            count + 1,
            &format!("after join #{}", count + 1),
        );
    }
    let details = group_details(&root, &group).await;
    assert!(details.members.iter().all(|m| m.partitions.len() == 2));
    for member in &members {
        let me = member.get_me().await.expect("GetMe");
        assert_eq!(me.consumer_groups_count, 1, "GetMe of a member: {me:?}");
    }

    members[1]
        .leave_consumer_group(&id(0), &id(0), &group)
        .await
        .expect("leave");
    let details = group_details(&root, &group).await;
    assert_assignment(&details, 6, 2, "after a leave");
    assert!(details.members.iter().all(|m| m.partitions.len() == 3));

    members[1]
        .join_consumer_group(&id(0), &id(0), &group)
        .await
        .expect("rejoin");
    assert_assignment(&group_details(&root, &group).await, 6, 3, "after rejoining");

    members[2]
        .shutdown()
        .await
        .expect("disconnect the third member");
    let rebalanced = eventually(Duration::from_secs(5), async || {
        group_details(&root, &group).await.members.len() == 2
    })
    .await;
    let details = group_details(&root, &group).await;
    assert!(
        rebalanced,
        "a disconnected member must leave the group: {details:?}"
    );
    assert_assignment(&details, 6, 2, "after a disconnect");

    root.create_partitions(&id(0), &id(0), 2)
        .await
        .expect("add partitions");
    let details = group_details(&root, &group).await;
    assert_assignment(&details, 8, 2, "after adding 2 partitions");
    root.delete_partitions(&id(0), &id(0), 3)
        .await
        .expect("remove partitions");
    let details = group_details(&root, &group).await;
    assert_assignment(&details, 5, 2, "after removing 3 partitions");
}

#[tokio::test]
async fn group_polls_read_only_the_members_partitions() {
    // Proves protocol.md 5.2: a member's polls without a partition round-robin over exactly the
    // partitions it owns (each poll names one of them, all of them come up); an explicit
    // partition the member does not own gives an empty result while an owned one gives its
    // messages; a member that owns no partition gets an empty result with partition_id 0 and
    // current_offset 0. How: two official SDK sessions over 4 partitions whose messages are
    // tagged with their partition; then three sessions over a 1-partition topic.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    fixture(&root, 4).await;
    for partition in 0..4 {
        let mut messages = test_messages(partition, 0, 5);
        root.send_messages(
            &id(0),
            &id(0),
            &Partitioning::partition_id(partition),
            &mut messages,
        )
        .await
        .expect("send");
    }
    root.create_consumer_group(&id(0), &id(0), "readers")
        .await
        .expect("group");
    let group = Consumer::group(named("readers"));
    let a = root_client(&server).await;
    let b = root_client(&server).await;
    for member in [&a, &b] {
        member
            .join_consumer_group(&id(0), &id(0), &named("readers"))
            .await
            .expect("join");
    }
    let details = group_details(&root, &named("readers")).await;
    assert_assignment(&details, 4, 2, "two readers");

    for member in [&a, &b] {
        let mut seen = BTreeSet::new();
        for _ in 0..4 {
            let polled = member
                .poll_messages(
                    &id(0),
                    &id(0),
                    None,
                    &group,
                    &PollingStrategy::offset(0),
                    2,
                    false,
                )
                .await
                .expect("poll");
            assert_eq!(polled.messages.len(), 2);
            for message in &polled.messages {
                assert_eq!(
                    message.header.id >> 64,
                    polled.partition_id as u128 + 1,
                    "a message from another partition than the response names"
                );
            }
            seen.insert(polled.partition_id);
        }
        let owners: Vec<BTreeSet<u32>> = group_details(&root, &named("readers"))
            .await
            .members
            .iter()
            .map(|m| m.partitions.iter().copied().collect())
            .collect();
        assert!(
            owners.contains(&seen),
            "a member polled partitions {seen:?}; owned sets are {owners:?}"
        );
    }

    let details = group_details(&root, &named("readers")).await;
    let a_id_partitions: BTreeSet<BTreeSet<u32>> = details
        .members
        .iter()
        .map(|m| m.partitions.iter().copied().collect())
        .collect();
    // Find which set belongs to a: poll once without partition and see.
    let polled = a
        .poll_messages(
            &id(0),
            &id(0),
            None,
            &group,
            &PollingStrategy::offset(0),
            1,
            false,
        )
        .await
        .expect("poll");
    let a_set = a_id_partitions
        .iter()
        .find(|set| set.contains(&polled.partition_id))
        .expect("a owns the partition it polled")
        .clone();
    for partition in 0..4 {
        let polled = a
            .poll_messages(
                &id(0),
                &id(0),
                Some(partition),
                &group,
                &PollingStrategy::offset(0),
                5,
                false,
            )
            .await
            .expect("poll an explicit partition");
        if a_set.contains(&partition) {
            assert_eq!(
                polled_offsets(&polled),
                vec![0, 1, 2, 3, 4],
                "owned partition {partition}"
            );
        } else {
            assert!(
                polled.messages.is_empty(),
                "partition {partition} is not a's, yet a polled {:?}",
                polled_offsets(&polled)
            );
        }
    }

    // A 1-partition topic with three members: two of them own nothing.
    create_topic(&root, 0, "single", 1).await;
    root.create_consumer_group(&id(0), &named("single"), "crowd")
        .await
        .expect("crowd");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let session = root_client(&server).await;
        session
            .join_consumer_group(&id(0), &named("single"), &named("crowd"))
            .await
            .expect("join crowd");
        sessions.push(session);
    }
    let mut mut_messages = test_messages(9, 0, 3);
    root.send_messages(
        &id(0),
        &named("single"),
        &Partitioning::partition_id(0),
        &mut mut_messages,
    )
    .await
    .expect("send to single");
    let mut empty = 0;
    for session in &sessions {
        let polled = session
            .poll_messages(
                &id(0),
                &named("single"),
                None,
                &Consumer::group(named("crowd")),
                &PollingStrategy::offset(0),
                10,
                false,
            )
            .await
            .expect("poll crowd");
        if polled.messages.is_empty() {
            empty += 1;
            assert_eq!(
                (polled.partition_id, polled.current_offset),
                (0, 0),
                "a member without partitions"
            );
        } else {
            assert_eq!(polled_offsets(&polled), vec![0, 1, 2]);
        }
    }
    assert_eq!(
        empty, 2,
        "exactly one of three members owns the only partition"
    );
}
