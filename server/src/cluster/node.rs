//! The cluster thread: one current-thread tokio runtime that runs the metadata group's Raft
//! node (openraft), the replica listener, a ping to every peer each heartbeat (for the health
//! GetClusterMetadata reports) and the proposals of shard 0's control lane.
//!
//! Why a thread of its own: openraft 0.9 (the stable line) runs on tokio, and the metadata
//! group's traffic is small; keeping it off the shards keeps their io_uring loops free of it.

use super::link::Relay;
use super::link::{
    Applied, ClusterView, Forward, ForwardAnswer, Forwarded, ForwardedCommand, Link, Proposal,
    ProposeError,
};
use super::machine::StateMachine;
use super::network::{
    ANSWER, APPEND_ENTRIES, CallError, FETCH, FORWARD, GONE, INSTALL_SNAPSHOT, PING, Peer, Peers,
    REFUSED, RELAY, REPLICA_STATE, VOTE,
};
use super::relay::{self, RelayRequest, Relayed};
use super::replication::{self, Replicator};
use super::store::LogStore;
use super::types::{LogId, NodeId, Raft};
use super::wire::{self, Credentials, HANDSHAKE_TIMEOUT};
use crate::config::Config;
use crate::handlers::Response;
use crate::http::bridge::Bridge;
use crate::shard::message::{ControlCommand, ControlRequest};
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, CommittedLeaderId, ServerState, SnapshotPolicy};
use rill_core::ErrorCode;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

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
    let peers = Peers {
        me: replica_id,
        credentials,
        view: view.clone(),
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
        "cluster mode is a preview: every node holds every partition and the metadata leader \
         leads them all; followers relay their clients' data requests to it"
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
        raft.clone(),
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
    tokio::spawn(watch_leader(raft.clone(), view));
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
    let _ = raft.shutdown().await;
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

/// How long a follower waits for the leader to run a forwarded change.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends a follower's metadata changes to the current leader, one at a time, in order.
async fn forward_to_leader(
    forwards: flume::Receiver<Forward>,
    peers: Peers,
    members: BTreeMap<NodeId, BasicNode>,
) {
    let mut clients: BTreeMap<NodeId, Peer> = members
        .into_iter()
        .filter(|(id, _)| *id != peers.me)
        .map(|(id, node)| (id, Peer::new(peers.clone(), id, node.addr)))
        .collect();
    while let Ok(forward) = forwards.recv_async().await {
        let not_accepted = Err(ErrorCode::TransientNotAccepted.code());
        let leader = peers.view.leader();
        let answer = match leader.and_then(|id| Some((id, clients.get_mut(&id)?))) {
            None => not_accepted,
            Some((leader, client)) => {
                let call =
                    client.call::<_, ForwardAnswer>(FORWARD, &forward.request, FORWARD_TIMEOUT);
                let answered = tokio::select! {
                    answered = call => answered,
                    () = deposed(&peers.view, leader) => Err(CallError::Network(
                        std::io::Error::other("the leader changed before it answered"),
                    )),
                };
                match answered {
                    Ok(answer) => answer,
                    // Never reached the leader: nothing happened, the client may retry.
                    Err(CallError::Unreachable(_)) => not_accepted,
                    Err(error) => {
                        // Sent, but no answer: the change may or may not be made.
                        tracing::warn!(%error, "a forwarded metadata change got no answer");
                        Err(ErrorCode::Error.code())
                    }
                }
            }
        };
        let _ = forward.reply.send(answer);
    }
}

/// Runs a follower's change on this node's control lane, as the leader.
async fn run_forwarded(
    raft: &Raft,
    control: &flume::Sender<ControlRequest>,
    forwarded: Forwarded,
) -> ForwardAnswer {
    let command = match forwarded.command {
        ForwardedCommand::Request { code, payload } => {
            let request = rill_core::requests::Request::decode(code, payload.as_slice().into())
                .map_err(|_| ErrorCode::InvalidCommand.code())?;
            ControlCommand::Request(request)
        }
        ForwardedCommand::SetPassword {
            user_id,
            verified_hash,
            new_hash,
        } => ControlCommand::SetPassword {
            user_id,
            verified_hash,
            new_hash,
        },
    };
    let (reply, answer) = flume::bounded(1);
    let request = ControlRequest {
        command,
        user_id: forwarded.user_id,
        client_id: forwarded.client_id,
        revoked: Default::default(),
        forwarded: true,
        reply,
    };
    let gone = ErrorCode::ShardCommunicationError.code();
    control.send_async(request).await.map_err(|_| gone)?;
    let payload = answer
        .recv_async()
        .await
        .map_err(|_| gone)?
        .map_err(ErrorCode::code)?;
    // The lane answers after applying the change, so what is applied covers it.
    let index = raft
        .metrics()
        .borrow()
        .last_applied
        .map_or(0, |log_id| log_id.index);
    Ok((payload, index))
}

/// How long a relayed request may take on the leader (a long-polling consumer included).
const RELAY_TIMEOUT: Duration = Duration::from_secs(60);

/// Passes followers' data requests to the leader, each on a connection of its own from a small
/// pool, so a slow request does not hold up the others.
async fn relay_to_leader(
    relays: flume::Receiver<Relay>,
    peers: Peers,
    members: BTreeMap<NodeId, BasicNode>,
) {
    let idle: Arc<std::sync::Mutex<Vec<Peer>>> = Arc::default();
    while let Ok(relay) = relays.recv_async().await {
        let Some(leader) = peers.view.leader().filter(|leader| *leader != peers.me) else {
            if let Relay::Request { reply, .. } = relay {
                let _ = reply.send(Err(ErrorCode::TransientNotAccepted.code()));
            }
            continue;
        };
        let Some(node) = members.get(&leader) else {
            continue;
        };
        let pooled = {
            let mut idle = idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let position = idle.iter().position(|peer| peer.target() == leader);
            position.map(|position| idle.swap_remove(position))
        };
        let mut client =
            pooled.unwrap_or_else(|| Peer::new(peers.clone(), leader, node.addr.clone()));
        let idle = idle.clone();
        let view = peers.view.clone();
        tokio::spawn(async move {
            match relay {
                Relay::Request { request, reply } => {
                    let body = request.encode();
                    let call = client.call_raw(RELAY, &body, RELAY_TIMEOUT);
                    let answer = tokio::select! {
                        answer = call => answer,
                        // A leader that is gone may never answer (a vanished container's address
                        // does not even refuse): give up once another leads.
                        () = deposed(&view, leader) => {
                            let _ = reply.send(Err(ErrorCode::Error.code()));
                            return;
                        }
                    };
                    let answer = match answer {
                        Ok(bytes) => {
                            relay::decode_answer(bytes).unwrap_or(Err(ErrorCode::Error.code()))
                        }
                        Err(CallError::Unreachable(_)) => {
                            Err(ErrorCode::TransientNotAccepted.code())
                        }
                        Err(error) => {
                            tracing::warn!(%error, "a relayed request got no answer");
                            Err(ErrorCode::Error.code())
                        }
                    };
                    let _ = reply.send(answer);
                }
                Relay::Gone { client: gone } => {
                    let _ = client
                        .call_raw(GONE, &gone.to_le_bytes(), Duration::from_secs(5))
                        .await;
                }
            }
            let mut idle = idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if idle.len() < 16 {
                idle.push(client);
            }
        });
    }
}

/// Returns once `leader` no longer leads as far as this node knows.
async fn deposed(view: &ClusterView, leader: NodeId) {
    while view.leader() == Some(leader) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs a follower's relayed request here, the leader, as its user.
async fn run_relayed(serving: &Serving, body: Vec<u8>) -> Result<Relayed, u32> {
    if !serving.peers.view.is_leader() {
        return Err(ErrorCode::TransientNotAccepted.code());
    }
    let request = RelayRequest::decode(body).ok_or(ErrorCode::InvalidCommand.code())?;
    let decoded =
        rill_core::requests::Request::decode(request.code, request.payload.as_slice().into())
            .map_err(|_| ErrorCode::InvalidCommand.code())?;
    let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let response = serving
        .bridge
        .run_as(
            request.client,
            rill_core::primitives::Transport::Tcp,
            Some(request.user_id),
            peer,
            decoded,
        )
        .await
        .map_err(ErrorCode::code)?;
    Ok(match response {
        Response::Empty => Relayed::Empty,
        Response::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        } => Relayed::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        },
        Response::Bytes(bytes) => Relayed::Bytes(bytes),
        Response::Polled { header, chunks } => {
            let mut messages = Vec::with_capacity(chunks.iter().map(bytes::Bytes::len).sum());
            for chunk in &chunks {
                messages.extend_from_slice(chunk);
            }
            Relayed::Polled {
                header,
                messages: messages.into(),
            }
        }
    })
}

