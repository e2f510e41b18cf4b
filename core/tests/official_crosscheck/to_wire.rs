//! `ToWire`: each of our values mapped field by field onto the official crate's type.

use iggy_binary_protocol::requests::consumer_groups::*;
use iggy_binary_protocol::requests::consumer_offsets::*;
use iggy_binary_protocol::requests::messages::*;
use iggy_binary_protocol::requests::partitions::*;
use iggy_binary_protocol::requests::personal_access_tokens::*;
use iggy_binary_protocol::requests::segments::*;
use iggy_binary_protocol::requests::streams::*;
use iggy_binary_protocol::requests::system::*;
use iggy_binary_protocol::requests::topics::*;
use iggy_binary_protocol::requests::users::*;
use iggy_binary_protocol::responses::clients::{
    ClientDetailsResponse, ClientResponse, ConsumerGroupInfoResponse, GetClientsResponse,
};
use iggy_binary_protocol::responses::consumer_groups::{
    ConsumerGroupDetailsResponse, ConsumerGroupMemberResponse, ConsumerGroupResponse,
    GetConsumerGroupsResponse,
};
use iggy_binary_protocol::responses::consumer_offsets::ConsumerOffsetResponse;
use iggy_binary_protocol::responses::personal_access_tokens::{
    GetPersonalAccessTokensResponse, PersonalAccessTokenResponse, RawPersonalAccessTokenResponse,
};
use iggy_binary_protocol::responses::streams::{
    GetStreamResponse, GetStreamsResponse, StreamResponse, TopicHeader,
};
use iggy_binary_protocol::responses::system::get_stats::CacheMetricEntry;
use iggy_binary_protocol::responses::system::{
    ClusterMetadataResponse, ClusterNodeResponse, StatsResponse,
};
use iggy_binary_protocol::responses::topics::{
    GetTopicResponse, GetTopicsResponse, PartitionResponse,
};
use iggy_binary_protocol::responses::users::{
    GetUsersResponse, IdentityResponse, UserDetailsResponse, UserResponse,
};
use iggy_binary_protocol::{
    WireConsumer, WireGlobalPermissions, WireIdentifier, WireName, WirePartitioning,
    WirePermissions, WirePollingStrategy, WireStreamPermissions, WireTopicPermissions,
};
use rill_core::primitives::*;
use rill_core::requests::*;
use rill_core::responses::*;

/// The official crate's value for one of ours.
pub(crate) trait ToWire {
    type Wire;
    fn to_wire(&self) -> Self::Wire;
}

macro_rules! identity_to_wire {
    ($($ty:ty),*) => {$(
        impl ToWire for $ty {
            type Wire = $ty;
            fn to_wire(&self) -> $ty {
                self.clone()
            }
        }
    )*};
}
identity_to_wire!(u8, u32, u64, bool, String);

impl<T: ToWire> ToWire for Option<T> {
    type Wire = Option<T::Wire>;
    fn to_wire(&self) -> Self::Wire {
        self.as_ref().map(ToWire::to_wire)
    }
}

/// Our struct maps onto the official one field by field, each field through `ToWire`.
macro_rules! fields_to_wire {
    ($($ours:ty => $wire:ident { $($field:ident),* };)*) => {$(
        impl ToWire for $ours {
            type Wire = $wire;
            #[allow(clippy::unit_arg)]
            fn to_wire(&self) -> $wire {
                $wire { $($field: self.$field.to_wire(),)* }
            }
        }
    )*};
}

impl ToWire for Name {
    type Wire = WireName;
    fn to_wire(&self) -> WireName {
        WireName::new(self.as_str()).expect("names are 1..=255 bytes")
    }
}

impl ToWire for ShortString {
    type Wire = String;
    fn to_wire(&self) -> String {
        self.0.clone()
    }
}

impl ToWire for Identifier {
    type Wire = WireIdentifier;
    fn to_wire(&self) -> WireIdentifier {
        match self {
            Identifier::Numeric(id) => WireIdentifier::Numeric(*id),
            Identifier::String(name) => WireIdentifier::String(name.to_wire()),
        }
    }
}

