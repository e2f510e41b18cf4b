//! Shared proptest generators and helpers for the protocol test suites.
//!
//! Every generator produces *valid* values only (names 1..=255 bytes, passwords ≤ 255 bytes,
//! known enum values, finite floats, counts consistent with the records that follow), so that
//! a round trip through the wire must reproduce them exactly. Text mixes ASCII with arbitrary
//! Unicode scalars (1- to 4-byte UTF-8) and hits the 255-byte limits on purpose.

#![allow(dead_code)]

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::Config;
use rill_core::codec::{Decode, Encode};
use rill_core::message::{MessageBatch, OutgoingMessage, PolledMessages};
use rill_core::primitives::user_headers::{self, HeaderField, HeaderKind};
use rill_core::primitives::{
    CompressionAlgorithm, Consumer, ConsumerKind, GlobalPermissions, Identifier, Name,
    OptionalPartition, Partitioning, Permissions, PollingKind, PollingStrategy, ShortString,
    StreamPermissions, TopicPermissions, Transport, UserStatus,
};
use rill_core::requests::*;
use rill_core::responses::*;
use std::fmt::Debug;

/// A proptest configuration with `cases` cases and no regression files written into the tree.
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn truncate_to(mut text: String, max: usize) -> String {
    while text.len() > max {
        text.pop();
    }
    text
}

/// Text of at most `max` bytes (possibly empty): ASCII identifiers, arbitrary Unicode scalars,
/// or printable non-ASCII, plus the exact-limit cases.
pub fn text(max: usize) -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-zA-Z0-9_.-]{0,24}",
        3 => vec(any::<char>(), 0..40).prop_map(String::from_iter),
        2 => "\\PC{0,16}",
        1 => Just("x".repeat(max)),
        // 4-byte scalars up to the limit, then padded to exactly `max` bytes.
        1 => Just(format!("{}{}", "🦀".repeat(max / 4), "y".repeat(max % 4))),
    ]
    .prop_map(move |text| truncate_to(text, max))
    .boxed()
}

/// Text of 1..=`max` bytes.
pub fn non_empty_text(max: usize) -> BoxedStrategy<String> {
    text(max)
        .prop_map(|text| {
            if text.is_empty() {
                "n".to_owned()
            } else {
                text
            }
        })
        .boxed()
}

pub fn name() -> BoxedStrategy<Name> {
    non_empty_text(Name::MAX_LEN)
        .prop_map(|text| Name::new(text).expect("1..=255 bytes"))
        .boxed()
}

pub fn short_string() -> BoxedStrategy<ShortString> {
    text(255).prop_map(ShortString).boxed()
}

pub fn identifier() -> BoxedStrategy<Identifier> {
    prop_oneof![
        3 => any::<u32>().prop_map(Identifier::Numeric),
        1 => prop_oneof![Just(0u32), Just(1), Just(u32::MAX)].prop_map(Identifier::Numeric),
        3 => name().prop_map(Identifier::String),
    ]
    .boxed()
}

pub fn consumer() -> BoxedStrategy<Consumer> {
    (
        prop_oneof![
            Just(ConsumerKind::Consumer),
            Just(ConsumerKind::ConsumerGroup)
        ],
        identifier(),
    )
        .prop_map(|(kind, id)| Consumer { kind, id })
        .boxed()
}

pub fn optional_partition() -> BoxedStrategy<OptionalPartition> {
    prop::option::of(any::<u32>())
        .prop_map(OptionalPartition)
        .boxed()
}

pub fn polling_strategy() -> BoxedStrategy<PollingStrategy> {
    (
        prop_oneof![
            Just(PollingKind::Offset),
            Just(PollingKind::Timestamp),
            Just(PollingKind::First),
            Just(PollingKind::Last),
            Just(PollingKind::Next),
        ],
        any::<u64>(),
    )
        .prop_map(|(kind, value)| PollingStrategy { kind, value })
        .boxed()
}

pub fn partitioning() -> BoxedStrategy<Partitioning> {
    prop_oneof![
        Just(Partitioning::Balanced),
        any::<u32>().prop_map(Partitioning::PartitionId),
        vec(any::<u8>(), 1..=255).prop_map(Partitioning::MessagesKey),
    ]
    .boxed()
}

