//! Where partitions live: a topic's `replication_factor` nodes hold each of its partitions,
//! the partitions' leaders are spread over the nodes, any node serves any partition (forwarding
//! to its leader), and a partition whose leader dies moves to another of its replicas, then
//! back once that node has returned.

use super::*;
use iggy::prelude::IggyMessage;
use rill_integration::fixtures::poll_from;
use rill_integration::sdk::named;
use std::str::FromStr;

/// How many "leading the partition" lines for `key` (`stream/topic/partition`) a log holds.
fn leads(server: &TestServer, key: &str) -> usize {
    server
        .log()
        .lines()
        .filter(|line| line.contains("leading the partition") && line.contains(key))
        .count()
}

/// The node whose log last says it leads `key`, waiting for one to.
async fn leader_of(cluster: &TestCluster, key: &str, not: &[usize]) -> usize {
    let deadline = Instant::now() + ELECTION;
    loop {
        let leading: Vec<usize> = (0..cluster.nodes.len())
            .filter(|index| !not.contains(index) && leads(&cluster.nodes[*index], key) > 0)
            .collect();
        if let [only] = leading[..] {
            return only;
        }
        assert!(
            Instant::now() < deadline,
            "no single leader of {key}: {leading:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn send_to(client: &IggyClient, stream: u32, partition: u32, payload: &str) {
    let mut batch = vec![IggyMessage::from_str(payload).unwrap()];
    client
        .send_messages(
            &id(stream),
            &id(0),
            &Partitioning::partition_id(partition),
            &mut batch,
        )
        .await
        .unwrap_or_else(|error| panic!("send {payload:?} to partition {partition}: {error}"));
}

async fn payloads_of(client: &IggyClient, stream: u32, partition: u32) -> Vec<String> {
    poll_from(client, &id(stream), &id(0), partition, 0, 100)
        .await
        .iter()
        .map(|message| String::from_utf8_lossy(&message.payload).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_live_on_their_replicas_with_leaders_spread_and_any_node_serves_them() {
    let cluster = TestCluster::start(3, options());
    settled_view(&cluster.nodes[0], 3).await;
    let admin = first_client(&cluster.nodes[0]).await;
    let stream = create_stream(&admin, "placed").await;
    admin
        .create_topic(
            &id(stream),
            "pairs",
            3,
            CompressionAlgorithm::None,
            Some(2),
            IggyExpiry::ServerDefault,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("a topic with two replicas per partition");
    // Without a factor: the configured default, 3.
    let everywhere = create_topic(&admin, stream, "everywhere", 3).await;
    assert_eq!(everywhere.replication_factor, 3);
    // 1 (the official CLI's default) is the default too, never an unreplicated topic.
    let single = admin
        .create_topic(
            &id(stream),
            "cli-default",
            1,
            CompressionAlgorithm::None,
            Some(1),
            IggyExpiry::ServerDefault,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("a topic asked with factor 1");
    assert_eq!(single.replication_factor, 3);
    for server in &cluster.nodes {
        wait_for_streams(server, &["placed"]).await;
    }

    // Each partition is led by one of its replicas, and the three leaders are three nodes.
    let mut leaders = Vec::new();
    for partition in 0..3 {
        leaders.push(leader_of(&cluster, &format!("partition={stream}/0/{partition}"), &[]).await);
    }
    leaders.sort();
    assert_eq!(leaders, [0, 1, 2], "the leaders are not spread");

    // Sent through one node, read through every node; the counters are the leaders'.
    let clients = [
        sdk_client(&cluster.nodes[0]).await,
        sdk_client(&cluster.nodes[1]).await,
        sdk_client(&cluster.nodes[2]).await,
    ];
    for partition in 0..3u32 {
        let through = &clients[(partition as usize + 1) % 3];
        for n in 0..2 {
            send_to(through, stream, partition, &format!("p{partition}-{n}")).await;
        }
    }
    for client in &clients {
        for partition in 0..3u32 {
            assert_eq!(
                payloads_of(client, stream, partition).await,
                [format!("p{partition}-0"), format!("p{partition}-1")]
            );
        }
        let topic = client
            .get_topic(&id(stream), &id(0))
            .await
            .unwrap()
            .expect("the topic");
        assert_eq!(topic.replication_factor, 2);
        assert_eq!(
            topic.messages_count, 6,
            "counted by every partition's leader"
        );
    }

    // A consumer group: its membership lives on the metadata leader, its messages with each
    // partition's leader, its offsets (auto-committed) there too.
    let member = &clients[2];
    member
        .create_consumer_group(&id(stream), &id(0), "readers")
        .await
        .expect("create a group through a follower");
    member
        .join_consumer_group(&id(stream), &id(0), &named("readers"))
        .await
        .expect("join through a follower");
    let group = Consumer::group(named("readers"));
    let mut seen = Vec::new();
    for _ in 0..6 {
        let polled = member
            .poll_messages(
                &id(stream),
                &id(0),
                None,
                &group,
                &PollingStrategy::next(),
                10,
                true,
            )
            .await
            .expect("a group poll");
        seen.extend(
            polled
                .messages
                .iter()
                .map(|message| String::from_utf8_lossy(&message.payload).into_owned()),
        );
    }
    seen.sort();
    assert_eq!(seen, ["p0-0", "p0-1", "p1-0", "p1-1", "p2-0", "p2-1"]);
    for partition in 0..3 {
        let stored = clients[0]
            .get_consumer_offset(&group, &id(stream), &id(0), Some(partition))
            .await
            .expect("a group's offset")
            .expect("stored by the auto-commit");
        assert_eq!(stored.stored_offset, 1, "partition {partition}");
    }

    // On disk: each partition of "pairs" on exactly two nodes, each of "everywhere" on all.
    for (topic, holders) in [(0, 2), (1, 3), (2, 3)] {
        for partition in 0..if topic == 2 { 1 } else { 3 } {
            let relative = format!("streams/{stream}/topics/{topic}/partitions/{partition}");
            let held = cluster
                .nodes
                .iter()
                .filter(|server| server.data_path().join(&relative).is_dir())
                .count();
            assert_eq!(held, holders, "{relative} is held by {held} nodes");
        }
    }
}

/// A sender that stays on the node it dialed (no leader awareness in the way).
async fn sdk_client(server: &TestServer) -> IggyClient {
    let client = anonymous_client(server).await;
    client.login_user("iggy", "iggy").await.expect("login");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_whose_leader_dies_moves_to_another_replica_and_comes_back() {
    let mut cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let metadata_leader = leader_index(&cluster, &view);
    let admin = first_client(&cluster.nodes[0]).await;
    let stream = create_stream(&admin, "moving").await;
    create_topic(&admin, stream, "events", 3).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["moving"]).await;
    }
    // A partition led by a node that does not lead the metadata: its failover is the
    // metadata leader's decision alone, with no election in between.
    let mut moved = None;
    for partition in 0..3 {
        let key = format!("partition={stream}/0/{partition}");
        let leader = leader_of(&cluster, &key, &[]).await;
        if leader != metadata_leader {
            moved = Some((partition, key, leader));
            break;
        }
    }
    let (partition, key, leader) = moved.expect("a partition led elsewhere");
    let survivor = (0..3)
        .find(|index| *index != leader && *index != metadata_leader)
        .unwrap();
    let client = sdk_client(&cluster.nodes[survivor]).await;
    send_to(&client, stream, partition as u32, "before").await;

    cluster.nodes[leader].kill();
    let killed = Instant::now();
    let deadline = killed + ELECTION;
    loop {
        let mut batch = vec![IggyMessage::from_str("after").unwrap()];
        let sent = client
            .send_messages(
                &id(stream),
                &id(0),
                &Partitioning::partition_id(partition as u32),
                &mut batch,
            )
            .await;
        match sent {
            Ok(()) => break,
            Err(error) => assert!(
                Instant::now() < deadline,
                "the partition found no other leader: {error}\n{}",
                cluster.nodes[metadata_leader].log_tail()
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "partition failover (kill to the next send): {:?}",
        killed.elapsed()
    );
    let next = leader_of(&cluster, &key, &[leader]).await;
    assert_ne!(next, leader);
    assert_eq!(
        payloads_of(&client, stream, partition as u32).await,
        ["before", "after"]
    );

    // Back and heard from for a while, the preferred node leads its partition again, with
    // everything it missed.
    let before = leads(&cluster.nodes[leader], &key);
    cluster.nodes[leader].start_again();
    let deadline = Instant::now() + Duration::from_secs(30);
    while leads(&cluster.nodes[leader], &key) <= before {
        assert!(
            Instant::now() < deadline,
            "the partition did not return\n{}",
            cluster.nodes[leader].log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let back = sdk_client(&cluster.nodes[leader]).await;
    send_to(&back, stream, partition as u32, "returned").await;
    assert_eq!(
        payloads_of(&client, stream, partition as u32).await,
        ["before", "after", "returned"]
    );
}
