//! Ping-adjacent system commands: stats, clients, cluster metadata.

use super::{HandlerResult, Response, Session, check};
use crate::permissions::Action;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::requests::GetClient;
use rill_core::responses::{ClusterMetadata, ClusterNode, Stats};

/// The protocol version we answer as (Iggy server 0.8.0).
pub const SERVER_VERSION: &str = "0.8.0";
pub const SERVER_SEMVER: u32 = 8000;

pub fn stats(shard: &Shard, user_id: u32) -> HandlerResult {
    let shared = &shard.shared;
    let (streams_count, topics_count, partitions_count) = shard.metadata(|metadata| {
        check(metadata, user_id, Action::ReadServers)?;
        let topics = metadata
            .streams
            .values()
            .map(|s| s.topics.len())
            .sum::<usize>();
        let partitions = metadata
            .streams
            .values()
            .flat_map(|s| s.topics.values())
            .map(|t| t.partitions.len())
            .sum::<usize>();
        Ok::<_, ErrorCode>((
            metadata.streams.len() as u32,
            topics as u32,
            partitions as u32,
        ))
    })??;
    let (messages_count, messages_size_bytes, segments_count) =
        shared.shards_table.totals(|_| true);
    let process = crate::system_info::process();
    let machine = crate::system_info::machine(&shared.config.system.path);
    let now = crate::time::now_micros();
    Ok(Response::encoded(&Stats {
        process_id: std::process::id(),
        cpu_usage: process.cpu_usage_percent,
        total_cpu_usage: machine.cpu_usage_percent,
        memory_usage: process.resident_bytes,
        total_memory: machine.total_memory_bytes,
        available_memory: machine.available_memory_bytes,
        run_time: now.saturating_sub(shared.started_at_micros),
        start_time: shared.started_at_micros,
        read_bytes: process.read_bytes,
        written_bytes: process.written_bytes,
        messages_size_bytes,
        streams_count,
        topics_count,
        partitions_count,
        segments_count,
        messages_count,
        clients_count: shared.clients.len() as u32,
        consumer_groups_count: shared.groups.len() as u32,
        hostname: machine.hostname,
        os_name: machine.os_name,
        os_version: machine.os_version,
        kernel_version: machine.kernel_version,
        iggy_server_version: SERVER_VERSION.into(),
        iggy_server_semver: SERVER_SEMVER,
        cache_metrics: Vec::new(),
        threads_count: process.threads,
        free_disk_space: machine.free_disk_bytes,
        total_disk_space: machine.total_disk_bytes,
    }))
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
            quic_port: 8080,
            http_port: 3000,
            websocket_port: 8092,
            role: 0,
            status: 0,
        }],
    }))
}