pub fn compression() -> BoxedStrategy<CompressionAlgorithm> {
    prop_oneof![
        Just(CompressionAlgorithm::None),
        Just(CompressionAlgorithm::Gzip)
    ]
    .boxed()
}

pub fn user_status() -> BoxedStrategy<UserStatus> {
    prop_oneof![Just(UserStatus::Active), Just(UserStatus::Inactive)].boxed()
}

pub fn transport() -> BoxedStrategy<Transport> {
    prop_oneof![
        Just(Transport::Tcp),
        Just(Transport::Quic),
        Just(Transport::Http),
        Just(Transport::WebSocket),
    ]
    .boxed()
}

pub fn global_permissions() -> BoxedStrategy<GlobalPermissions> {
    any::<[bool; 10]>()
        .prop_map(|f| GlobalPermissions {
            manage_servers: f[0],
            read_servers: f[1],
            manage_users: f[2],
            read_users: f[3],
            manage_streams: f[4],
            read_streams: f[5],
            manage_topics: f[6],
            read_topics: f[7],
            poll_messages: f[8],
            send_messages: f[9],
        })
        .boxed()
}

pub fn topic_permissions() -> BoxedStrategy<TopicPermissions> {
    (any::<u32>(), any::<[bool; 4]>())
        .prop_map(|(topic_id, f)| TopicPermissions {
            topic_id,
            manage_topic: f[0],
            read_topic: f[1],
            poll_messages: f[2],
            send_messages: f[3],
        })
        .boxed()
}

pub fn stream_permissions() -> BoxedStrategy<StreamPermissions> {
    (
        any::<u32>(),
        any::<[bool; 6]>(),
        vec(topic_permissions(), 0..4),
    )
        .prop_map(|(stream_id, f, topics)| StreamPermissions {
            stream_id,
            manage_stream: f[0],
            read_stream: f[1],
            manage_topics: f[2],
            read_topics: f[3],
            poll_messages: f[4],
            send_messages: f[5],
            topics,
        })
        .boxed()
}

pub fn permissions() -> BoxedStrategy<Permissions> {
    (global_permissions(), vec(stream_permissions(), 0..4))
        .prop_map(|(global, streams)| Permissions { global, streams })
        .boxed()
}

/// One valid user-header field (kind 1..=15 with a length the kind allows).
pub fn header_field() -> BoxedStrategy<HeaderField> {
    use HeaderKind::*;
    let kinds = [
        Raw, String, Bool, Int8, Int16, Int32, Int64, Int128, Uint8, Uint16, Uint32, Uint64,
        Uint128, Float32, Float64,
    ];
    (
        prop::sample::select(kinds.to_vec()),
        vec(any::<u8>(), 1..=255),
    )
        .prop_map(|(kind, mut value)| {
            if let Some(size) = kind.fixed_size() {
                value.resize(size, 0);
            }
            HeaderField { kind, value }
        })
        .boxed()
}

pub fn header_pairs() -> BoxedStrategy<Vec<(HeaderField, HeaderField)>> {
    vec((header_field(), header_field()), 0..4).boxed()
}

pub fn encoded_headers() -> BoxedStrategy<Bytes> {
    header_pairs()
        .prop_map(|pairs| {
            let mut blob = Vec::with_capacity(user_headers::encoded_len(&pairs));
            user_headers::encode(&pairs, &mut blob);
            Bytes::from(blob)
        })
        .boxed()
}

/// A message as a producer builds it. User headers are either a valid blob, nothing, or opaque
/// bytes (the server stores the blob without parsing it).
pub fn outgoing_message() -> BoxedStrategy<OutgoingMessage> {
    (
        prop_oneof![Just(0u128), Just(1u128), any::<u128>()],
        any::<u64>(),
        vec(any::<u8>(), 0..160),
        prop_oneof![
            2 => Just(Bytes::new()),
            2 => encoded_headers(),
            1 => vec(any::<u8>(), 1..64).prop_map(Bytes::from),
        ],
    )
        .prop_map(
            |(id, origin_timestamp, payload, user_headers)| OutgoingMessage {
                id,
                origin_timestamp,
                payload: Bytes::from(payload),
                user_headers,
            },
        )
        .boxed()
}

