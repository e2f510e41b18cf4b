//! Shared helpers: the three-way check (`cross_check`, and its forms for a whole request and
//! for SendMessages) and the hand-built edge-case values.

use crate::to_wire::ToWire;
use bytes::BytesMut;
use iggy_binary_protocol as wire;
use iggy_binary_protocol::requests::messages::*;
use iggy_binary_protocol::{RequestFrame, WireDecode, WireEncode, WireMessageIterator};
use rill_core::codec::{Decode, Encode};
use rill_core::frame::encode_request;
use rill_core::message::SendMessages;
use rill_core::primitives::*;
use rill_core::requests::*;
use std::fmt::Debug;

// ---------------------------------------------------------------------------------------------
// The three-way check
// ---------------------------------------------------------------------------------------------

/// Bytes equal, lengths equal, official bytes → our decoder → our value, our bytes → official
/// decoder → official value (consuming every byte).
pub(crate) fn cross_check<O>(ours: &O)
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
pub(crate) fn cross_check_request(request: &Request) {
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

// ---------------------------------------------------------------------------------------------
// Hand-built edge cases
// ---------------------------------------------------------------------------------------------

pub(crate) fn name(text: &str) -> Name {
    Name::new(text).unwrap()
}

/// 255 bytes: 63 four-byte scalars and three ASCII bytes.
pub(crate) fn longest_unicode_name() -> Name {
    name(&format!("{}abc", "🦀".repeat(63)))
}

pub(crate) fn nested_permissions() -> Permissions {
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
