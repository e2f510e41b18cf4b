//! Three `iggy-server` processes as one cluster (issue 20, first step: the metadata group).
//!
//! What is checked: a leader is elected and every node reports the same roster with roles and
//! health through GetClusterMetadata; a metadata change made through any node (the official
//! SDK 0.10.0, whose leader awareness follows the leader, and 0.11.0, which stays where it
//! dialed) is committed once and visible on every node, partitions included; the leader's
//! kill -9 elects another within seconds and loses nothing acknowledged; a restarted node
//! catches up; a stranger on the replica port is refused. `replication.rs` covers the partition
//! data replicated to its replicas, `placement.rs` where partitions live and lead (replication
//! factor, spread leaders, a partition's own failover), `partition.rs` a network partition
//! between running nodes.

mod harness;
mod partition;
mod placement;
mod replication;

use harness::*;
use iggy::prelude::*;
use rill_integration::sdk::{
    anonymous_client, create_stream, create_topic, id, root_client, root_connection_string,
};
use rill_integration::{TestCluster, TestServer};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_is_elected_and_metadata_changes_reach_every_node() {
    let cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    assert_eq!(view.name, "rill-test");
    assert_eq!(view.nodes.len(), 3);
    for (index, node) in view.nodes.iter().enumerate() {
        assert_eq!(node.name, format!("node-{index}"));
        assert_eq!(node.ip, "127.0.0.1");
        let ports = cluster.ports[index];
        assert_eq!(
            (node.endpoints.tcp, node.endpoints.quic, node.endpoints.http),
            (ports.tcp, ports.quic, ports.http)
        );
    }
    let leader = leader_index(&cluster, &view);
    for server in &cluster.nodes {
        let other = settled_view(server, 3).await;
        assert_eq!(
            leader_index(&cluster, &other),
            leader,
            "every node names one leader"
        );
    }

    // Through every node, the leader and both followers: each change is forwarded or made.
    let mut expected = Vec::new();
    for (index, server) in cluster.nodes.iter().enumerate() {
        let client = root_client(server).await;
        let name = format!("made-through-{index}");
        create_stream(&client, &name).await;
        expected.push(name);
    }
    expected.sort();
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    for server in &cluster.nodes {
        wait_for_streams(server, &expected).await;
    }
    // Users through each node, logged in explicitly (the SDK then stays on that node): every
    // node holds every user in its own metadata.
    for (index, server) in cluster.nodes.iter().enumerate() {
        let client = anonymous_client(server).await;
        client.login_user("iggy", "iggy").await.expect("login");
        client
            .create_user(
                &format!("user-{index}"),
                "secret-1",
                UserStatus::Active,
                None,
            )
            .await
            .unwrap_or_else(|error| panic!("create a user through node {index}: {error}"));
    }
    for server in &cluster.nodes {
        wait_for_users(server, &["iggy", "user-0", "user-1", "user-2"]).await;
    }

    // A topic made through a follower: its partitions exist on every node, same ids.
    let follower = (leader + 1) % 3;
    let client = root_client(&cluster.nodes[follower]).await;
    let stream = client
        .get_stream(&Identifier::named("made-through-0").unwrap())
        .await
        .unwrap()
        .expect("stream");
    let topic = create_topic(&client, stream.id, "events", 3).await;
    for server in &cluster.nodes {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let client = root_client(server).await;
            let found = client
                .get_topic(&id(stream.id), &id(topic.id))
                .await
                .ok()
                .flatten();
            if let Some(found) = found {
                assert_eq!(found.name, "events");
                assert_eq!(found.partitions_count, 3);
                let dir = server.data_path().join(format!(
                    "streams/{}/topics/{}/partitions",
                    stream.id, topic.id
                ));
                let mut partitions: Vec<String> = std::fs::read_dir(&dir)
                    .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                partitions.sort();
                assert_eq!(partitions, ["0", "1", "2"], "on {}", server.address());
                break;
            }
            assert!(
                Instant::now() < deadline,
                "topic missing on {}",
                server.address()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // A name taken is refused once, wherever it is asked.
    let error = root_client(&cluster.nodes[follower])
        .await
        .create_stream("made-through-1")
        .await
        .expect_err("a duplicate name");
    assert_eq!(
        error.as_code(),
        IggyError::StreamNameAlreadyExists(String::new()).as_code()
    );

    // The official 0.9-generation SDK stays on the node it dialed (it is told of that node
    // alone) and its changes are forwarded like any other.
    let v011 = rill_integration::sdk_v011::root_client(&cluster.nodes[follower]).await;
    use iggy_v011::prelude::{ClusterClient as _, StreamClient as _};
    let metadata = v011
        .get_cluster_metadata()
        .await
        .expect("0.11 cluster metadata");
    assert_eq!(metadata.nodes.len(), 1, "{metadata:?}");
    assert_eq!(metadata.nodes[0].endpoints.tcp, cluster.ports[follower].tcp);
    v011.create_stream("made-by-v011")
        .await
        .expect("0.11 create_stream");
    let mut expected = expected.clone();
    expected.push("made-by-v011");
    expected.sort();
    for server in &cluster.nodes {
        wait_for_streams(server, &expected).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaders_kill_elects_another_and_a_restarted_node_catches_up() {
    let mut cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    let admin = root_client(&cluster.nodes[leader]).await;
    create_stream(&admin, "before").await;
    admin
        .create_user("before", "secret-1", UserStatus::Active, None)
        .await
        .expect("create user");
    for server in &cluster.nodes {
        wait_for_streams(server, &["before"]).await;
    }

    cluster.nodes[leader].kill();
    let killed = Instant::now();
    let survivor = (leader + 1) % 3;
    // The survivors elect a leader among themselves and take changes again.
    let deadline = Instant::now() + ELECTION;
    loop {
        // Connecting may fail too: the SDK follows the leader the node names, which may be
        // the dead one until the survivors have elected another.
        let client =
            IggyClient::from_connection_string(&root_connection_string(&cluster.nodes[survivor]))
                .unwrap();
        let made = match client.connect().await {
            Ok(()) => client.create_stream("after").await.map(|_| ()),
            Err(error) => Err(error),
        };
        let made = match made {
            Ok(()) => client
                .create_user("after", "secret-1", UserStatus::Active, None)
                .await
                .map(|_| ()),
            Err(error) => Err(error),
        };
        match made {
            Ok(()) => break,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "no change accepted {ELECTION:?} after the leader's kill: {error}\n{}",
                    cluster.nodes[survivor].log_tail()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let failover = killed.elapsed();
    assert!(
        failover < Duration::from_secs(10),
        "failover took {failover:?}"
    );
    eprintln!("failover (kill to first accepted change): {failover:?}");
    for (index, server) in cluster.nodes.iter().enumerate() {
        if index != leader {
            wait_for_streams(server, &["after", "before"]).await;
        }
    }

    // The old leader comes back as a follower and receives what it missed.
    cluster.nodes[leader].start_again();
    wait_for_streams(&cluster.nodes[leader], &["after", "before"]).await;
    // What it missed is in its own metadata now.
    wait_for_users(&cluster.nodes[leader], &["after", "before", "iggy"]).await;
    let view = settled_view(&cluster.nodes[leader], 3).await;
    assert_ne!(
        cluster.ports[leader_index(&cluster, &view)].tcp,
        0,
        "a leader after the restart"
    );
    // Restarting the whole cluster keeps everything and changes nothing twice.
    for server in &mut cluster.nodes {
        server.restart();
    }
    settled_view(&cluster.nodes[0], 3).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["after", "before"]).await;
        wait_for_users(server, &["after", "before", "iggy"]).await;
    }
}

#[test]
fn a_stranger_on_the_replica_port_is_refused() {
    let secret = "a shared secret of 32 bytes or more!";
    let cluster = TestCluster::start(
        2,
        options()
            .env("IGGY_CLUSTER_AUTH_ENABLED", "true")
            .env("IGGY_CLUSTER_AUTH_SHARED_SECRET", secret),
    );
    // Garbage, then a well-formed hello from a replica id not in the roster, then one that
    // claims a roster id but cannot prove the secret, then a roster id speaking an older
    // replica protocol: each connection is closed unanswered or after the hello.
    let cluster_id = xxhash_rust::xxh3::xxh3_64(b"rill-test");
    for (version, claimed, proof) in [
        (3u16, None, None),
        (3, Some(7u64), None),
        (3, Some(0u64), Some([0u8; 32])),
        (2, Some(0u64), None),
    ] {
        let mut hello = b"RILLRAFT".to_vec();
        hello.extend_from_slice(&version.to_le_bytes());
        hello.push(1);
        let mut stream = std::net::TcpStream::connect(cluster.replica_address(1)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        match claimed {
            None => stream.write_all(&[0xAB; 64]).unwrap(),
            Some(replica) => {
                let mut bytes = hello.clone();
                bytes.extend_from_slice(&replica.to_le_bytes());
                bytes.extend_from_slice(&cluster_id.to_le_bytes());
                bytes.extend_from_slice(&[9u8; 32]);
                stream.write_all(&bytes).unwrap();
                if let Some(proof) = proof {
                    stream.write_all(&proof).unwrap();
                }
            }
        }
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        // At most the node's own hello (59 bytes), never an answer to a request.
        assert!(
            answer.len() <= 59,
            "{claimed:?}: {} bytes back",
            answer.len()
        );
    }
    let refused = |log: &str| {
        log.contains("not a rill replica")
            && log.contains("not a peer in the roster")
            && log.contains("does not know the cluster's shared secret")
            && log.contains("replica protocol version 2, this node speaks 3")
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !refused(&cluster.nodes[1].log()) {
        assert!(Instant::now() < deadline, "{}", cluster.nodes[1].log_tail());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The members themselves still form the cluster.
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(settled_view(&cluster.nodes[0], 2));
}

#[test]
fn a_cluster_config_without_a_place_in_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let roster = [
        ("IGGY_CLUSTER_ENABLED", "true"),
        ("IGGY_CLUSTER_NODES_0_NAME", "a"),
        ("IGGY_CLUSTER_NODES_0_IP", "127.0.0.1"),
        ("IGGY_CLUSTER_NODES_0_REPLICA_ID", "0"),
        ("IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA", "1"),
    ];
    let (ok, output) = rill_integration::binary::run_to_exit(dir.path(), &roster);
    assert!(!ok && output.contains("--replica-id"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_and_offsets_sent_through_followers_live_on_the_leader() {
    use iggy_v011::prelude as v11;
    use iggy_v011::prelude::{ConsumerOffsetClient as _, MessageClient as _};
    use rill_integration::sdk_v011;
    let cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    let (first, second) = ((leader + 1) % 3, (leader + 2) % 3);
    let admin = root_client(&cluster.nodes[leader]).await;
    let stream = create_stream(&admin, "data").await;
    create_topic(&admin, stream, "events", 2).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &["data"]).await;
    }

    // SDK 0.11.0 stays on the follower it dialed; the follower relays to the leader.
    let writer = sdk_v011::root_client(&cluster.nodes[first]).await;
    let mut batch = vec![
        sdk_v011::message(1, "one", Some("h")),
        sdk_v011::message(2, "two", None),
    ];
    let sent = writer
        .send_messages(
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            &v11::Partitioning::partition_id(1),
            &mut batch,
        )
        .await
        .expect("send through a follower");
    let confirmed: Vec<_> = sent
        .confirmations
        .iter()
        .map(|c| (c.partition_id, c.base_offset))
        .collect();
    assert_eq!(confirmed, [(1, 0)]);

    // Read back through the other follower and through the leader: the same two messages.
    let reader = sdk_v011::root_client(&cluster.nodes[second]).await;
    let polled = reader
        .poll_messages(
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            Some(1),
            &v11::Consumer::new(sdk_v011::id(4)),
            &v11::PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll through a follower");
    let payloads: Vec<_> = polled
        .messages
        .iter()
        .map(|m| (m.header.offset, m.header.id, m.payload.to_vec()))
        .collect();
    assert_eq!(payloads, [(0, 1, b"one".to_vec()), (1, 2, b"two".to_vec())]);
    assert!(
        polled.messages[0].user_headers.is_some(),
        "user headers travel"
    );
    let at_leader = admin
        .poll_messages(
            &id(stream),
            &id(0),
            Some(1),
            &Consumer::new(id(4)),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll at the leader");
    assert_eq!(at_leader.messages.len(), 2);
    let topic = admin
        .get_topic(&id(stream), &id(0))
        .await
        .unwrap()
        .expect("topic");
    assert_eq!(topic.messages_count, 2, "the leader holds them");

    // An offset stored through one follower is read through the other.
    reader
        .store_consumer_offset(
            &v11::Consumer::new(sdk_v011::id(4)),
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            Some(1),
            1,
        )
        .await
        .expect("store through a follower");
    let stored = writer
        .get_consumer_offset(
            &v11::Consumer::new(sdk_v011::id(4)),
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            Some(1),
        )
        .await
        .expect("get through a follower")
        .expect("an offset");
    assert_eq!(stored.stored_offset, 1);

    // A bad request relayed is refused like a local one.
    let error = reader
        .poll_messages(
            &sdk_v011::id(stream),
            &sdk_v011::id(0),
            Some(9),
            &v11::Consumer::new(sdk_v011::id(4)),
            &v11::PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect_err("no partition 9");
    assert_eq!(error.as_code(), 3007, "PartitionNotFound: {error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_the_majority_acknowledges_nothing() {
    let cluster = TestCluster::start(3, options());
    let view = settled_view(&cluster.nodes[0], 3).await;
    let leader = leader_index(&cluster, &view);
    // Logged in explicitly: the client stays on the leader whatever GetClusterMetadata says.
    let client = anonymous_client(&cluster.nodes[leader]).await;
    client.login_user("iggy", "iggy").await.expect("login");
    let followers: Vec<i32> = (0..3)
        .filter(|index| *index != leader)
        .map(|index| cluster.nodes[index].pid().expect("running") as i32)
        .collect();
    // Frozen followers are a network partition with the leader on the minority side.
    freeze(&followers);
    let asked = Instant::now();
    let refused = client.create_stream("cut-off").await;
    let waited = asked.elapsed();
    for pid in &followers {
        assert_eq!(unsafe { libc::kill(*pid, libc::SIGCONT) }, 0);
    }
    eprintln!("refused after {waited:?}: {refused:?}");
    assert!(refused.is_err(), "a change acknowledged without a majority");
    assert!(
        waited < Duration::from_secs(20),
        "the refusal took {waited:?}"
    );
    // Healed, the cluster takes changes again (the refused one may or may not have been
    // committed in the end, as with any consensus system: the client was told it is unknown).
    let deadline = Instant::now() + ELECTION;
    loop {
        let client = first_client(&cluster.nodes[leader]).await;
        match client.create_stream("healed").await {
            Ok(_) => break,
            Err(error) => assert!(
                Instant::now() < deadline,
                "no change accepted after healing: {error}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `[cluster.tls]` with certificates from a CA: the nodes check each other's certificate for
/// the roster address they dial, elect a leader, replicate a message byte for byte, and a
/// plaintext dialer gets no replica hello.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_connections_over_tls_elect_replicate_and_refuse_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    // Every node is on 127.0.0.1 here, so one certificate serves them all.
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let file = |name: &str, pem: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_string_lossy().into_owned()
    };
    let (ca_file, cert_file, key_file) = (
        file("ca.pem", ca_cert.pem()),
        file("node.pem", cert.pem()),
        file("node.key", key.serialize_pem()),
    );
    let mut cluster = TestCluster::start(
        3,
        options()
            .env("IGGY_CLUSTER_AUTH_ENABLED", "true")
            .env(
                "IGGY_CLUSTER_AUTH_SHARED_SECRET",
                "a shared secret of 32 bytes or more!",
            )
            .env("IGGY_CLUSTER_TLS_ENABLED", "true")
            .env("IGGY_CLUSTER_TLS_CA_FILE", &ca_file)
            .env("IGGY_CLUSTER_TLS_CERT_FILE", &cert_file)
            .env("IGGY_CLUSTER_TLS_KEY_FILE", &key_file),
    );
    let (_, client, stream) = leader_with_stream(&cluster, "sealed").await;
    send_one(&client, stream, "over tls").await.expect("send");
    assert_eq!(payloads(&client, stream).await, ["over tls"]);

    let mut plain = std::net::TcpStream::connect(cluster.replica_address(0)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut hello = b"RILLRAFT".to_vec();
    hello.extend_from_slice(&[3, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    plain.write_all(&hello).unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.windows(8).any(|bytes| bytes == b"RILLRAFT"),
        "a plaintext dialer got a replica hello"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    for server in &mut cluster.nodes {
        assert!(server.log().contains("replica connections use TLS 1.3"));
        server.stop();
    }
    let logs: Vec<Vec<u8>> = cluster.nodes.iter().map(stored_bytes).collect();
    assert!(!logs[0].is_empty());
    assert!(
        logs.iter().all(|log| log == &logs[0]),
        "the nodes' logs differ"
    );
}