pub fn outgoing_messages() -> BoxedStrategy<Vec<OutgoingMessage>> {
    vec(outgoing_message(), 1..5).boxed()
}

pub fn send_messages() -> BoxedStrategy<SendMessages> {
    (
        identifier(),
        identifier(),
        partitioning(),
        outgoing_messages(),
    )
        .prop_map(
            |(stream_id, topic_id, partitioning, messages)| SendMessages {
                stream_id,
                topic_id,
                partitioning,
                batch: MessageBatch::from_messages(&messages),
            },
        )
        .boxed()
}

/// Stored messages as a server returns them: stamped with consecutive offsets from
/// `first_offset`, one timestamp, and valid checksums.
pub fn stored_messages() -> BoxedStrategy<(u64, u64, Vec<OutgoingMessage>)> {
    (0u64..1 << 62, any::<u64>(), vec(outgoing_message(), 0..5)).boxed()
}

pub fn stamp_messages(first_offset: u64, timestamp: u64, messages: &[OutgoingMessage]) -> Bytes {
    let mut batch = MessageBatch::from_messages(messages);
    if !messages.is_empty() {
        batch.stamp(first_offset, timestamp, || 0xfeed);
    }
    batch.into_bytes().freeze()
}

pub fn polled_messages() -> BoxedStrategy<PolledMessages> {
    (any::<u32>(), stored_messages())
        .prop_map(|(partition_id, (first_offset, timestamp, messages))| {
            let current_offset = first_offset + messages.len() as u64;
            PolledMessages::new(
                partition_id,
                current_offset,
                stamp_messages(first_offset, timestamp, &messages),
            )
            .expect("stamped messages are valid")
        })
        .boxed()
}

/// Snapshot compression 1..=6 and either `[100]` alone or a list of the codes 1..=6.
pub fn get_snapshot() -> BoxedStrategy<GetSnapshot> {
    (
        1u8..=6,
        prop_oneof![
            1 => Just(vec![100u8]),
            3 => vec(1u8..=6, 0..8),
        ],
    )
        .prop_map(|(compression, types)| GetSnapshot { compression, types })
        .boxed()
}

