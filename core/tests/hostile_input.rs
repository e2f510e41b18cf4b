//! Hostile-input tests: every decoder the server or a client runs on bytes from the network
//! must never panic (nor allocate beyond the input), and every rejection must carry one of the
//! protocol's status codes appropriate to that decoder (protocol.md 1.3 and 8).
//!
//! How: proptest feeds (a) arbitrary byte strings, biased towards the small values that make
//! identifiers, lengths and flags look plausible, and (b) valid encodings with random mutations
//! (bit flips, byte overwrites, truncation, extension, insertion, removal, u32 fields set to
//! extreme values) to `Request::decode` for every command code and random codes,
//! `SendMessages::decode_owned` (and stamping what it accepts), `PolledMessages::decode_bytes`,
//! `MessageView::parse` / `MessageIter` / `MessageBatch::from_stored`,
//! `primitives::user_headers::parse`, every response type's `from_bytes`, and the frame
//! headers. Whatever a decoder *accepts* must re-encode to bytes of the reported length that
//! decode again to the same bytes (so accepted garbage is still a well-formed value).

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::TestRunner;
use rill_core::codec::{Decode, Encode};
use rill_core::error::{DecodeError, ErrorCode};
use rill_core::frame::{RequestHeader, ResponseHeader};
use rill_core::message::{
    MessageBatch, MessageHeader, MessageIter, MessageView, PolledMessages, SendMessages,
};
use rill_core::primitives::user_headers;
use rill_core::primitives::{
    Consumer, Identifier, Name, OptionalPartition, Partitioning, Permissions, PollingStrategy,
};
use rill_core::requests::{CommandCode, Request};
use rill_core::responses::*;
use std::fmt::Debug;

/// Cases for the arbitrary-bytes properties (each case runs every decoder of its family).
const CASES: u32 = 20_000;
/// Cases for the mutation properties (each case builds a valid value first).
const MUTATION_CASES: u32 = 10_000;

use ErrorCode::*;

/// Control-plane requests and all responses: malformed → 3, failed validation → 4.
const CONTROL_CODES: &[ErrorCode] = &[InvalidCommand, InvalidFormat];
/// A single message (protocol.md 6.1, 1.3 limits).
const MESSAGE_CODES: &[ErrorCode] = &[
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// SendMessages (protocol.md 6.4): message codes plus the routing and index codes.
const SEND_CODES: &[ErrorCode] = &[
    InvalidCommand,
    InvalidIdentifier,
    InvalidMessagesCount,
    InvalidIndexesByteSize,
    NonZeroOffset,
    NonZeroTimestamp,
    MissingIndex,
    InvalidMessagesSize,
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// PollMessages response: a truncated 16-byte header, or a bad message.
const POLL_CODES: &[ErrorCode] = &[
    InvalidCommand,
    TooSmallMessage,
    TooBigMessagePayload,
    TooBigUserHeaders,
    InvalidMessagePayloadLength,
    InvalidReservedField,
];
/// User headers (protocol.md 6.3).
const HEADER_CODES: &[ErrorCode] = &[
    InvalidCommand,
    TooBigUserHeaders,
    InvalidHeaderKey,
    InvalidHeaderValue,
    InvalidHeaderKind,
];

fn expect_code(error: &DecodeError, allowed: &[ErrorCode], what: &str) {
    assert!(
        allowed.contains(&error.code),
        "{what}: error {error} carries {:?}, not one of {allowed:?}",
        error.code
    );
    assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code));
}

fn request_codes(code: CommandCode) -> &'static [ErrorCode] {
    if code == CommandCode::SendMessages {
        SEND_CODES
    } else {
        CONTROL_CODES
    }
}

