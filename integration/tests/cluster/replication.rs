//! Partition data replicated to every node (issue 20, step 3): a send is acknowledged once a
//! majority holds it, consumers see only that, a leader's kill -9 under load loses nothing
//! acknowledged (and stored consumer offsets survive it), and a node that comes back cuts what was never committed and copies the rest,
//! so in the end every node's log holds the same bytes.

use super::*;
use iggy_v011::prelude as v11;
use iggy_v011::prelude::{ConsumerOffsetClient as _, MessageClient as _};
use rill_integration::fixtures::{poll_from, test_messages};
use rill_integration::sdk_v011;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Every message of partition 0, as (offset, id), polled through `server`.
async fn poll_all(server: &TestServer, stream: u32) -> Vec<(u64, u128)> {
    let deadline = Instant::now() + ELECTION;
    'again: loop {
        let client = sdk_v011::root_client(server).await;
        let mut seen = Vec::new();
        loop {
            let polled = client
                .poll_messages(
                    &sdk_v011::id(stream),
                    &sdk_v011::id(0),
                    Some(0),
                    &v11::Consumer::new(sdk_v011::id(7)),
                    &v11::PollingStrategy::offset(seen.len() as u64),
                    1000,
                    false,
                )
                .await;
            match polled {
                Ok(polled) if polled.messages.is_empty() => return seen,
                Ok(polled) => seen.extend(
                    polled
                        .messages
                        .iter()
                        .map(|message| (message.header.offset, message.header.id)),
                ),
                Err(error) => {
                    assert!(
                        Instant::now() < deadline,
                        "cannot poll through {}: {error}",
                        server.address()
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue 'again;
                }
            }
        }
    }
}

