use super::*;
use crate::message::{MessageBatch, OutgoingMessage, PolledMessages, SendMessages};
use crate::primitives::{Identifier, Partitioning, ShortString};
use crate::requests::{CreateStream, LoginUser, Ping};
use crate::responses::{StreamDetails, TopicDetails};
use crate::v09::requests::{Credentials, V09Request, decode, decode_login};
use crate::v09::responses::{SegmentSize, translate};
use bytes::{Bytes, BytesMut};

fn session() -> ClientSession {
    ClientSession::new(0x4384d1c10ad37882cd42dc2d02b15ea5, "rust-sdk", "0.11.0").unwrap()
}

/// Our login body is the captured one of protocol-0.9.md 11.1, byte for byte.
#[test]
fn writes_the_captured_login_and_binds_the_session() {
    let mut session = session();
    let login = Request::LoginUser(LoginUser {
        username: Name::new("iggy").unwrap(),
        password: ShortString("iggy".into()),
        version: None,
        context: None,
    });
    let sent = session.encode(&login).unwrap();
    assert_eq!(
        sent.body,
        b"\x00\x2c\x00\x00\x08rust-sdk\x060.11.0\x04iggy\x04iggy\x00\x00\x00\x00"
    );
    let header = RequestHeader::parse(&sent.header, 1 << 20).unwrap();
    assert_eq!(
        (header.operation, header.request, header.session),
        (1, 0, 0)
    );
    assert_eq!(header.size, 290);
    assert_eq!(header.request_checksum, u128::from(xxh3_64(&sent.body)));
    assert!(matches!(
        decode_login(&sent.body).unwrap().credentials,
        Credentials::Password(_)
    ));
    let mut reply = vec![0, 0, 0, 0, 7, 0, 0, 0];
    reply.extend_from_slice(&9u64.to_le_bytes());
    reply.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    reply.extend_from_slice(b"\x04rill");
    assert_eq!(
        session.read_reply(&sent, 0, &reply).unwrap(),
        vec![7, 0, 0, 0]
    );
    assert_eq!(session.session(), 9);
    // A ping carries the session and the current number; a create takes it.
    let ping = session.encode(&Request::Ping(Ping {})).unwrap();
    let ping = RequestHeader::parse(&ping.header, 1 << 20).unwrap();
    assert_eq!(
        (ping.operation, ping.code, ping.request, ping.session),
        (2, 1, 1, 9)
    );
    assert_eq!(ping.request_checksum, 0);
    let create = Request::CreateStream(CreateStream {
        name: Name::new("s").unwrap(),
    });
    let first = session.encode(&create).unwrap();
    let second = session.encode(&create).unwrap();
    let numbers =
        [&first, &second].map(|sent| RequestHeader::parse(&sent.header, 1 << 20).unwrap().request);
    assert_eq!(numbers, [1, 2]);
    assert_eq!(first.body, b"\x01s");
    // A frame built once is renumbered for each send: this session, the next numbers.
    let mut again = first.header;
    session.renumber(&mut again);
    let again = RequestHeader::parse(&again, 1 << 20).unwrap();
    assert_eq!((again.request, again.session), (3, 9));
    assert_eq!(again.client, header.client);
    // A second login comes from a new client id, with the numbering restarted.
    let again = session.encode(&login).unwrap();
    let again = RequestHeader::parse(&again.header, 1 << 20).unwrap();
    assert_ne!(again.client, header.client);
    assert_eq!((again.request, again.session), (0, 0));
    assert_eq!(session.session(), 0);
    // A session of 0 is refused, as SDK 0.11.0 refuses it.
    let mut zero = reply.clone();
    zero[8..16].fill(0);
    assert_eq!(
        session.read_reply(&sent, 0, &zero),
        Err(ReplyError::Status(ErrorCode::InvalidSession))
    );
}

#[test]
fn errors_arrive_by_status_result_section_or_eviction() {
    let mut session = session();
    let create = Request::CreateStream(CreateStream {
        name: Name::new("s").unwrap(),
    });
    let sent = session.encode(&create).unwrap();
    assert_eq!(
        session.read_reply(&sent, 1012, &[]),
        Err(ReplyError::Status(ErrorCode::StreamNameAlreadyExists))
    );
    let failed = [1u32, 0, 1012].map(u32::to_le_bytes).concat();
    assert_eq!(
        session.read_reply(&sent, 0, &failed),
        Err(ReplyError::Status(ErrorCode::StreamNameAlreadyExists))
    );
    assert!(matches!(
        session.read_reply(&sent, 0, &[]),
        Err(ReplyError::Malformed(_))
    ));
    let mut eviction = [0u8; HEADER_SIZE];
    eviction[48..52].copy_from_slice(&256u32.to_le_bytes());
    eviction[60] = COMMAND_EVICTION;
    eviction[255] = 9;
    assert_eq!(read_reply_header(&eviction).unwrap(), (0, 42));
    eviction[255] = 14;
    assert_eq!(read_reply_header(&eviction).unwrap(), (0, 14003));
    eviction[60] = 3;
    assert!(read_reply_header(&eviction).is_err());
}