/// Decodes `payload` as command `code` and checks the outcome: an accepted request has that
/// command, re-encodes to `payload_len()` bytes and decodes again to the same bytes; a rejected
/// one carries a code allowed for the command (3 for unknown codes).
fn check_request(code: u32, payload: &[u8]) {
    let result = Request::decode(code, BytesMut::from(payload));
    let Some(command) = CommandCode::from_code(code) else {
        assert_eq!(
            result.expect_err("unknown code accepted").code,
            InvalidCommand
        );
        return;
    };
    match result {
        Ok(request) => {
            assert_eq!(request.command(), command);
            let mut encoded = Vec::new();
            request.encode_payload(&mut encoded);
            assert_eq!(encoded.len(), request.payload_len(), "{command}");
            let again = Request::decode(code, BytesMut::from(&encoded[..]))
                .unwrap_or_else(|error| panic!("{command}: re-encoding not decodable: {error}"));
            let mut encoded_again = Vec::new();
            again.encode_payload(&mut encoded_again);
            assert_eq!(encoded_again, encoded, "{command}: re-encoding not stable");
            if let Request::SendMessages(mut send) = again {
                exercise_batch(&mut send.batch, 0);
            }
        }
        Err(error) => expect_code(&error, request_codes(command), command.name()),
    }
}

/// What a server does with an accepted batch: read every message and stamp it.
fn exercise_batch(batch: &mut MessageBatch, first_offset: u64) {
    let count = batch.count();
    let views = batch.iter().count();
    assert_eq!(views as u32, count);
    let size: usize = batch.iter().map(|m| m.size()).sum();
    assert_eq!(size, batch.size());
    let last = batch.stamp(first_offset, 1, || 5);
    if count > 0 {
        assert_eq!(last, first_offset + u64::from(count) - 1);
    }
    assert!(batch.iter().all(|m| m.checksum_is_valid()));
}

/// Decodes `bytes` as `T`; an accepted value re-encodes to `encoded_len()` bytes that decode to
/// the same bytes again, a rejected one carries an allowed code.
fn check_decoder<T: Decode + Encode + Debug>(bytes: &[u8], allowed: &[ErrorCode]) {
    match T::from_bytes(bytes) {
        Ok(value) => {
            let encoded = value.to_bytes();
            assert_eq!(encoded.len(), value.encoded_len(), "{value:?}");
            let again = T::from_bytes(&encoded)
                .unwrap_or_else(|error| panic!("re-encoding of {value:?} not decodable: {error}"));
            assert_eq!(again.to_bytes(), encoded, "re-encoding not stable");
        }
        Err(error) => expect_code(&error, allowed, std::any::type_name::<T>()),
    }
}

/// Every response (and shared primitive) decoder, by name, for the tables below.
type Check = fn(&[u8]);

fn control<T: Decode + Encode + Debug>(bytes: &[u8]) {
    check_decoder::<T>(bytes, CONTROL_CODES);
}

fn polled(bytes: &[u8]) {
    check_decoder::<PolledMessages>(bytes, POLL_CODES);
    if let Ok(polled) = PolledMessages::decode_bytes(Bytes::copy_from_slice(bytes)) {
        assert_eq!(polled.count as usize, polled.messages().count());
        for message in polled.messages() {
            let _ = (message.header(), message.payload(), message.user_headers());
        }
    }
}

