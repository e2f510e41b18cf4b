//! Cooperative rebalancing (`[consumer_group] rebalancing_timeout`) through the official SDK: a
//! partition moving to a new member stays with its holder until the group's stored offset covers
//! what the holder polled (or the timeout passes), so the new member starts after what was
//! processed; with the timeout at 0 (the hand-over at once, as before) the same sequence hands
//! the new member messages the first one already processed. Under load, with members joining
//! and leaving while a producer sends, the messages processed twice are counted both ways.

use iggy::prelude::*;
use rill_integration::fixtures::{send_batch, test_messages};
use rill_integration::sdk::{create_stream, create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn server(timeout: &str) -> TestServer {
    TestServer::start(ServerOptions::new().env("IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT", timeout))
}

/// Stream 0, topic 0 with `partitions` partitions of `per_partition` messages, group "g".
async fn fixture(server: &TestServer, partitions: u32, per_partition: u64) -> IggyClient {
    let root = root_client(server).await;
    create_stream(&root, "s").await;
    create_topic(&root, 0, "t", partitions).await;
    for partition in (0..partitions).filter(|_| per_partition > 0) {
        let messages = test_messages(partition, 0, per_partition);
        send_batch(
            &root,
            &id(0),
            &id(0),
            &Partitioning::partition_id(partition),
            messages,
        )
        .await;
    }
    root.create_consumer_group(&id(0), &id(0), "g")
        .await
        .expect("create group");
    root
}

async fn member(server: &TestServer) -> IggyClient {
    let client = root_client(server).await;
    client
        .join_consumer_group(&id(0), &id(0), &named("g"))
        .await
        .expect("join");
    client
}

/// A round-robin group poll without auto-commit: (partition, offsets).
async fn poll(client: &IggyClient, count: u32) -> (u32, Vec<u64>) {
    let polled = client
        .poll_messages(
            &id(0),
            &id(0),
            None,
            &Consumer::group(named("g")),
            &PollingStrategy::next(),
            count,
            false,
        )
        .await
        .expect("group poll");
    let offsets = polled.messages.iter().map(|m| m.header.offset).collect();
    (polled.partition_id, offsets)
}

async fn commit(client: &IggyClient, partition: u32, offset: u64) {
    client
        .store_consumer_offset(
            &Consumer::group(named("g")),
            &id(0),
            &id(0),
            Some(partition),
            offset,
        )
        .await
        .expect("store offset");
}

/// The partitions each member holds, by member id, as GetConsumerGroup lists them.
async fn assignment(root: &IggyClient) -> Vec<Vec<u32>> {
    let details = root
        .get_consumer_group(&id(0), &id(0), &named("g"))
        .await
        .expect("get group")
        .expect("group exists");
    let mut members: Vec<(u32, Vec<u32>)> = details
        .members
        .into_iter()
        .map(|member| (member.id, member.partitions))
        .collect();
    members.sort();
    members
        .into_iter()
        .map(|(_, partitions)| partitions)
        .collect()
}

/// Member A reads 5 messages of each of 2 partitions without committing, then B joins.
async fn a_reads_then_b_joins(server: &TestServer) -> (IggyClient, IggyClient, IggyClient) {
    let root = fixture(server, 2, 10).await;
    let a = member(server).await;
    assert_eq!(poll(&a, 5).await, (0, (0..5).collect()));
    assert_eq!(poll(&a, 5).await, (1, (0..5).collect()));
    let b = member(server).await;
    (root, a, b)
}

#[tokio::test]
async fn a_partition_moves_only_once_its_holder_committed_what_it_read() {
    let server = server("30 s");
    let (root, a, b) = a_reads_then_b_joins(&server).await;
    // Partition 1 is revoked from A: A still holds it, B has nothing to poll yet.
    assert_eq!(assignment(&root).await, [vec![0, 1], vec![]]);
    let (_, nothing) = poll(&b, 5).await;
    assert!(nothing.is_empty(), "B got {nothing:?} before A committed");
    // A's round robin no longer hands out partition 1.
    assert_eq!(poll(&a, 5).await.0, 0);
    assert_eq!(poll(&a, 5).await.0, 0);
    // A commits what it processed of partition 1: it moves, and B continues after it.
    commit(&a, 1, 4).await;
    assert_eq!(assignment(&root).await, [vec![0], vec![1]]);
    assert_eq!(poll(&b, 5).await, (1, (5..10).collect()));
}

#[tokio::test]
async fn with_the_timeout_at_zero_the_new_member_reads_again_what_was_processed() {
    let server = server("0 s");
    let (root, _a, b) = a_reads_then_b_joins(&server).await;
    assert_eq!(assignment(&root).await, [vec![0], vec![1]]);
    assert_eq!(
        poll(&b, 5).await,
        (1, (0..5).collect()),
        "the messages A read of partition 1 are delivered again"
    );
}

#[tokio::test]
async fn a_holder_that_never_commits_loses_the_partition_after_the_timeout() {
    let server = server("1 s");
    let (root, _a, b) = a_reads_then_b_joins(&server).await;
    assert_eq!(assignment(&root).await, [vec![0, 1], vec![]]);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(assignment(&root).await, [vec![0], vec![1]]);
    assert_eq!(poll(&b, 5).await, (1, (0..5).collect()));
}

#[tokio::test]
async fn a_disconnected_holder_hands_over_at_once() {
    let server = server("30 s");
    let (root, a, b) = a_reads_then_b_joins(&server).await;
    a.disconnect().await.expect("disconnect");
    // The server notices the closed connection and removes A from the group.
    for _ in 0..50 {
        if assignment(&root).await == [vec![0, 1]] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(assignment(&root).await, [vec![0, 1]]);
    let (partition, offsets) = poll(&b, 5).await;
    assert_eq!(
        offsets,
        (0..5).collect::<Vec<u64>>(),
        "partition {partition}"
    );
}

/// Members that commit after processing every poll join and leave while a producer sends; returns how many
/// messages were processed more than once, and how many distinct ones were processed.
async fn churn(timeout: &str) -> (usize, usize) {
    const PARTITIONS: u32 = 4;
    let server = server(timeout);
    let _root = fixture(&server, PARTITIONS, 0).await;
    let producing = Arc::new(AtomicBool::new(true));
    let producer = {
        let client = root_client(&server).await;
        let producing = producing.clone();
        tokio::spawn(async move {
            let mut sequence = 0;
            while producing.load(Ordering::Relaxed) {
                for partition in 0..PARTITIONS {
                    let messages = test_messages(partition, sequence, 10);
                    let partitioning = Partitioning::partition_id(partition);
                    send_batch(&client, &id(0), &id(0), &partitioning, messages).await;
                }
                sequence += 10;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sequence
        })
    };
    // Four members, each in and out of the group several times, processing as they go.
    let mut workers = Vec::new();
    for worker in 0..4u64 {
        let client = root_client(&server).await;
        workers.push(tokio::spawn(async move {
            let mut processed: Vec<(u32, u64)> = Vec::new();
            for round in 0..4u64 {
                client
                    .join_consumer_group(&id(0), &id(0), &named("g"))
                    .await
                    .expect("join");
                for _ in 0..(8 + (worker * 3 + round) % 7) {
                    let (partition, offsets) = poll(&client, 10).await;
                    if let Some(&last) = offsets.last() {
                        processed.extend(offsets.iter().map(|&offset| (partition, offset)));
                        // Processing takes a moment before the commit, as it does for real.
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        commit(&client, partition, last).await;
                    } else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                client
                    .leave_consumer_group(&id(0), &id(0), &named("g"))
                    .await
                    .expect("leave");
                tokio::time::sleep(Duration::from_millis(10 * (worker + 1))).await;
            }
            processed
        }));
    }
    let mut processed = Vec::new();
    for worker in workers {
        processed.extend(worker.await.expect("worker"));
    }
    producing.store(false, Ordering::Relaxed);
    producer.await.expect("producer");
    let mut times: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for message in processed {
        *times.entry(message).or_default() += 1;
    }
    let twice = times.values().map(|&count| count - 1).sum();
    (twice, times.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn members_joining_and_leaving_under_load_process_nothing_twice() {
    let (instant_twice, instant_distinct) = churn("0 s").await;
    let (cooperative_twice, cooperative_distinct) = churn("30 s").await;
    println!(
        "processed twice: {instant_twice} of {instant_distinct} with the hand-over at once, \
         {cooperative_twice} of {cooperative_distinct} cooperative"
    );
    assert!(cooperative_distinct > 0 && instant_distinct > 0);
    assert_eq!(
        cooperative_twice, 0,
        "members that commit what they process never see it processed again"
    );
}

/// The 0.9 generation resolves group partitions client side from SyncConsumerGroup, which it
/// re-sends after every heartbeat: a revoked partition is left out of the holder's list, so its
/// SDK stops polling it, and the partition moves once the holder has committed.
#[tokio::test]
async fn a_0_11_sdk_member_stops_polling_a_revoked_partition_after_its_next_sync() {
    use iggy_v011::prelude as v11;
    use iggy_v011::prelude::{
        ConsumerGroupClient as _, ConsumerOffsetClient as _, MessageClient as _,
    };
    use rill_integration::sdk_v011;
    let server = server("30 s");
    let root = fixture(&server, 2, 10).await;
    let a = sdk_v011::root_client(&server).await;
    let group_id = sdk_v011::named("g");
    a.join_consumer_group(&sdk_v011::id(0), &sdk_v011::id(0), &group_id)
        .await
        .expect("0.11 member joins");
    let poll_a = || async {
        let polled = a
            .poll_messages(
                &sdk_v011::id(0),
                &sdk_v011::id(0),
                None,
                &v11::Consumer::group(sdk_v011::named("g")),
                &v11::PollingStrategy::next(),
                5,
                false,
            )
            .await
            .expect("0.11 group poll");
        polled.partition_id
    };
    let mut polled: Vec<u32> = Vec::new();
    for _ in 0..2 {
        polled.push(poll_a().await);
    }
    polled.sort_unstable();
    assert_eq!(polled, [0, 1], "A round-robins over both partitions");

    let b = member(&server).await;
    assert_eq!(assignment(&root).await, [vec![0, 1], vec![]]);
    // The SDK re-syncs after its next heartbeat (5 s by default); then it polls only partition 0.
    // Until then it may still read partition 1 (it holds it until it commits; it does not).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while (poll_a().await, poll_a().await) != (0, 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the 0.11 SDK never re-synced its partitions"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for _ in 0..4 {
        assert_eq!(
            poll_a().await,
            0,
            "the revoked partition is no longer polled"
        );
    }
    // A commits what it read of partition 1: it moves to B.
    a.store_consumer_offset(
        &v11::Consumer::group(sdk_v011::named("g")),
        &sdk_v011::id(0),
        &sdk_v011::id(0),
        Some(1),
        4,
    )
    .await
    .expect("0.11 commit");
    assert_eq!(assignment(&root).await, [vec![0], vec![1]]);
    assert_eq!(poll(&b, 5).await, (1, (5..10).collect()));
}
