//! Generators of requests: a valid request of each command, and of any command.

use super::messages::send_messages;
use super::primitives::*;
use proptest::collection::vec;
use proptest::prelude::*;
use rill_core::requests::*;
use std::fmt::Debug;

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
