//! What the cluster tests share: waiting for a leader and a settled view, finding the leader,
//! freezing processes, waiting until a node's own copy of the metadata holds what a test
//! expects, sending and polling partition 0, and reading a node's stored log.

use iggy::prelude::*;
use rill_integration::sdk::{
    anonymous_client, create_stream, create_topic, id, root_client, root_connection_string,
};
use rill_integration::{ServerOptions, TestCluster, TestServer};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

pub(crate) const ELECTION: Duration = Duration::from_secs(15);

pub(crate) fn options() -> ServerOptions {
    ServerOptions::new().shards(1)
}

/// A root client of `server` once the cluster's first leader has created the root user (a new
/// cluster has none until it has a leader).
pub(crate) async fn first_client(server: &TestServer) -> IggyClient {
    let deadline = Instant::now() + ELECTION;
    loop {
        let client = IggyClient::from_connection_string(&root_connection_string(server)).unwrap();
        match client.connect().await {
            Ok(()) => return client,
            Err(error) => assert!(
                Instant::now() < deadline,
                "cannot log in to {} after {ELECTION:?}: {error}\n{}",
                server.address(),
                server.log_tail()
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Node `index`'s view once it names a leader and reports every listed node healthy.
pub(crate) async fn settled_view(server: &TestServer, nodes: usize) -> ClusterMetadata {
    let client = first_client(server).await;
    let deadline = Instant::now() + ELECTION;
    loop {
        let metadata = client.get_cluster_metadata().await;
        if let Ok(metadata) = &metadata {
            let leaders = metadata
                .nodes
                .iter()
                .filter(|node| node.role == ClusterNodeRole::Leader)
                .count();
            let healthy = metadata
                .nodes
                .iter()
                .filter(|node| node.status == ClusterNodeStatus::Healthy)
                .count();
            if leaders == 1 && healthy == nodes {
                return metadata.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no settled cluster view on {} after {ELECTION:?}: {metadata:?}\n{}",
            server.address(),
            server.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGSTOP to each process, then waits until every thread of each is stopped (a signal is
/// taken when a thread next runs, so a busy process may answer one more request first).
pub(crate) fn freeze(pids: &[i32]) {
    for pid in pids {
        assert_eq!(unsafe { libc::kill(*pid, libc::SIGSTOP) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for pid in pids {
        loop {
            let stopped = std::fs::read_dir(format!("/proc/{pid}/task"))
                .unwrap()
                .flatten()
                .all(|task| {
                    let stat =
                        std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                    // The state follows the command name's closing parenthesis.
                    stat.rsplit_once(") ")
                        .is_some_and(|(_, rest)| rest.starts_with('T'))
                });
            if stopped {
                break;
            }
            assert!(Instant::now() < deadline, "process {pid} does not stop");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

pub(crate) fn leader_index(cluster: &TestCluster, view: &ClusterMetadata) -> usize {
    let leader = view
        .nodes
        .iter()
        .find(|node| node.role == ClusterNodeRole::Leader)
        .expect("a leader");
    cluster
        .ports
        .iter()
        .position(|ports| ports.tcp == leader.endpoints.tcp)
        .expect("the leader is in the roster")
}

/// The usernames `server` itself holds. Users are read from the node's own copy of the
/// metadata, and a client that logs in explicitly is not moved to the leader by the SDK, so
/// this shows what reached this node (stream reads are relayed to the leader).
pub(crate) async fn local_usernames(server: &TestServer) -> Vec<String> {
    let client = anonymous_client(server).await;
    client.login_user("iggy", "iggy").await.expect("login");
    let mut names: Vec<String> = client
        .get_users()
        .await
        .expect("get_users")
        .into_iter()
        .map(|user| user.username)
        .collect();
    names.sort();
    names
}

/// Waits until `server` itself holds exactly `expected` users.
pub(crate) async fn wait_for_users(server: &TestServer, expected: &[&str]) {
    wait_for_names(server, "users", expected, local_usernames).await
}

/// Waits until `names` of `server` (sorted) are exactly `expected`.
pub(crate) async fn wait_for_names(
    server: &TestServer,
    what: &str,
    expected: &[&str],
    names: impl AsyncFn(&TestServer) -> Vec<String>,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let names = names(server).await;
        if names == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {what} {names:?}, expected {expected:?}\n{}",
            server.address(),
            server.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn stream_names(server: &TestServer) -> Vec<String> {
    let client = root_client(server).await;
    let mut names: Vec<String> = client
        .get_streams()
        .await
        .expect("get_streams")
        .into_iter()
        .map(|stream| stream.name)
        .collect();
    names.sort();
    names
}

/// Waits until `server` lists exactly `expected` streams (changes reach followers a moment
/// after the leader commits them).
pub(crate) async fn wait_for_streams(server: &TestServer, expected: &[&str]) {
    wait_for_names(server, "streams", expected, stream_names).await
}

/// Every `.log` file under `dir`, in path order (one partition here: its segments in order).
pub(crate) fn segment_logs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "log") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

pub(crate) fn stored_bytes(server: &TestServer) -> Vec<u8> {
    segment_logs(&server.data_path().join("streams"))
        .iter()
        .flat_map(|path| std::fs::read(path).expect("read a segment"))
        .collect()
}

pub(crate) async fn send_one(
    client: &IggyClient,
    stream: u32,
    payload: &str,
) -> Result<(), IggyError> {
    send_batch(
        client,
        stream,
        vec![IggyMessage::from_str(payload).unwrap()],
    )
    .await
}

/// Sends `batch()` through `server` until the nodes left have a leader that takes it; returns
/// the client that sent it.
pub(crate) async fn send_after_failover(
    server: &TestServer,
    stream: u32,
    batch: impl Fn() -> Vec<IggyMessage>,
) -> IggyClient {
    let deadline = Instant::now() + ELECTION;
    loop {
        let client = first_client(server).await;
        match send_batch(&client, stream, batch()).await {
            Ok(()) => return client,
            Err(error) => assert!(
                Instant::now() < deadline,
                "the majority takes no message: {error}\n{}",
                server.log_tail()
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends `batch` to partition 0 of `stream`'s topic 0.
pub(crate) async fn send_batch(
    client: &IggyClient,
    stream: u32,
    mut batch: Vec<IggyMessage>,
) -> Result<(), IggyError> {
    client
        .send_messages(
            &id(stream),
            &id(0),
            &Partitioning::partition_id(0),
            &mut batch,
        )
        .await
}

/// What one poll of up to `count` messages from offset 0 of partition 0 returns.
pub(crate) async fn poll_from_zero(
    client: &IggyClient,
    stream: u32,
    count: u32,
) -> Vec<IggyMessage> {
    client
        .poll_messages(
            &id(stream),
            &id(0),
            Some(0),
            &Consumer::new(id(3)),
            &PollingStrategy::offset(0),
            count,
            false,
        )
        .await
        .expect("poll")
        .messages
}

pub(crate) async fn payloads(client: &IggyClient, stream: u32) -> Vec<String> {
    poll_from_zero(client, stream, 10)
        .await
        .iter()
        .map(|message| String::from_utf8_lossy(&message.payload).into_owned())
        .collect()
}

/// Once the cluster is settled: the leader's index, a client logged in on it explicitly (so
/// it stays there whatever GetClusterMetadata says), and a new stream `name` with one topic
/// of one partition that every node holds, led by that same node.
pub(crate) async fn leader_with_stream(
    cluster: &TestCluster,
    name: &str,
) -> (usize, IggyClient, u32) {
    let view = settled_view(&cluster.nodes[0], cluster.nodes.len()).await;
    let leader = leader_index(cluster, &view);
    let client = anonymous_client(&cluster.nodes[leader]).await;
    client.login_user("iggy", "iggy").await.expect("login");
    let stream = create_stream_led_by(&client, name, leader, cluster.nodes.len()).await;
    create_topic(&client, stream, "events", 1).await;
    for server in &cluster.nodes {
        wait_for_streams(server, &[name]).await;
    }
    (leader, client, stream)
}

/// Creates stream `name` so that partition 0 of its topic 0 is led by node `leader` (a roster
/// index, which the test clusters make the replica id) once its topic exists in a settled
/// cluster: streams take the lowest free id, and partition 0 of stream `s` prefers the node
/// `s × 7 mod nodes` (`cluster::link::preference`, ARCHITECTURE.md "Cluster"). The streams
/// created on the way are deleted again.
pub(crate) async fn create_stream_led_by(
    client: &IggyClient,
    name: &str,
    leader: usize,
    nodes: usize,
) -> u32 {
    let mut fillers = Vec::new();
    let stream = loop {
        let stream = create_stream(client, name).await;
        if stream as usize * 7 % nodes == leader {
            break stream;
        }
        client
            .update_stream(&id(stream), &format!("{name}-filler-{stream}"))
            .await
            .expect("rename a filler stream");
        fillers.push(stream);
        assert!(fillers.len() < nodes, "no stream id led by node {leader}");
    };
    for filler in fillers {
        client
            .delete_stream(&id(filler))
            .await
            .expect("delete a filler stream");
    }
    stream
}
