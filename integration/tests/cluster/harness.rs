//! What the cluster tests share: waiting for a leader and a settled view, finding the leader,
//! freezing processes, and waiting until a node's own copy of the metadata holds what a test
//! expects.

use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, root_client, root_connection_string};
use rill_integration::{ServerOptions, TestCluster, TestServer};
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