impl ToWire for Consumer {
    type Wire = WireConsumer;
    fn to_wire(&self) -> WireConsumer {
        WireConsumer {
            kind: self.kind.as_u8(),
            id: self.id.to_wire(),
        }
    }
}

impl ToWire for OptionalPartition {
    type Wire = Option<u32>;
    fn to_wire(&self) -> Option<u32> {
        self.0
    }
}

impl ToWire for PollingStrategy {
    type Wire = WirePollingStrategy;
    fn to_wire(&self) -> WirePollingStrategy {
        WirePollingStrategy {
            kind: self.kind.as_u8(),
            value: self.value,
        }
    }
}

impl ToWire for Partitioning {
    type Wire = WirePartitioning;
    fn to_wire(&self) -> WirePartitioning {
        match self {
            Partitioning::Balanced => WirePartitioning::Balanced,
            Partitioning::PartitionId(id) => WirePartitioning::PartitionId(*id),
            Partitioning::MessagesKey(key) => WirePartitioning::messages_key(key.clone()).unwrap(),
        }
    }
}

macro_rules! byte_enum_to_wire {
    ($($ty:ty),*) => {$(
        impl ToWire for $ty {
            type Wire = u8;
            fn to_wire(&self) -> u8 {
                self.as_u8()
            }
        }
    )*};
}
byte_enum_to_wire!(CompressionAlgorithm, UserStatus, Transport);

fields_to_wire! {
    GlobalPermissions => WireGlobalPermissions {
        manage_servers, read_servers, manage_users, read_users, manage_streams, read_streams,
        manage_topics, read_topics, poll_messages, send_messages
    };
    TopicPermissions => WireTopicPermissions {
        topic_id, manage_topic, read_topic, poll_messages, send_messages
    };
}