/// Each changed request body decodes, on the server's side, into the request we sent.
#[test]
fn changed_bodies_decode_into_the_same_requests_on_the_server() {
    use crate::primitives::{Consumer, OptionalPartition};
    use crate::requests::{CreateTopic, StoreConsumerOffset, UpdateTopic};
    let mut session = session();
    let topic = CreateTopic {
        stream_id: Identifier::numeric(1),
        partitions_count: 3,
        compression_algorithm: CompressionAlgorithm::Gzip,
        message_expiry: 5_000_000,
        max_topic_size: 0,
        replication_factor: 1,
        name: Name::new("t").unwrap(),
    };
    let sent = session
        .encode(&Request::CreateTopic(topic.clone()))
        .unwrap();
    assert_eq!((sent.operation, sent.code), (132, 302));
    assert_eq!(
        decode(302, BytesMut::from(&sent.body[..])).unwrap(),
        V09Request::Request(Request::CreateTopic(topic))
    );
    let update = UpdateTopic {
        stream_id: Identifier::numeric(1),
        topic_id: Identifier::named("t").unwrap(),
        compression_algorithm: CompressionAlgorithm::None,
        message_expiry: u64::MAX,
        max_topic_size: 1 << 30,
        replication_factor: 1,
        name: Name::new("u").unwrap(),
    };
    let sent = session.encode(&Request::UpdateTopic(update)).unwrap();
    let V09Request::UpdateTopic { options, name, .. } =
        decode(304, BytesMut::from(&sent.body[..])).unwrap()
    else {
        panic!("an UpdateTopic")
    };
    assert_eq!(name.as_str(), "u");
    assert_eq!(options.compression, Some(CompressionAlgorithm::None));
    assert_eq!(options.message_expiry, Some(u64::MAX));
    assert_eq!(options.max_topic_size, Some(1 << 30));
    let store = StoreConsumerOffset {
        consumer: Consumer::new(Identifier::numeric(1)),
        stream_id: Identifier::numeric(1),
        topic_id: Identifier::numeric(1),
        partition_id: OptionalPartition(Some(0)),
        offset: 9,
    };
    let sent = session
        .encode(&Request::StoreConsumerOffset(store.clone()))
        .unwrap();
    assert_eq!(sent.operation, 161);
    assert_eq!(*sent.body.last().unwrap(), 1);
    assert_eq!(
        decode(121, BytesMut::from(&sent.body[..])).unwrap(),
        V09Request::Request(Request::StoreConsumerOffset(store))
    );
    let messages = [
        OutgoingMessage {
            id: 5,
            origin_timestamp: 100,
            payload: Bytes::from_static(b"hello"),
            user_headers: Bytes::from_static(b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v"),
        },
        OutgoingMessage {
            id: 6,
            origin_timestamp: 90,
            payload: Bytes::from_static(b""),
            user_headers: Bytes::new(),
        },
    ];
    let send = SendMessages {
        stream_id: Identifier::named("s").unwrap(),
        topic_id: Identifier::numeric(0),
        partitioning: Partitioning::key("k").unwrap(),
        batch: MessageBatch::from_messages(&messages),
    };
    let sent = session
        .encode(&Request::SendMessages(send.clone()))
        .unwrap();
    assert_eq!((sent.operation, sent.code), (160, 101));
    assert_eq!(
        decode(101, BytesMut::from(&sent.body[..])).unwrap(),
        V09Request::Request(Request::SendMessages(send))
    );
}

/// The server's 0.8 → 0.9 reply translation and ours back are inverses.
#[test]
fn replies_translate_back_to_the_server_s_0_8_payloads() {
    let topic = TopicInfo {
        id: 2,
        created_at: 5,
        partitions_count: 1,
        message_expiry: u64::MAX,
        compression_algorithm: CompressionAlgorithm::Gzip,
        max_topic_size: 1 << 30,
        replication_factor: 1,
        size_bytes: 10,
        messages_count: 1,
        name: Name::new("t").unwrap(),
    };
    let details = StreamDetails {
        stream: StreamInfo {
            id: 1,
            created_at: 4,
            topics_count: 1,
            size_bytes: 10,
            messages_count: 1,
            name: Name::new("s").unwrap(),
        },
        topics: vec![topic.clone()],
    };
    let topic_details = TopicDetails {
        topic,
        partitions: vec![PartitionInfo {
            id: 0,
            created_at: 5,
            segments_count: 1,
            current_offset: 0,
            size_bytes: 10,
            messages_count: 1,
        }],
    };
    let cases: [(u32, Vec<u8>); 5] = [
        (200, details.to_bytes().to_vec()),
        (201, details.stream.to_bytes().to_vec()),
        (300, topic_details.to_bytes().to_vec()),
        (301, details.topics[0].to_bytes().to_vec()),
        (301, Vec::new()),
    ];
    for (code, v08) in cases {
        let size = SegmentSize {
            bytes: 1 << 20,
            explicit: code == 300,
        };
        let v09 = translate(code, &v08, &|_| Some(size)).unwrap();
        assert_eq!(translate_reply(code, &v09).unwrap(), v08, "code {code}");
    }
}

#[test]
fn polls_come_back_as_the_stored_0_8_messages() {
    let mut batch = MessageBatch::from_messages(&[
        OutgoingMessage {
            id: 7,
            origin_timestamp: 100,
            payload: Bytes::from_static(b"one"),
            user_headers: Bytes::from_static(b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v"),
        },
        OutgoingMessage::new(&b"two"[..]),
    ]);
    batch.stamp(40, 5_000, || 99);
    let head = encode_poll_header(3, 41, 2);
    let v09 = batch::encode_polled(&head, batch.as_bytes()).unwrap();
    let v08 = translate_reply(100, &v09).unwrap();
    assert_eq!(&v08[..16], &head);
    assert_eq!(&v08[16..], batch.as_bytes());
    let polled = PolledMessages::decode_bytes(Bytes::from(v08)).unwrap();
    assert!(polled.messages().all(|m| m.checksum_is_valid()));
    assert_eq!(
        translate_reply(100, &encode_poll_header(0, 0, 0))
            .unwrap()
            .len(),
        16
    );
    assert!(translate_reply(100, &v09[..v09.len() - 1]).is_err());
}
