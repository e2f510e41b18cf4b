//! Consumer offsets (protocol.md 4.8, 5.3, 5.4, 7.8, 8): Store / Get / Delete for plain
//! consumers and consumer groups, per partition; the error codes (4100, 3021, 5006); polling with
//! Next from a stored offset and auto-commit; durability across a graceful restart and kill -9.

mod support;

use iggy::prelude::*;
use rill_integration::fixtures::test_messages;
use rill_integration::sdk::{
    assert_error_code, create_stream, create_topic, id, named, root_client,
};
use rill_integration::{ServerOptions, TestServer};

/// Sends `count` messages to `partition` of stream 0 / topic 0.
async fn fill(client: &IggyClient, partition: u32, count: u64) {
    let mut messages = test_messages(partition, 0, count);
    client
        .send_messages(
            &id(0),
            &id(0),
            &Partitioning::partition_id(partition),
            &mut messages,
        )
        .await
        .unwrap_or_else(|error| panic!("send {count} messages to partition {partition}: {error}"));
}

/// Stream 0 "offsets" with topic 0 "t" of `partitions` partitions.
async fn fixture(client: &IggyClient, partitions: u32) {
    assert_eq!(create_stream(client, "offsets").await, 0);
    assert_eq!(create_topic(client, 0, "t", partitions).await.id, 0);
}

/// Flushes `partition` of stream 0 / topic 0 with fsync, so its current offset is known.
async fn fsync_partition(client: &IggyClient, partition: u32) {
    client
        .flush_unsaved_buffer(&id(0), &id(0), partition, true)
        .await
        .expect("flush with fsync");
}

async fn stored(
    client: &IggyClient,
    consumer: &Consumer,
    partition: Option<u32>,
) -> Option<(u32, u64, u64)> {
    client
        .get_consumer_offset(consumer, &id(0), &id(0), partition)
        .await
        .unwrap_or_else(|error| panic!("get offset of {consumer:?} on {partition:?}: {error}"))
        .map(|info| (info.partition_id, info.current_offset, info.stored_offset))
}

#[tokio::test]
async fn store_get_delete_for_a_plain_consumer() {
    // Proves: for a plain consumer, GetConsumerOffset is None before any store; Store then Get
    // returns (partition, partition's current offset, stored offset); storing again overwrites
    // (also backwards); offsets are per partition and per consumer; a missing partition means
    // partition 0; Delete removes it (Get → None) and deleting again is 3021; storing beyond the
    // partition's current offset or on an empty partition is 4100 and changes nothing; an
    // unknown stream/topic reads as None and refuses stores. How: official SDK as root, a topic
    // with 3 partitions holding 10, 4 and 0 messages.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    fixture(&client, 3).await;
    fill(&client, 0, 10).await;
    fill(&client, 1, 4).await;
    let alpha = Consumer::new(id(1));
    let beta = Consumer::new(named("beta"));

    assert_eq!(stored(&client, &alpha, Some(0)).await, None);
    client
        .store_consumer_offset(&alpha, &id(0), &id(0), Some(0), 5)
        .await
        .expect("store 5 on partition 0");
    assert_eq!(stored(&client, &alpha, Some(0)).await, Some((0, 9, 5)));
    assert_eq!(
        stored(&client, &alpha, None).await,
        Some((0, 9, 5)),
        "no partition means partition 0 for a plain consumer"
    );
    assert_eq!(
        stored(&client, &alpha, Some(1)).await,
        None,
        "per partition"
    );
    assert_eq!(stored(&client, &beta, Some(0)).await, None, "per consumer");

    client
        .store_consumer_offset(&alpha, &id(0), &id(0), Some(0), 9)
        .await
        .expect("store the last offset");
    assert_eq!(stored(&client, &alpha, Some(0)).await, Some((0, 9, 9)));
    client
        .store_consumer_offset(&alpha, &id(0), &id(0), None, 2)
        .await
        .expect("store backwards, no partition");
    assert_eq!(stored(&client, &alpha, Some(0)).await, Some((0, 9, 2)));
    client
        .store_consumer_offset(&alpha, &named("offsets"), &named("t"), Some(1), 3)
        .await
        .expect("store on partition 1 by names");
    assert_eq!(stored(&client, &alpha, Some(1)).await, Some((1, 3, 3)));
    client
        .store_consumer_offset(&beta, &id(0), &id(0), Some(0), 0)
        .await
        .expect("beta stores offset 0");
    assert_eq!(stored(&client, &beta, Some(0)).await, Some((0, 9, 0)));

    assert_error_code(
        client
            .store_consumer_offset(&alpha, &id(0), &id(0), Some(0), 10)
            .await,
        4100,
        "offset 10 beyond current offset 9",
    );
    assert_error_code(
        client
            .store_consumer_offset(&alpha, &id(0), &id(0), Some(1), 4)
            .await,
        4100,
        "offset 4 beyond current offset 3",
    );
    assert_error_code(
        client
            .store_consumer_offset(&alpha, &id(0), &id(0), Some(2), 0)
            .await,
        4100,
        "any offset on an empty partition",
    );
    assert_eq!(stored(&client, &alpha, Some(0)).await, Some((0, 9, 2)));
    assert_eq!(stored(&client, &alpha, Some(2)).await, None);

    client
        .delete_consumer_offset(&alpha, &id(0), &id(0), Some(0))
        .await
        .expect("delete alpha's offset on partition 0");
    assert_eq!(stored(&client, &alpha, Some(0)).await, None);
    assert_eq!(
        stored(&client, &alpha, Some(1)).await,
        Some((1, 3, 3)),
        "other partitions untouched"
    );
    assert_eq!(
        stored(&client, &beta, Some(0)).await,
        Some((0, 9, 0)),
        "other consumers untouched"
    );
    assert_error_code(
        client
            .delete_consumer_offset(&alpha, &id(0), &id(0), Some(0))
            .await,
        3021,
        "delete a deleted offset",
    );
    assert_error_code(
        client
            .delete_consumer_offset(&alpha, &id(0), &id(0), Some(2))
            .await,
        3021,
        "delete a never-stored offset",
    );

    // Unknown stream / topic: Get is None (empty OK), Store refuses.
    assert!(
        client
            .get_consumer_offset(&alpha, &id(7), &id(0), Some(0))
            .await
            .expect("get on an unknown stream")
            .is_none()
    );
    assert!(
        client
            .get_consumer_offset(&alpha, &id(0), &id(7), Some(0))
            .await
            .expect("get on an unknown topic")
            .is_none()
    );
    assert_error_code(
        client
            .store_consumer_offset(&alpha, &id(7), &id(0), Some(0), 0)
            .await,
        1009,
        "store on an unknown stream",
    );
    assert_error_code(
        client
            .store_consumer_offset(&alpha, &id(0), &id(7), Some(0), 0)
            .await,
        2010,
        "store on an unknown topic",
    );
}