impl ToWire for StreamPermissions {
    type Wire = WireStreamPermissions;
    fn to_wire(&self) -> WireStreamPermissions {
        WireStreamPermissions {
            stream_id: self.stream_id,
            manage_stream: self.manage_stream,
            read_stream: self.read_stream,
            manage_topics: self.manage_topics,
            read_topics: self.read_topics,
            poll_messages: self.poll_messages,
            send_messages: self.send_messages,
            topics: self.topics.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for Permissions {
    type Wire = WirePermissions;
    fn to_wire(&self) -> WirePermissions {
        WirePermissions {
            global: self.global.to_wire(),
            streams: self.streams.iter().map(ToWire::to_wire).collect(),
        }
    }
}

// Requests (all but SendMessages, checked separately below).
fields_to_wire! {
    Ping => PingRequest {};
    GetStats => GetStatsRequest {};
    GetClusterMetadata => GetClusterMetadataRequest {};
    GetMe => GetMeRequest {};
    GetClient => GetClientRequest { client_id };
    GetClients => GetClientsRequest {};
    GetUser => GetUserRequest { user_id };
    GetUsers => GetUsersRequest {};
    CreateUser => CreateUserRequest { username, password, status, permissions };
    DeleteUser => DeleteUserRequest { user_id };
    UpdateUser => UpdateUserRequest { user_id, username, status };
    UpdatePermissions => UpdatePermissionsRequest { user_id, permissions };
    ChangePassword => ChangePasswordRequest { user_id, current_password, new_password };
    LoginUser => LoginUserRequest { username, password, version, context };
    LogoutUser => LogoutUserRequest {};
    GetPersonalAccessTokens => GetPersonalAccessTokensRequest {};
    CreatePersonalAccessToken => CreatePersonalAccessTokenRequest { name, expiry };
    DeletePersonalAccessToken => DeletePersonalAccessTokenRequest { name };
    LoginWithPersonalAccessToken => LoginWithPersonalAccessTokenRequest { token };
    PollMessages => PollMessagesRequest {
        consumer, stream_id, topic_id, partition_id, strategy, count, auto_commit
    };
    FlushUnsavedBuffer => FlushUnsavedBufferRequest { stream_id, topic_id, partition_id, fsync };
    GetConsumerOffset => GetConsumerOffsetRequest { consumer, stream_id, topic_id, partition_id };
    StoreConsumerOffset => StoreConsumerOffsetRequest {
        consumer, stream_id, topic_id, partition_id, offset
    };
    DeleteConsumerOffset => DeleteConsumerOffsetRequest {
        consumer, stream_id, topic_id, partition_id
    };
    GetStream => GetStreamRequest { stream_id };
    GetStreams => GetStreamsRequest {};
    CreateStream => CreateStreamRequest { name };
    DeleteStream => DeleteStreamRequest { stream_id };
    UpdateStream => UpdateStreamRequest { stream_id, name };
    PurgeStream => PurgeStreamRequest { stream_id };
    GetTopic => GetTopicRequest { stream_id, topic_id };
    GetTopics => GetTopicsRequest { stream_id };
    CreateTopic => CreateTopicRequest {
        stream_id, partitions_count, compression_algorithm, message_expiry, max_topic_size,
        replication_factor, name
    };
    DeleteTopic => DeleteTopicRequest { stream_id, topic_id };
    UpdateTopic => UpdateTopicRequest {
        stream_id, topic_id, compression_algorithm, message_expiry, max_topic_size,
        replication_factor, name
    };
    PurgeTopic => PurgeTopicRequest { stream_id, topic_id };
    CreatePartitions => CreatePartitionsRequest { stream_id, topic_id, partitions_count };
    DeletePartitions => DeletePartitionsRequest { stream_id, topic_id, partitions_count };
    DeleteSegments => DeleteSegmentsRequest { stream_id, topic_id, partition_id, segments_count };
    GetConsumerGroup => GetConsumerGroupRequest { stream_id, topic_id, group_id };
    GetConsumerGroups => GetConsumerGroupsRequest { stream_id, topic_id };
    CreateConsumerGroup => CreateConsumerGroupRequest { stream_id, topic_id, name };
    DeleteConsumerGroup => DeleteConsumerGroupRequest { stream_id, topic_id, group_id };
    JoinConsumerGroup => JoinConsumerGroupRequest { stream_id, topic_id, group_id };
    LeaveConsumerGroup => LeaveConsumerGroupRequest { stream_id, topic_id, group_id };
}

impl ToWire for GetSnapshot {
    type Wire = GetSnapshotRequest;
    fn to_wire(&self) -> GetSnapshotRequest {
        GetSnapshotRequest {
            compression: self.compression,
            snapshot_types: self.types.clone(),
        }
    }
}

// Responses.
fields_to_wire! {
    StreamInfo => StreamResponse { id, created_at, topics_count, size_bytes, messages_count, name };
    TopicInfo => TopicHeader {
        id, created_at, partitions_count, message_expiry, compression_algorithm, max_topic_size,
        replication_factor, size_bytes, messages_count, name
    };
    PartitionInfo => PartitionResponse {
        id, created_at, segments_count, current_offset, size_bytes, messages_count
    };
    ConsumerGroupInfo => ConsumerGroupResponse { id, partitions_count, members_count, name };
    ConsumerOffsetInfo => ConsumerOffsetResponse { partition_id, current_offset, stored_offset };
    ClientInfo => ClientResponse { client_id, user_id, transport, address, consumer_groups_count };
    ClientGroup => ConsumerGroupInfoResponse { stream_id, topic_id, group_id };
    ClusterNode => ClusterNodeResponse {
        name, ip, tcp_port, quic_port, http_port, websocket_port, role, status
    };
    UserInfo => UserResponse { id, created_at, status, username };
    UserDetails => UserDetailsResponse { user, permissions };
    IdentityInfo => IdentityResponse { user_id };
    RawPersonalAccessToken => RawPersonalAccessTokenResponse { token };
    PersonalAccessTokenInfo => PersonalAccessTokenResponse { name, expiry_at };
}

impl ToWire for u16 {
    type Wire = u16;
    fn to_wire(&self) -> u16 {
        *self
    }
}

impl ToWire for StreamDetails {
    type Wire = GetStreamResponse;
    fn to_wire(&self) -> GetStreamResponse {
        GetStreamResponse {
            stream: self.stream.to_wire(),
            topics: self.topics.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for TopicDetails {
    type Wire = GetTopicResponse;
    fn to_wire(&self) -> GetTopicResponse {
        GetTopicResponse {
            topic: self.topic.to_wire(),
            partitions: self.partitions.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for ConsumerGroupMember {
    type Wire = ConsumerGroupMemberResponse;
    fn to_wire(&self) -> ConsumerGroupMemberResponse {
        ConsumerGroupMemberResponse {
            id: self.id,
            partitions_count: self.partitions.len() as u32,
            partitions: self.partitions.clone(),
        }
    }
}

impl ToWire for ConsumerGroupDetails {
    type Wire = ConsumerGroupDetailsResponse;
    fn to_wire(&self) -> ConsumerGroupDetailsResponse {
        ConsumerGroupDetailsResponse {
            group: self.group.to_wire(),
            members: self.members.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for ClientDetails {
    type Wire = ClientDetailsResponse;
    fn to_wire(&self) -> ClientDetailsResponse {
        ClientDetailsResponse {
            client: ClientResponse {
                client_id: self.client_id,
                user_id: self.user_id,
                transport: self.transport.as_u8(),
                address: self.address.clone(),
                consumer_groups_count: self.consumer_groups.len() as u32,
            },
            consumer_groups: self.consumer_groups.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for ClusterMetadata {
    type Wire = ClusterMetadataResponse;
    fn to_wire(&self) -> ClusterMetadataResponse {
        ClusterMetadataResponse {
            name: self.name.clone(),
            nodes: self.nodes.iter().map(ToWire::to_wire).collect(),
        }
    }
}

impl ToWire for CacheMetric {
    type Wire = CacheMetricEntry;
    fn to_wire(&self) -> CacheMetricEntry {
        CacheMetricEntry {
            stream_id: self.stream_id,
            topic_id: self.topic_id,
            partition_id: self.partition_id,
            hits: self.hits,
            misses: self.misses,
            hit_ratio: self.hit_ratio,
        }
    }
}

impl ToWire for Stats {
    type Wire = StatsResponse;
    fn to_wire(&self) -> StatsResponse {
        StatsResponse {
            process_id: self.process_id,
            cpu_usage: self.cpu_usage,
            total_cpu_usage: self.total_cpu_usage,
            memory_usage: self.memory_usage,
            total_memory: self.total_memory,
            available_memory: self.available_memory,
            run_time: self.run_time,
            start_time: self.start_time,
            read_bytes: self.read_bytes,
            written_bytes: self.written_bytes,
            messages_size_bytes: self.messages_size_bytes,
            streams_count: self.streams_count,
            topics_count: self.topics_count,
            partitions_count: self.partitions_count,
            segments_count: self.segments_count,
            messages_count: self.messages_count,
            clients_count: self.clients_count,
            consumer_groups_count: self.consumer_groups_count,
            hostname: self.hostname.clone(),
            os_name: self.os_name.clone(),
            os_version: self.os_version.clone(),
            kernel_version: self.kernel_version.clone(),
            iggy_server_version: self.iggy_server_version.clone(),
            // The official type models "0 = unknown" as None.
            iggy_server_semver: (self.iggy_server_semver != 0).then_some(self.iggy_server_semver),
            cache_metrics: self.cache_metrics.iter().map(ToWire::to_wire).collect(),
            threads_count: self.threads_count,
            free_disk_space: self.free_disk_space,
            total_disk_space: self.total_disk_space,
        }
    }
}

/// The list responses (`X*`): our `Vec<X>` against the official `Get…Response` wrappers.
macro_rules! list_to_wire {
    ($($item:ty => $wire:ident { $field:ident };)*) => {$(
        impl ToWire for Vec<$item> {
            type Wire = $wire;
            fn to_wire(&self) -> $wire {
                $wire { $field: self.iter().map(ToWire::to_wire).collect() }
            }
        }
    )*};
}
list_to_wire! {
    StreamInfo => GetStreamsResponse { streams };
    TopicInfo => GetTopicsResponse { topics };
    ConsumerGroupInfo => GetConsumerGroupsResponse { groups };
    ClientInfo => GetClientsResponse { clients };
    UserInfo => GetUsersResponse { users };
    PersonalAccessTokenInfo => GetPersonalAccessTokensResponse { tokens };
}
