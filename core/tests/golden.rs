//! Golden tests: the exact byte sequences of protocol.md section 10 (and the small examples of
//! sections 2 and 6). Each test builds our typed values, encodes them into whole frames and
//! compares with the documented hex byte for byte, then decodes the documented bytes and
//! compares the resulting values field by field.

mod common;

use bytes::{Bytes, BytesMut};
use common::hex;
use rill_core::ErrorCode;
use rill_core::codec::{Decode, Encode};
use rill_core::frame::{
    REQUEST_HEADER_SIZE, RESPONSE_HEADER_SIZE, RequestHeader, ResponseHeader, encode_request,
};
use rill_core::hash;
use rill_core::message::{MessageBatch, MessageView, OutgoingMessage, PolledMessages};
use rill_core::primitives::{
    CompressionAlgorithm, Consumer, Identifier, Name, OptionalPartition, Partitioning, Permissions,
    PollingStrategy, ShortString, Transport,
};
use rill_core::requests::*;
use rill_core::responses::*;

const STREAM_CREATED_AT: u64 = 1_700_000_000_000_000;
const TOPIC_CREATED_AT: u64 = 1_700_000_000_001_000;
const ORIGIN_TIMESTAMP: u64 = 1_700_000_000_002_000;
const SERVER_TIMESTAMP: u64 = 1_700_000_000_003_000;

fn name(text: &str) -> Name {
    Name::new(text).unwrap()
}

/// A whole request frame for `request`.
fn request_frame(request: impl Into<Request>) -> Vec<u8> {
    let mut frame = Vec::new();
    encode_request(&request.into(), &mut frame);
    frame
}

/// A whole OK response frame carrying `payload`.
fn ok_frame(payload: &impl Encode) -> Vec<u8> {
    let mut frame = ResponseHeader::ok(payload.encoded_len())
        .to_bytes()
        .to_vec();
    payload.encode(&mut frame);
    frame
}

/// Splits a request frame into its header and decodes the payload with `Request::decode`,
/// checking the header's length field against the bytes present.
fn decode_request_frame(frame: &[u8]) -> Request {
    let header = RequestHeader::parse(frame[..REQUEST_HEADER_SIZE].try_into().unwrap());
    let payload = &frame[REQUEST_HEADER_SIZE..];
    assert_eq!(header.payload_len(usize::MAX), Ok(payload.len()));
    Request::decode(header.code, BytesMut::from(payload)).unwrap()
}

/// The payload of an OK response frame, after checking status 0 and the length field.
fn ok_payload(frame: &[u8]) -> &[u8] {
    let header = ResponseHeader::parse(frame[..RESPONSE_HEADER_SIZE].try_into().unwrap());
    let payload = &frame[RESPONSE_HEADER_SIZE..];
    assert_eq!(header.result(), Ok(payload.len()));
    payload
}

fn hello_message() -> OutgoingMessage {
    OutgoingMessage {
        id: 1,
        origin_timestamp: ORIGIN_TIMESTAMP,
        payload: Bytes::from_static(b"hello"),
        user_headers: Bytes::new(),
    }
}

#[test]
fn ping_10_1() {
    // Proves Ping encodes as `04 00 00 00 | 01 00 00 00` (length 4, code 1, no payload) and the
    // empty OK answer is eight zero bytes.
    let golden = hex("04 00 00 00 | 01 00 00 00");
    assert_eq!(request_frame(Ping {}), golden);
    assert_eq!(decode_request_frame(&golden), Request::Ping(Ping {}));
    assert_eq!(ResponseHeader::ok(0).to_bytes(), [0u8; 8]);
    assert_eq!(ResponseHeader::parse([0; 8]).result(), Ok(0));
}