/// Sends message `n` (id n + 1) one at a time through `server` until `stop`, recording which
/// were acknowledged and which failed (their fate is unknown: never resent).
async fn produce(
    server: &TestServer,
    stream: u32,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<u128>>>,
) -> tokio::task::JoinHandle<Vec<u128>> {
    let client = sdk_v011::root_client(server).await;
    tokio::spawn(async move {
        let mut failed = Vec::new();
        let mut n = 0u128;
        while !stop.load(Ordering::Relaxed) {
            let id = n + 1;
            let mut batch = vec![sdk_v011::message(id, &format!("message {n}"), None)];
            let sent = client
                .send_messages(
                    &sdk_v011::id(stream),
                    &sdk_v011::id(0),
                    &v11::Partitioning::partition_id(0),
                    &mut batch,
                )
                .await;
            match sent {
                Ok(_) => acked.lock().unwrap().push(id),
                Err(_) => {
                    failed.push(id);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            n += 1;
        }
        failed
    })
}

async fn wait_for_acks(acked: &Mutex<Vec<u128>>, count: usize, server: &TestServer) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < count {
        assert!(
            Instant::now() < deadline,
            "only {} sends acknowledged\n{}",
            acked.lock().unwrap().len(),
            server.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every acknowledged id is stored exactly once and in the order it was acknowledged; nothing
/// is stored twice; offsets run without gaps.
fn check_log(seen: &[(u64, u128)], acked: &[u128], failed: &[u128]) {
    let offsets: Vec<u64> = seen.iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, (0..seen.len() as u64).collect::<Vec<_>>());
    let mut count: HashMap<u128, usize> = HashMap::new();
    for (_, id) in seen {
        *count.entry(*id).or_default() += 1;
    }
    assert!(count.values().all(|&n| n == 1), "an id stored twice");
    let stored: Vec<u128> = seen.iter().map(|(_, id)| *id).collect();
    let acked_in_log: Vec<u128> = stored
        .iter()
        .copied()
        .filter(|id| acked.contains(id))
        .collect();
    assert_eq!(
        acked_in_log, acked,
        "acknowledged messages lost or reordered"
    );
    for id in stored {
        assert!(
            acked.contains(&id) || failed.contains(&id),
            "message {id} was never sent"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_the_leaders_kill_and_every_node_ends_with_the_same_log() {
    let mut cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    let (survivor, other) = ((leader + 1) % 3, (leader + 2) % 3);
    let admin = root_client(&cluster.nodes[leader]).await;
    let stream = create_stream_led_by(&admin, "replicated", leader, 3).await;
    create_topic(&admin, stream, "events", 1).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["replicated"]).await;
    }

    // Load through a follower (SDK 0.11.0 stays on the node it dialed), the leader killed
    // in the middle of it.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let producer = produce(
        &cluster.nodes[survivor],
        stream,
        stop.clone(),
        acked.clone(),
    )
    .await;
    wait_for_acks(&acked, 100, &cluster.nodes[survivor]).await;
    // A consumer's stored offset reaches the followers with their next fetch.
    let consumer = v11::Consumer::new(sdk_v011::id(7));
    let reader = sdk_v011::root_client(&cluster.nodes[other]).await;
    reader
        .store_consumer_offset(
            &consumer,
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            Some(0),
            42,
        )
        .await
        .expect("store an offset");
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.nodes[leader].kill();
    let killed = Instant::now();
    let before = acked.lock().unwrap().len();
    wait_for_acks(&acked, before + 1, &cluster.nodes[survivor]).await;
    eprintln!(
        "failover (kill to the next acknowledged send): {:?}",
        killed.elapsed()
    );
    wait_for_acks(&acked, before + 100, &cluster.nodes[survivor]).await;
    stop.store(true, Ordering::Relaxed);
    let failed = producer.await.unwrap();
    let acked = acked.lock().unwrap().clone();
    check_log(
        &poll_all(&cluster.nodes[other], stream).await,
        &acked,
        &failed,
    );

    // The old leader comes back: it cuts what it held alone and copies what it missed. Then
    // the current leader goes, so the restarted node is part of every majority left.
    cluster.nodes[leader].start_again();
    settled_view(&cluster.nodes[leader], 3).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let view = settled_view(&cluster.nodes[other], 3).await;
    let second = leader_index(&cluster, &view);
    cluster.nodes[second].kill();
    let remaining = (0..3).find(|&index| index != second).unwrap();
    check_log(
        &poll_all(&cluster.nodes[remaining], stream).await,
        &acked,
        &failed,
    );

    // Every node, restarted, catches up; stopped cleanly, their logs are byte for byte equal.
    cluster.nodes[second].start_again();
    settled_view(&cluster.nodes[second], 3).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for server in &mut cluster.nodes {
        server.stop();
    }
    let logs: Vec<Vec<u8>> = cluster.nodes.iter().map(stored_bytes).collect();
    assert!(!logs[0].is_empty());
    for (index, log) in logs.iter().enumerate() {
        assert!(
            log == &logs[0],
            "node {index} holds {} bytes, node 0 holds {}",
            log.len(),
            logs[0].len()
        );
    }
}

fn signal(pids: &[i32], signal: i32) {
    for pid in pids {
        assert_eq!(unsafe { libc::kill(*pid, signal) }, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_without_a_majority_acknowledges_nothing_and_its_lone_tail_is_cut() {
    let mut cluster = TestCluster::start(3, options());
    let (leader, client, stream) = leader_with_stream(&cluster, "cut-off").await;
    let survivor = (leader + 1) % 3;
    send_one(&client, stream, "committed")
        .await
        .expect("a majority is up");
    assert_eq!(payloads(&client, stream).await, ["committed"]);

    // Frozen followers are a network partition with the leader on the minority side.
    let followers: Vec<i32> = (0..3)
        .filter(|index| *index != leader)
        .map(|index| cluster.nodes[index].pid().expect("running") as i32)
        .collect();
    freeze(&followers);
    // A fetch the leader holds is answered (empty) within 500 ms, into the frozen follower's
    // socket; after that no fetch is pending, so "alone" reaches no follower. (Sent earlier,
    // it could be answered into a frozen follower's socket, copied once the follower thaws,
    // and then committed by the others: legitimately, as its fate was reported unknown.)
    tokio::time::sleep(Duration::from_secs(1)).await;
    let asked = Instant::now();
    let refused = send_one(&client, stream, "alone").await;
    let waited = asked.elapsed();
    let shown = payloads(&client, stream).await;
    // The leader dies holding "alone"; the others go on without it.
    cluster.nodes[leader].kill();
    signal(&followers, libc::SIGCONT);
    eprintln!("refused after {waited:?}: {refused:?}");
    refused.expect_err("a send acknowledged without a majority");
    assert_eq!(
        shown,
        ["committed"],
        "a consumer was shown what only the leader holds"
    );
    // 57 TransientNotCommitted on the wire (SDK 0.10.0 knows no such code and says Error).
    assert!(
        cluster.nodes[leader]
            .log()
            .contains("a batch was not held by a majority in time")
    );

    let other = send_after_failover(&cluster.nodes[survivor], stream, || {
        vec![IggyMessage::from_str("after").unwrap()]
    })
    .await;
    assert_eq!(payloads(&other, stream).await, ["committed", "after"]);

    // Back, the old leader cuts "alone" (never acknowledged) and copies "after": stopped
    // cleanly, every node holds the same bytes.
    cluster.nodes[leader].start_again();
    settled_view(&cluster.nodes[leader], 3).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        cluster.nodes[leader]
            .log()
            .contains("cutting messages the leader's log does not hold"),
        "{}",
        cluster.nodes[leader].log_tail()
    );
    for server in &mut cluster.nodes {
        server.stop();
    }
    let logs: Vec<Vec<u8>> = cluster.nodes.iter().map(stored_bytes).collect();
    assert!(
        logs.iter().all(|log| log == &logs[0]),
        "the nodes' logs differ"
    );
}

/// Sends messages `range` through `client`, ten to a request, each about 200 bytes.
async fn send_range(client: &IggyClient, stream: u32, range: std::ops::Range<u32>) {
    let numbers: Vec<u32> = range.collect();
    for chunk in numbers.chunks(10) {
        let batch = chunk
            .iter()
            .map(|n| IggyMessage::from_str(&format!("message {n} {}", "x".repeat(180))).unwrap())
            .collect();
        send_batch(client, stream, batch)
            .await
            .expect("a majority is up");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_behind_what_the_leader_still_holds_restarts_at_the_leaders_first_offset() {
    let mut cluster = TestCluster::start(3, options().env("IGGY_SYSTEM_SEGMENT_SIZE", "4 KiB"));
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    let (lagging, other) = ((leader + 1) % 3, (leader + 2) % 3);
    let client = root_client(&cluster.nodes[leader]).await;
    let stream = create_stream_led_by(&client, "retained", leader, 3).await;
    create_topic(&client, stream, "events", 1).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["retained"]).await;
    }
    send_range(&client, stream, 0..50).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // While one follower is down, the leader deletes every sealed segment (the other follower
    // follows with its next fetch): what the stopped follower misses is gone from the leader.
    cluster.nodes[lagging].kill();
    send_range(&client, stream, 50..600).await;
    let segments = |server: &TestServer| segment_logs(&server.data_path().join("streams")).len();
    let other_segments = segments(&cluster.nodes[other]);
    client
        .delete_segments(&id(stream), &id(0), 0, 1000)
        .await
        .expect("delete the sealed segments");
    cluster.nodes[lagging].start_again();
    let deadline = Instant::now() + ELECTION;
    while !cluster.nodes[lagging]
        .log()
        .contains("restarting its log at the leader's first offset")
    {
        assert!(
            Instant::now() < deadline,
            "the lagging replica did not restart its log\n{}",
            cluster.nodes[lagging].log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It copies the rest, and goes on copying what comes next.
    send_range(&client, stream, 600..620).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for server in &mut cluster.nodes {
        server.stop();
    }
    let logs: Vec<Vec<u8>> = cluster.nodes.iter().map(stored_bytes).collect();
    assert!(
        logs[lagging] == logs[leader],
        "the restarted replica holds {} bytes, the leader {}",
        logs[lagging].len(),
        logs[leader].len()
    );
    // The other follower deleted its segments wholly before the leader's first message; its
    // own boundaries may leave one segment that starts a little earlier.
    assert!(
        logs[other].ends_with(&logs[leader]),
        "the other follower's log does not end with the leader's"
    );
    assert!(
        segments(&cluster.nodes[other]) < other_segments,
        "the other follower kept the deleted segments ({other_segments} of them)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_reaching_the_next_leader_is_stored_once_with_deduplication_on() {
    let mut cluster = TestCluster::start(
        3,
        options().env("IGGY_SYSTEM_MESSAGE_DEDUPLICATION_ENABLED", "true"),
    );
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    let survivor = (leader + 1) % 3;
    let client = root_client(&cluster.nodes[leader]).await;
    let stream = create_stream_led_by(&client, "deduplicated", leader, 3).await;
    create_topic(&client, stream, "events", 1).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["deduplicated"]).await;
    }
    send_batch(&client, stream, test_messages(1, 0, 10))
        .await
        .expect("a majority is up");
    // Both followers copy the batch within a fetch or two.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // The leader dies; a producer that never saw the acknowledgement resends the batch, with
    // five more messages, to whichever node leads next.
    cluster.nodes[leader].kill();
    let other =
        send_after_failover(&cluster.nodes[survivor], stream, || test_messages(1, 0, 15)).await;
    let stored: Vec<(u64, u128)> = poll_from(&other, &id(stream), &id(0), 0, 0, 100)
        .await
        .iter()
        .map(|message| (message.header.offset, message.header.id))
        .collect();
    let expected: Vec<(u64, u128)> = test_messages(1, 0, 15)
        .iter()
        .enumerate()
        .map(|(offset, message)| (offset as u64, message.header.id))
        .collect();
    assert_eq!(stored, expected, "the resent ids were stored again");
}

/// Segments the leader deletes (DeleteSegments here; retention works the same way) go on the
/// followers too, so that after a failover the next leader does not serve them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_the_leader_deletes_go_on_the_followers_too() {
    let mut cluster = TestCluster::start(3, options().env("IGGY_SYSTEM_SEGMENT_SIZE", "4 KiB"));
    let (leader, client, stream) = leader_with_stream(&cluster, "trimmed").await;
    // 40 messages of about 200 bytes: several 4 KiB segments.
    send_range(&client, stream, 0..40).await;
    let segments = |server: &TestServer| segment_logs(&server.data_path().join("streams")).len();
    let log_bytes = |server: &TestServer| stored_bytes(server).len();
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster
        .nodes
        .iter()
        .any(|server| log_bytes(server) != log_bytes(&cluster.nodes[leader]))
    {
        assert!(Instant::now() < deadline, "the followers never held all 40");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before: Vec<usize> = cluster.nodes.iter().map(segments).collect();
    assert!(before[leader] >= 3, "{} segments", before[leader]);
    client
        .delete_segments(&id(stream), &id(0), 0, 2)
        .await
        .expect("delete two segments");
    assert_eq!(segments(&cluster.nodes[leader]), before[leader] - 2);
    let first = offsets_from_zero(&client, stream).await[0];
    assert!(first > 0);
    // Answered once a majority deleted as far: at least one follower already has (the
    // followers' segment boundaries are their own, so only their counts are compared).
    let followed = (0..3)
        .filter(|&index| index != leader && segments(&cluster.nodes[index]) < before[index])
        .count();
    assert!(
        followed >= 1,
        "the deletion was answered before any follower followed it"
    );
    // The next leader, whichever follower it is, serves from the same first offset.
    cluster.nodes[leader].kill();
    let survivor = (leader + 1) % 3;
    let other = send_after_failover(&cluster.nodes[survivor], stream, || {
        vec![IggyMessage::from_str("after").unwrap()]
    })
    .await;
    let offsets = offsets_from_zero(&other, stream).await;
    assert_eq!(offsets[0], first, "the next leader serves deleted messages");
    assert_eq!(offsets, (first..=40).collect::<Vec<_>>());
}

/// The offsets one poll from offset 0 returns (the first is the first one stored).
async fn offsets_from_zero(client: &IggyClient, stream: u32) -> Vec<u64> {
    poll_from_zero(client, stream, 1000)
        .await
        .iter()
        .map(|message| message.header.offset)
        .collect()
}

/// A topic's own segment size (a 0.9 CreateTopic option that 0.8's request cannot carry),
/// asked of a follower, is forwarded with the request to the metadata leader, and every node's
/// replica of the topic rotates at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_through_a_follower_keeps_its_segment_size_on_every_node() {
    use iggy_v011::prelude::{StreamClient as _, TopicClient as _};
    let cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let follower = (leader_index(&cluster, &view) + 1) % 3;
    let client = sdk_v011::root_client(&cluster.nodes[follower]).await;
    let stream = client.create_stream("sized").await.expect("stream").id;
    let options = v11::TopicCreateOptions {
        partitions_count: Some(1),
        segment_size: Some(v11::IggyByteSize::from(1u64 << 20)),
        ..Default::default()
    };
    client
        .create_topic(&sdk_v011::id(stream), "events", &options)
        .await
        .expect("a topic with 1 MiB segments, through a follower");
    // About 3.1 MB: at least three 1 MiB segments on each node.
    sdk_v011::send_filler(&client, &sdk_v011::id(stream), &sdk_v011::id(0), 12).await;
    let segments = |server: &TestServer| segment_logs(&server.data_path().join("streams")).len();
    let deadline = Instant::now() + Duration::from_secs(20);
    while cluster.nodes.iter().any(|server| segments(server) < 3) {
        let counts: Vec<usize> = cluster.nodes.iter().map(segments).collect();
        assert!(
            Instant::now() < deadline,
            "every replica should rotate at 1 MiB: segments per node {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
