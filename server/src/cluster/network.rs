//! The dialing side of the replica port: openraft's RPCs to one peer, over one authenticated
//! connection kept between calls (opened again after any failure).

use super::link::ClusterView;
use super::tls::{ReplicaStream, ReplicaTls};
use super::types::{NodeId, TypeConfig};
use super::wire::{self, Credentials, HANDSHAKE_TIMEOUT};
use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// Request kinds on the replica port.
pub const APPEND_ENTRIES: u8 = 1;
pub const VOTE: u8 = 2;
pub const INSTALL_SNAPSHOT: u8 = 3;
pub const PING: u8 = 4;
/// A follower's metadata change for the leader's control lane (`link::Forwarded`).
pub const FORWARD: u8 = 5;
/// A follower's data request for the leader (`relay.rs`, binary both ways).
pub const RELAY: u8 = 6;
/// A follower's session that relayed has ended (`relay.rs`).
pub const GONE: u8 = 7;
/// A new leader asks a peer for its state of one partition (`replication/codec.rs`).
pub const REPLICA_STATE: u8 = 8;
/// A replica asks for the messages after its log's end (`replication/codec.rs`).
pub const FETCH: u8 = 9;
/// A data call on a partition this node leads (`partition_call.rs`, binary both ways).
pub const PARTITION: u8 = 10;

/// Response tags: the body is the JSON of `Result<response, RaftError>`, or a refusal's text.
pub const ANSWER: u8 = 0;
pub const REFUSED: u8 = 1;

#[derive(Clone)]
pub struct Peers {
    pub me: NodeId,
    pub credentials: Credentials,
    pub view: Arc<ClusterView>,
    /// With `[cluster.tls]` on: every replica connection is TLS before it is authenticated.
    pub tls: Option<ReplicaTls>,
}

impl RaftNetworkFactory<TypeConfig> for Peers {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer::new(self.clone(), target, node.addr.clone())
    }
}

/// What can go wrong on one call, before it is mapped to openraft's error kinds.
pub enum CallError {
    /// Could not connect or be admitted: the peer is down or not ours.
    Unreachable(io::Error),
    /// The connection broke or the answer was garbage mid-call.
    Network(io::Error),
}

pub struct Peer {
    peers: Peers,
    target: NodeId,
    address: String,
    connection: Option<ReplicaStream>,
}

impl Peer {
    pub fn new(peers: Peers, target: NodeId, address: String) -> Peer {
        Peer {
            peers,
            target,
            address,
            connection: None,
        }
    }

    pub fn target(&self) -> NodeId {
        self.target
    }

    async fn connect(&self) -> io::Result<ReplicaStream> {
        let stream = TcpStream::connect(&self.address).await?;
        stream.set_nodelay(true)?;
        tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
            let mut stream = match &self.peers.tls {
                Some(tls) => tls.dial(stream, &self.address).await?,
                None => ReplicaStream::Plain(stream),
            };
            wire::dial(
                &mut stream,
                self.peers.me,
                self.target,
                &self.peers.credentials,
            )
            .await?;
            Ok::<_, io::Error>(stream)
        })
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "replica handshake timed out"))?
    }

    /// One request and its answer, within `ttl`.
    pub async fn call<Request: Serialize, Answer: DeserializeOwned>(
        &mut self,
        kind: u8,
        request: &Request,
        ttl: Duration,
    ) -> Result<Answer, CallError> {
        let body = serde_json::to_vec(request).expect("a Raft request serializes");
        let answer = self.call_raw(kind, &body, ttl).await?;
        serde_json::from_slice(&answer).map_err(|error| {
            self.connection = None;
            CallError::Network(io::Error::new(io::ErrorKind::InvalidData, error))
        })
    }

    /// One request and its answer as bytes, within `ttl`.
    pub async fn call_raw(
        &mut self,
        kind: u8,
        body: &[u8],
        ttl: Duration,
    ) -> Result<Vec<u8>, CallError> {
        let result = tokio::time::timeout(ttl, self.exchange(kind, body)).await;
        let answer = match result {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => {
                self.connection = None;
                return Err(error);
            }
            Err(_) => {
                self.connection = None;
                return Err(CallError::Network(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("replica {} did not answer within {ttl:?}", self.target),
                )));
            }
        };
        self.peers.view.heard(self.target);
        Ok(answer)
    }

    async fn exchange(&mut self, kind: u8, body: &[u8]) -> Result<Vec<u8>, CallError> {
        let mut stream = match self.connection.take() {
            Some(stream) => stream,
            None => self.connect().await.map_err(CallError::Unreachable)?,
        };
        wire::write_frame(&mut stream, kind, body)
            .await
            .map_err(CallError::Network)?;
        let answer = wire::read_frame(&mut stream)
            .await
            .map_err(CallError::Network)?;
        match answer {
            Some((ANSWER, body)) => {
                self.connection = Some(stream);
                Ok(body)
            }
            Some((_, text)) => Err(CallError::Network(io::Error::other(format!(
                "replica {} refused the request: {}",
                self.target,
                String::from_utf8_lossy(&text)
            )))),
            None => Err(CallError::Network(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the replica connection",
            ))),
        }
    }

    async fn rpc<Request: Serialize, Response: DeserializeOwned, E>(
        &mut self,
        kind: u8,
        request: &Request,
        option: &RPCOption,
    ) -> Result<Response, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        E: std::error::Error + DeserializeOwned,
    {
        let answer: Result<Response, RaftError<NodeId, E>> = self
            .call(kind, request, option.hard_ttl())
            .await
            .map_err(|error| match error {
                CallError::Unreachable(error) => RPCError::Unreachable(Unreachable::new(&error)),
                CallError::Network(error) => RPCError::Network(NetworkError::new(&error)),
            })?;
        answer.map_err(|error| RPCError::RemoteError(RemoteError::new(self.target, error)))
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unreachable(error) | CallError::Network(error) => error.fmt(f),
        }
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.rpc(APPEND_ENTRIES, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.rpc(INSTALL_SNAPSHOT, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.rpc(VOTE, &rpc, &option).await
    }
}
