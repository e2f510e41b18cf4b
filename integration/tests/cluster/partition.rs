//! A network partition between running processes (the replica connections go through the test's
//! proxies, `TestCluster::start_with_links`): the leader cut off from the others keeps running
//! and keeps its clients, acknowledges nothing and shows its consumers nothing new, while the
//! majority elects another leader and goes on; healed, the old leader gives up what it alone
//! held (a message, a user, a purge) and every node ends with the majority's log.

use super::*;
use std::str::FromStr;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_leader_acknowledges_nothing_while_the_majority_goes_on() {
    let mut cluster = TestCluster::start_with_links(3, options());
    // The client stays on the leader whatever GetClusterMetadata says.
    let (leader, client, stream) = leader_with_stream(&cluster, "split").await;
    let survivor = (leader + 1) % 3;
    send_one(&client, stream, "before")
        .await
        .expect("a majority is up");

    cluster.links.as_ref().expect("proxied").isolate(leader);
    let asked = Instant::now();
    let refused = send_one(&client, stream, "alone").await;
    let waited = asked.elapsed();
    eprintln!("the isolated leader answered after {waited:?}: {refused:?}");
    refused.expect_err("a send acknowledged by a leader without a majority");
    assert!(
        waited < Duration::from_secs(20),
        "the refusal took {waited:?}"
    );
    // A metadata change and a purge are refused too (each after the 10 s commit timeout, so
    // asked together).
    let (stream_id, topic_id) = (id(stream), id(0));
    let (changed, purged) = tokio::join!(
        client.create_user("alone", "secret-1", UserStatus::Active, None),
        client.purge_topic(&stream_id, &topic_id),
    );
    changed.expect_err("a metadata change acknowledged without a majority");
    // (57 TransientNotCommitted on the wire, which SDK 0.10.0 knows only as an error.)
    purged.expect_err("a purge acknowledged without a majority");
    // Meanwhile the other two elect a leader and take messages.
    let other = send_after_failover(&cluster.nodes[survivor], stream, || {
        vec![IggyMessage::from_str("after").unwrap()]
    })
    .await;
    assert_eq!(payloads(&other, stream).await, ["before", "after"]);
    // The isolated node is still running and still answers its client, with nothing new (and
    // nothing at all: its own purge emptied its log, uncommitted; healing undoes it below).
    assert!(cluster.nodes[leader].is_running());
    assert_eq!(payloads(&client, stream).await, Vec::<String>::new());

    cluster.links.as_ref().expect("proxied").heal();
    // Healed, the old leader follows and takes the majority's log.
    let deadline = Instant::now() + ELECTION;
    loop {
        let mine = payloads(&client, stream).await;
        if mine == ["before", "after"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the healed node shows {mine:?}\n{}",
            cluster.nodes[leader].log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Users are read from the node's own metadata: the change it alone held is gone.
    wait_for_users(&cluster.nodes[leader], &["iggy"]).await;
    send_one(&client, stream, "healed")
        .await
        .expect("the healed cluster takes messages through any node");
    tokio::time::sleep(Duration::from_secs(1)).await;
    for server in &mut cluster.nodes {
        server.stop();
    }
    let logs: Vec<Vec<u8>> = cluster.nodes.iter().map(stored_bytes).collect();
    assert!(
        logs.iter().all(|log| log == &logs[0]),
        "the nodes' logs differ"
    );
}
