//! The replica port's server side: a peer's connection is authenticated (`wire::accept`), then
//! each frame it sends is dispatched by kind to openraft, the partitions' replication, or the
//! calls a follower makes to its leader, and answered on the same connection in order.

use super::leader_calls::{run_forwarded, run_partition_call, run_relayed};
use super::network::{
    ANSWER, APPEND_ENTRIES, FETCH, FORWARD, GONE, INSTALL_SNAPSHOT, PARTITION, PING, Peers,
    REFUSED, RELAY, REPLICA_STATE, VOTE,
};
use super::partition_call;
use super::relay;
use super::replication::Replicator;
use super::tls::ReplicaStream;
use super::types::Raft;
use super::wire::{self, HANDSHAKE_TIMEOUT};
use crate::http::bridge::Bridge;
use crate::shard::message::ControlRequest;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// What the replica listener's connections share.
pub(super) struct Serving {
    pub raft: Raft,
    pub peers: Peers,
    pub control: flume::Sender<ControlRequest>,
    pub bridge: Arc<Bridge>,
    pub replicator: Arc<Replicator>,
}

pub(super) async fn accept_peers(listener: TcpListener, serving: Arc<Serving>) {
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

async fn serve_peer(stream: TcpStream, serving: &Serving, roster: &[u64]) -> std::io::Result<()> {
    let (raft, peers, control) = (&serving.raft, &serving.peers, &serving.control);
    stream.set_nodelay(true)?;
    let (mut stream, peer) = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        let mut stream = match &peers.tls {
            Some(tls) => tls.accept(stream).await?,
            None => ReplicaStream::Plain(stream),
        };
        let peer = wire::accept(&mut stream, peers.me, roster, &peers.credentials).await?;
        Ok::<_, std::io::Error>((stream, peer))
    })
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
            RELAY => Ok(relay::encode_answer(
                &run_relayed(&peers.view, &serving.bridge, body).await,
            )),
            PARTITION => Ok(partition_call::encode_answer(
                &run_partition_call(&peers.view, &serving.bridge, &body).await,
            )),
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
