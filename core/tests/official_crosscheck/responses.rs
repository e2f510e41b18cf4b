//! Responses: every response type, poll responses, user headers and the response frames.

use crate::common::*;
use crate::helpers::cross_check;
use bytes::BytesMut;
use iggy_binary_protocol as wire;
use iggy_binary_protocol::requests::messages::*;
use iggy_binary_protocol::responses::messages::{PollMessagesResponse, PollMessagesResponseHeader};
use iggy_binary_protocol::responses::system::EmptyResponse;
use iggy_binary_protocol::{ResponseFrame, WireDecode, WireEncode, WireMessageViewMut};
use proptest::prelude::*;
use rill_core::ErrorCode;
use rill_core::codec::Encode;
use rill_core::frame::ResponseHeader;
use rill_core::message::PolledMessages;
use rill_core::primitives::user_headers;
use rill_core::responses::*;
use std::num::NonZeroU32;

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn stream_responses_agree(
        info in stream_info(), details in stream_details(),
        list in prop::collection::vec(stream_info(), 0..4),
    ) {
        // Proves Stream (StreamResponse), StreamDetails (GetStreamResponse, incl. nested topic
        // headers) and the GetStreams list agree with the official crate both ways.
        cross_check(&info);
        cross_check(&details);
        cross_check(&list);
    }

    #[test]
    fn topic_responses_agree(
        info in topic_info(), details in topic_details(), partition in partition_info(),
        list in prop::collection::vec(topic_info(), 0..4),
    ) {
        // Proves TopicHeader, TopicDetails (GetTopicResponse), Partition and the GetTopics list
        // agree with the official crate both ways.
        cross_check(&info);
        cross_check(&details);
        cross_check(&partition);
        cross_check(&list);
    }

    #[test]
    fn consumer_group_responses_agree(
        info in consumer_group_info(), member in consumer_group_member(),
        details in consumer_group_details(),
        list in prop::collection::vec(consumer_group_info(), 0..4),
        offset in consumer_offset_info(),
    ) {
        // Proves ConsumerGroup, members, ConsumerGroupDetails, the GetConsumerGroups list and
        // ConsumerOffset agree with the official crate both ways.
        cross_check(&info);
        cross_check(&member);
        cross_check(&details);
        cross_check(&list);
        cross_check(&offset);
    }

    #[test]
    fn system_responses_agree(
        stats in stats(), client in client_info(),
        clients in prop::collection::vec(client_info(), 0..4), group in client_group(),
        details in client_details(), node in cluster_node(), metadata in cluster_metadata(),
    ) {
        // Proves Stats (incl. cache metrics and semver 0 ↔ None), Client, the GetClients list,
        // client group entries, ClientDetails (GetMe/GetClient) and ClusterMetadata agree with
        // the official crate both ways.
        cross_check(&stats);
        cross_check(&client);
        cross_check(&clients);
        cross_check(&group);
        cross_check(&details);
        cross_check(&node);
        cross_check(&metadata);
    }

    #[test]
    fn user_responses_agree(
        user in user_info(), details in user_details(),
        users in prop::collection::vec(user_info(), 0..4), identity in identity_info(),
        token in raw_personal_access_token(), info in personal_access_token_info(),
        tokens in prop::collection::vec(personal_access_token_info(), 0..4),
    ) {
        // Proves User, UserDetails (permissions absent = 4 zero bytes, present = flag + length
        // + blob), the GetUsers list, the login identity, the raw PAT and the PAT list agree
        // with the official crate both ways.
        cross_check(&user);
        cross_check(&details);
        cross_check(&users);
        cross_check(&identity);
        cross_check(&token);
        cross_check(&info);
        cross_check(&tokens);
    }

    #[test]
    fn poll_responses_agree(polled in polled_messages()) {
        // PollMessages: the official crate has a header codec and a message iterator, but no
        // encoder for whole stored messages. Proves (a) our response decodes with the official
        // header decoder and iterator to the same header and message fields, consuming all the
        // bytes, and (b) a response assembled from official pieces (header encoder,
        // RawMessage::encode_header, WireMessageViewMut setters) is byte-identical to ours and
        // decodes with our decoder to the same value.
        let ours = polled.to_bytes();
        let (header, _) = PollMessagesResponseHeader::decode(&ours).unwrap();
        prop_assert_eq!(&header, &PollMessagesResponseHeader {
            partition_id: polled.partition_id,
            current_offset: polled.current_offset,
            messages_count: polled.count,
        });
        let response = PollMessagesResponse::decode(&ours).unwrap();
        let mut walked = 16;
        let mut theirs = BytesMut::new();
        header.encode(&mut theirs);
        for (official, view) in response.messages.zip(polled.messages()) {
            let official = official.unwrap();
            prop_assert_eq!(official.checksum(), view.checksum());
            prop_assert_eq!(official.id(), view.id());
            prop_assert_eq!(official.offset(), view.offset());
            prop_assert_eq!(official.timestamp(), view.timestamp());
            prop_assert_eq!(official.origin_timestamp(), view.origin_timestamp());
            prop_assert_eq!(official.payload(), view.payload());
            prop_assert_eq!(official.user_headers(), view.user_headers());
            walked += official.total_size();

            let start = theirs.len();
            RawMessage {
                id: official.id(),
                origin_timestamp: official.origin_timestamp(),
                headers: Some(official.user_headers()),
                payload: official.payload(),
            }
            .encode_header(&mut theirs);
            theirs.extend_from_slice(official.payload());
            theirs.extend_from_slice(official.user_headers());
            let mut stored = WireMessageViewMut::new(&mut theirs[start..]).unwrap();
            stored.set_offset(view.offset());
            stored.set_timestamp(view.timestamp());
            stored.set_checksum(view.checksum());
        }
        prop_assert_eq!(walked, ours.len());
        prop_assert_eq!(&ours[..], &theirs[..]);
        prop_assert_eq!(PolledMessages::decode_bytes(theirs.freeze()).unwrap(), polled);
    }

    #[test]
    fn user_headers_agree(pairs in header_pairs()) {
        // User headers: the official crate has an encoder, a structural validator and an
        // iterator (no typed decoder). Proves identical bytes from both encoders, that our blob
        // passes the official validator with the same pair count and iterates to the same
        // kinds and bytes, and that the official blob parses with ours to the same pairs.
        let mut ours = Vec::new();
        user_headers::encode(&pairs, &mut ours);
        let entries: Vec<(u8, &[u8], u8, &[u8])> = pairs
            .iter()
            .map(|(key, value)| (key.kind as u8, &key.value[..], value.kind as u8, &value.value[..]))
            .collect();
        let mut theirs = BytesMut::new();
        wire::encode_user_headers(&entries, &mut theirs);
        prop_assert_eq!(&ours[..], &theirs[..]);
        prop_assert_eq!(wire::user_headers_encoded_size(&entries), ours.len());
        prop_assert_eq!(wire::validate_user_headers(&ours), Ok(pairs.len() as u32));
        let official = wire::WireUserHeaders::from_slice(&ours).unwrap();
        for (entry, (key, value)) in official.iter().zip(&pairs) {
            prop_assert_eq!(entry.key_kind.0, key.kind as u8);
            prop_assert_eq!(entry.key, &key.value[..]);
            prop_assert_eq!(entry.value_kind.0, value.kind as u8);
            prop_assert_eq!(entry.value, &value.value[..]);
        }
        prop_assert_eq!(user_headers::parse(&theirs).unwrap(), pairs);
    }
}

