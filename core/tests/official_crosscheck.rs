//! Cross-checks against the official wire crate `iggy_binary_protocol` 0.10.0 (the codec the
//! Iggy 0.8.0 server and SDK 0.10.0 share).
//!
//! How: every value of ours is mapped field by field onto the official type (`ToWire`). For each
//! of the 47 request types and each response type, proptest-generated valid values (Unicode and
//! 255-byte names, string and numeric identifiers, nested permissions, optional fields present
//! and absent) plus hand-built edge cases must satisfy, in `cross_check`:
//!   1. our bytes == the official crate's bytes, and our `encoded_len` == its `encoded_size`;
//!   2. the official crate's bytes decode with *our* decoder to the original value;
//!   3. our bytes decode with the *official* decoder to the mapped value, consuming them all.
//!
//! Where the official crate has no type or only one direction (SendMessages has an encoder and a
//! metadata decoder; PollMessages a header codec and a message iterator; user headers an
//! encoder and a validator), the directions that exist are checked and a comment says so.
//!
//! protocol.md is authoritative where the two disagree. Disagreements found (none in the byte
//! layout of any request or record; all in what the official crate says a command answers or how
//! leniently it reads), each pinned to protocol.md's behaviour by a test at the end of this file:
//! - `CreateTopicResponse`, `CreateUserResponse` and `CreateConsumerGroupResponse` are aliases of
//!   `EmptyResponse`, but protocol.md 3 / 12.4 says these commands answer TopicDetails,
//!   UserDetails and a ConsumerGroup record (the SDK fails on an empty body);
//! - `PollMessagesResponse` iterates `messages_count` messages, while protocol.md 12.11 says the
//!   SDK walks the payload by header lengths and ignores the count; and the official message view
//!   accepts a non-zero `reserved` field that protocol.md 6.1 / 12.11 rejects with 4101.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use iggy_binary_protocol as wire;
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
use iggy_binary_protocol::responses::messages::{PollMessagesResponse, PollMessagesResponseHeader};
use iggy_binary_protocol::responses::personal_access_tokens::{
    GetPersonalAccessTokensResponse, PersonalAccessTokenResponse, RawPersonalAccessTokenResponse,
};
use iggy_binary_protocol::responses::streams::{
    GetStreamResponse, GetStreamsResponse, StreamResponse, TopicHeader,
};
use iggy_binary_protocol::responses::system::get_stats::CacheMetricEntry;
use iggy_binary_protocol::responses::system::{
    ClusterMetadataResponse, ClusterNodeResponse, EmptyResponse, StatsResponse,
};
use iggy_binary_protocol::responses::topics::{
    GetTopicResponse, GetTopicsResponse, PartitionResponse,
};
use iggy_binary_protocol::responses::users::{
    GetUsersResponse, IdentityResponse, UserDetailsResponse, UserResponse,
};
use iggy_binary_protocol::{
    RequestFrame, ResponseFrame, WireConsumer, WireDecode, WireEncode, WireGlobalPermissions,
    WireIdentifier, WireMessageIterator, WireMessageViewMut, WireName, WirePartitioning,
    WirePermissions, WirePollingStrategy, WireStreamPermissions, WireTopicPermissions,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rill_core::ErrorCode;
use rill_core::codec::{Decode, Encode};
use rill_core::frame::{ResponseHeader, encode_request};
use rill_core::message::{MessageBatch, OutgoingMessage, PolledMessages, SendMessages};
use rill_core::primitives::user_headers::{self, HeaderField};
use rill_core::primitives::*;
use rill_core::requests::*;
use rill_core::responses::*;
use std::fmt::Debug;
use std::num::NonZeroU32;

// ---------------------------------------------------------------------------------------------
// Mapping our values onto the official types
// ---------------------------------------------------------------------------------------------

/// The official crate's value for one of ours.
trait ToWire {
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

// ---------------------------------------------------------------------------------------------
// The three-way check
// ---------------------------------------------------------------------------------------------

/// Bytes equal, lengths equal, official bytes → our decoder → our value, our bytes → official
/// decoder → official value (consuming every byte).
fn cross_check<O>(ours: &O)
where
    O: Encode + Decode + PartialEq + Debug + ToWire,
    O::Wire: WireEncode + WireDecode + PartialEq + Debug,
{
    let theirs = ours.to_wire();
    let our_bytes = ours.to_bytes();
    let their_bytes = theirs.to_bytes();
    assert_eq!(
        our_bytes,
        their_bytes[..],
        "byte layouts differ for {ours:?} / {theirs:?}"
    );
    assert_eq!(ours.encoded_len(), theirs.encoded_size(), "sizes differ");

    let decoded_by_us = O::from_bytes(&their_bytes)
        .unwrap_or_else(|error| panic!("we cannot decode official bytes of {theirs:?}: {error}"));
    assert_eq!(
        &decoded_by_us, ours,
        "official bytes decode to another value"
    );

    let (decoded_by_them, consumed) = <O::Wire as WireDecode>::decode(&our_bytes)
        .unwrap_or_else(|error| panic!("the official crate cannot decode {ours:?}: {error}"));
    assert_eq!(decoded_by_them, theirs, "our bytes decode to another value");
    assert_eq!(
        consumed,
        our_bytes.len(),
        "official decoder left bytes over"
    );
}

/// A request through `cross_check`, plus: the official bytes decode through our
/// code-dispatching `Request::decode`, and our whole frame is what the official framing writes.
fn cross_check_request(request: &Request) {
    macro_rules! dispatch {
        ($($variant:ident),*) => {
            match request {
                $(Request::$variant(inner) => {
                    cross_check(inner);
                    inner.to_wire().to_bytes().to_vec()
                })*
                Request::SendMessages(send) => cross_check_send_messages(send),
            }
        };
    }
    let their_payload = dispatch!(
        Ping,
        GetStats,
        GetSnapshot,
        GetClusterMetadata,
        GetMe,
        GetClient,
        GetClients,
        GetUser,
        GetUsers,
        CreateUser,
        DeleteUser,
        UpdateUser,
        UpdatePermissions,
        ChangePassword,
        LoginUser,
        LogoutUser,
        GetPersonalAccessTokens,
        CreatePersonalAccessToken,
        DeletePersonalAccessToken,
        LoginWithPersonalAccessToken,
        PollMessages,
        FlushUnsavedBuffer,
        GetConsumerOffset,
        StoreConsumerOffset,
        DeleteConsumerOffset,
        GetStream,
        GetStreams,
        CreateStream,
        DeleteStream,
        UpdateStream,
        PurgeStream,
        GetTopic,
        GetTopics,
        CreateTopic,
        DeleteTopic,
        UpdateTopic,
        PurgeTopic,
        CreatePartitions,
        DeletePartitions,
        DeleteSegments,
        GetConsumerGroup,
        GetConsumerGroups,
        CreateConsumerGroup,
        DeleteConsumerGroup,
        JoinConsumerGroup,
        LeaveConsumerGroup
    );
    let code = request.command().code();
    assert_eq!(
        &Request::decode(code, BytesMut::from(&their_payload[..])).unwrap(),
        request
    );

    let mut our_frame = Vec::new();
    encode_request(request, &mut our_frame);
    let mut their_frame = BytesMut::new();
    RequestFrame::encode(code, &their_payload, &mut their_frame).unwrap();
    assert_eq!(our_frame, their_frame[..], "request frames differ");
    let (frame, consumed) = RequestFrame::decode(&our_frame).unwrap();
    assert_eq!((frame.code, frame.payload), (code, &their_payload[..]));
    assert_eq!(consumed, our_frame.len());
    assert_eq!(
        wire::lookup_command(code).map(|meta| meta.code),
        Some(code),
        "the official command table lacks {code}"
    );
}

/// SendMessages: the official crate has an encoder (`SendMessagesEncoder`) and, for decoding,
/// only the metadata header (`SendMessagesHeader`) and the message iterator. Checks: identical
/// bytes; official bytes decode with `SendMessages::decode_owned` to our value; our bytes decode
/// with the official pieces to the same routing, index block and messages. Returns the
/// official payload.
fn cross_check_send_messages(send: &SendMessages) -> Vec<u8> {
    let views: Vec<_> = send.batch.iter().collect();
    let raw: Vec<RawMessage<'_>> = views
        .iter()
        .map(|view| RawMessage {
            id: view.id(),
            origin_timestamp: view.origin_timestamp(),
            headers: (!view.user_headers().is_empty()).then(|| view.user_headers()),
            payload: view.payload(),
        })
        .collect();
    let (stream_id, topic_id, partitioning) = (
        send.stream_id.to_wire(),
        send.topic_id.to_wire(),
        send.partitioning.to_wire(),
    );
    let mut theirs = BytesMut::new();
    SendMessagesEncoder::encode(&mut theirs, &stream_id, &topic_id, &partitioning, &raw);
    let ours = send.to_bytes();
    assert_eq!(ours, theirs[..], "SendMessages layouts differ");
    assert_eq!(
        send.encoded_len(),
        SendMessagesEncoder::encoded_size(&stream_id, &topic_id, &partitioning, &raw)
    );
    let mut header_only = BytesMut::new();
    SendMessagesMetadataEncoder::encode_header(
        &mut header_only,
        &stream_id,
        &topic_id,
        &partitioning,
        &raw,
    );
    assert_eq!(&ours[..header_only.len()], &header_only[..]);

    // Official bytes → ours.
    assert_eq!(
        &SendMessages::decode_owned(theirs.clone()).unwrap(),
        send,
        "official SendMessages bytes decode to another value"
    );

    // Our bytes → the official decoding pieces.
    let metadata_length = u32::from_le_bytes(ours[0..4].try_into().unwrap()) as usize;
    let (header, consumed) = SendMessagesHeader::decode(&ours[4..4 + metadata_length]).unwrap();
    assert_eq!(consumed, metadata_length);
    assert_eq!(header.metadata_length(), metadata_length);
    assert_eq!(
        header,
        SendMessagesHeader {
            stream_id,
            topic_id,
            partitioning,
            messages_count: send.batch.count(),
        }
    );
    let index_start = 4 + metadata_length;
    let messages_start = index_start + 16 * views.len();
    let mut end = 0u32;
    for (i, view) in views.iter().enumerate() {
        end += view.size() as u32;
        let entry = &ours[index_start + 16 * i..index_start + 16 * (i + 1)];
        assert_eq!(entry[0..4], [0; 4]);
        assert_eq!(u32::from_le_bytes(entry[4..8].try_into().unwrap()), end);
        assert_eq!(entry[8..16], [0; 8]);
    }
    let section = &ours[messages_start..];
    let mut walked = 0;
    let mut official = WireMessageIterator::new(section, send.batch.count());
    for view in &views {
        let message = official.next().unwrap().unwrap();
        assert_eq!(message.id(), view.id());
        assert_eq!(message.origin_timestamp(), view.origin_timestamp());
        assert_eq!(message.payload(), view.payload());
        assert_eq!(message.user_headers(), view.user_headers());
        assert_eq!(
            (message.checksum(), message.offset(), message.timestamp()),
            (0, 0, 0)
        );
        walked += message.total_size();
    }
    assert!(official.next().is_none());
    assert_eq!(walked, section.len());
    theirs.to_vec()
}

/// One test per command, so a failure names the command.
macro_rules! request_cross_checks {
    ($($test:ident => $command:ident,)*) => {
        $(
            #[test]
            fn $test() {
                // Proves our $command codec and the official one agree both ways on arbitrary
                // valid values (see cross_check_request).
                let mut runner = TestRunner::new(config(256));
                runner
                    .run(&request(CommandCode::$command), |request| {
                        cross_check_request(&request);
                        Ok(())
                    })
                    .unwrap_or_else(|failure| panic!("{}: {failure}", CommandCode::$command));
            }
        )*

        const CROSS_CHECKED: &[CommandCode] = &[$(CommandCode::$command,)*];
    };
}

request_cross_checks! {
    ping => Ping,
    get_stats => GetStats,
    get_snapshot => GetSnapshot,
    get_cluster_metadata => GetClusterMetadata,
    get_me => GetMe,
    get_client => GetClient,
    get_clients => GetClients,
    get_user => GetUser,
    get_users => GetUsers,
    create_user => CreateUser,
    delete_user => DeleteUser,
    update_user => UpdateUser,
    update_permissions => UpdatePermissions,
    change_password => ChangePassword,
    login_user => LoginUser,
    logout_user => LogoutUser,
    get_personal_access_tokens => GetPersonalAccessTokens,
    create_personal_access_token => CreatePersonalAccessToken,
    delete_personal_access_token => DeletePersonalAccessToken,
    login_with_personal_access_token => LoginWithPersonalAccessToken,
    poll_messages => PollMessages,
    send_messages => SendMessages,
    flush_unsaved_buffer => FlushUnsavedBuffer,
    get_consumer_offset => GetConsumerOffset,
    store_consumer_offset => StoreConsumerOffset,
    delete_consumer_offset => DeleteConsumerOffset,
    get_stream => GetStream,
    get_streams => GetStreams,
    create_stream => CreateStream,
    delete_stream => DeleteStream,
    update_stream => UpdateStream,
    purge_stream => PurgeStream,
    get_topic => GetTopic,
    get_topics => GetTopics,
    create_topic => CreateTopic,
    delete_topic => DeleteTopic,
    update_topic => UpdateTopic,
    purge_topic => PurgeTopic,
    create_partitions => CreatePartitions,
    delete_partitions => DeletePartitions,
    delete_segments => DeleteSegments,
    get_consumer_group => GetConsumerGroup,
    get_consumer_groups => GetConsumerGroups,
    create_consumer_group => CreateConsumerGroup,
    delete_consumer_group => DeleteConsumerGroup,
    join_consumer_group => JoinConsumerGroup,
    leave_consumer_group => LeaveConsumerGroup,
}

#[test]
fn every_command_is_cross_checked_and_in_the_official_table() {
    // Proves the per-command cross-checks cover all 47 commands and that our command codes are
    // exactly the official COMMAND_TABLE's (same set, same count).
    assert_eq!(CROSS_CHECKED, CommandCode::ALL);
    let mut official: Vec<u32> = wire::COMMAND_TABLE.iter().map(|meta| meta.code).collect();
    official.sort_unstable();
    let ours: Vec<u32> = CommandCode::ALL.iter().map(|code| code.code()).collect();
    assert_eq!(ours, official);
}

// ---------------------------------------------------------------------------------------------
// Hand-built edge cases
// ---------------------------------------------------------------------------------------------

fn name(text: &str) -> Name {
    Name::new(text).unwrap()
}

/// 255 bytes: 63 four-byte scalars and three ASCII bytes.
fn longest_unicode_name() -> Name {
    name(&format!("{}abc", "🦀".repeat(63)))
}

fn nested_permissions() -> Permissions {
    let topic = |topic_id, flags: [bool; 4]| TopicPermissions {
        topic_id,
        manage_topic: flags[0],
        read_topic: flags[1],
        poll_messages: flags[2],
        send_messages: flags[3],
    };
    Permissions {
        global: GlobalPermissions {
            read_streams: true,
            poll_messages: true,
            ..GlobalPermissions::none()
        },
        streams: vec![
            StreamPermissions {
                stream_id: 0,
                manage_stream: false,
                read_stream: true,
                manage_topics: false,
                read_topics: true,
                poll_messages: true,
                send_messages: false,
                topics: vec![
                    topic(0, [true, true, false, false]),
                    topic(7, [false, true, true, true]),
                    topic(u32::MAX, [false; 4]),
                ],
            },
            StreamPermissions {
                stream_id: 42,
                manage_stream: true,
                read_stream: true,
                manage_topics: true,
                read_topics: true,
                poll_messages: true,
                send_messages: true,
                topics: vec![],
            },
            StreamPermissions {
                stream_id: u32::MAX,
                manage_stream: false,
                read_stream: false,
                manage_topics: false,
                read_topics: false,
                poll_messages: false,
                send_messages: true,
                topics: vec![topic(1, [true; 4])],
            },
        ],
    }
}

#[test]
fn hand_built_edge_cases_agree_with_the_official_crate() {
    // Proves agreement on deliberately chosen edge cases regardless of what proptest happens to
    // draw: string identifiers (1 byte, 255 bytes of 4-byte UTF-8), numeric 0 and u32::MAX,
    // permissions with several streams with and without nested topics, optional fields
    // (permissions, username, status, partition, version/context) present and absent, a
    // 255-byte messages key, user headers after the payload, and an empty snapshot type list.
    let unicode = Identifier::String(name("stream-ñ-日本-🦀"));
    let ids = [
        Identifier::numeric(0),
        Identifier::numeric(u32::MAX),
        Identifier::named("s").unwrap(),
        Identifier::String(longest_unicode_name()),
        unicode.clone(),
    ];
    let mut requests: Vec<Request> = Vec::new();
    for id in &ids {
        requests.push(
            GetStream {
                stream_id: id.clone(),
            }
            .into(),
        );
        requests.push(
            GetConsumerGroup {
                stream_id: id.clone(),
                topic_id: unicode.clone(),
                group_id: Identifier::numeric(3),
            }
            .into(),
        );
        requests.push(
            PollMessages {
                consumer: Consumer::group(id.clone()),
                stream_id: id.clone(),
                topic_id: Identifier::numeric(0),
                partition_id: OptionalPartition(None),
                strategy: PollingStrategy::next(),
                count: u32::MAX,
                auto_commit: true,
            }
            .into(),
        );
    }
    for permissions in [None, Some(Permissions::root()), Some(nested_permissions())] {
        requests.push(
            CreateUser {
                username: longest_unicode_name(),
                password: ShortString("пароль🔑".to_owned()),
                status: UserStatus::Inactive,
                permissions: permissions.clone(),
            }
            .into(),
        );
        requests.push(
            UpdatePermissions {
                user_id: Identifier::named("user").unwrap(),
                permissions,
            }
            .into(),
        );
    }
    for username in [None, Some(name("ünïcödé"))] {
        for status in [None, Some(UserStatus::Active), Some(UserStatus::Inactive)] {
            requests.push(
                UpdateUser {
                    user_id: Identifier::numeric(1),
                    username: username.clone(),
                    status,
                }
                .into(),
            );
        }
    }
    for (version, context) in [
        (None, None),
        (Some("0.10.0"), None),
        (None, Some("ctx")),
        (Some("v"), Some("日本")),
    ] {
        requests.push(
            LoginUser {
                username: name("iggy"),
                password: ShortString(String::new()),
                version: version.map(str::to_owned),
                context: context.map(str::to_owned),
            }
            .into(),
        );
    }
    requests.push(
        GetSnapshot {
            compression: 1,
            types: vec![],
        }
        .into(),
    );
    requests.push(
        GetSnapshot {
            compression: 6,
            types: vec![100],
        }
        .into(),
    );
    let mut headers = Vec::new();
    user_headers::encode(
        &[(HeaderField::string("k"), HeaderField::string("v"))],
        &mut headers,
    );
    requests.push(
        SendMessages {
            stream_id: unicode.clone(),
            topic_id: Identifier::String(longest_unicode_name()),
            partitioning: Partitioning::key(vec![0xab; 255]).unwrap(),
            batch: MessageBatch::from_messages(&[
                OutgoingMessage {
                    id: u128::MAX,
                    origin_timestamp: u64::MAX,
                    payload: Bytes::from_static("🦀 payload".as_bytes()),
                    user_headers: Bytes::from(headers),
                },
                OutgoingMessage::new(Bytes::new()),
            ]),
        }
        .into(),
    );
    for request in &requests {
        cross_check_request(request);
    }
}

#[test]
fn values_outside_the_protocol_are_rejected_with_status_3() {
    // Proves that where the official types allow any byte (enums carried as u8), bytes the
    // official encoder writes with a value protocol.md 2.6 does not define are refused by our
    // decoder with 3 (InvalidCommand), as the 0.8.0 server answers.
    let stream_id = WireIdentifier::numeric(0);
    let bad_compression = CreateTopicRequest {
        stream_id: stream_id.clone(),
        partitions_count: 1,
        compression_algorithm: 3,
        message_expiry: 0,
        max_topic_size: 0,
        replication_factor: 0,
        name: WireName::new("t").unwrap(),
    };
    let bad_status = UpdateUserRequest {
        user_id: stream_id.clone(),
        username: None,
        status: Some(0),
    };
    let bad_consumer = GetConsumerOffsetRequest {
        consumer: WireConsumer {
            kind: 3,
            id: stream_id.clone(),
        },
        stream_id: stream_id.clone(),
        topic_id: stream_id.clone(),
        partition_id: None,
    };
    let bad_strategy = PollMessagesRequest {
        consumer: WireConsumer::consumer(stream_id.clone()),
        stream_id: stream_id.clone(),
        topic_id: stream_id.clone(),
        partition_id: Some(0),
        strategy: WirePollingStrategy { kind: 6, value: 0 },
        count: 1,
        auto_commit: false,
    };
    let bad_user_status = CreateUserRequest {
        username: WireName::new("user").unwrap(),
        password: "secret".to_owned(),
        status: 9,
        permissions: None,
    };
    let cases: [(CommandCode, Bytes); 5] = [
        (CommandCode::CreateTopic, bad_compression.to_bytes()),
        (CommandCode::UpdateUser, bad_status.to_bytes()),
        (CommandCode::GetConsumerOffset, bad_consumer.to_bytes()),
        (CommandCode::PollMessages, bad_strategy.to_bytes()),
        (CommandCode::CreateUser, bad_user_status.to_bytes()),
    ];
    for (code, bytes) in cases {
        let error = Request::decode(code.code(), BytesMut::from(&bytes[..])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidCommand, "{code}: {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn stream_responses_agree(
        info in stream_info(), details in stream_details(),
        list in prop::collection::vec(stream_info(), 0..4),
    ) {
        // Proves Stream (StreamResponse), StreamDetails (GetStreamResponse, incl. nested topic
        // headers) and the GetStreams list agree with the official crate both ways.
        cross_check(&info);
        cross_check(&details);
        cross_check(&list);
    }

    #[test]
    fn topic_responses_agree(
        info in topic_info(), details in topic_details(), partition in partition_info(),
        list in prop::collection::vec(topic_info(), 0..4),
    ) {
        // Proves TopicHeader, TopicDetails (GetTopicResponse), Partition and the GetTopics list
        // agree with the official crate both ways.
        cross_check(&info);
        cross_check(&details);
        cross_check(&partition);
        cross_check(&list);
    }

    #[test]
    fn consumer_group_responses_agree(
        info in consumer_group_info(), member in consumer_group_member(),
        details in consumer_group_details(),
        list in prop::collection::vec(consumer_group_info(), 0..4),
        offset in consumer_offset_info(),
    ) {
        // Proves ConsumerGroup, members, ConsumerGroupDetails, the GetConsumerGroups list and
        // ConsumerOffset agree with the official crate both ways.
        cross_check(&info);
        cross_check(&member);
        cross_check(&details);
        cross_check(&list);
        cross_check(&offset);
    }

    #[test]
    fn system_responses_agree(
        stats in stats(), client in client_info(),
        clients in prop::collection::vec(client_info(), 0..4), group in client_group(),
        details in client_details(), node in cluster_node(), metadata in cluster_metadata(),
    ) {
        // Proves Stats (incl. cache metrics and semver 0 ↔ None), Client, the GetClients list,
        // client group entries, ClientDetails (GetMe/GetClient) and ClusterMetadata agree with
        // the official crate both ways.
        cross_check(&stats);
        cross_check(&client);
        cross_check(&clients);
        cross_check(&group);
        cross_check(&details);
        cross_check(&node);
        cross_check(&metadata);
    }

    #[test]
    fn user_responses_agree(
        user in user_info(), details in user_details(),
        users in prop::collection::vec(user_info(), 0..4), identity in identity_info(),
        token in raw_personal_access_token(), info in personal_access_token_info(),
        tokens in prop::collection::vec(personal_access_token_info(), 0..4),
    ) {
        // Proves User, UserDetails (permissions absent = 4 zero bytes, present = flag + length
        // + blob), the GetUsers list, the login identity, the raw PAT and the PAT list agree
        // with the official crate both ways.
        cross_check(&user);
        cross_check(&details);
        cross_check(&users);
        cross_check(&identity);
        cross_check(&token);
        cross_check(&info);
        cross_check(&tokens);
    }

    #[test]
    fn poll_responses_agree(polled in polled_messages()) {
        // PollMessages: the official crate has a header codec and a message iterator, but no
        // encoder for whole stored messages. Proves (a) our response decodes with the official
        // header decoder and iterator to the same header and message fields, consuming all the
        // bytes, and (b) a response assembled from official pieces (header encoder,
        // RawMessage::encode_header, WireMessageViewMut setters) is byte-identical to ours and
        // decodes with our decoder to the same value.
        let ours = polled.to_bytes();
        let (header, _) = PollMessagesResponseHeader::decode(&ours).unwrap();
        prop_assert_eq!(&header, &PollMessagesResponseHeader {
            partition_id: polled.partition_id,
            current_offset: polled.current_offset,
            messages_count: polled.count,
        });
        let response = PollMessagesResponse::decode(&ours).unwrap();
        let mut walked = 16;
        let mut theirs = BytesMut::new();
        header.encode(&mut theirs);
        for (official, view) in response.messages.zip(polled.messages()) {
            let official = official.unwrap();
            prop_assert_eq!(official.checksum(), view.checksum());
            prop_assert_eq!(official.id(), view.id());
            prop_assert_eq!(official.offset(), view.offset());
            prop_assert_eq!(official.timestamp(), view.timestamp());
            prop_assert_eq!(official.origin_timestamp(), view.origin_timestamp());
            prop_assert_eq!(official.payload(), view.payload());
            prop_assert_eq!(official.user_headers(), view.user_headers());
            walked += official.total_size();

            let start = theirs.len();
            RawMessage {
                id: official.id(),
                origin_timestamp: official.origin_timestamp(),
                headers: Some(official.user_headers()),
                payload: official.payload(),
            }
            .encode_header(&mut theirs);
            theirs.extend_from_slice(official.payload());
            theirs.extend_from_slice(official.user_headers());
            let mut stored = WireMessageViewMut::new(&mut theirs[start..]).unwrap();
            stored.set_offset(view.offset());
            stored.set_timestamp(view.timestamp());
            stored.set_checksum(view.checksum());
        }
        prop_assert_eq!(walked, ours.len());
        prop_assert_eq!(&ours[..], &theirs[..]);
        prop_assert_eq!(PolledMessages::decode_bytes(theirs.freeze()).unwrap(), polled);
    }

    #[test]
    fn user_headers_agree(pairs in header_pairs()) {
        // User headers: the official crate has an encoder, a structural validator and an
        // iterator (no typed decoder). Proves identical bytes from both encoders, that our blob
        // passes the official validator with the same pair count and iterates to the same
        // kinds and bytes, and that the official blob parses with ours to the same pairs.
        let mut ours = Vec::new();
        user_headers::encode(&pairs, &mut ours);
        let entries: Vec<(u8, &[u8], u8, &[u8])> = pairs
            .iter()
            .map(|(key, value)| (key.kind as u8, &key.value[..], value.kind as u8, &value.value[..]))
            .collect();
        let mut theirs = BytesMut::new();
        wire::encode_user_headers(&entries, &mut theirs);
        prop_assert_eq!(&ours[..], &theirs[..]);
        prop_assert_eq!(wire::user_headers_encoded_size(&entries), ours.len());
        prop_assert_eq!(wire::validate_user_headers(&ours), Ok(pairs.len() as u32));
        let official = wire::WireUserHeaders::from_slice(&ours).unwrap();
        for (entry, (key, value)) in official.iter().zip(&pairs) {
            prop_assert_eq!(entry.key_kind.0, key.kind as u8);
            prop_assert_eq!(entry.key, &key.value[..]);
            prop_assert_eq!(entry.value_kind.0, value.kind as u8);
            prop_assert_eq!(entry.value, &value.value[..]);
        }
        prop_assert_eq!(user_headers::parse(&theirs).unwrap(), pairs);
    }
}

#[test]
fn response_frames_agree_for_every_status() {
    // Proves our response headers equal the official framing: an OK frame is status 0 + length
    // + payload, and every error status of ErrorCode::ALL is `status, 0` with no payload, which
    // both sides parse back to the same status.
    for &code in ErrorCode::ALL {
        let mut theirs = BytesMut::new();
        ResponseFrame::encode_error(NonZeroU32::new(code.code()).unwrap(), &mut theirs);
        let ours = ResponseHeader::error(code).to_bytes();
        assert_eq!(ours, theirs[..], "{code}");
        let (frame, consumed) = ResponseFrame::decode(&ours).unwrap();
        assert_eq!(
            (frame.status, frame.payload.len(), consumed),
            (code.code(), 0, 8)
        );
        assert_eq!(ResponseHeader::parse(ours).result(), Err(code));
    }
    let payload = IdentityInfo { user_id: 7 }.to_bytes();
    let mut theirs = BytesMut::new();
    ResponseFrame::encode_ok(&payload, &mut theirs).unwrap();
    let mut ours = ResponseHeader::ok(payload.len()).to_bytes().to_vec();
    ours.extend_from_slice(&payload);
    assert_eq!(ours, theirs[..]);
    // Empty OK: the official EmptyResponse has no bytes, our empty OK frame is 8 zero bytes.
    assert_eq!(EmptyResponse.encoded_size(), 0);
    let mut theirs = BytesMut::new();
    ResponseFrame::encode_ok(&EmptyResponse.to_bytes(), &mut theirs).unwrap();
    assert_eq!(ResponseHeader::ok(0).to_bytes(), theirs[..]);
}

#[test]
fn official_encoders_produce_the_protocol_md_goldens() {
    // Proves protocol.md section 10's request bytes are also what the official encoders write
    // (so the golden tests pin the same layout the official crate uses).
    let numeric0 = WireIdentifier::numeric(0);
    let login = LoginUserRequest {
        username: WireName::new("iggy").unwrap(),
        password: "iggy".to_owned(),
        version: Some("0.10.0".to_owned()),
        context: None,
    };
    assert_eq!(
        login.to_bytes()[..],
        hex("04 69 67 67 79 04 69 67 67 79 06 00 00 00 30 2e 31 30 2e 30 00 00 00 00")
    );
    let topic = CreateTopicRequest {
        stream_id: numeric0.clone(),
        partitions_count: 1,
        compression_algorithm: 1,
        message_expiry: 0,
        max_topic_size: 0,
        replication_factor: 0,
        name: WireName::new("t").unwrap(),
    };
    assert_eq!(
        topic.to_bytes()[..],
        hex("01 04 00 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 00
             00 00 00 00 00 00 00 00 00 01 74")
    );
    let poll = PollMessagesRequest {
        consumer: WireConsumer::consumer(WireIdentifier::numeric(1)),
        stream_id: numeric0.clone(),
        topic_id: numeric0.clone(),
        partition_id: Some(0),
        strategy: WirePollingStrategy::offset(0),
        count: 10,
        auto_commit: false,
    };
    assert_eq!(
        poll.to_bytes()[..],
        hex(
            "01 01 04 01 00 00 00 01 04 00 00 00 00 01 04 00 00 00 00 01 00 00 00 00
             01 00 00 00 00 00 00 00 00 0a 00 00 00 00"
        )
    );
    let mut send = BytesMut::new();
    SendMessagesEncoder::encode(
        &mut send,
        &numeric0,
        &numeric0,
        &WirePartitioning::Balanced,
        &[RawMessage {
            id: 1,
            origin_timestamp: 1_700_000_000_002_000,
            headers: None,
            payload: b"hello",
        }],
    );
    assert_eq!(send.len(), 107);
    assert_eq!(
        send[..18 + 4],
        hex("12 00 00 00 01 04 00 00 00 00 01 04 00 00 00 00 01 00 01 00 00 00")[..]
    );
}

#[test]
fn create_responses_follow_protocol_md_where_the_official_crate_aliases_empty() {
    // Layout disagreement found: in iggy_binary_protocol 0.10.0, CreateTopicResponse,
    // CreateUserResponse and CreateConsumerGroupResponse are aliases of EmptyResponse, while
    // protocol.md (sections 3 and 12.4, authoritative for the 0.8.0 server and SDK) says those
    // commands answer TopicDetails, UserDetails and a ConsumerGroup record, and that an empty
    // body makes the SDK fail. We follow protocol.md. Proves the bodies we send for them decode
    // with the official crate's *record* decoders (the layouts it does define for them).
    let details = TopicDetails {
        topic: TopicInfo {
            id: 0,
            created_at: 1,
            partitions_count: 1,
            message_expiry: u64::MAX,
            compression_algorithm: CompressionAlgorithm::None,
            max_topic_size: u64::MAX,
            replication_factor: 1,
            size_bytes: 0,
            messages_count: 0,
            name: name("t"),
        },
        partitions: vec![PartitionInfo {
            id: 0,
            created_at: 1,
            segments_count: 0,
            current_offset: 0,
            size_bytes: 0,
            messages_count: 0,
        }],
    };
    assert!(!details.to_bytes().is_empty());
    cross_check(&details);
    let user = UserDetails {
        user: UserInfo {
            id: 1,
            created_at: 2,
            status: UserStatus::Active,
            username: name("user"),
        },
        permissions: Some(nested_permissions()),
    };
    cross_check(&user);
    let group = ConsumerGroupInfo {
        id: 0,
        partitions_count: 3,
        members_count: 0,
        name: name("g"),
    };
    cross_check(&group);
    // The SDK decodes the CreateConsumerGroup body as group details (members_count 0).
    let (as_details, _) = ConsumerGroupDetailsResponse::decode(&group.to_bytes()).unwrap();
    assert!(as_details.members.is_empty());
    assert_eq!(EmptyResponse.encoded_size(), 0);
}

#[test]
fn poll_responses_follow_protocol_md_where_the_official_iterator_differs() {
    // Proves our poll-response decoder follows protocol.md 12.11 / 6.1 where the official crate
    // reads differently: messages are found by walking header lengths (the official
    // PollMessagesResponse stops after `messages_count`, so a count of 0 hides the message), and
    // a message whose reserved field is non-zero is rejected with 4101 (the official view
    // accepts it).
    let messages = stamp_messages(0, 1, &[OutgoingMessage::new(Bytes::from_static(b"hello"))]);
    let mut payload = rill_core::message::encode_poll_header(0, 0, 0).to_vec();
    payload.extend_from_slice(&messages);
    let ours = PolledMessages::decode_bytes(Bytes::from(payload.clone())).unwrap();
    assert_eq!(ours.count, 1, "we count the message the payload carries");
    let official = PollMessagesResponse::decode(&payload).unwrap();
    assert_eq!(
        official.messages.count(),
        0,
        "the official iterator trusts the count"
    );

    let mut reserved = rill_core::message::encode_poll_header(0, 0, 1).to_vec();
    reserved.extend_from_slice(&messages);
    reserved[16 + 56] = 1;
    assert_eq!(
        PolledMessages::decode_bytes(Bytes::from(reserved.clone()))
            .unwrap_err()
            .code,
        ErrorCode::InvalidReservedField
    );
    let mut official = PollMessagesResponse::decode(&reserved).unwrap().messages;
    assert!(official.next().unwrap().is_ok());
}
