//! Generators of responses: every record and details type the server answers with.

use super::primitives::*;
use proptest::collection::vec;
use proptest::prelude::*;
use rill_core::responses::*;

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