/// (name, decoder check, generator of valid encodings) for every response type and the shared
/// primitives responses and requests are built from.
fn response_table() -> Vec<(&'static str, Check, BoxedStrategy<Vec<u8>>)> {
    fn entry<T: Decode + Encode + Debug + 'static>(
        name: &'static str,
        valid: BoxedStrategy<T>,
    ) -> (&'static str, Check, BoxedStrategy<Vec<u8>>) {
        (
            name,
            control::<T>,
            valid.prop_map(|value| value.to_bytes()).boxed(),
        )
    }
    fn list<T: Debug + 'static>(strategy: BoxedStrategy<T>) -> BoxedStrategy<Vec<T>> {
        vec(strategy, 0..4).boxed()
    }
    vec![
        entry::<StreamInfo>("StreamInfo", stream_info()),
        entry::<StreamDetails>("StreamDetails", stream_details()),
        entry::<Vec<StreamInfo>>("Vec<StreamInfo>", list(stream_info())),
        entry::<TopicInfo>("TopicInfo", topic_info()),
        entry::<TopicDetails>("TopicDetails", topic_details()),
        entry::<Vec<TopicInfo>>("Vec<TopicInfo>", list(topic_info())),
        entry::<PartitionInfo>("PartitionInfo", partition_info()),
        entry::<ConsumerGroupInfo>("ConsumerGroupInfo", consumer_group_info()),
        entry::<ConsumerGroupMember>("ConsumerGroupMember", consumer_group_member()),
        entry::<ConsumerGroupDetails>("ConsumerGroupDetails", consumer_group_details()),
        entry::<Vec<ConsumerGroupInfo>>("Vec<ConsumerGroupInfo>", list(consumer_group_info())),
        entry::<ConsumerOffsetInfo>("ConsumerOffsetInfo", consumer_offset_info()),
        entry::<Stats>("Stats", stats()),
        entry::<CacheMetric>("CacheMetric", cache_metric()),
        entry::<ClientInfo>("ClientInfo", client_info()),
        entry::<Vec<ClientInfo>>("Vec<ClientInfo>", list(client_info())),
        entry::<ClientGroup>("ClientGroup", client_group()),
        entry::<ClientDetails>("ClientDetails", client_details()),
        entry::<ClusterNode>("ClusterNode", cluster_node()),
        entry::<ClusterMetadata>("ClusterMetadata", cluster_metadata()),
        entry::<UserInfo>("UserInfo", user_info()),
        entry::<Vec<UserInfo>>("Vec<UserInfo>", list(user_info())),
        entry::<UserDetails>("UserDetails", user_details()),
        entry::<IdentityInfo>("IdentityInfo", identity_info()),
        entry::<RawPersonalAccessToken>("RawPersonalAccessToken", raw_personal_access_token()),
        entry::<PersonalAccessTokenInfo>("PersonalAccessTokenInfo", personal_access_token_info()),
        entry::<Vec<PersonalAccessTokenInfo>>(
            "Vec<PersonalAccessTokenInfo>",
            list(personal_access_token_info()),
        ),
        (
            "PolledMessages",
            polled as Check,
            polled_messages().prop_map(|p| p.to_bytes()).boxed(),
        ),
        entry::<Identifier>("Identifier", identifier()),
        entry::<Name>("Name", name()),
        entry::<Consumer>("Consumer", consumer()),
        entry::<OptionalPartition>("OptionalPartition", optional_partition()),
        entry::<PollingStrategy>("PollingStrategy", polling_strategy()),
        entry::<Partitioning>("Partitioning", partitioning()),
        entry::<Permissions>("Permissions", permissions()),
    ]
}

// ---------------------------------------------------------------------------------------------
// Input generators
// ---------------------------------------------------------------------------------------------

/// Arbitrary bytes, half the time drawn mostly from the values that steer decoders deeper
/// (kinds and flags 0..=4, length bytes, 0xff).
fn hostile_bytes(max: usize) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..max),
        vec(
            prop_oneof![
                3 => 0u8..=4,
                1 => Just(0xffu8),
                2 => any::<u8>(),
            ],
            0..max
        ),
    ]
    .boxed()
}

/// One way of damaging an encoding.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(usize, u8),
    SetByte(usize, u8),
    Truncate(usize),
    Extend(Vec<u8>),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    SetU32(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit(at, bit)),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte(at, byte)),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => vec(any::<u8>(), 1..32).prop_map(Mutation::Extend),
        1 => (any::<usize>(), vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        1 => (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Remove(at, len)),
        2 => (
            any::<usize>(),
            prop_oneof![Just(0u32), Just(1), Just(4), Just(64), Just(0xffff), Just(u32::MAX - 3), Just(u32::MAX), any::<u32>()],
        )
            .prop_map(|(at, value)| Mutation::SetU32(at, value)),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    vec(mutation(), 1..4)
}