#[test]
fn response_frames_agree_for_every_status() {
    // Proves our response headers equal the official framing: an OK frame is status 0 + length
    // + payload, and every error status of ErrorCode::ALL is `status, 0` with no payload, which
    // both sides parse back to the same status.
    for &code in ErrorCode::ALL {
        let mut theirs = BytesMut::new();
        ResponseFrame::encode_error(NonZeroU32::new(code.code()).unwrap(), &mut theirs);
        let ours = ResponseHeader::error(code).to_bytes();
        assert_eq!(ours, theirs[..], "{code}");
        let (frame, consumed) = ResponseFrame::decode(&ours).unwrap();
        assert_eq!(
            (frame.status, frame.payload.len(), consumed),
            (code.code(), 0, 8)
        );
        assert_eq!(ResponseHeader::parse(ours).result(), Err(code));
    }
    let payload = IdentityInfo { user_id: 7 }.to_bytes();
    let mut theirs = BytesMut::new();
    ResponseFrame::encode_ok(&payload, &mut theirs).unwrap();
    let mut ours = ResponseHeader::ok(payload.len()).to_bytes().to_vec();
    ours.extend_from_slice(&payload);
    assert_eq!(ours, theirs[..]);
    // Empty OK: the official EmptyResponse has no bytes, our empty OK frame is 8 zero bytes.
    assert_eq!(EmptyResponse.encoded_size(), 0);
    let mut theirs = BytesMut::new();
    ResponseFrame::encode_ok(&EmptyResponse.to_bytes(), &mut theirs).unwrap();
    assert_eq!(ResponseHeader::ok(0).to_bytes(), theirs[..]);
}