/// A valid request of the given command. The match has no wildcard arm, so a new command
/// cannot be added to `CommandCode` without a generator here.
pub fn request(code: CommandCode) -> BoxedStrategy<Request> {
    fn map<T: Into<Request> + Debug + 'static>(
        strategy: impl Strategy<Value = T> + 'static,
    ) -> BoxedStrategy<Request> {
        strategy.prop_map(Into::into).boxed()
    }
    let stream_topic = || (identifier(), identifier());
    let group = || (identifier(), identifier(), identifier());
    match code {
        CommandCode::Ping => map(Just(Ping {})),
        CommandCode::GetStats => map(Just(GetStats {})),
        CommandCode::GetSnapshot => map(get_snapshot()),
        CommandCode::GetClusterMetadata => map(Just(GetClusterMetadata {})),
        CommandCode::GetMe => map(Just(GetMe {})),
        CommandCode::GetClient => map(any::<u32>().prop_map(|client_id| GetClient { client_id })),
        CommandCode::GetClients => map(Just(GetClients {})),
        CommandCode::GetUser => map(identifier().prop_map(|user_id| GetUser { user_id })),
        CommandCode::GetUsers => map(Just(GetUsers {})),
        CommandCode::CreateUser => map((
            name(),
            short_string(),
            user_status(),
            prop::option::of(permissions()),
        )
            .prop_map(|(username, password, status, permissions)| CreateUser {
                username,
                password,
                status,
                permissions,
            })),
        CommandCode::DeleteUser => map(identifier().prop_map(|user_id| DeleteUser { user_id })),
        CommandCode::UpdateUser => map((
            identifier(),
            prop::option::of(name()),
            prop::option::of(user_status()),
        )
            .prop_map(|(user_id, username, status)| UpdateUser {
                user_id,
                username,
                status,
            })),
        CommandCode::UpdatePermissions => map((identifier(), prop::option::of(permissions()))
            .prop_map(|(user_id, permissions)| UpdatePermissions {
                user_id,
                permissions,
            })),
        CommandCode::ChangePassword => map((identifier(), short_string(), short_string())
            .prop_map(|(user_id, current_password, new_password)| ChangePassword {
                user_id,
                current_password,
                new_password,
            })),
        CommandCode::LoginUser => map((
            name(),
            short_string(),
            // `Some("")` is not representable: length 0 means absent (protocol.md 4.2).
            prop::option::of(non_empty_text(64)),
            prop::option::of(non_empty_text(64)),
        )
            .prop_map(|(username, password, version, context)| LoginUser {
                username,
                password,
                version,
                context,
            })),
        CommandCode::LogoutUser => map(Just(LogoutUser {})),
        CommandCode::GetPersonalAccessTokens => map(Just(GetPersonalAccessTokens {})),
        CommandCode::CreatePersonalAccessToken => map((name(), any::<u64>())
            .prop_map(|(name, expiry)| CreatePersonalAccessToken { name, expiry })),
        CommandCode::DeletePersonalAccessToken => {
            map(name().prop_map(|name| DeletePersonalAccessToken { name }))
        }
        CommandCode::LoginWithPersonalAccessToken => {
            map(name().prop_map(|token| LoginWithPersonalAccessToken { token }))
        }
        CommandCode::PollMessages => map((
            consumer(),
            stream_topic(),
            optional_partition(),
            polling_strategy(),
            any::<u32>(),
            any::<bool>(),
        )
            .prop_map(
                |(consumer, (stream_id, topic_id), partition_id, strategy, count, auto_commit)| {
                    PollMessages {
                        consumer,
                        stream_id,
                        topic_id,
                        partition_id,
                        strategy,
                        count,
                        auto_commit,
                    }
                },
            )),
        CommandCode::SendMessages => map(send_messages()),
        CommandCode::FlushUnsavedBuffer => map((stream_topic(), any::<u32>(), any::<bool>())
            .prop_map(
                |((stream_id, topic_id), partition_id, fsync)| FlushUnsavedBuffer {
                    stream_id,
                    topic_id,
                    partition_id,
                    fsync,
                },
            )),
        CommandCode::GetConsumerOffset => map((consumer(), stream_topic(), optional_partition())
            .prop_map(
                |(consumer, (stream_id, topic_id), partition_id)| GetConsumerOffset {
                    consumer,
                    stream_id,
                    topic_id,
                    partition_id,
                },
            )),
        CommandCode::StoreConsumerOffset => map((
            consumer(),
            stream_topic(),
            optional_partition(),
            any::<u64>(),
        )
            .prop_map(|(consumer, (stream_id, topic_id), partition_id, offset)| {
                StoreConsumerOffset {
                    consumer,
                    stream_id,
                    topic_id,
                    partition_id,
                    offset,
                }
            })),
        CommandCode::DeleteConsumerOffset => {
            map((consumer(), stream_topic(), optional_partition()).prop_map(
                |(consumer, (stream_id, topic_id), partition_id)| DeleteConsumerOffset {
                    consumer,
                    stream_id,
                    topic_id,
                    partition_id,
                },
            ))
        }
        CommandCode::GetStream => map(identifier().prop_map(|stream_id| GetStream { stream_id })),
        CommandCode::GetStreams => map(Just(GetStreams {})),
        CommandCode::CreateStream => map(name().prop_map(|name| CreateStream { name })),
        CommandCode::DeleteStream => {
            map(identifier().prop_map(|stream_id| DeleteStream { stream_id }))
        }
        CommandCode::UpdateStream => {
            map((identifier(), name())
                .prop_map(|(stream_id, name)| UpdateStream { stream_id, name }))
        }
        CommandCode::PurgeStream => {
            map(identifier().prop_map(|stream_id| PurgeStream { stream_id }))
        }
        CommandCode::GetTopic => map(stream_topic().prop_map(|(stream_id, topic_id)| GetTopic {
            stream_id,
            topic_id,
        })),
        CommandCode::GetTopics => map(identifier().prop_map(|stream_id| GetTopics { stream_id })),
        CommandCode::CreateTopic => map((
            identifier(),
            any::<u32>(),
            compression(),
            any::<u64>(),
            any::<u64>(),
            any::<u8>(),
            name(),
        )
            .prop_map(
                |(
                    stream_id,
                    partitions_count,
                    compression_algorithm,
                    message_expiry,
                    max_topic_size,
                    replication_factor,
                    name,
                )| CreateTopic {
                    stream_id,
                    partitions_count,
                    compression_algorithm,
                    message_expiry,
                    max_topic_size,
                    replication_factor,
                    name,
                },
            )),
        CommandCode::DeleteTopic => {
            map(
                stream_topic().prop_map(|(stream_id, topic_id)| DeleteTopic {
                    stream_id,
                    topic_id,
                }),
            )
        }
        CommandCode::UpdateTopic => map((
            stream_topic(),
            compression(),
            any::<u64>(),
            any::<u64>(),
            any::<u8>(),
            name(),
        )
            .prop_map(
                |(
                    (stream_id, topic_id),
                    compression_algorithm,
                    message_expiry,
                    max_topic_size,
                    replication_factor,
                    name,
                )| UpdateTopic {
                    stream_id,
                    topic_id,
                    compression_algorithm,
                    message_expiry,
                    max_topic_size,
                    replication_factor,
                    name,
                },
            )),
        CommandCode::PurgeTopic => {
            map(stream_topic().prop_map(|(stream_id, topic_id)| PurgeTopic {
                stream_id,
                topic_id,
            }))
        }
        CommandCode::CreatePartitions => map((stream_topic(), any::<u32>()).prop_map(
            |((stream_id, topic_id), partitions_count)| CreatePartitions {
                stream_id,
                topic_id,
                partitions_count,
            },
        )),
        CommandCode::DeletePartitions => map((stream_topic(), any::<u32>()).prop_map(
            |((stream_id, topic_id), partitions_count)| DeletePartitions {
                stream_id,
                topic_id,
                partitions_count,
            },
        )),
        CommandCode::DeleteSegments => map((stream_topic(), any::<u32>(), any::<u32>()).prop_map(
            |((stream_id, topic_id), partition_id, segments_count)| DeleteSegments {
                stream_id,
                topic_id,
                partition_id,
                segments_count,
            },
        )),
        CommandCode::GetConsumerGroup => map(group().prop_map(
            |(stream_id, topic_id, group_id)| GetConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            },
        )),
        CommandCode::GetConsumerGroups => {
            map(
                stream_topic().prop_map(|(stream_id, topic_id)| GetConsumerGroups {
                    stream_id,
                    topic_id,
                }),
            )
        }
        CommandCode::CreateConsumerGroup => map((stream_topic(), name()).prop_map(
            |((stream_id, topic_id), name)| CreateConsumerGroup {
                stream_id,
                topic_id,
                name,
            },
        )),
        CommandCode::DeleteConsumerGroup => map(group().prop_map(
            |(stream_id, topic_id, group_id)| DeleteConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            },
        )),
        CommandCode::JoinConsumerGroup => map(group().prop_map(
            |(stream_id, topic_id, group_id)| JoinConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            },
        )),
        CommandCode::LeaveConsumerGroup => map(group().prop_map(
            |(stream_id, topic_id, group_id)| LeaveConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            },
        )),
    }
}

