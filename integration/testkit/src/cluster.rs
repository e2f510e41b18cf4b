//! [`TestCluster`]: several `iggy-server` processes forming one cluster on loopback ports, each
//! with its own data directory, started from the roster in `IGGY_CLUSTER_*` variables.

use crate::links::ReplicaLinks;
use crate::server::{ServerOptions, TestServer};
use crate::{listen_port, slots};
use std::net::SocketAddr;

/// The client ports and replica port of one roster entry.
#[derive(Debug, Clone, Copy)]
pub struct NodePorts {
    pub tcp: u16,
    pub quic: u16,
    pub http: u16,
    pub websocket: u16,
    pub replica: u16,
}

/// A running cluster. Node `i` has replica id `i`. Dropping it kills every node.
#[derive(Debug)]
pub struct TestCluster {
    pub nodes: Vec<TestServer>,
    pub ports: Vec<NodePorts>,
    /// With [`TestCluster::start_with_links`]: the proxies the nodes reach each other through.
    pub links: Option<ReplicaLinks>,
    _slots: Vec<slots::Slot>,
}

impl TestCluster {
    /// Starts `count` nodes (each with `options` plus the roster) and returns once each
    /// listens for clients; electing a leader takes a moment more.
    pub fn start(count: usize, options: ServerOptions) -> TestCluster {
        Self::start_nodes(count, options, false)
    }

    /// [`TestCluster::start`] with every replica connection through a proxy of
    /// [`TestCluster::links`], which can cut the network between the running nodes.
    pub fn start_with_links(count: usize, options: ServerOptions) -> TestCluster {
        Self::start_nodes(count, options, true)
    }

    fn start_nodes(count: usize, options: ServerOptions, proxied: bool) -> TestCluster {
        let held = slots::acquire_many(count);
        let ports: Vec<NodePorts> = (0..count)
            .map(|_| NodePorts {
                tcp: listen_port(),
                quic: listen_port(),
                http: listen_port(),
                websocket: listen_port(),
                replica: listen_port(),
            })
            .collect();
        let mut roster = vec![
            ("IGGY_CLUSTER_ENABLED".to_string(), "true".to_string()),
            ("IGGY_CLUSTER_NAME".to_string(), "rill-test".to_string()),
            // Quick elections: tests wait for failovers.
            (
                "IGGY_CLUSTER_HEARTBEAT_TIMEOUT".to_string(),
                "1 s".to_string(),
            ),
            (
                "IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL".to_string(),
                "200 ms".to_string(),
            ),
        ];
        let links = proxied.then(|| {
            let replica_ports: Vec<u16> = ports.iter().map(|node| node.replica).collect();
            ReplicaLinks::start(&replica_ports)
        });
        for (index, node) in ports.iter().enumerate() {
            let key = |name: &str| format!("IGGY_CLUSTER_NODES_{index}_{name}");
            roster.extend([
                (key("NAME"), format!("node-{index}")),
                (key("IP"), "127.0.0.1".to_string()),
                (key("REPLICA_ID"), index.to_string()),
                (key("PORTS_TCP"), node.tcp.to_string()),
                (key("PORTS_QUIC"), node.quic.to_string()),
                (key("PORTS_HTTP"), node.http.to_string()),
                (key("PORTS_WEBSOCKET"), node.websocket.to_string()),
                (key("PORTS_TCP_REPLICA"), node.replica.to_string()),
            ]);
        }
        let nodes = (0..count)
            .map(|index| {
                let mut options = options.clone().arg("--replica-id").arg(&index.to_string());
                // This node reaches the others through its own proxies.
                let proxies = links.iter().flat_map(|links| {
                    (0..count).filter(|peer| *peer != index).map(move |peer| {
                        (
                            format!("IGGY_CLUSTER_NODES_{peer}_PORTS_TCP_REPLICA"),
                            links.port(index, peer).to_string(),
                        )
                    })
                });
                // The roster first: the caller's variables may change it (a wrong secret...).
                let own = std::mem::take(&mut options.env);
                options.env = roster.iter().cloned().chain(proxies).chain(own).collect();
                TestServer::start_in(options, None)
            })
            .collect();
        TestCluster {
            nodes,
            ports,
            links,
            _slots: held,
        }
    }

    /// The client TCP address of node `index`.
    pub fn address(&self, index: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports[index].tcp))
    }

    /// The replica address of node `index`.
    pub fn replica_address(&self, index: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports[index].replica))
    }
}