#[test]
fn login_user_10_2() {
    // Proves LoginUser as the Rust SDK 0.10.0 sends it (username, u8-length password, version
    // Str32 "0.10.0", empty context Str32) matches protocol.md 10.2 byte for byte, decodes back
    // to the same fields, and the answer `user_id 0` is a 4-byte IdentityInfo.
    let golden = hex("1c 00 00 00  26 00 00 00  04 69 67 67 79  04 69 67 67 79
                      06 00 00 00 30 2e 31 30 2e 30  00 00 00 00");
    let login = LoginUser {
        username: name("iggy"),
        password: ShortString("iggy".to_owned()),
        version: Some("0.10.0".to_owned()),
        context: None,
    };
    assert_eq!(request_frame(login.clone()), golden);
    assert_eq!(decode_request_frame(&golden), Request::LoginUser(login));

    let response = hex("00 00 00 00 | 04 00 00 00 | 00 00 00 00");
    assert_eq!(ok_frame(&IdentityInfo { user_id: 0 }), response);
    assert_eq!(
        IdentityInfo::from_bytes(ok_payload(&response)).unwrap(),
        IdentityInfo { user_id: 0 }
    );
    // The auto-login follow-up GetClusterMetadata frame.
    assert_eq!(
        request_frame(GetClusterMetadata {}),
        hex("04 00 00 00 0c 00 00 00")
    );
}

#[test]
fn create_stream_10_3() {
    // Proves CreateStream("s") is `06 00 00 00 | ca 00 00 00 | 01 73`, its 34-byte Stream
    // response matches protocol.md 10.3 (decodable both as a Stream record and, as the SDK
    // reads it, as StreamDetails with no topics), and GetStream by name is `02 01 73`.
    let golden = hex("06 00 00 00 | ca 00 00 00 | 01 73");
    let create = CreateStream { name: name("s") };
    assert_eq!(request_frame(create.clone()), golden);
    assert_eq!(decode_request_frame(&golden), Request::CreateStream(create));

    let response = hex("00 00 00 00 | 22 00 00 00
                        00 00 00 00
                        00 40 1e 18 24 0a 06 00
                        00 00 00 00
                        00 00 00 00 00 00 00 00
                        00 00 00 00 00 00 00 00
                        01 73");
    let stream = StreamInfo {
        id: 0,
        created_at: STREAM_CREATED_AT,
        topics_count: 0,
        size_bytes: 0,
        messages_count: 0,
        name: name("s"),
    };
    assert_eq!(ok_frame(&stream), response);
    assert_eq!(
        StreamInfo::from_bytes(ok_payload(&response)).unwrap(),
        stream
    );
    let details = StreamDetails {
        stream: stream.clone(),
        topics: vec![],
    };
    assert_eq!(ok_frame(&details), response);
    assert_eq!(
        StreamDetails::from_bytes(ok_payload(&response)).unwrap(),
        details
    );

    let get_by_name = hex("07 00 00 00 | c8 00 00 00 | 02 01 73");
    let get = GetStream {
        stream_id: Identifier::named("s").unwrap(),
    };
    assert_eq!(request_frame(get.clone()), get_by_name);
    assert_eq!(decode_request_frame(&get_by_name), Request::GetStream(get));
}

#[test]
fn create_topic_10_4() {
    // Proves CreateTopic("t", 1 partition, defaults) matches protocol.md 10.4 (length 34, code
    // 302) and its 92-byte TopicDetails response (topic header + one partition record, resolved
    // expiry/size u64::MAX, replication 1) encodes and decodes exactly.
    let golden = hex("22 00 00 00 | 2e 01 00 00
                      01 04 00 00 00 00
                      01 00 00 00
                      01
                      00 00 00 00 00 00 00 00
                      00 00 00 00 00 00 00 00
                      00
                      01 74");
    let create = CreateTopic {
        stream_id: Identifier::numeric(0),
        partitions_count: 1,
        compression_algorithm: CompressionAlgorithm::None,
        message_expiry: 0,
        max_topic_size: 0,
        replication_factor: 0,
        name: name("t"),
    };
    assert_eq!(request_frame(create.clone()), golden);
    assert_eq!(decode_request_frame(&golden), Request::CreateTopic(create));

    let response = hex("00 00 00 00 | 5c 00 00 00
                        00 00 00 00
                        e8 43 1e 18 24 0a 06 00
                        01 00 00 00
                        ff ff ff ff ff ff ff ff
                        01
                        ff ff ff ff ff ff ff ff
                        01
                        00 00 00 00 00 00 00 00
                        00 00 00 00 00 00 00 00
                        01 74
                        00 00 00 00
                        e8 43 1e 18 24 0a 06 00
                        00 00 00 00
                        00 00 00 00 00 00 00 00
                        00 00 00 00 00 00 00 00
                        00 00 00 00 00 00 00 00");
    let details = TopicDetails {
        topic: TopicInfo {
            id: 0,
            created_at: TOPIC_CREATED_AT,
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
            created_at: TOPIC_CREATED_AT,
            segments_count: 0,
            current_offset: 0,
            size_bytes: 0,
            messages_count: 0,
        }],
    };
    assert_eq!(ok_frame(&details), response);
    assert_eq!(
        TopicDetails::from_bytes(ok_payload(&response)).unwrap(),
        details
    );
}

/// The index entry and message bytes shared by both SendMessages goldens (protocol.md 10.5).
const SEND_BODY: &str = "01 00 00 00
    00 00 00 00 | 45 00 00 00 | 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00
    01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00
    d0 47 1e 18 24 0a 06 00
    00 00 00 00
    05 00 00 00
    00 00 00 00 00 00 00 00
    68 65 6c 6c 6f";

#[test]
fn send_messages_to_partition_10_5() {
    // Proves SendMessages of one message (id 1, "hello") to partition 0 matches protocol.md 10.5
    // (metadata_length 22, index end position 69, 119 bytes on the wire), decodes back to the
    // same request, and exposes the message's fields through the zero-copy view.
    let golden = hex(&format!(
        "73 00 00 00 | 65 00 00 00 | 16 00 00 00
         01 04 00 00 00 00 | 01 04 00 00 00 00 | 02 04 00 00 00 00 {SEND_BODY}"
    ));
    assert_eq!(golden.len(), 119);
    let send = SendMessages {
        stream_id: Identifier::numeric(0),
        topic_id: Identifier::numeric(0),
        partitioning: Partitioning::PartitionId(0),
        batch: MessageBatch::from_messages(&[hello_message()]),
    };
    assert_eq!(request_frame(send.clone()), golden);
    let Request::SendMessages(decoded) = decode_request_frame(&golden) else {
        panic!("not a SendMessages")
    };
    assert_eq!(decoded, send);
    let message = decoded.batch.iter().next().unwrap();
    assert_eq!(message.id(), 1);
    assert_eq!(message.origin_timestamp(), ORIGIN_TIMESTAMP);
    assert_eq!(message.payload(), b"hello");
    assert!(message.user_headers().is_empty());
    assert_eq!(message.size(), 69);
}

#[test]
fn send_messages_balanced_10_5() {
    // Proves the Balanced variant of 10.5: partitioning `01 00`, metadata_length 18, length
    // field 111, 115 bytes on the wire, same index entry and message bytes.
    let golden = hex(&format!(
        "6f 00 00 00 | 65 00 00 00 | 12 00 00 00
         01 04 00 00 00 00 | 01 04 00 00 00 00 | 01 00 {SEND_BODY}"
    ));
    assert_eq!(golden.len(), 115);
    let send = SendMessages {
        stream_id: Identifier::numeric(0),
        topic_id: Identifier::numeric(0),
        partitioning: Partitioning::Balanced,
        batch: MessageBatch::from_messages(&[hello_message()]),
    };
    assert_eq!(request_frame(send.clone()), golden);
    assert_eq!(decode_request_frame(&golden), Request::SendMessages(send));
    assert_eq!(ResponseHeader::ok(0).to_bytes(), [0u8; 8]);
}

#[test]
fn poll_messages_10_6() {
    // Proves PollMessages (consumer 1, partition Some(0), Offset(0), count 10, no auto-commit)
    // matches protocol.md 10.6, and that the 85-byte response built by stamping the sent
    // message with offset 0 and the pinned server timestamp is byte-identical to the golden,
    // with checksum 0x035b23a76cb5a466 = XXH3-64 of the 61 bytes after the checksum field.
    let golden = hex("2a 00 00 00 | 64 00 00 00
                      01 01 04 01 00 00 00
                      01 04 00 00 00 00
                      01 04 00 00 00 00
                      01 00 00 00 00
                      01 00 00 00 00 00 00 00 00
                      0a 00 00 00
                      00");
    let poll = PollMessages {
        consumer: Consumer::new(1),
        stream_id: Identifier::numeric(0),
        topic_id: Identifier::numeric(0),
        partition_id: OptionalPartition(Some(0)),
        strategy: PollingStrategy::offset(0),
        count: 10,
        auto_commit: false,
    };
    assert_eq!(request_frame(poll.clone()), golden);
    assert_eq!(decode_request_frame(&golden), Request::PollMessages(poll));

    let response = hex("00 00 00 00 | 55 00 00 00
                        00 00 00 00
                        00 00 00 00 00 00 00 00
                        01 00 00 00
                        66 a4 b5 6c a7 23 5b 03
                        01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                        00 00 00 00 00 00 00 00
                        b8 4b 1e 18 24 0a 06 00
                        d0 47 1e 18 24 0a 06 00
                        00 00 00 00
                        05 00 00 00
                        00 00 00 00 00 00 00 00
                        68 65 6c 6c 6f");
    // What the server does: take the sent batch, stamp it, and answer with it.
    let mut batch = MessageBatch::from_messages(&[hello_message()]);
    let last = batch.stamp(0, SERVER_TIMESTAMP, || unreachable!("the message has id 1"));
    assert_eq!(last, 0);
    let polled = PolledMessages::new(0, 0, batch.into_bytes().freeze()).unwrap();
    assert_eq!(polled.count, 1);
    assert_eq!(ok_frame(&polled), response);

    let decoded =
        PolledMessages::decode_bytes(Bytes::copy_from_slice(ok_payload(&response))).unwrap();
    assert_eq!(decoded, polled);
    assert_eq!(
        (decoded.partition_id, decoded.current_offset, decoded.count),
        (0, 0, 1)
    );
    let message = decoded.messages().next().unwrap();
    assert_eq!(message.checksum(), 0x035b_23a7_6cb5_a466);
    // Recomputed independently of the crate's helper: XXH3-64 over bytes 8..69.
    assert_eq!(message.as_bytes()[8..].len(), 61);
    assert_eq!(
        xxhash_rust::xxh3::xxh3_64(&message.as_bytes()[8..]),
        0x035b_23a7_6cb5_a466
    );
    assert!(message.checksum_is_valid());
    assert_eq!(message.id(), 1);
    assert_eq!(message.offset(), 0);
    assert_eq!(message.timestamp(), SERVER_TIMESTAMP);
    assert_eq!(message.origin_timestamp(), ORIGIN_TIMESTAMP);
    assert_eq!(message.payload(), b"hello");
}

#[test]
fn cluster_metadata_10_7() {
    // Proves the single-node GetClusterMetadata response of protocol.md 10.7 (cluster
    // "single-node", node "iggy-node" at 127.0.0.1 with ports 8090/8080/3000/8092, leader,
    // healthy) encodes and decodes exactly.
    let response = hex("00 00 00 00 | 37 00 00 00
                        0b 00 00 00 73 69 6e 67 6c 65 2d 6e 6f 64 65
                        01 00 00 00
                        09 00 00 00 69 67 67 79 2d 6e 6f 64 65
                        09 00 00 00 31 32 37 2e 30 2e 30 2e 31
                        9a 1f | 90 1f | b8 0b | 9c 1f
                        00 | 00");
    let metadata = ClusterMetadata {
        name: "single-node".to_owned(),
        nodes: vec![ClusterNode {
            name: "iggy-node".to_owned(),
            ip: "127.0.0.1".to_owned(),
            tcp_port: 8090,
            quic_port: 8080,
            http_port: 3000,
            websocket_port: 8092,
            role: 0,
            status: 0,
        }],
    };
    assert_eq!(ok_frame(&metadata), response);
    assert_eq!(
        ClusterMetadata::from_bytes(ok_payload(&response)).unwrap(),
        metadata
    );
    assert_eq!(
        decode_request_frame(&hex("04 00 00 00 0c 00 00 00")),
        Request::GetClusterMetadata(GetClusterMetadata {})
    );
}

#[test]
fn get_me_10_7() {
    // Proves GetMe is `04 00 00 00 14 00 00 00` and the ClientDetails answer for peer
    // 127.0.0.1:50000 (client id = xxHash32 of the address = 163 361 442, root, TCP, no groups)
    // matches protocol.md 10.7 byte for byte.
    let golden = hex("04 00 00 00 14 00 00 00");
    assert_eq!(request_frame(GetMe {}), golden);
    assert_eq!(decode_request_frame(&golden), Request::GetMe(GetMe {}));

    let response = hex("00 00 00 00 | 20 00 00 00
                        a2 b2 bc 09
                        00 00 00 00
                        01
                        0f 00 00 00 31 32 37 2e 30 2e 30 2e 31 3a 35 30 30 30 30
                        00 00 00 00");
    let address = "127.0.0.1:50000";
    assert_eq!(hash::client_id(address), 163_361_442);
    let me = ClientDetails {
        client_id: hash::client_id(address),
        user_id: 0,
        transport: Transport::Tcp,
        address: address.to_owned(),
        consumer_groups: vec![],
    };
    assert_eq!(ok_frame(&me), response);
    assert_eq!(
        ClientDetails::from_bytes(ok_payload(&response)).unwrap(),
        me
    );
}

#[test]
fn unauthenticated_error_frame_10_7() {
    // Proves the Unauthenticated error frame is `28 00 00 00 00 00 00 00` (status 40, length 0,
    // no payload) and parses back to ErrorCode::Unauthenticated.
    let golden = hex("28 00 00 00 00 00 00 00");
    assert_eq!(
        ResponseHeader::error(ErrorCode::Unauthenticated).to_bytes(),
        golden[..]
    );
    assert_eq!(
        ResponseHeader::parse(golden.try_into().unwrap()).result(),
        Err(ErrorCode::Unauthenticated)
    );
}

#[test]
fn unknown_command_9999_10_7() {
    // Proves the unknown command frame `04 00 00 00 0f 27 00 00` parses as length 4 / code 9999
    // with an empty payload, is rejected by Request::decode with status 3 (InvalidCommand), and
    // the resulting error frame is `03 00 00 00 00 00 00 00`.
    let golden = hex("04 00 00 00 0f 27 00 00");
    let header = RequestHeader::parse(golden.try_into().unwrap());
    assert_eq!(
        header,
        RequestHeader {
            length: 4,
            code: 9999
        }
    );
    assert_eq!(header.payload_len(usize::MAX), Ok(0));
    assert_eq!(CommandCode::from_code(9999), None);
    let error = Request::decode(header.code, BytesMut::new()).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidCommand);
    assert_eq!(
        ResponseHeader::error(error.code).to_bytes(),
        hex("03 00 00 00 00 00 00 00")[..]
    );
}

#[test]
fn shared_encoding_examples_of_sections_2_and_6() {
    // Proves the small examples of protocol.md: identifiers (2.1), partitioning (2.4), root
    // permissions = ten set flags + no streams (2.7, 11 bytes), the user-header pair "k"→"v"
    // (6.3, 12 bytes), the XXH3 empty-input vector (6.2) and a UserDetails "no permissions"
    // tail of exactly four zero bytes (12.9).
    assert_eq!(Identifier::numeric(0).to_bytes(), hex("01 04 00 00 00 00"));
    assert_eq!(Identifier::numeric(1).to_bytes(), hex("01 04 01 00 00 00"));
    assert_eq!(Identifier::named("s").unwrap().to_bytes(), hex("02 01 73"));
    assert_eq!(Partitioning::Balanced.to_bytes(), hex("01 00"));
    assert_eq!(
        Partitioning::PartitionId(0).to_bytes(),
        hex("02 04 00 00 00 00")
    );
    assert_eq!(
        Permissions::root().to_bytes(),
        hex("01 01 01 01 01 01 01 01 01 01 00")
    );
    let blob = hex("02 01 00 00 00 6b 02 01 00 00 00 76");
    let pairs = rill_core::primitives::user_headers::parse(&blob).unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].0.value, b"k");
    assert_eq!(pairs[0].1.value, b"v");
    let mut encoded = Vec::new();
    rill_core::primitives::user_headers::encode(&pairs, &mut encoded);
    assert_eq!(encoded, blob);
    assert_eq!(xxhash_rust::xxh3::xxh3_64(&[]), 0x2d06_8005_38d3_94c2);
    // An all-zero 64-byte header is a valid empty message whose checksum covers 56 bytes.
    let header = [0u8; 64];
    let view = MessageView::parse(&header).unwrap();
    assert_eq!(
        rill_core::message::checksum(view.as_bytes()),
        xxhash_rust::xxh3::xxh3_64(&[0u8; 56])
    );

    let user = UserDetails {
        user: UserInfo {
            id: 0,
            created_at: STREAM_CREATED_AT,
            status: rill_core::primitives::UserStatus::Active,
            username: name("iggy"),
        },
        permissions: None,
    };
    let bytes = user.to_bytes();
    assert_eq!(bytes.len(), 14 + 4 + 4);
    assert_eq!(&bytes[18..], &[0, 0, 0, 0]);
    let with_root = UserDetails {
        permissions: Some(Permissions::root()),
        ..user
    };
    let bytes = with_root.to_bytes();
    assert_eq!(&bytes[18..23], &[1, 11, 0, 0, 0]);
    assert_eq!(UserDetails::from_bytes(&bytes).unwrap(), with_root);
}