/// What the replica listener's connections share.
struct Serving {
    raft: Raft,
    peers: Peers,
    control: flume::Sender<ControlRequest>,
    bridge: Arc<Bridge>,
    replicator: Arc<Replicator>,
}

async fn accept_peers(listener: TcpListener, serving: Arc<Serving>) {
    let roster: Arc<Vec<u64>> = Arc::new(
        serving
            .peers
            .view
            .nodes
            .iter()
            .map(|n| n.replica_id)
            .collect(),
    );
    loop {
        let (stream, address) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "replica port: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let serving = serving.clone();
        let roster = roster.clone();
        tokio::spawn(async move {
            if let Err(error) = serve_peer(stream, &serving, &roster).await {
                tracing::warn!(peer = %address, %error, "replica connection closed");
            }
        });
    }
}

async fn serve_peer(
    mut stream: TcpStream,
    serving: &Serving,
    roster: &[u64],
) -> std::io::Result<()> {
    let (raft, peers, control) = (&serving.raft, &serving.peers, &serving.control);
    stream.set_nodelay(true)?;
    let peer = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        wire::accept(&mut stream, peers.me, roster, &peers.credentials),
    )
    .await
    .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "handshake timed out"))??;
    while let Some((kind, body)) = wire::read_frame(&mut stream).await? {
        peers.view.heard(peer);
        let answer = match kind {
            APPEND_ENTRIES => match serde_json::from_slice(&body) {
                Ok(request) => serde_json::to_vec(&raft.append_entries(request).await),
                Err(error) => Err(error),
            },
            VOTE => match serde_json::from_slice(&body) {
                Ok(request) => serde_json::to_vec(&raft.vote(request).await),
                Err(error) => Err(error),
            },
            INSTALL_SNAPSHOT => match serde_json::from_slice(&body) {
                Ok(request) => serde_json::to_vec(&raft.install_snapshot(request).await),
                Err(error) => Err(error),
            },
            PING => serde_json::to_vec(&()),
            RELAY => Ok(relay::encode_answer(&run_relayed(serving, body).await)),
            REPLICA_STATE => Ok(serving.replicator.serve_state(&body).await),
            FETCH => Ok(serving.replicator.serve_fetch(&body).await),
            GONE => {
                if let Ok(client) = <[u8; 4]>::try_from(body.as_slice()) {
                    let client = u32::from_le_bytes(client);
                    serving
                        .bridge
                        .on_a_shard(move |shard| shard.shared.groups.leave_all(client))
                        .await;
                }
                Ok(Vec::new())
            }
            FORWARD => match serde_json::from_slice(&body) {
                Ok(forwarded) => serde_json::to_vec(&run_forwarded(raft, control, forwarded).await),
                Err(error) => Err(error),
            },
            other => {
                let text = format!("unknown replica request kind {other}");
                wire::write_frame(&mut stream, REFUSED, text.as_bytes()).await?;
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, text));
            }
        };
        match answer {
            Ok(bytes) => wire::write_frame(&mut stream, ANSWER, &bytes).await?,
            Err(error) => {
                let text = format!("malformed replica request: {error}");
                wire::write_frame(&mut stream, REFUSED, text.as_bytes()).await?;
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, text));
            }
        }
    }
    Ok(())
}