#[tokio::test]
async fn next_polls_continue_from_the_stored_offset_and_auto_commit_stores() {
    // Proves: PollingStrategy::Next starts at stored + 1 (or the first message when nothing is
    // stored); auto_commit stores the offset of the last returned message (protocol.md 5.4) and
    // does nothing when nothing is returned; a poll without auto_commit stores nothing; a later
    // manual store redirects Next. How: official SDK, one partition of 10 messages.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    fixture(&client, 1).await;
    fill(&client, 0, 10).await;
    let consumer = Consumer::new(id(42));
    let poll = async |count: u32, auto_commit: bool| -> Vec<u64> {
        client
            .poll_messages(
                &id(0),
                &id(0),
                Some(0),
                &consumer,
                &PollingStrategy::next(),
                count,
                auto_commit,
            )
            .await
            .expect("poll next")
            .messages
            .iter()
            .map(|m| m.header.offset)
            .collect()
    };

    assert_eq!(
        poll(3, false).await,
        vec![0, 1, 2],
        "Next with nothing stored"
    );
    assert_eq!(
        stored(&client, &consumer, Some(0)).await,
        None,
        "no auto_commit, nothing stored"
    );
    assert_eq!(poll(3, true).await, vec![0, 1, 2]);
    assert_eq!(stored(&client, &consumer, Some(0)).await, Some((0, 9, 2)));
    assert_eq!(poll(4, true).await, vec![3, 4, 5, 6]);
    assert_eq!(stored(&client, &consumer, Some(0)).await, Some((0, 9, 6)));
    client
        .store_consumer_offset(&consumer, &id(0), &id(0), Some(0), 1)
        .await
        .expect("manual store");
    assert_eq!(
        poll(2, false).await,
        vec![2, 3],
        "Next follows the manual store"
    );
    assert_eq!(poll(100, true).await, vec![2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(stored(&client, &consumer, Some(0)).await, Some((0, 9, 9)));
    assert_eq!(poll(10, true).await, Vec::<u64>::new(), "all consumed");
    assert_eq!(
        stored(&client, &consumer, Some(0)).await,
        Some((0, 9, 9)),
        "an empty auto-commit poll stores nothing"
    );
}

#[tokio::test]
async fn group_offsets_are_shared_by_members_and_need_membership_to_store() {
    // Proves: a consumer group's offsets are per group and partition and shared by its members:
    // what one member stores (or auto-commits) is what another member's Next continues from;
    // Store / Delete with a group consumer by a non-member answer 5006, while Get by anyone works
    // (and uses partition 0 when none is given); a group offset is independent of a plain
    // consumer with the same numeric id; unknown group → 5000. How: two official SDK sessions.
    let server = TestServer::start(ServerOptions::new());
    let first = root_client(&server).await;
    let second = root_client(&server).await;
    let outsider = root_client(&server).await;
    fixture(&first, 1).await;
    fill(&first, 0, 10).await;
    let group = first
        .create_consumer_group(&id(0), &id(0), "readers")
        .await
        .expect("group");
    let group_consumer = Consumer::group(id(group.id));

    assert_error_code(
        outsider
            .store_consumer_offset(&group_consumer, &id(0), &id(0), Some(0), 1)
            .await,
        5006,
        "store by a non-member",
    );
    assert_error_code(
        outsider
            .store_consumer_offset(&Consumer::group(id(9)), &id(0), &id(0), Some(0), 1)
            .await,
        5000,
        "store for an unknown group",
    );

    first
        .join_consumer_group(&id(0), &id(0), &id(group.id))
        .await
        .expect("first joins");
    first
        .store_consumer_offset(&group_consumer, &id(0), &id(0), Some(0), 3)
        .await
        .expect("member stores");
    assert_eq!(
        stored(&outsider, &group_consumer, Some(0)).await,
        Some((0, 9, 3)),
        "Get by a non-member"
    );
    assert_eq!(
        stored(&outsider, &group_consumer, None).await,
        Some((0, 9, 3)),
        "Get by a non-member without a partition uses partition 0"
    );
    assert_eq!(
        stored(&outsider, &Consumer::new(id(group.id)), Some(0)).await,
        None,
        "a plain consumer with the group's numeric id is a different consumer"
    );

    first
        .leave_consumer_group(&id(0), &id(0), &id(group.id))
        .await
        .expect("first leaves");
    second
        .join_consumer_group(&id(0), &id(0), &id(group.id))
        .await
        .expect("second joins");
    let polled = second
        .poll_messages(
            &id(0),
            &id(0),
            None,
            &group_consumer,
            &PollingStrategy::next(),
            2,
            true,
        )
        .await
        .expect("second polls");
    assert_eq!(
        polled
            .messages
            .iter()
            .map(|m| m.header.offset)
            .collect::<Vec<_>>(),
        vec![4, 5],
        "the new member continues from the offset the previous member stored"
    );
    assert_eq!(
        stored(&outsider, &group_consumer, Some(0)).await,
        Some((0, 9, 5))
    );

    assert_error_code(
        outsider
            .delete_consumer_offset(&group_consumer, &id(0), &id(0), Some(0))
            .await,
        5006,
        "delete by a non-member",
    );
    second
        .delete_consumer_offset(&group_consumer, &id(0), &id(0), Some(0))
        .await
        .expect("member deletes");
    assert_eq!(stored(&outsider, &group_consumer, Some(0)).await, None);
}

/// Stores the offsets the durability tests check: plain consumers 1 and "named" on partitions
/// 0 and 1, group "durable" (joined by `client`) on partition 1, and an auto-commit on
/// partition 2 for consumer 3. Returns the expected (consumer, partition) → stored list.
async fn store_durable_offsets(client: &IggyClient) -> Vec<(Consumer, u32, u64)> {
    fixture(client, 3).await;
    for partition in 0..3 {
        fill(client, partition, 20).await;
        fsync_partition(client, partition).await;
    }
    let group = client
        .create_consumer_group(&id(0), &id(0), "durable")
        .await
        .expect("group");
    client
        .join_consumer_group(&id(0), &id(0), &id(group.id))
        .await
        .expect("join");
    let expected = vec![
        (Consumer::new(id(1)), 0, 7),
        (Consumer::new(id(1)), 1, 19),
        (Consumer::new(named("named")), 0, 0),
        (Consumer::group(id(group.id)), 1, 11),
    ];
    for (consumer, partition, offset) in &expected {
        client
            .store_consumer_offset(consumer, &id(0), &id(0), Some(*partition), *offset)
            .await
            .unwrap_or_else(|error| panic!("store {consumer:?} {partition} {offset}: {error}"));
    }
    let auto = Consumer::new(id(3));
    let polled = client
        .poll_messages(
            &id(0),
            &id(0),
            Some(2),
            &auto,
            &PollingStrategy::offset(0),
            13,
            true,
        )
        .await
        .expect("auto-commit poll");
    assert_eq!(polled.messages.len(), 13);
    let mut expected = expected;
    expected.push((auto, 2, 12));
    expected
}

async fn assert_durable_offsets(
    client: &IggyClient,
    expected: &[(Consumer, u32, u64)],
    when: &str,
) {
    for (consumer, partition, offset) in expected {
        assert_eq!(
            stored(client, consumer, Some(*partition)).await,
            Some((*partition, 19, *offset)),
            "{when}: offset of {consumer:?} on partition {partition}"
        );
    }
    assert_eq!(
        stored(client, &Consumer::new(id(1)), Some(2)).await,
        None,
        "{when}: nothing appears where nothing was stored"
    );
}

#[tokio::test]
async fn offsets_survive_a_graceful_restart() {
    // Proves: stored offsets of plain consumers (numeric and named ids) and of a group, including
    // an auto-committed one, are unchanged after SIGTERM and a restart, and Next continues from
    // them. How: official SDK, TestServer restart on the same data directory.
    let mut server = TestServer::start(ServerOptions::new());
    let expected = {
        let client = root_client(&server).await;
        store_durable_offsets(&client).await
    };
    server.restart();
    let client = root_client(&server).await;
    assert_durable_offsets(&client, &expected, "after a graceful restart").await;
    let polled = client
        .poll_messages(
            &id(0),
            &id(0),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::next(),
            1,
            false,
        )
        .await
        .expect("poll next after restart");
    assert_eq!(polled.messages.first().map(|m| m.header.offset), Some(8));
}

#[tokio::test]
async fn stored_offsets_survive_kill_9() {
    // Proves: an acknowledged StoreConsumerOffset (and an auto-commit) is durable: after SIGKILL
    // (nothing flushed at exit) and a restart, every stored offset reads back unchanged. The
    // messages were flushed with fsync first so the partitions' current offsets are known. How:
    // official SDK, TestServer kill + start_again.
    let mut server = TestServer::start(ServerOptions::new());
    let expected = {
        let client = root_client(&server).await;
        store_durable_offsets(&client).await
    };
    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_durable_offsets(&client, &expected, "after kill -9").await;
}

#[tokio::test]
async fn offsets_stay_durable_with_their_files_kept_open() {
    // Proves: with the first consumers' offset files kept open, every store still lands in the
    // file a restart reads: 12 consumers (more than are kept open) storing twice, a deleted
    // offset stored again, and, after a purge removed the files, offsets stored again and
    // auto-committed. Each phase ends with kill -9 and a restart before reading back. It fails
    // if a store goes to a file already unlinked (the purge) or an older value wins.
    let mut server = TestServer::start(ServerOptions::new());
    {
        let client = root_client(&server).await;
        fixture(&client, 1).await;
        fill(&client, 0, 20).await;
        fsync_partition(&client, 0).await;
        for consumer in 1..=12u32 {
            for offset in [consumer % 5, consumer + 5] {
                client
                    .store_consumer_offset(
                        &Consumer::new(id(consumer)),
                        &id(0),
                        &id(0),
                        Some(0),
                        u64::from(offset),
                    )
                    .await
                    .unwrap_or_else(|error| panic!("store {consumer} {offset}: {error}"));
            }
        }
        let two = Consumer::new(id(2));
        client
            .delete_consumer_offset(&two, &id(0), &id(0), Some(0))
            .await
            .expect("delete 2");
        client
            .store_consumer_offset(&two, &id(0), &id(0), Some(0), 3)
            .await
            .expect("store 2 again");
    }
    server.kill();
    server.start_again();
    {
        let client = root_client(&server).await;
        for consumer in 1..=12u32 {
            let expected = if consumer == 2 {
                3
            } else {
                u64::from(consumer) + 5
            };
            assert_eq!(
                stored(&client, &Consumer::new(id(consumer)), Some(0)).await,
                Some((0, 19, expected)),
                "consumer {consumer} after kill -9"
            );
        }
        // Consumer 1's file is open again (this process stored through it) when the purge
        // removes it.
        client
            .store_consumer_offset(&Consumer::new(id(1)), &id(0), &id(0), Some(0), 6)
            .await
            .expect("store 1 before the purge");
        client.purge_topic(&id(0), &id(0)).await.expect("purge");
        fill(&client, 0, 20).await;
        fsync_partition(&client, 0).await;
        client
            .store_consumer_offset(&Consumer::new(id(1)), &id(0), &id(0), Some(0), 4)
            .await
            .expect("store 1 after the purge");
        let polled = client
            .poll_messages(
                &id(0),
                &id(0),
                Some(0),
                &Consumer::new(id(5)),
                &PollingStrategy::offset(0),
                9,
                true,
            )
            .await
            .expect("auto-commit poll after the purge");
        assert_eq!(polled.messages.len(), 9);
    }
    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_eq!(
        stored(&client, &Consumer::new(id(1)), Some(0)).await,
        Some((0, 19, 4)),
        "stored after the purge"
    );
    assert_eq!(
        stored(&client, &Consumer::new(id(5)), Some(0)).await,
        Some((0, 19, 8)),
        "auto-committed after the purge"
    );
    assert_eq!(
        stored(&client, &Consumer::new(id(3)), Some(0)).await,
        None,
        "the purge removed the others"
    );
}
