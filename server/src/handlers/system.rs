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

/// A single-node cluster, as upstream answers when clustering is off.
pub fn cluster_metadata(shard: &Shard) -> HandlerResult {
    let address = shard
        .shared
        .tcp_address
        .get()
        .copied()
        .unwrap_or(shard.shared.config.tcp.address);
    Ok(Response::encoded(&ClusterMetadata {
        name: "single-node".into(),
        nodes: vec![ClusterNode {
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
        }],
    }))
}
