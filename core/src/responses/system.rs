//! Stats, clients and cluster metadata records.

use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use crate::primitives::Transport;
use bytes::BufMut;

wire_struct! {
    /// One cache metrics entry of [`Stats`] (32 bytes).
    pub struct CacheMetric {
        pub stream_id: u32,
        pub topic_id: u32,
        pub partition_id: u32,
        pub hits: u64,
        pub misses: u64,
        pub hit_ratio: f32,
    }
}

/// GetStats (10) response (protocol.md 7.1). Every field is mandatory.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub process_id: u32,
    pub cpu_usage: f32,
    pub total_cpu_usage: f32,
    pub memory_usage: u64,
    pub total_memory: u64,
    pub available_memory: u64,
    pub run_time: u64,
    pub start_time: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub messages_size_bytes: u64,
    pub streams_count: u32,
    pub topics_count: u32,
    pub partitions_count: u32,
    pub segments_count: u32,
    pub messages_count: u64,
    pub clients_count: u32,
    pub consumer_groups_count: u32,
    pub hostname: String,
    pub os_name: String,
    pub os_version: String,
    pub kernel_version: String,
    pub iggy_server_version: String,
    /// major‖minor(3 digits)‖patch(3 digits): 0.8.0 → 8000; 0 = unknown.
    pub iggy_server_semver: u32,
    pub cache_metrics: Vec<CacheMetric>,
    pub threads_count: u32,
    pub free_disk_space: u64,
    pub total_disk_space: u64,
}

impl Encode for Stats {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u32_le(self.process_id);
        out.put_f32_le(self.cpu_usage);
        out.put_f32_le(self.total_cpu_usage);
        for value in [
            self.memory_usage,
            self.total_memory,
            self.available_memory,
            self.run_time,
            self.start_time,
            self.read_bytes,
            self.written_bytes,
            self.messages_size_bytes,
        ] {
            out.put_u64_le(value);
        }
        for value in [
            self.streams_count,
            self.topics_count,
            self.partitions_count,
            self.segments_count,
        ] {
            out.put_u32_le(value);
        }
        out.put_u64_le(self.messages_count);
        out.put_u32_le(self.clients_count);
        out.put_u32_le(self.consumer_groups_count);
        for text in [
            &self.hostname,
            &self.os_name,
            &self.os_version,
            &self.kernel_version,
            &self.iggy_server_version,
        ] {
            text.encode(out);
        }
        out.put_u32_le(self.iggy_server_semver);
        out.put_u32_le(self.cache_metrics.len() as u32);
        self.cache_metrics.encode(out);
        out.put_u32_le(self.threads_count);
        out.put_u64_le(self.free_disk_space);
        out.put_u64_le(self.total_disk_space);
    }

    fn encoded_len(&self) -> usize {
        108 + [
            &self.hostname,
            &self.os_name,
            &self.os_version,
            &self.kernel_version,
            &self.iggy_server_version,
        ]
        .iter()
        .map(|text| text.encoded_len())
        .sum::<usize>()
            + 4
            + 4
            + 32 * self.cache_metrics.len()
            + 4
            + 16
    }
}

impl Decode for Stats {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut stats = Stats {
            process_id: reader.u32("process id")?,
            cpu_usage: reader.f32("cpu usage")?,
            total_cpu_usage: reader.f32("total cpu usage")?,
            memory_usage: reader.u64("memory usage")?,
            total_memory: reader.u64("total memory")?,
            available_memory: reader.u64("available memory")?,
            run_time: reader.u64("run time")?,
            start_time: reader.u64("start time")?,
            read_bytes: reader.u64("read bytes")?,
            written_bytes: reader.u64("written bytes")?,
            messages_size_bytes: reader.u64("messages size")?,
            streams_count: reader.u32("streams count")?,
            topics_count: reader.u32("topics count")?,
            partitions_count: reader.u32("partitions count")?,
            segments_count: reader.u32("segments count")?,
            messages_count: reader.u64("messages count")?,
            clients_count: reader.u32("clients count")?,
            consumer_groups_count: reader.u32("consumer groups count")?,
            hostname: reader.str32("hostname")?,
            os_name: reader.str32("os name")?,
            os_version: reader.str32("os version")?,
            kernel_version: reader.str32("kernel version")?,
            iggy_server_version: reader.str32("server version")?,
            iggy_server_semver: reader.u32("server semver")?,
            cache_metrics: Vec::new(),
            threads_count: 0,
            free_disk_space: 0,
            total_disk_space: 0,
        };
        let metrics_count = reader.u32("cache metrics count")?;
        for _ in 0..metrics_count {
            stats.cache_metrics.push(CacheMetric::decode(reader)?);
        }
        stats.threads_count = reader.u32("threads count")?;
        stats.free_disk_space = reader.u64("free disk space")?;
        stats.total_disk_space = reader.u64("total disk space")?;
        Ok(stats)
    }
}

