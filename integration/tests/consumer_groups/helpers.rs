//! Helpers shared by the consumer group tests: the fixture, a group's details, checks of a
//! group's partition assignment, and the offsets of a poll.

use iggy::prelude::*;
use rill_integration::sdk::{create_stream, create_topic, id};
use std::collections::{BTreeMap, BTreeSet};

/// Stream 0 "groups" with topic 0 "t" of `partitions` partitions.
pub(crate) async fn fixture(client: &IggyClient, partitions: u32) {
    assert_eq!(create_stream(client, "groups").await, 0);
    assert_eq!(create_topic(client, 0, "t", partitions).await.id, 0);
}

pub(crate) async fn group_details(client: &IggyClient, group: &Identifier) -> ConsumerGroupDetails {
    client
        .get_consumer_group(&id(0), &id(0), group)
        .await
        .unwrap_or_else(|error| panic!("get group {group}: {error}"))
        .unwrap_or_else(|| panic!("group {group} exists"))
}

/// Checks the invariants of a group's assignment: members_count matches, member ids are
/// distinct, every member's partitions_count matches its list, no partition is owned twice,
/// every owned partition exists, and (with members) every partition is owned by someone and the
/// spread is even (sizes differ by at most one). Returns a description of what is wrong.
pub(crate) fn assignment_problems(details: &ConsumerGroupDetails, partitions: u32) -> Vec<String> {
    let mut problems = Vec::new();
    if details.members_count as usize != details.members.len() {
        problems.push(format!(
            "members_count {} but {} members",
            details.members_count,
            details.members.len()
        ));
    }
    let ids: BTreeSet<u32> = details.members.iter().map(|m| m.id).collect();
    if ids.len() != details.members.len() {
        problems.push("two members share an id".to_string());
    }
    let mut owners: BTreeMap<u32, u32> = BTreeMap::new();
    for member in &details.members {
        if member.partitions_count as usize != member.partitions.len() {
            problems.push(format!(
                "member {} claims {} partitions but lists {:?}",
                member.id, member.partitions_count, member.partitions
            ));
        }
        for &partition in &member.partitions {
            if partition >= partitions {
                problems.push(format!(
                    "member {} owns partition {partition}, which does not exist",
                    member.id
                ));
            }
            if let Some(other) = owners.insert(partition, member.id) {
                problems.push(format!(
                    "partition {partition} is owned by members {other} and {} at once",
                    member.id
                ));
            }
        }
    }
    if !details.members.is_empty() {
        let unowned: Vec<u32> = (0..partitions)
            .filter(|p| !owners.contains_key(p))
            .collect();
        if !unowned.is_empty() {
            problems.push(format!("partitions {unowned:?} have no owner"));
        }
        let sizes: Vec<usize> = details.members.iter().map(|m| m.partitions.len()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        if max - min > 1 {
            problems.push(format!("uneven spread {sizes:?}"));
        }
    }
    problems
}

#[track_caller]
pub(crate) fn assert_assignment(
    details: &ConsumerGroupDetails,
    partitions: u32,
    members: usize,
    when: &str,
) {
    let problems = assignment_problems(details, partitions);
    assert!(problems.is_empty(), "{when}: {problems:?} in {details:?}");
    assert_eq!(
        details.members.len(),
        members,
        "{when}: member count in {details:?}"
    );
    assert_eq!(
        details.partitions_count, partitions,
        "{when}: partitions_count"
    );
}

pub(crate) fn polled_offsets(polled: &PolledMessages) -> Vec<u64> {
    polled.messages.iter().map(|m| m.header.offset).collect()
}
