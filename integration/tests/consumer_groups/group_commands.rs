//! Consumer group commands and their error codes.

use crate::helpers::{assert_assignment, fixture, group_details};
use iggy::prelude::*;
use rill_integration::sdk::{assert_error_code, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn group_commands_and_error_codes() {
    // Proves: CreateConsumerGroup answers the group (ids from 0, members 0, partitions_count =
    // the topic's), GetConsumerGroup by id and by name, GetConsumerGroups lists, Join / Leave
    // change the members (GetConsumerGroup shows the member with all partitions, GetMe lists the
    // group), DeleteConsumerGroup removes; and the error codes: duplicate name 5004, unknown
    // group 5000 on Join / Leave / Delete / Poll / Store, Leave by a non-member 5006, Poll by a
    // non-member 5006, unknown stream 1009 / topic 2010 on Create, GetConsumerGroup of an
    // unknown group → None. How: official SDK, two sessions.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let other = root_client(&server).await;
    fixture(&client, 3).await;

    let first = client
        .create_consumer_group(&id(0), &id(0), "first")
        .await
        .expect("create first");
    assert_eq!(
        (
            first.id,
            first.name.as_str(),
            first.partitions_count,
            first.members_count
        ),
        (0, "first", 3, 0)
    );
    assert!(first.members.is_empty());
    let second = client
        .create_consumer_group(&named("groups"), &named("t"), "second")
        .await
        .expect("create second by names");
    assert_eq!((second.id, second.partitions_count), (1, 3));
    assert_error_code(
        client.create_consumer_group(&id(0), &id(0), "first").await,
        5004,
        "duplicate group name",
    );
    assert_error_code(
        client.create_consumer_group(&id(9), &id(0), "x").await,
        1009,
        "group in an unknown stream",
    );
    assert_error_code(
        client.create_consumer_group(&id(0), &id(9), "x").await,
        2010,
        "group in an unknown topic",
    );

    for identifier in [id(1), named("second")] {
        let details = group_details(&client, &identifier).await;
        assert_eq!(
            (details.id, details.name.as_str(), details.members_count),
            (1, "second", 0)
        );
    }
    assert!(
        client
            .get_consumer_group(&id(0), &id(0), &id(9))
            .await
            .expect("get unknown group")
            .is_none()
    );
    assert!(
        client
            .get_consumer_group(&id(0), &id(0), &named("nope"))
            .await
            .expect("get unknown group by name")
            .is_none()
    );
    let mut listed: Vec<(u32, String, u32, u32)> = client
        .get_consumer_groups(&id(0), &id(0))
        .await
        .expect("list groups")
        .into_iter()
        .map(|g| (g.id, g.name, g.partitions_count, g.members_count))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![(0, "first".into(), 3, 0), (1, "second".into(), 3, 0)]
    );

    let unknown = Consumer::group(id(9));
    assert_error_code(
        client.join_consumer_group(&id(0), &id(0), &id(9)).await,
        5000,
        "join an unknown group",
    );
    assert_error_code(
        client.leave_consumer_group(&id(0), &id(0), &id(9)).await,
        5000,
        "leave an unknown group",
    );
    assert_error_code(
        client
            .poll_messages(
                &id(0),
                &id(0),
                None,
                &unknown,
                &PollingStrategy::next(),
                1,
                false,
            )
            .await,
        5000,
        "poll with an unknown group",
    );
    assert_error_code(
        client.leave_consumer_group(&id(0), &id(0), &id(0)).await,
        5006,
        "leave a group one is not a member of",
    );
    assert_error_code(
        client
            .poll_messages(
                &id(0),
                &id(0),
                None,
                &Consumer::group(id(0)),
                &PollingStrategy::next(),
                1,
                false,
            )
            .await,
        5006,
        "poll as a non-member",
    );
    assert_error_code(
        client
            .poll_messages(
                &id(0),
                &id(0),
                Some(1),
                &Consumer::group(id(0)),
                &PollingStrategy::next(),
                1,
                false,
            )
            .await,
        5006,
        "poll as a non-member with an explicit partition",
    );

    client
        .join_consumer_group(&id(0), &id(0), &named("first"))
        .await
        .expect("join first");
    let details = group_details(&client, &id(0)).await;
    assert_assignment(&details, 3, 1, "one member");
    assert_eq!(details.members[0].partitions, vec![0, 1, 2]);
    let me = client.get_me().await.expect("GetMe");
    assert_eq!(me.consumer_groups_count, 1);
    assert_eq!(
        me.consumer_groups
            .iter()
            .map(|g| (g.stream_id, g.topic_id, g.group_id))
            .collect::<Vec<_>>(),
        vec![(0, 0, 0)]
    );
    assert_error_code(
        other.leave_consumer_group(&id(0), &id(0), &id(0)).await,
        5006,
        "another session leaving a group it did not join",
    );
    client
        .leave_consumer_group(&id(0), &id(0), &id(0))
        .await
        .expect("leave first");
    let details = group_details(&client, &id(0)).await;
    assert_assignment(&details, 3, 0, "after leaving");
    assert_eq!(client.get_me().await.unwrap().consumer_groups_count, 0);
    assert_error_code(
        client.leave_consumer_group(&id(0), &id(0), &id(0)).await,
        5006,
        "leave twice",
    );

    client
        .delete_consumer_group(&id(0), &id(0), &named("second"))
        .await
        .expect("delete second");
    assert!(
        client
            .get_consumer_group(&id(0), &id(0), &id(1))
            .await
            .unwrap()
            .is_none()
    );
    assert_error_code(
        client.delete_consumer_group(&id(0), &id(0), &id(1)).await,
        5000,
        "delete a deleted group",
    );
    assert_eq!(
        client
            .get_consumer_groups(&id(0), &id(0))
            .await
            .unwrap()
            .len(),
        1
    );
}