wire_struct! {
    /// A client (session) record in GetClients (protocol.md 7.2).
    pub struct ClientInfo {
        pub client_id: u32,
        /// u32::MAX when not logged in.
        pub user_id: u32,
        pub transport: Transport,
        pub address: String,
        pub consumer_groups_count: u32,
    }
}

wire_struct! {
    /// A consumer group a client has joined.
    pub struct ClientGroup { pub stream_id: u32, pub topic_id: u32, pub group_id: u32 }
}

/// GetMe / GetClient response: the client record followed by its groups.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientDetails {
    pub client_id: u32,
    pub user_id: u32,
    pub transport: Transport,
    pub address: String,
    pub consumer_groups: Vec<ClientGroup>,
}

impl Encode for ClientDetails {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u32_le(self.client_id);
        out.put_u32_le(self.user_id);
        self.transport.encode(out);
        self.address.encode(out);
        out.put_u32_le(self.consumer_groups.len() as u32);
        self.consumer_groups.encode(out);
    }
    fn encoded_len(&self) -> usize {
        4 + 4 + 1 + self.address.encoded_len() + 4 + 12 * self.consumer_groups.len()
    }
}

impl Decode for ClientDetails {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let info = ClientInfo::decode(reader)?;
        let mut consumer_groups = Vec::new();
        for _ in 0..info.consumer_groups_count {
            consumer_groups.push(ClientGroup::decode(reader)?);
        }
        Ok(ClientDetails {
            client_id: info.client_id,
            user_id: info.user_id,
            transport: info.transport,
            address: info.address,
            consumer_groups,
        })
    }
}

/// A cluster node (protocol.md 7.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    pub name: String,
    pub ip: String,
    pub tcp_port: u16,
    pub quic_port: u16,
    pub http_port: u16,
    pub websocket_port: u16,
    /// 0 leader, 1 follower.
    pub role: u8,
    /// 0 healthy, 1 starting, 2 stopping, 3 unreachable, 4 maintenance.
    pub status: u8,
}

impl Encode for ClusterNode {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.name.encode(out);
        self.ip.encode(out);
        for port in [
            self.tcp_port,
            self.quic_port,
            self.http_port,
            self.websocket_port,
        ] {
            out.put_u16_le(port);
        }
        out.put_u8(self.role);
        out.put_u8(self.status);
    }
    fn encoded_len(&self) -> usize {
        self.name.encoded_len() + self.ip.encoded_len() + 8 + 2
    }
}

impl Decode for ClusterNode {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let node = ClusterNode {
            name: reader.str32("node name")?,
            ip: reader.str32("node ip")?,
            tcp_port: reader.u16("tcp port")?,
            quic_port: reader.u16("quic port")?,
            http_port: reader.u16("http port")?,
            websocket_port: reader.u16("websocket port")?,
            role: reader.u8("node role")?,
            status: reader.u8("node status")?,
        };
        if node.role > 1 {
            return Err(DecodeError::invalid("node role"));
        }
        if node.status > 4 {
            return Err(DecodeError::invalid("node status"));
        }
        Ok(node)
    }
}

/// GetClusterMetadata (12) response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMetadata {
    pub name: String,
    pub nodes: Vec<ClusterNode>,
}

impl Encode for ClusterMetadata {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.name.encode(out);
        out.put_u32_le(self.nodes.len() as u32);
        self.nodes.encode(out);
    }
    fn encoded_len(&self) -> usize {
        self.name.encoded_len() + 4 + self.nodes.encoded_len()
    }
}

impl Decode for ClusterMetadata {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let name = reader.str32("cluster name")?;
        let count = reader.u32("nodes count")?;
        let mut nodes = Vec::new();
        for _ in 0..count {
            nodes.push(ClusterNode::decode(reader)?);
        }
        Ok(ClusterMetadata { name, nodes })
    }
}