/// A valid request of any command.
pub fn any_request() -> BoxedStrategy<Request> {
    prop::sample::select(CommandCode::ALL.to_vec())
        .prop_flat_map(request)
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

pub fn stream_info() -> BoxedStrategy<StreamInfo> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        name(),
    )
        .prop_map(
            |(id, created_at, topics_count, size_bytes, messages_count, name)| StreamInfo {
                id,
                created_at,
                topics_count,
                size_bytes,
                messages_count,
                name,
            },
        )
        .boxed()
}

pub fn topic_info() -> BoxedStrategy<TopicInfo> {
    (
        (any::<u32>(), any::<u64>(), any::<u32>(), any::<u64>()),
        (compression(), any::<u64>(), any::<u8>()),
        (any::<u64>(), any::<u64>(), name()),
    )
        .prop_map(
            |(
                (id, created_at, partitions_count, message_expiry),
                (compression_algorithm, max_topic_size, replication_factor),
                (size_bytes, messages_count, name),
            )| TopicInfo {
                id,
                created_at,
                partitions_count,
                message_expiry,
                compression_algorithm,
                max_topic_size,
                replication_factor,
                size_bytes,
                messages_count,
                name,
            },
        )
        .boxed()
}

pub fn partition_info() -> BoxedStrategy<PartitionInfo> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(id, created_at, segments_count, current_offset, size_bytes, messages_count)| {
                PartitionInfo {
                    id,
                    created_at,
                    segments_count,
                    current_offset,
                    size_bytes,
                    messages_count,
                }
            },
        )
        .boxed()
}