fn apply(bytes: &mut Vec<u8>, mutations: &[Mutation]) {
    for mutation in mutations {
        let len = bytes.len();
        match mutation {
            Mutation::FlipBit(at, bit) if len > 0 => bytes[at % len] ^= 1 << bit,
            Mutation::SetByte(at, byte) if len > 0 => bytes[at % len] = *byte,
            Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
            Mutation::Extend(tail) => bytes.extend_from_slice(tail),
            Mutation::Insert(at, more) => {
                let at = at % (len + 1);
                bytes.splice(at..at, more.iter().copied());
            }
            Mutation::Remove(at, count) if len > 0 => {
                let at = at % len;
                bytes.drain(at..(at + count).min(len));
            }
            Mutation::SetU32(at, value) if len >= 4 => {
                let at = at % (len - 3);
                bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            _ => {}
        }
    }
}

/// A message header with lengths that are usually small enough to be satisfiable, followed by
/// arbitrary bytes: reaches the size, limit and reserved-field checks of MessageView::parse.
fn message_like_bytes() -> BoxedStrategy<Vec<u8>> {
    (
        prop_oneof![3 => 0u32..200, 1 => any::<u32>(), 1 => Just(64_000_001)],
        prop_oneof![3 => 0u32..100, 1 => any::<u32>(), 1 => Just(100_001)],
        prop_oneof![4 => Just(0u64), 1 => any::<u64>()],
        vec(any::<u8>(), 0..400),
    )
        .prop_map(|(payload_length, user_headers_length, reserved, tail)| {
            let mut bytes = MessageHeader {
                payload_length,
                user_headers_length,
                reserved,
                ..MessageHeader::default()
            }
            .to_bytes();
            bytes.extend_from_slice(&tail);
            bytes
        })
        .boxed()
}

/// A plausible SendMessages body: valid routing, then an index and messages section that are
/// only sometimes consistent.
fn send_like_bytes() -> BoxedStrategy<Vec<u8>> {
    (
        identifier(),
        identifier(),
        partitioning(),
        prop_oneof![4 => 1u32..5, 1 => any::<u32>()],
        vec(
            (
                prop_oneof![4 => Just(0u32), 1 => any::<u32>()],
                prop_oneof![3 => 0u32..600, 1 => any::<u32>()],
                prop_oneof![4 => Just(0u64), 1 => any::<u64>()],
            ),
            0..5,
        ),
        vec(message_like_bytes(), 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(stream, topic, partitioning, count, index, messages, consistent)| {
                // Half the time the count and index match the messages' actual sizes, so the
                // per-message checks (lengths, limits, reserved field) are reached.
                let (count, index) = if consistent {
                    let mut end = 0u32;
                    let index = messages
                        .iter()
                        .map(|message| {
                            end = end.wrapping_add(message.len() as u32);
                            (0, end, 0)
                        })
                        .collect();
                    (messages.len() as u32, index)
                } else {
                    (count, index)
                };
                let mut metadata = Vec::new();
                stream.encode(&mut metadata);
                topic.encode(&mut metadata);
                partitioning.encode(&mut metadata);
                metadata.extend_from_slice(&count.to_le_bytes());
                let mut bytes = (metadata.len() as u32).to_le_bytes().to_vec();
                bytes.extend_from_slice(&metadata);
                for (offset, position, timestamp) in index {
                    bytes.extend_from_slice(&offset.to_le_bytes());
                    bytes.extend_from_slice(&position.to_le_bytes());
                    bytes.extend_from_slice(&timestamp.to_le_bytes());
                }
                for message in messages {
                    bytes.extend_from_slice(&message);
                }
                bytes
            },
        )
        .boxed()
}

/// TLVs with random kinds (including 0 and > 15) and lengths (including 0 and > 255).
fn header_like_bytes() -> BoxedStrategy<Vec<u8>> {
    vec(
        (
            prop_oneof![4 => 1u8..=15, 1 => any::<u8>()],
            prop_oneof![4 => 0u32..20, 1 => any::<u32>()],
            vec(any::<u8>(), 0..20),
        ),
        0..6,
    )
    .prop_map(|fields| {
        let mut bytes = Vec::new();
        for (kind, len, value) in fields {
            bytes.push(kind);
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(&value);
        }
        bytes
    })
    .boxed()
}

fn check_message_bytes(bytes: &[u8], first_offset: u64) {
    match MessageView::parse(bytes) {
        Ok(view) => {
            assert!(view.size() <= bytes.len());
            assert_eq!(
                view.size(),
                64 + view.payload().len() + view.user_headers().len()
            );
            let header = view.header();
            assert_eq!(header.message_size(), view.size() as u64);
            assert_eq!(header.reserved, 0);
            let _ = (view.checksum_is_valid(), view.id(), view.offset());
        }
        Err(error) => expect_code(&error, MESSAGE_CODES, "MessageView::parse"),
    }
    let mut walked = 0;
    let mut failed = false;
    for message in MessageIter::new(bytes) {
        assert!(!failed, "MessageIter yielded after an error");
        match message {
            Ok(view) => walked += view.size(),
            Err(error) => {
                expect_code(&error, MESSAGE_CODES, "MessageIter");
                failed = true;
            }
        }
    }
    assert!(walked <= bytes.len());
    match MessageBatch::from_stored(BytesMut::from(bytes)) {
        Ok(mut batch) => {
            assert!(!failed && walked == bytes.len());
            exercise_batch(&mut batch, first_offset);
        }
        Err(error) => {
            assert!(failed);
            expect_code(&error, MESSAGE_CODES, "MessageBatch::from_stored");
        }
    }
}

fn check_headers(bytes: &[u8]) {
    match user_headers::parse(bytes) {
        Ok(pairs) => {
            let mut encoded = Vec::new();
            user_headers::encode(&pairs, &mut encoded);
            assert_eq!(encoded, bytes, "an accepted blob re-encodes to itself");
            for (key, value) in &pairs {
                key.validate(InvalidHeaderKey).unwrap();
                value.validate(InvalidHeaderValue).unwrap();
            }
        }
        Err(error) => expect_code(&error, HEADER_CODES, "user_headers::parse"),
    }
}

fn check_send(bytes: &[u8]) {
    match SendMessages::decode_owned(BytesMut::from(bytes)) {
        Ok(mut send) => {
            let encoded = send.to_bytes();
            assert_eq!(encoded.len(), send.encoded_len());
            let again = SendMessages::decode_owned(BytesMut::from(&encoded[..])).unwrap();
            assert_eq!(again, send);
            exercise_batch(&mut send.batch, 10);
        }
        Err(error) => expect_code(&error, SEND_CODES, "SendMessages::decode_owned"),
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn every_request_decoder_survives_arbitrary_bytes(bytes in hostile_bytes(300), code in any::<u32>()) {
        // Proves Request::decode never panics for any of the 47 codes or a random code on
        // arbitrary payloads, rejects with 3/4 (SendMessages: its message codes; unknown code:
        // 3), and that anything accepted re-encodes stably.
        for command in CommandCode::ALL {
            check_request(command.code(), &bytes);
        }
        check_request(code, &bytes);
    }

    #[test]
    fn send_messages_decoder_survives_plausible_garbage(bytes in send_like_bytes()) {
        // Proves SendMessages::decode_owned never panics on bodies with valid routing but
        // inconsistent counts, index entries and message lengths, rejects them only with the
        // protocol.md 6.4 codes, and that every batch it accepts can be iterated and stamped.
        check_send(&bytes);
        check_request(CommandCode::SendMessages.code(), &bytes);
    }

    #[test]
    fn message_parsers_survive_arbitrary_bytes(
        bytes in prop_oneof![hostile_bytes(300), message_like_bytes(),
                             vec(message_like_bytes(), 0..4).prop_map(|m| m.concat())],
        first_offset in prop_oneof![Just(0u64), 0u64..(1 << 62)],
    ) {
        // Proves MessageView::parse, MessageIter and MessageBatch::from_stored never panic on
        // arbitrary or header-shaped bytes, reject only with message codes (4037, 4022, 4017,
        // 4025, 4101), agree with each other, and that accepted messages expose consistent
        // sizes and can be stamped.
        check_message_bytes(&bytes, first_offset);
    }

    #[test]
    fn poll_response_decoder_survives_arbitrary_bytes(
        prefix in vec(any::<u8>(), 0..20),
        messages in vec(message_like_bytes(), 0..4),
    ) {
        // Proves PolledMessages::decode_bytes never panics on arbitrary 0..20-byte headers
        // followed by header-shaped message bytes, rejects with 3 or a message code, and counts
        // exactly the messages it accepted.
        let mut bytes = prefix;
        bytes.extend(messages.concat());
        polled(&bytes);
    }

    #[test]
    fn user_header_parser_survives_arbitrary_bytes(
        bytes in prop_oneof![hostile_bytes(200), header_like_bytes()],
    ) {
        // Proves user_headers::parse never panics, rejects only with 3/4017/4018/4019/4040,
        // and that any blob it accepts has valid fields and re-encodes to itself.
        check_headers(&bytes);
    }

    #[test]
    fn frame_headers_accept_any_eight_bytes(header in any::<[u8; 8]>(), limit in any::<usize>()) {
        // Proves the frame-header parsers never panic: a request length < 4 is LengthTooSmall
        // (status 3), any other length yields a payload size within the limit or TooLarge; any
        // response status maps to OK or a defined error code.
        let request = RequestHeader::parse(header);
        prop_assert_eq!(request.to_bytes(), header);
        match request.payload_len(limit) {
            Ok(len) => prop_assert_eq!(len + 4, request.length as usize),
            Err(error) => prop_assert_eq!(error.code(), InvalidCommand),
        }
        let response = ResponseHeader::parse(header);
        match response.result() {
            Ok(len) => prop_assert_eq!(len, response.length as usize),
            Err(code) => prop_assert!(ErrorCode::ALL.contains(&code)),
        }
    }
}

proptest! {
    #![proptest_config(config(MUTATION_CASES))]

    #[test]
    fn mutated_requests_never_panic(request in any_request(), damage in mutations()) {
        // Proves a valid request of any command, damaged by 1-3 random mutations, decodes
        // without panicking under its own code, with an allowed code on rejection and a stable
        // re-encoding on acceptance.
        let mut bytes = Vec::new();
        request.encode_payload(&mut bytes);
        apply(&mut bytes, &damage);
        check_request(request.command().code(), &bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        send in send_messages(),
        stored in stored_messages(),
        pairs in header_pairs(),
        damage in mutations(),
    ) {
        // Proves valid SendMessages bodies, stored message runs and user-header blobs, damaged
        // by 1-3 random mutations, never make decode_owned, the message parsers or the header
        // parser panic, and are rejected only with their families' codes.
        let mut body = send.to_bytes();
        apply(&mut body, &damage);
        check_send(&body);

        let (first_offset, timestamp, messages) = stored;
        let mut run = stamp_messages(first_offset, timestamp, &messages).to_vec();
        apply(&mut run, &damage);
        check_message_bytes(&run, first_offset);
        let mut poll = rill_core::message::encode_poll_header(1, 2, messages.len() as u32).to_vec();
        poll.extend_from_slice(&run);
        polled(&poll);

        let mut blob = Vec::new();
        user_headers::encode(&pairs, &mut blob);
        apply(&mut blob, &damage);
        check_headers(&blob);
    }
}

#[test]
fn every_response_decoder_survives_arbitrary_bytes() {
    // Proves every response type's from_bytes (and every shared primitive's) never panics on
    // arbitrary bytes, rejects with 3/4 (poll responses: their message codes), and that
    // anything accepted re-encodes stably. (A manual runner so the table is built once.)
    let table = response_table();
    TestRunner::new(config(CASES))
        .run(&hostile_bytes(300), |bytes| {
            for (_, check, _) in &table {
                check(&bytes);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn mutated_responses_never_panic() {
    // Proves a valid encoding of every response type (and shared primitive), damaged by 1-3
    // random mutations, decodes with its own decoder without panicking, rejecting with an
    // allowed code or re-encoding stably.
    let table = response_table();
    let valid = Union::new(table.iter().enumerate().map(|(index, (_, _, strategy))| {
        strategy
            .clone()
            .prop_map(move |bytes| (index, bytes))
            .boxed()
    }));
    TestRunner::new(config(MUTATION_CASES))
        .run(&(valid, mutations()), |((index, mut bytes), damage)| {
            apply(&mut bytes, &damage);
            (table[index].1)(&bytes);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_table_covers_every_response_type() {
    // Proves the hostile tables include every response type exported by rill_core::responses
    // (27 records/lists + the poll response) and the shared primitives, by name, so the
    // properties above cannot silently skip one.
    let names: Vec<&str> = response_table().iter().map(|(name, _, _)| *name).collect();
    for expected in [
        "StreamInfo",
        "StreamDetails",
        "TopicInfo",
        "TopicDetails",
        "PartitionInfo",
        "ConsumerGroupInfo",
        "ConsumerGroupMember",
        "ConsumerGroupDetails",
        "ConsumerOffsetInfo",
        "Stats",
        "CacheMetric",
        "ClientInfo",
        "ClientGroup",
        "ClientDetails",
        "ClusterNode",
        "ClusterMetadata",
        "UserInfo",
        "UserDetails",
        "IdentityInfo",
        "RawPersonalAccessToken",
        "PersonalAccessTokenInfo",
        "PolledMessages",
        "Permissions",
    ] {
        assert!(names.contains(&expected), "{expected} missing");
    }
    assert_eq!(names.len(), 35);
}

#[test]
fn huge_declared_lengths_fail_fast_without_allocating() {
    // Proves length and count fields near u32::MAX are rejected by comparing with the bytes
    // present (no allocation of the declared size, which would abort the process): Str32,
    // SendMessages count, index positions, message lengths, list counts and user headers.
    let max = u32::MAX.to_le_bytes();
    // ClusterMetadata: name Str32 of 4 GiB.
    assert!(ClusterMetadata::from_bytes(&max).is_err());
    // ClientDetails: consumer_groups_count u32::MAX with no entries.
    let mut client = ClientInfo {
        client_id: 1,
        user_id: 0,
        transport: rill_core::primitives::Transport::Tcp,
        address: String::new(),
        consumer_groups_count: u32::MAX,
    }
    .to_bytes();
    assert_eq!(
        ClientDetails::from_bytes(&client).unwrap_err().code,
        InvalidCommand
    );
    client.truncate(client.len() - 1);
    assert!(ClientInfo::from_bytes(&client).is_err());
    // Stats with cache_metrics_count u32::MAX.
    let mut stats = vec![0u8; 108];
    for _ in 0..5 {
        stats.extend_from_slice(&0u32.to_le_bytes());
    }
    stats.extend_from_slice(&0u32.to_le_bytes());
    stats.extend_from_slice(&max);
    assert_eq!(Stats::from_bytes(&stats).unwrap_err().code, InvalidCommand);
    // SendMessages: messages_count u32::MAX → index block larger than the payload (4034).
    let mut body = 18u32.to_le_bytes().to_vec();
    Identifier::numeric(0).encode(&mut body);
    Identifier::numeric(0).encode(&mut body);
    Partitioning::Balanced.encode(&mut body);
    body.extend_from_slice(&max);
    assert_eq!(
        SendMessages::decode_owned(BytesMut::from(&body[..]))
            .unwrap_err()
            .code,
        InvalidIndexesByteSize
    );
    // A message declaring a 4 GiB payload (4022) and 4 GiB of user headers (4017).
    let header = MessageHeader {
        payload_length: u32::MAX,
        ..MessageHeader::default()
    };
    assert_eq!(
        MessageView::parse(&header.to_bytes()).unwrap_err().code,
        TooBigMessagePayload
    );
    let header = MessageHeader {
        user_headers_length: u32::MAX,
        ..MessageHeader::default()
    };
    assert_eq!(
        MessageView::parse(&header.to_bytes()).unwrap_err().code,
        TooBigUserHeaders
    );
    // A user-header field declaring 4 GiB.
    assert_eq!(
        user_headers::parse(&[2, 0xff, 0xff, 0xff, 0xff, b'k'])
            .unwrap_err()
            .code,
        InvalidHeaderKey
    );
    // A user-header blob over 100 000 bytes (4017) even if well formed.
    let mut big = Vec::new();
    let field = user_headers::HeaderField {
        kind: user_headers::HeaderKind::Raw,
        value: vec![7; 255],
    };
    while big.len() <= 100_000 {
        user_headers::encode(&[(field.clone(), field.clone())], &mut big);
    }
    assert_eq!(
        user_headers::parse(&big).unwrap_err().code,
        TooBigUserHeaders
    );
}

#[test]
fn stamping_an_empty_stored_batch_does_not_panic() {
    // Proves MessageBatch::stamp on a batch with no messages (from_stored of an empty run, a
    // public path) leaves it untouched instead of underflowing `offset - 1` at offset 0.
    let mut batch = MessageBatch::from_stored(BytesMut::new()).unwrap();
    assert!(batch.is_empty());
    let last = batch.stamp(0, 1, || unreachable!("no messages"));
    assert_eq!(last, 0);
    assert_eq!(batch.size(), 0);
    let mut batch = MessageBatch::from_stored(BytesMut::new()).unwrap();
    assert_eq!(batch.stamp(5, 1, || 1), 4);
}
