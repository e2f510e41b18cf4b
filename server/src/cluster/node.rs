//! The cluster thread: one current-thread tokio runtime that runs the metadata group's Raft
//! node (openraft), the replica listener, a ping to every peer each heartbeat (for the health
//! GetClusterMetadata reports) and the proposals of shard 0's control lane.
//!
//! Why a thread of its own: openraft 0.9 (the stable line) runs on tokio, and the metadata
//! group's traffic is small; keeping it off the shards keeps their io_uring loops free of it.

use super::leader_calls::{forward_to_leader, relay_to_leader};
use super::link::{Applied, ClusterView, Forward, Link, Proposal, ProposeError, Relay};
use super::machine::StateMachine;
use super::network::{PING, Peer, Peers};
use super::replica_port::{Serving, accept_peers};
use super::replication::{self, Replicator};
use super::store::LogStore;
use super::tls::ReplicaTls;
use super::types::{LogId, NodeId, Raft};
use super::wire::Credentials;
use crate::config::Config;
use crate::http::bridge::Bridge;
use crate::shard::message::ControlRequest;
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, CommittedLeaderId, ServerState, SnapshotPolicy};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Starts the cluster thread for this node (`replica_id`). `applied` is the log id of the last
/// replicated change the metadata holds (term, leader, index). Binds the replica port before
/// returning, so a taken port stops the start with a clear error.
pub fn start(
    config: &Config,
    replica_id: u64,
    data_dir: &Path,
    applied: Option<(u64, u64, u64)>,
    control: flume::Sender<ControlRequest>,
    bridge: Bridge,
) -> Result<Link, String> {
    let cluster = &config.cluster;
    let me = cluster
        .node(replica_id)
        .ok_or_else(|| format!("--replica-id {replica_id} is not in cluster.nodes"))?;
    let bind = me.replica_bind_address();
    let listener = std::net::TcpListener::bind(bind)
        .map_err(|error| format!("cannot bind the replica port {bind}: {error}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|error| format!("replica port {bind}: {error}"))?;
    let dir = data_dir.join("cluster");
    let store = LogStore::open(&dir)
        .map_err(|error| format!("cannot open the Raft log in {}: {error}", dir.display()))?;
    let (applied_sender, applied_receiver) = flume::bounded::<Applied>(1);
    let applied = applied
        .map(|(term, leader, index)| LogId::new(CommittedLeaderId::new(term, leader), index));
    let machine = StateMachine::open(dir.clone(), applied, applied_sender).map_err(|error| {
        format!(
            "cannot open the cluster state in {}: {error}",
            dir.display()
        )
    })?;
    let view = Arc::new(ClusterView::new(cluster, replica_id));
    let credentials = Credentials::new(
        &cluster.name,
        cluster
            .auth
            .enabled
            .then_some(cluster.auth.shared_secret.0.as_str()),
        cluster
            .auth
            .enabled
            .then_some(cluster.auth.previous_shared_secret.0.as_str()),
    );
    if !cluster.auth.enabled {
        tracing::warn!(
            "cluster.auth.enabled = false: the replica port {bind} admits any peer that knows \
             the cluster's name; keep it on a private network or set a shared secret"
        );
    }
    let heartbeat = cluster.commit_broadcast_interval.0;
    let election = cluster.heartbeat_timeout.0;
    let raft_config = openraft::Config {
        cluster_name: cluster.name.clone(),
        heartbeat_interval: heartbeat.as_millis() as u64,
        election_timeout_min: election.as_millis() as u64,
        election_timeout_max: (election.as_millis() * 3 / 2) as u64,
        // The log is kept whole: metadata changes are few, and a lagging node replays them.
        snapshot_policy: SnapshotPolicy::Never,
        ..Default::default()
    }
    .validate()
    .map_err(|error| format!("cluster timing: {error}"))?;
    let members: BTreeMap<NodeId, BasicNode> = cluster
        .nodes
        .iter()
        .map(|node| {
            (
                node.replica_id,
                BasicNode::new(format!("{}:{}", node.ip, node.ports.tcp_replica)),
            )
        })
        .collect();
    let tls = if cluster.tls.enabled {
        let tls = ReplicaTls::new(&cluster.tls, &data_dir.join("certs"))?;
        tracing::info!(
            self_signed = cluster.tls.self_signed,
            "replica connections use TLS 1.3"
        );
        Some(tls)
    } else {
        None
    };
    let peers = Peers {
        me: replica_id,
        credentials,
        view: view.clone(),
        tls,
    };
    let (proposals, proposal_receiver) = flume::unbounded::<Proposal>();
    let (forwards, forward_receiver) = flume::unbounded::<Forward>();
    let (relay, relay_receiver) = flume::unbounded::<Relay>();
    let thread_view = view.clone();
    std::thread::Builder::new()
        .name("cluster".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::error!(%error, "cannot start the cluster thread's runtime");
                    return;
                }
            };
            runtime.block_on(run(Running {
                config: Arc::new(raft_config),
                listener,
                store,
                machine,
                members,
                peers,
                view: thread_view,
                proposals: proposal_receiver,
                forwards: forward_receiver,
                relays: relay_receiver,
                control,
                bridge,
                heartbeat,
            }));
        })
        .map_err(|error| format!("cannot spawn the cluster thread: {error}"))?;
    tracing::warn!(
        "cluster mode is a preview: a fixed roster, no Raft snapshots (the metadata log is kept \
         whole); partitions are held by their topic's replication_factor nodes and led by one \
         of them, and any node relays a client's request to the partition's leader"
    );
    tracing::info!(
        replica_id,
        replica_address = %bind,
        nodes = cluster.nodes.len(),
        cluster = %cluster.name,
        "cluster member started; electing the metadata leader"
    );
    Ok(Link {
        view,
        proposals,
        applied: applied_receiver,
        forwards,
        relay,
    })
}

