//! Clients, stats and cluster metadata from the API's JSON.

use super::json::{Malformed, Result, byte_size, field, list, str_of, u32_of, u64_of};
use rill_core::primitives::Transport;
use rill_core::responses::{CacheMetric, ClientInfo, ClusterMetadata, ClusterNode, Stats};
use serde_json::Value;

fn transport(value: &Value) -> Result<Transport> {
    Ok(Transport::from_name(str_of(value, "transport")?).unwrap_or(Transport::Tcp))
}

fn client_user(value: &Value) -> u32 {
    value
        .get("user_id")
        .and_then(Value::as_u64)
        .and_then(|id| u32::try_from(id).ok())
        .unwrap_or(u32::MAX)
}

pub(super) fn client(value: &Value) -> Result<ClientInfo> {
    Ok(ClientInfo {
        client_id: u32_of(value, "client_id")?,
        user_id: client_user(value),
        transport: transport(value)?,
        address: str_of(value, "address")?.to_owned(),
        consumer_groups_count: u32_of(value, "consumer_groups_count")?,
    })
}

pub(super) fn stats(value: &Value) -> Result<Stats> {
    let f32_of = |key: &str| value.get(key).and_then(Value::as_f64).unwrap_or(0.0) as f32;
    let text = |key: &str| -> Result<String> { Ok(str_of(value, key)?.to_owned()) };
    let mut cache_metrics = Vec::new();
    if let Some(Value::Object(metrics)) = value.get("cache_metrics") {
        for (key, metric) in metrics {
            let ids: Vec<u32> = key.split('-').filter_map(|id| id.parse().ok()).collect();
            if let [stream_id, topic_id, partition_id] = ids[..] {
                cache_metrics.push(CacheMetric {
                    stream_id,
                    topic_id,
                    partition_id,
                    hits: u64_of(metric, "hits")?,
                    misses: u64_of(metric, "misses")?,
                    hit_ratio: metric
                        .get("hit_ratio")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0) as f32,
                });
            }
        }
    }
    Ok(Stats {
        process_id: u32_of(value, "process_id")?,
        cpu_usage: f32_of("cpu_usage"),
        total_cpu_usage: f32_of("total_cpu_usage"),
        memory_usage: byte_size(value, "memory_usage")?,
        total_memory: byte_size(value, "total_memory")?,
        available_memory: byte_size(value, "available_memory")?,
        run_time: u64_of(value, "run_time")?,
        start_time: u64_of(value, "start_time")?,
        read_bytes: byte_size(value, "read_bytes")?,
        written_bytes: byte_size(value, "written_bytes")?,
        messages_size_bytes: byte_size(value, "messages_size_bytes")?,
        streams_count: u32_of(value, "streams_count")?,
        topics_count: u32_of(value, "topics_count")?,
        partitions_count: u32_of(value, "partitions_count")?,
        segments_count: u32_of(value, "segments_count")?,
        messages_count: u64_of(value, "messages_count")?,
        clients_count: u32_of(value, "clients_count")?,
        consumer_groups_count: u32_of(value, "consumer_groups_count")?,
        hostname: text("hostname")?,
        os_name: text("os_name")?,
        os_version: text("os_version")?,
        kernel_version: text("kernel_version")?,
        iggy_server_version: text("iggy_server_version")?,
        iggy_server_semver: value
            .get("iggy_server_semver")
            .and_then(Value::as_u64)
            .map_or(0, |semver| semver as u32),
        cache_metrics,
        threads_count: u32_of(value, "threads_count")?,
        free_disk_space: byte_size(value, "free_disk_space")?,
        total_disk_space: byte_size(value, "total_disk_space")?,
    })
}

pub(super) fn cluster(value: &Value) -> Result<ClusterMetadata> {
    let nodes = list(value, "nodes")?
        .iter()
        .map(|node| {
            let endpoints = field(node, "endpoints")?;
            let port = |key: &str| -> Result<u16> {
                u16::try_from(u64_of(endpoints, key)?)
                    .map_err(|_| Malformed(format!("port `{key}` is out of range")))
            };
            Ok(ClusterNode {
                name: str_of(node, "name")?.to_owned(),
                ip: str_of(node, "ip")?.to_owned(),
                tcp_port: port("tcp")?,
                quic_port: port("quic")?,
                http_port: port("http")?,
                websocket_port: port("websocket")?,
                role: u8::from(str_of(node, "role")? != "leader"),
                status: match str_of(node, "status")? {
                    "healthy" => 0,
                    "starting" => 1,
                    "stopping" => 2,
                    "unreachable" => 3,
                    "maintenance" => 4,
                    _ => 5,
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ClusterMetadata {
        name: str_of(value, "name")?.to_owned(),
        nodes,
    })
}
