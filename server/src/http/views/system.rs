//! Clients, cluster metadata and stats as upstream's JSON has them.

use super::byte_size;
use rill_core::responses::{ClientDetails, ClientInfo, ClusterMetadata, Stats};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct Client {
    client_id: u32,
    user_id: Option<u32>,
    address: String,
    transport: &'static str,
    consumer_groups_count: u32,
}

impl From<&ClientInfo> for Client {
    fn from(client: &ClientInfo) -> Self {
        Client {
            client_id: client.client_id,
            user_id: (client.user_id != u32::MAX).then_some(client.user_id),
            address: client.address.clone(),
            transport: client.transport.name(),
            consumer_groups_count: client.consumer_groups_count,
        }
    }
}

#[derive(Serialize)]
pub struct ClientWithGroups {
    #[serde(flatten)]
    client: Client,
    consumer_groups: Vec<ClientGroup>,
}

#[derive(Serialize)]
struct ClientGroup {
    stream_id: u32,
    topic_id: u32,
    group_id: u32,
}

impl From<&ClientDetails> for ClientWithGroups {
    fn from(details: &ClientDetails) -> Self {
        ClientWithGroups {
            client: Client {
                client_id: details.client_id,
                user_id: (details.user_id != u32::MAX).then_some(details.user_id),
                address: details.address.clone(),
                transport: details.transport.name(),
                consumer_groups_count: details.consumer_groups.len() as u32,
            },
            consumer_groups: details
                .consumer_groups
                .iter()
                .map(|group| ClientGroup {
                    stream_id: group.stream_id,
                    topic_id: group.topic_id,
                    group_id: group.group_id,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct Cluster {
    name: String,
    nodes: Vec<Node>,
}

#[derive(Serialize)]
struct Node {
    name: String,
    ip: String,
    endpoints: Endpoints,
    role: &'static str,
    status: &'static str,
}

#[derive(Serialize)]
struct Endpoints {
    tcp: u16,
    quic: u16,
    http: u16,
    websocket: u16,
}

impl From<&ClusterMetadata> for Cluster {
    fn from(cluster: &ClusterMetadata) -> Self {
        Cluster {
            name: cluster.name.clone(),
            nodes: cluster
                .nodes
                .iter()
                .map(|node| Node {
                    name: node.name.clone(),
                    ip: node.ip.clone(),
                    endpoints: Endpoints {
                        tcp: node.tcp_port,
                        quic: node.quic_port,
                        http: node.http_port,
                        websocket: node.websocket_port,
                    },
                    role: if node.role == 0 { "leader" } else { "follower" },
                    status: match node.status {
                        0 => "healthy",
                        1 => "starting",
                        2 => "stopping",
                        3 => "unreachable",
                        4 => "maintenance",
                        _ => "unknown",
                    },
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub struct StatsView {
    process_id: u32,
    cpu_usage: f32,
    total_cpu_usage: f32,
    memory_usage: String,
    total_memory: String,
    available_memory: String,
    run_time: u64,
    start_time: u64,
    read_bytes: String,
    written_bytes: String,
    messages_size_bytes: String,
    streams_count: u32,
    topics_count: u32,
    partitions_count: u32,
    segments_count: u32,
    messages_count: u64,
    clients_count: u32,
    consumer_groups_count: u32,
    hostname: String,
    os_name: String,
    os_version: String,
    kernel_version: String,
    iggy_server_version: String,
    iggy_server_semver: Option<u32>,
    cache_metrics: BTreeMap<String, CacheMetric>,
    threads_count: u32,
    free_disk_space: String,
    total_disk_space: String,
    /// Ours: the I/O driver the shards run on (upstream's SDKs ignore unknown keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    io_driver: Option<&'static str>,
}

#[derive(Serialize)]
struct CacheMetric {
    hits: u64,
    misses: u64,
    hit_ratio: f32,
}

impl StatsView {
    pub fn new(stats: &Stats, io_driver: Option<&'static str>) -> StatsView {
        StatsView {
            process_id: stats.process_id,
            cpu_usage: stats.cpu_usage,
            total_cpu_usage: stats.total_cpu_usage,
            memory_usage: byte_size(stats.memory_usage),
            total_memory: byte_size(stats.total_memory),
            available_memory: byte_size(stats.available_memory),
            run_time: stats.run_time,
            start_time: stats.start_time,
            read_bytes: byte_size(stats.read_bytes),
            written_bytes: byte_size(stats.written_bytes),
            messages_size_bytes: byte_size(stats.messages_size_bytes),
            streams_count: stats.streams_count,
            topics_count: stats.topics_count,
            partitions_count: stats.partitions_count,
            segments_count: stats.segments_count,
            messages_count: stats.messages_count,
            clients_count: stats.clients_count,
            consumer_groups_count: stats.consumer_groups_count,
            hostname: stats.hostname.clone(),
            os_name: stats.os_name.clone(),
            os_version: stats.os_version.clone(),
            kernel_version: stats.kernel_version.clone(),
            iggy_server_version: stats.iggy_server_version.clone(),
            iggy_server_semver: (stats.iggy_server_semver != 0).then_some(stats.iggy_server_semver),
            cache_metrics: stats
                .cache_metrics
                .iter()
                .map(|metric| {
                    (
                        format!(
                            "{}-{}-{}",
                            metric.stream_id, metric.topic_id, metric.partition_id
                        ),
                        CacheMetric {
                            hits: metric.hits,
                            misses: metric.misses,
                            hit_ratio: metric.hit_ratio,
                        },
                    )
                })
                .collect(),
            threads_count: stats.threads_count,
            free_disk_space: byte_size(stats.free_disk_space),
            total_disk_space: byte_size(stats.total_disk_space),
            io_driver,
        }
    }
}