/// Details whose declared count matches the records that follow (as every encoder writes it).
pub fn stream_details() -> BoxedStrategy<StreamDetails> {
    (stream_info(), vec(topic_info(), 0..4))
        .prop_map(|(stream, topics)| StreamDetails {
            stream: StreamInfo {
                topics_count: topics.len() as u32,
                ..stream
            },
            topics,
        })
        .boxed()
}

pub fn topic_details() -> BoxedStrategy<TopicDetails> {
    (topic_info(), vec(partition_info(), 0..5))
        .prop_map(|(topic, partitions)| TopicDetails {
            topic: TopicInfo {
                partitions_count: partitions.len() as u32,
                ..topic
            },
            partitions,
        })
        .boxed()
}

pub fn consumer_group_info() -> BoxedStrategy<ConsumerGroupInfo> {
    (any::<u32>(), any::<u32>(), any::<u32>(), name())
        .prop_map(
            |(id, partitions_count, members_count, name)| ConsumerGroupInfo {
                id,
                partitions_count,
                members_count,
                name,
            },
        )
        .boxed()
}

pub fn consumer_group_member() -> BoxedStrategy<ConsumerGroupMember> {
    (any::<u32>(), vec(any::<u32>(), 0..6))
        .prop_map(|(id, partitions)| ConsumerGroupMember { id, partitions })
        .boxed()
}

pub fn consumer_group_details() -> BoxedStrategy<ConsumerGroupDetails> {
    (consumer_group_info(), vec(consumer_group_member(), 0..4))
        .prop_map(|(group, members)| ConsumerGroupDetails {
            group: ConsumerGroupInfo {
                members_count: members.len() as u32,
                ..group
            },
            members,
        })
        .boxed()
}

pub fn consumer_offset_info() -> BoxedStrategy<ConsumerOffsetInfo> {
    (any::<u32>(), any::<u64>(), any::<u64>())
        .prop_map(
            |(partition_id, current_offset, stored_offset)| ConsumerOffsetInfo {
                partition_id,
                current_offset,
                stored_offset,
            },
        )
        .boxed()
}

/// Finite floats only: NaN is not equal to itself, so it cannot be compared after a round trip
/// (the byte-level hostile tests cover NaN bit patterns).
pub fn finite_f32() -> BoxedStrategy<f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::MAX),
        Just(f32::MIN_POSITIVE),
        Just(f32::INFINITY),
        -1.0e6f32..1.0e6f32,
    ]
    .boxed()
}

pub fn cache_metric() -> BoxedStrategy<CacheMetric> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        finite_f32(),
    )
        .prop_map(
            |(stream_id, topic_id, partition_id, hits, misses, hit_ratio)| CacheMetric {
                stream_id,
                topic_id,
                partition_id,
                hits,
                misses,
                hit_ratio,
            },
        )
        .boxed()
}

