//! The proptest configuration, and generators of text and of the shared primitives
//! (identifiers, consumers, polling strategies, partitioning, permissions, user headers).

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::Config;
use rill_core::primitives::user_headers::{self, HeaderField, HeaderKind};
use rill_core::primitives::{
    CompressionAlgorithm, Consumer, ConsumerKind, GlobalPermissions, Identifier, Name,
    OptionalPartition, Partitioning, Permissions, PollingKind, PollingStrategy, ShortString,
    StreamPermissions, TopicPermissions, Transport, UserStatus,
};

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
