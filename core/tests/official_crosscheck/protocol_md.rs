//! protocol.md against the official crate: its goldens written by the official encoders, and
//! the disagreements where we follow protocol.md.

use crate::common::*;
use crate::helpers::{cross_check, name, nested_permissions};
use bytes::{Bytes, BytesMut};
use iggy_binary_protocol::requests::messages::*;
use iggy_binary_protocol::requests::topics::*;
use iggy_binary_protocol::requests::users::*;
use iggy_binary_protocol::responses::consumer_groups::ConsumerGroupDetailsResponse;
use iggy_binary_protocol::responses::messages::PollMessagesResponse;
use iggy_binary_protocol::responses::system::EmptyResponse;
use iggy_binary_protocol::{
    WireConsumer, WireDecode, WireEncode, WireIdentifier, WireName, WirePartitioning,
    WirePollingStrategy,
};
use rill_core::ErrorCode;
use rill_core::codec::Encode;
use rill_core::message::{OutgoingMessage, PolledMessages};
use rill_core::primitives::*;
use rill_core::responses::*;

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