struct Running {
    config: Arc<openraft::Config>,
    listener: std::net::TcpListener,
    store: LogStore,
    machine: StateMachine,
    members: BTreeMap<NodeId, BasicNode>,
    peers: Peers,
    view: Arc<ClusterView>,
    proposals: flume::Receiver<Proposal>,
    forwards: flume::Receiver<Forward>,
    relays: flume::Receiver<Relay>,
    control: flume::Sender<ControlRequest>,
    bridge: Bridge,
    heartbeat: Duration,
}

async fn run(running: Running) {
    let Running {
        config,
        listener,
        store,
        machine,
        members,
        peers,
        view,
        proposals,
        forwards,
        relays,
        control,
        bridge,
        heartbeat,
    } = running;
    let pristine = store.is_pristine();
    let me = peers.me;
    let raft = match Raft::new(me, config, peers.clone(), store, machine).await {
        Ok(raft) => raft,
        Err(error) => {
            tracing::error!(%error, "cannot start the Raft node; this node stays out of the cluster");
            return;
        }
    };
    if pristine {
        // Every node of a new cluster proposes the same roster; openraft accepts the first
        // and the others find a log that already holds it.
        match raft.initialize(members.clone()).await {
            Ok(()) => tracing::info!("initialised the cluster's membership from the roster"),
            Err(error) => tracing::debug!(%error, "membership already initialised"),
        }
    }
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(%error, "cannot serve the replica port");
            return;
        }
    };
    let bridge = Arc::new(bridge);
    let replicator = Arc::new(Replicator {
        peers: peers.clone(),
        members: members.clone(),
        bridge: bridge.clone(),
    });
    tokio::spawn(replication::run(
        replicator.clone(),
        heartbeat.min(Duration::from_millis(200)),
    ));
    let serving = Arc::new(Serving {
        raft: raft.clone(),
        peers: peers.clone(),
        control,
        bridge,
        replicator,
    });
    tokio::spawn(accept_peers(listener, serving));
    tokio::spawn(relay_to_leader(relays, peers.clone(), members.clone()));
    tokio::spawn(forward_to_leader(forwards, peers.clone(), members.clone()));
    tokio::spawn(ping_peers(peers, members, heartbeat));
    let watcher = tokio::spawn(watch_leader(raft.clone(), view));
    while let Ok(proposal) = proposals.recv_async().await {
        let raft = raft.clone();
        tokio::spawn(async move {
            let result = match raft.client_write(proposal.command).await {
                Ok(response) => Ok(response.log_id.index),
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                    Err(ProposeError::NotLeader(forward.leader_id))
                }
                Err(error) => Err(ProposeError::Failed(error.to_string())),
            };
            let _ = proposal.reply.send(result);
        });
    }
    // A stop closes the proposals channel. The watcher goes first, so that the Raft node's end
    // is not reported as a failure.
    watcher.abort();
    match raft.shutdown().await {
        Ok(()) => tracing::info!("the Raft node stopped"),
        Err(error) => tracing::warn!(%error, "the Raft node did not stop cleanly"),
    }
}

/// Keeps the view's leader current and logs every change of it.
async fn watch_leader(raft: Raft, view: Arc<ClusterView>) {
    let mut metrics = raft.metrics();
    let mut shown = (None, ServerState::Learner);
    loop {
        let (leader, state, term) = {
            let now = metrics.borrow();
            (now.current_leader, now.state, now.current_term)
        };
        view.set_leader(leader);
        view.set_term(term);
        if (leader, state) != shown {
            match leader {
                Some(leader) => tracing::info!(leader, term, role = ?state, "cluster leader"),
                None => tracing::info!(term, role = ?state, "cluster has no leader"),
            }
            shown = (leader, state);
        }
        if metrics.changed().await.is_err() {
            view.set_leader(None);
            tracing::error!(
                "the Raft node stopped (a storage error or shutdown): this node takes no part in \
                 the cluster until it restarts"
            );
            return;
        }
    }
}

/// Pings every peer each heartbeat so that each node knows which peers are up.
async fn ping_peers(peers: Peers, members: BTreeMap<NodeId, BasicNode>, heartbeat: Duration) {
    for (id, node) in members {
        if id != peers.me {
            tokio::spawn(ping_peer(
                Peer::new(peers.clone(), id, node.addr),
                heartbeat,
            ));
        }
    }
}

/// Pings one peer every heartbeat, on a task of its own so that a peer that does not answer
/// never delays the others; logs when it comes and goes.
async fn ping_peer(mut client: Peer, heartbeat: Duration) {
    // A busy peer may take longer than one heartbeat to answer without being down.
    let patience = (heartbeat * 2).max(Duration::from_millis(500));
    let mut tick = tokio::time::interval(heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was = None;
    loop {
        tick.tick().await;
        let answered: Result<(), _> = client.call(PING, &(), patience).await;
        let now = answered.is_ok();
        if was != Some(now) {
            match &answered {
                Ok(()) => tracing::info!(peer = client.target(), "cluster peer reachable"),
                Err(error) => {
                    tracing::warn!(peer = client.target(), %error, "cluster peer unreachable")
                }
            }
            was = Some(now);
        }
    }
}
