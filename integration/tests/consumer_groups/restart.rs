//! Groups and their offsets surviving a graceful restart.

use crate::helpers::{fixture, group_details, polled_offsets};
use iggy::prelude::*;
use rill_integration::fixtures::test_messages;
use rill_integration::sdk::{id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn groups_and_their_offsets_survive_a_graceful_restart() {
    // Proves: consumer groups are persisted (ids, names; a deleted group stays deleted) while
    // membership is runtime state (members 0 after a restart); a group's stored offsets survive
    // and a new member continues from them with Next; a group created after the restart does not
    // reuse a live group's id. How: official SDK, TestServer restart on the same data directory.
    let mut server = TestServer::start(ServerOptions::new());
    {
        let root = root_client(&server).await;
        fixture(&root, 2).await;
        for partition in 0..2 {
            let mut messages = test_messages(partition, 0, 10);
            root.send_messages(
                &id(0),
                &id(0),
                &Partitioning::partition_id(partition),
                &mut messages,
            )
            .await
            .expect("send");
        }
        for name in ["kept", "dropped", "also-kept"] {
            root.create_consumer_group(&id(0), &id(0), name)
                .await
                .expect("group");
        }
        root.delete_consumer_group(&id(0), &id(0), &named("dropped"))
            .await
            .expect("delete");
        root.join_consumer_group(&id(0), &id(0), &named("kept"))
            .await
            .expect("join");
        let polled = root
            .poll_messages(
                &id(0),
                &id(0),
                Some(1),
                &Consumer::group(named("kept")),
                &PollingStrategy::next(),
                6,
                true,
            )
            .await
            .expect("auto-commit poll");
        assert_eq!(polled_offsets(&polled), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(group_details(&root, &named("kept")).await.members_count, 1);
    }
    server.restart();

    let root = root_client(&server).await;
    let mut groups: Vec<(u32, String, u32, u32)> = root
        .get_consumer_groups(&id(0), &id(0))
        .await
        .expect("groups after restart")
        .into_iter()
        .map(|g| (g.id, g.name, g.partitions_count, g.members_count))
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        vec![(0, "kept".into(), 2, 0), (2, "also-kept".into(), 2, 0)]
    );
    let info = root
        .get_consumer_offset(&Consumer::group(named("kept")), &id(0), &id(0), Some(1))
        .await
        .expect("get")
        .expect("the group's offset survived");
    assert_eq!(info.stored_offset, 5);
    root.join_consumer_group(&id(0), &id(0), &named("kept"))
        .await
        .expect("join after restart");
    let polled = root
        .poll_messages(
            &id(0),
            &id(0),
            Some(1),
            &Consumer::group(named("kept")),
            &PollingStrategy::next(),
            10,
            true,
        )
        .await
        .expect("poll after restart");
    assert_eq!(polled_offsets(&polled), vec![6, 7, 8, 9]);
    let created = root
        .create_consumer_group(&id(0), &id(0), "new")
        .await
        .expect("create after restart");
    assert!(
        created.id != 0 && created.id != 2,
        "new group id {} collides with a live group",
        created.id
    );
}
