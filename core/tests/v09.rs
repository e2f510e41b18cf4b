//! Property tests of the 0.9 protocol's codecs (rill_core::v09): hostile bytes never panic and
//! are refused with a protocol status; messages survive the trip through a 0.9 send, storage
//! (0.8 messages, stamped) and a 0.9 poll with every value intact; the client side (our SDK's
//! and bench's) reads hostile replies without panicking and inverts the server's codec.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use rill_core::ErrorCode;
use rill_core::message::{MessageBatch, OutgoingMessage};
use rill_core::primitives::{Identifier, Partitioning};
use rill_core::requests::{CreateStream, CreateTopic, Ping, PollMessages, SendMessages};
use rill_core::v09::client::{self, ClientSession, ReplyError};
use rill_core::v09::{batch, header, options, requests, responses};
use rill_core::{CommandCode, Request};

fn messages() -> impl Strategy<Value = Vec<OutgoingMessage>> {
    let message = (
        1u128..,
        0u64..1_000_000,
        proptest::collection::vec(any::<u8>(), 0..200),
        proptest::option::of("[a-z]{1,8}"),
    )
        .prop_map(|(id, origin, payload, header)| OutgoingMessage {
            id,
            origin_timestamp: 1_700_000_000_000_000 + origin,
            payload: Bytes::from(payload),
            user_headers: header.map_or_else(Bytes::new, |value| {
                let mut blob = vec![2u8, 1, 0, 0, 0, b'k', 2];
                blob.extend_from_slice(&(value.len() as u32).to_le_bytes());
                blob.extend_from_slice(value.as_bytes());
                Bytes::from(blob)
            }),
        });
    proptest::collection::vec(message, 1..20)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn headers_either_refuse_or_round_trip(bytes in proptest::collection::vec(any::<u8>(), 256)) {
        let bytes: [u8; 256] = bytes.try_into().unwrap();
        if let Ok(parsed) = header::RequestHeader::parse(&bytes, 1 << 20) {
            prop_assert_eq!(header::RequestHeader::parse(&parsed.encode(), 1 << 20), Ok(parsed));
        }
    }

    #[test]
    fn command_bodies_never_panic(code in prop::sample::select(vec![
        13u32, 33, 35, 101, 121, 122, 202, 204, 302, 304, 606, 1, 200, 300,
    ]), body in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Err(error) = requests::decode(code, BytesMut::from(&body[..])) {
            prop_assert!(ErrorCode::ALL.contains(&error.code));
        }
        let _ = requests::decode_login(&body);
        let _ = options::decode(&body);
        let size = responses::SegmentSize { bytes: 1 << 20, explicit: code == 300 };
        let _ = responses::translate(code, &body, &|_| Some(size));
    }

    #[test]
    fn a_send_keeps_every_message(messages in messages(), flip in any::<prop::sample::Index>()) {
        let body = batch::encode_send(
            &Identifier::Numeric(1),
            &Identifier::Numeric(2),
            &Partitioning::PartitionId(3),
            &messages,
        );
        let send = batch::decode_send(&body).unwrap();
        prop_assert_eq!(send.batch.count() as usize, messages.len());
        for (view, sent) in send.batch.iter().zip(&messages) {
            prop_assert_eq!(view.id(), sent.id);
            prop_assert_eq!(view.origin_timestamp(), sent.origin_timestamp);
            prop_assert_eq!(view.payload(), &sent.payload[..]);
            prop_assert_eq!(view.user_headers(), &sent.user_headers[..]);
        }
        // Any flipped bit after the routing metadata is caught by a checksum or a length check.
        let mut flipped = body.clone();
        let metadata = 4 + u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let at = metadata + flip.index(body.len() - metadata);
        flipped[at] ^= 1;
        prop_assert!(batch::decode_send(&flipped).is_err());
    }

    #[test]
    fn stored_messages_poll_back_identically(
        appends in proptest::collection::vec(messages(), 1..4),
    ) {
        let mut stored = Vec::new();
        let mut expected = Vec::new();
        let mut offset = 10;
        for (i, messages) in appends.iter().enumerate() {
            let mut batch = MessageBatch::from_messages(messages);
            let timestamp = 1_800_000_000_000_000 + i as u64;
            batch.stamp(offset, timestamp, || 0);
            for message in messages {
                expected.push((message.id, offset, timestamp, message.origin_timestamp,
                    message.payload.to_vec(), message.user_headers.to_vec()));
                offset += 1;
            }
            stored.extend_from_slice(batch.as_bytes());
        }
        let head = [0u8; 16];
        let body = batch::encode_polled(&head, &stored).unwrap();
        let (_, _, polled) = batch::decode_polled(&body).unwrap();
        let got: Vec<_> = polled
            .into_iter()
            .map(|m| (m.id, m.offset, m.timestamp, m.origin_timestamp, m.payload, m.user_headers))
            .collect();
        prop_assert_eq!(got, expected);
        // Our clients read the 0.9 reply back into exactly the stored 0.8 messages, and the
        // pieces written without copying are the same reply.
        let v08 = client::translate_reply(CommandCode::PollMessages.code(), &body).unwrap();
        prop_assert_eq!(&v08[16..], &stored[..]);
        let first = MessageBatch::from_messages(&appends[0]).size();
        let chunks = [&stored[..first], &stored[first..]];
        prop_assert_eq!(batch::encode_polled_chunks(&head, &chunks).unwrap(), body);
    }

    #[test]
    fn sent_checksums_poll_back_as_computed(
        appends in proptest::collection::vec(messages(), 1..4),
        same_timestamp in any::<bool>(),
        skip in 0usize..3,
    ) {
        // Each append a 0.9 send as the server stores it, with the checksums it kept.
        let mut chunks = Vec::new();
        let mut sums = Vec::new();
        let mut offset = 0;
        for (i, messages) in appends.iter().enumerate() {
            let body = batch::encode_send(
                &Identifier::Numeric(1),
                &Identifier::Numeric(1),
                &Partitioning::Balanced,
                messages,
            );
            let mut stored = batch::decode_send(&body).unwrap().batch;
            // Appends in the same microsecond merge into one reply batch.
            let timestamp = if same_timestamp { 5 } else { 5 + i as u64 };
            let kept = stored.frame_checksums().cloned();
            prop_assert!(kept.is_some(), "ids are never 0 here");
            offset = stored.stamp(offset, timestamp, || 0) + 1;
            chunks.push(stored.as_bytes().to_vec());
            sums.push(kept);
        }
        // A poll may start inside the first append.
        let skip = skip.min(appends[0].len() - 1);
        let at = MessageBatch::from_messages(&appends[0][..skip]).size();
        chunks[0].drain(..at);
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let known: Vec<Option<&[u64]>> = sums.iter().map(|sum| sum.as_deref()).collect();
        let head = [0u8; 16];
        prop_assert_eq!(
            batch::polled_pieces_known(&head, &chunks, &known).unwrap(),
            batch::polled_pieces(&head, &chunks).unwrap()
        );
    }

    #[test]
    fn client_replies_never_panic(
        code in prop::sample::select(vec![
            1u32, 10, 31, 32, 33, 40, 45, 39, 100, 101, 121, 200, 201, 202, 300, 301, 302, 606,
        ]),
        status in prop::sample::select(vec![0u32, 0, 0, 3, 1012, 999_999]),
        body in proptest::collection::vec(any::<u8>(), 0..300),
        head in proptest::collection::vec(any::<u8>(), 256),
    ) {
        let _ = client::translate_reply(code, &body);
        let head: [u8; 256] = head.try_into().unwrap();
        if let Ok((len, status)) = client::read_reply_header(&head) {
            // Only replies and evictions are read; an eviction has no body and a known code.
            prop_assert!(matches!(head[60], 8 | 13));
            if head[60] == 13 {
                prop_assert_eq!(len, 0);
                prop_assert!(ErrorCode::from_code(status).is_some());
            } else {
                prop_assert_eq!(len + 256, u32::from_le_bytes(head[48..52].try_into().unwrap()) as usize);
            }
        }
        let mut session = ClientSession::new(7, "rill-sdk", "0.1.0").unwrap();
        let name = |text: &str| rill_core::primitives::Name::new(text).unwrap();
        let request = match code {
            40 => Request::LoginUser(rill_core::requests::LoginUser {
                username: name("iggy"),
                password: rill_core::primitives::ShortString("iggy".into()),
                version: None,
                context: None,
            }),
            45 => Request::LoginWithPersonalAccessToken(
                rill_core::requests::LoginWithPersonalAccessToken { token: name("token") },
            ),
            39 => Request::LogoutUser(rill_core::requests::LogoutUser {}),
            31 | 33 => Request::GetUser(rill_core::requests::GetUser {
                user_id: Identifier::Numeric(1),
            }),
            32 => Request::GetUsers(rill_core::requests::GetUsers {}),
            121 => Request::StoreConsumerOffset(rill_core::requests::StoreConsumerOffset {
                consumer: rill_core::primitives::Consumer::new(Identifier::Numeric(1)),
                stream_id: Identifier::Numeric(1),
                topic_id: Identifier::Numeric(1),
                partition_id: rill_core::primitives::OptionalPartition(Some(0)),
                offset: 1,
            }),
            100 => Request::PollMessages(PollMessages {
                consumer: rill_core::primitives::Consumer::new(Identifier::Numeric(1)),
                stream_id: Identifier::Numeric(1),
                topic_id: Identifier::Numeric(1),
                partition_id: rill_core::primitives::OptionalPartition(Some(0)),
                strategy: rill_core::primitives::PollingStrategy::offset(0),
                count: 10,
                auto_commit: false,
            }),
            200..=202 => Request::CreateStream(CreateStream { name: name("s") }),
            300..=302 => Request::CreateTopic(CreateTopic {
                stream_id: Identifier::Numeric(1),
                partitions_count: 1,
                compression_algorithm: rill_core::primitives::CompressionAlgorithm::None,
                message_expiry: 0,
                max_topic_size: 0,
                replication_factor: 1,
                name: name("t"),
            }),
            101 => Request::SendMessages(SendMessages {
                stream_id: Identifier::Numeric(1),
                topic_id: Identifier::Numeric(1),
                partitioning: Partitioning::PartitionId(0),
                batch: MessageBatch::from_messages(&[OutgoingMessage::new(&b"x"[..])]),
            }),
            _ => Request::Ping(Ping {}),
        };
        let sent = session.encode(&request).unwrap();
        match session.read_reply(&sent, status, &body) {
            // A non-zero status is the error, whatever the body.
            Err(ReplyError::Status(error)) if status != 0 => {
                prop_assert_eq!(error, ErrorCode::from_code(status).unwrap_or(ErrorCode::Error));
            }
            Ok(_) => prop_assert_eq!(status, 0),
            // With status 0 only a result section can refuse, or the body fail to decode.
            Err(ReplyError::Status(_)) => {
                prop_assert!(rill_core::v09::header::is_result_framed(sent.operation));
            }
            Err(ReplyError::Malformed(_)) => prop_assert_eq!(status, 0),
        }
    }
}
