//! Ping-adjacent system commands: stats, clients, cluster metadata.

use super::access::check;
use super::response::{HandlerResult, Response};
use crate::permissions::Action;
use crate::session::Session;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::requests::GetClient;
use rill_core::responses::{ClusterMetadata, ClusterNode};

/// GetStats. Its process and machine figures come from /proc and statvfs: read on the blocking
/// pool, not on the shard's event loop.
pub async fn stats(shard: &Shard, user_id: u32) -> HandlerResult {
    let counts = shard.metadata(|metadata| {
        check(metadata, user_id, Action::ReadServers)?;
        Ok::<_, ErrorCode>(crate::stats::metadata_counts(metadata))
    })??;
    let shared = shard.shared.clone();
    let stats =
        crate::storage::blocking::run(move || Ok(crate::stats::server_stats(&shared, counts)))
            .await
            .map_err(|_| ErrorCode::Error)?;
    Ok(Response::encoded(&stats))
}

pub fn me(shard: &Shard, session: &Session) -> HandlerResult {
    let entry = shard
        .shared
        .clients
        .get(session.client_id)
        .ok_or(ErrorCode::ClientNotFound)?;
    Ok(Response::encoded(&entry.details()))
}

pub fn client(shard: &Shard, user_id: u32, request: GetClient) -> HandlerResult {
    shard.metadata(|metadata| check(metadata, user_id, Action::ReadServers))??;
    if request.client_id == 0 {
        return Err(ErrorCode::InvalidClientId);
    }
    Ok(match shard.shared.clients.get(request.client_id) {
        Some(entry) => Response::encoded(&entry.details()),
        None => Response::Empty,
    })
}

pub fn clients(shard: &Shard, user_id: u32) -> HandlerResult {
    shard.metadata(|metadata| check(metadata, user_id, Action::ReadServers))??;
    let infos: Vec<_> = shard
        .shared
        .clients
        .all()
        .iter()
        .map(|entry| entry.info())
        .collect();
    Ok(Response::encoded(&infos))
}

/// The cluster as this node sees it: every roster node with its role (the metadata group's
/// leader is the leader) and health (heard from within three heartbeats), the client ports the
/// roster gives it (this node: the ports it bound). Without a cluster, a single node, the
/// leader, as upstream answers when clustering is off.
///
/// A 0.9 session (SDK 0.11.0) is told of this node alone: with two nodes or more that SDK
/// switches to upstream 0.9's partition-routing commands, which this server does not speak,
/// while with one it sends every request here, and every node serves every request.
pub fn cluster_metadata(shard: &Shard, session: &Session) -> HandlerResult {
    let this = this_node(shard);
    let Some(view) = shard.shared.cluster.as_ref().map(|cluster| &cluster.view) else {
        return Ok(Response::encoded(&ClusterMetadata {
            name: "single-node".into(),
            nodes: vec![this],
        }));
    };
    let me = view
        .nodes
        .iter()
        .find(|node| node.replica_id == view.me)
        .expect("this node is in its roster");
    let this = ClusterNode {
        name: me.name.clone(),
        ip: me.host.clone(),
        role: view.role(view.me),
        status: view.status(view.me),
        ..this
    };
    if session.generation == crate::session::Generation::V09 {
        return Ok(Response::encoded(&ClusterMetadata {
            name: view.name.clone(),
            nodes: vec![ClusterNode {
                role: crate::cluster::link::ROLE_LEADER,
                ..this
            }],
        }));
    }
    let nodes = view
        .nodes
        .iter()
        .map(|node| {
            if node.replica_id == view.me {
                return this.clone();
            }
            ClusterNode {
                name: node.name.clone(),
                ip: node.host.clone(),
                tcp_port: node.ports.tcp,
                quic_port: node.ports.quic,
                http_port: node.ports.http,
                websocket_port: node.ports.websocket,
                role: view.role(node.replica_id),
                status: view.status(node.replica_id),
            }
        })
        .collect();
    Ok(Response::encoded(&ClusterMetadata {
        name: view.name.clone(),
        nodes,
    }))
}

/// This node with the ports it bound, the leader and healthy.
fn this_node(shard: &Shard) -> ClusterNode {
    let address = shard
        .shared
        .tcp_address
        .get()
        .copied()
        .unwrap_or(shard.shared.config.tcp.address);
    ClusterNode {
        name: "iggy-node".into(),
        ip: address.ip().to_string(),
        tcp_port: address.port(),
        quic_port: shard
            .shared
            .quic_address
            .map_or(shard.shared.config.quic.address.port(), |address| {
                address.port()
            }),
        http_port: shard
            .shared
            .http_address
            .get()
            .map_or(shard.shared.config.http.address.port(), |address| {
                address.port()
            }),
        // 0 when WebSocket is off, rather than a port nothing answers on.
        websocket_port: shard
            .shared
            .websocket_address
            .get()
            .map_or(0, |address| address.port()),
        role: 0,
        status: 0,
    }
}