pub fn stats() -> BoxedStrategy<Stats> {
    (
        (any::<u32>(), finite_f32(), finite_f32(), any::<[u64; 8]>()),
        (any::<[u32; 4]>(), any::<u64>(), any::<u32>(), any::<u32>()),
        (text(64), text(64), text(64), text(64), text(32)),
        (
            prop_oneof![Just(0u32), Just(8000u32), any::<u32>()],
            vec(cache_metric(), 0..4),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |(
                (process_id, cpu_usage, total_cpu_usage, u64s),
                (u32s, messages_count, clients_count, consumer_groups_count),
                (hostname, os_name, os_version, kernel_version, iggy_server_version),
                (
                    iggy_server_semver,
                    cache_metrics,
                    threads_count,
                    free_disk_space,
                    total_disk_space,
                ),
            )| Stats {
                process_id,
                cpu_usage,
                total_cpu_usage,
                memory_usage: u64s[0],
                total_memory: u64s[1],
                available_memory: u64s[2],
                run_time: u64s[3],
                start_time: u64s[4],
                read_bytes: u64s[5],
                written_bytes: u64s[6],
                messages_size_bytes: u64s[7],
                streams_count: u32s[0],
                topics_count: u32s[1],
                partitions_count: u32s[2],
                segments_count: u32s[3],
                messages_count,
                clients_count,
                consumer_groups_count,
                hostname,
                os_name,
                os_version,
                kernel_version,
                iggy_server_version,
                iggy_server_semver,
                cache_metrics,
                threads_count,
                free_disk_space,
                total_disk_space,
            },
        )
        .boxed()
}

pub fn client_info() -> BoxedStrategy<ClientInfo> {
    (
        any::<u32>(),
        prop_oneof![Just(u32::MAX), any::<u32>()],
        transport(),
        text(64),
        any::<u32>(),
    )
        .prop_map(
            |(client_id, user_id, transport, address, consumer_groups_count)| ClientInfo {
                client_id,
                user_id,
                transport,
                address,
                consumer_groups_count,
            },
        )
        .boxed()
}

pub fn client_group() -> BoxedStrategy<ClientGroup> {
    (any::<u32>(), any::<u32>(), any::<u32>())
        .prop_map(|(stream_id, topic_id, group_id)| ClientGroup {
            stream_id,
            topic_id,
            group_id,
        })
        .boxed()
}

pub fn client_details() -> BoxedStrategy<ClientDetails> {
    (
        any::<u32>(),
        any::<u32>(),
        transport(),
        text(64),
        vec(client_group(), 0..4),
    )
        .prop_map(
            |(client_id, user_id, transport, address, consumer_groups)| ClientDetails {
                client_id,
                user_id,
                transport,
                address,
                consumer_groups,
            },
        )
        .boxed()
}

pub fn cluster_node() -> BoxedStrategy<ClusterNode> {
    (text(64), text(40), any::<[u16; 4]>(), 0u8..=1, 0u8..=4)
        .prop_map(|(name, ip, ports, role, status)| ClusterNode {
            name,
            ip,
            tcp_port: ports[0],
            quic_port: ports[1],
            http_port: ports[2],
            websocket_port: ports[3],
            role,
            status,
        })
        .boxed()
}

pub fn cluster_metadata() -> BoxedStrategy<ClusterMetadata> {
    (text(64), vec(cluster_node(), 0..4))
        .prop_map(|(name, nodes)| ClusterMetadata { name, nodes })
        .boxed()
}

pub fn user_info() -> BoxedStrategy<UserInfo> {
    (any::<u32>(), any::<u64>(), user_status(), name())
        .prop_map(|(id, created_at, status, username)| UserInfo {
            id,
            created_at,
            status,
            username,
        })
        .boxed()
}

pub fn user_details() -> BoxedStrategy<UserDetails> {
    (user_info(), prop::option::of(permissions()))
        .prop_map(|(user, permissions)| UserDetails { user, permissions })
        .boxed()
}

pub fn identity_info() -> BoxedStrategy<IdentityInfo> {
    any::<u32>()
        .prop_map(|user_id| IdentityInfo { user_id })
        .boxed()
}

pub fn raw_personal_access_token() -> BoxedStrategy<RawPersonalAccessToken> {
    name()
        .prop_map(|token| RawPersonalAccessToken { token })
        .boxed()
}

pub fn personal_access_token_info() -> BoxedStrategy<PersonalAccessTokenInfo> {
    (name(), any::<u64>())
        .prop_map(|(name, expiry_at)| PersonalAccessTokenInfo { name, expiry_at })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Assertions
// ---------------------------------------------------------------------------------------------

/// Encodes `value`, checks the length it reports, decodes the bytes and checks the result
/// equals `value`; returns the bytes.
pub fn assert_round_trip<T: Encode + Decode + PartialEq + Debug>(value: &T) -> Vec<u8> {
    let bytes = value.to_bytes();
    assert_eq!(
        value.encoded_len(),
        bytes.len(),
        "encoded_len disagrees with the bytes written for {value:?}"
    );
    let decoded = T::from_bytes(&bytes)
        .unwrap_or_else(|error| panic!("cannot decode {value:?} from {bytes:02x?}: {error}"));
    assert_eq!(&decoded, value, "round trip changed the value");
    bytes
}

/// Parses hex with arbitrary whitespace and `|` separators, as written in protocol.md.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|byte| byte.is_ascii_hexdigit())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}
