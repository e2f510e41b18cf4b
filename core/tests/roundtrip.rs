//! Round-trip property tests: for every one of the 47 request types and every response type,
//! arbitrary *valid* values (tests/common generators) are encoded, the reported
//! `encoded_len()` is checked against the bytes actually produced, and decoding the bytes must
//! give back exactly the original value. Requests are additionally sent through the
//! code-dispatching `Request::decode` and through a whole TCP frame (`frame::encode_request`),
//! so the command code each type is tied to is exercised too.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rill_core::codec::{Decode, Encode};
use rill_core::frame::{REQUEST_HEADER_SIZE, RequestHeader, encode_request};
use rill_core::message::{MessageHeader, MessageIter, PolledMessages, SendMessages};
use rill_core::primitives::user_headers;
use rill_core::requests::{CommandCode, Request};
use rill_core::responses::*;

const CASES: u32 = 256;

/// Proves one command round-trips: generates `CASES` valid requests of `code` and checks the
/// payload length, `Request::decode`, and the frame header (length = 4 + payload, code).
fn check_request_round_trips(code: CommandCode) {
    let mut runner = TestRunner::new(config(CASES));
    runner
        .run(&request(code), |request| {
            prop_assert_eq!(request.command(), code);
            let mut payload = Vec::new();
            request.encode_payload(&mut payload);
            prop_assert_eq!(payload.len(), request.payload_len(), "payload_len");
            let decoded = Request::decode(code.code(), BytesMut::from(&payload[..]))
                .map_err(|error| TestCaseError::fail(format!("{code}: {error}")))?;
            prop_assert_eq!(&decoded, &request);

            let mut frame = Vec::new();
            encode_request(&request, &mut frame);
            let header = RequestHeader::parse(frame[..REQUEST_HEADER_SIZE].try_into().unwrap());
            prop_assert_eq!(header.code, code.code());
            prop_assert_eq!(header.length as usize, 4 + payload.len());
            prop_assert_eq!(&frame[REQUEST_HEADER_SIZE..], &payload[..]);
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{code}: {failure}"));
}

/// One test per command, so a failure names the command. `every_command_has_a_round_trip_test`
/// checks the list is complete.
macro_rules! request_round_trips {
    ($($test:ident => $command:ident,)*) => {
        $(
            #[test]
            fn $test() {
                // Proves the $command request survives encode → decode unchanged (see
                // check_request_round_trips).
                check_request_round_trips(CommandCode::$command);
            }
        )*

        const TESTED_COMMANDS: &[CommandCode] = &[$(CommandCode::$command,)*];
    };
}

request_round_trips! {
    ping => Ping,
    get_stats => GetStats,
    get_snapshot => GetSnapshot,
    get_cluster_metadata => GetClusterMetadata,
    get_me => GetMe,
    get_client => GetClient,
    get_clients => GetClients,
    get_user => GetUser,
    get_users => GetUsers,
    create_user => CreateUser,
    delete_user => DeleteUser,
    update_user => UpdateUser,
    update_permissions => UpdatePermissions,
    change_password => ChangePassword,
    login_user => LoginUser,
    logout_user => LogoutUser,
    get_personal_access_tokens => GetPersonalAccessTokens,
    create_personal_access_token => CreatePersonalAccessToken,
    delete_personal_access_token => DeletePersonalAccessToken,
    login_with_personal_access_token => LoginWithPersonalAccessToken,
    poll_messages => PollMessages,
    send_messages => SendMessages,
    flush_unsaved_buffer => FlushUnsavedBuffer,
    get_consumer_offset => GetConsumerOffset,
    store_consumer_offset => StoreConsumerOffset,
    delete_consumer_offset => DeleteConsumerOffset,
    get_stream => GetStream,
    get_streams => GetStreams,
    create_stream => CreateStream,
    delete_stream => DeleteStream,
    update_stream => UpdateStream,
    purge_stream => PurgeStream,
    get_topic => GetTopic,
    get_topics => GetTopics,
    create_topic => CreateTopic,
    delete_topic => DeleteTopic,
    update_topic => UpdateTopic,
    purge_topic => PurgeTopic,
    create_partitions => CreatePartitions,
    delete_partitions => DeletePartitions,
    delete_segments => DeleteSegments,
    get_consumer_group => GetConsumerGroup,
    get_consumer_groups => GetConsumerGroups,
    create_consumer_group => CreateConsumerGroup,
    delete_consumer_group => DeleteConsumerGroup,
    join_consumer_group => JoinConsumerGroup,
    leave_consumer_group => LeaveConsumerGroup,
}

#[test]
fn every_command_has_a_round_trip_test() {
    // Proves the per-command tests above cover exactly the 47 commands of CommandCode::ALL, so
    // no request type escapes the round-trip property.
    assert_eq!(CommandCode::ALL.len(), 47);
    assert_eq!(TESTED_COMMANDS, CommandCode::ALL);
}

#[test]
fn typed_requests_round_trip_without_the_dispatcher() {
    // Proves each request type's own Decode (not only Request::decode) reads back what its
    // Encode wrote, by decoding the payload with the concrete type for a sample of every command.
    let mut runner = TestRunner::new(config(64));
    runner
        .run(&any_request(), |request| {
            macro_rules! typed {
                ($($variant:ident),*) => {
                    match &request {
                        $(Request::$variant(inner) => { assert_round_trip(inner); })*
                    }
                };
            }
            typed!(
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
                SendMessages,
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
            Ok(())
        })
        .unwrap();
}

proptest! {
    #![proptest_config(config(CASES))]

    // ---- SendMessages details ----------------------------------------------------------------

    #[test]
    fn send_messages_keeps_every_message_intact(request in common::send_messages()) {
        // Proves the SendMessages body round-trips at the message level: decode_owned keeps each
        // message's id, origin timestamp, payload and user headers, in order, and the decoded
        // batch re-encodes to identical bytes.
        let bytes = request.to_bytes();
        let decoded = SendMessages::decode_owned(BytesMut::from(&bytes[..])).unwrap();
        prop_assert_eq!(decoded.batch.count(), request.batch.count());
        for (ours, theirs) in decoded.batch.iter().zip(request.batch.iter()) {
            prop_assert_eq!(ours.id(), theirs.id());
            prop_assert_eq!(ours.origin_timestamp(), theirs.origin_timestamp());
            prop_assert_eq!(ours.payload(), theirs.payload());
            prop_assert_eq!(ours.user_headers(), theirs.user_headers());
            prop_assert_eq!(ours.offset(), 0);
            prop_assert_eq!(ours.timestamp(), 0);
            prop_assert_eq!(ours.checksum(), 0);
        }
        prop_assert_eq!(decoded.to_bytes(), bytes);
    }

    #[test]
    fn stamping_assigns_offsets_timestamp_and_valid_checksums(
        request in common::send_messages(),
        first_offset in 0u64..(1 << 62),
        timestamp in any::<u64>(),
    ) {
        // Proves MessageBatch::stamp writes consecutive offsets from `first_offset`, one
        // timestamp, a new id only where the client sent 0, and a checksum that verifies; and
        // that the stamped bytes are still a valid stored batch.
        let mut decoded = SendMessages::decode_owned(BytesMut::from(&request.to_bytes()[..])).unwrap();
        let ids: Vec<u128> = decoded.batch.iter().map(|m| m.id()).collect();
        let last = decoded.batch.stamp(first_offset, timestamp, || 77);
        prop_assert_eq!(last, first_offset + u64::from(decoded.batch.count()) - 1);
        for (i, message) in decoded.batch.iter().enumerate() {
            prop_assert_eq!(message.offset(), first_offset + i as u64);
            prop_assert_eq!(message.timestamp(), timestamp);
            prop_assert_eq!(message.id(), if ids[i] == 0 { 77 } else { ids[i] });
            prop_assert!(message.checksum_is_valid());
        }
        let stored = rill_core::message::MessageBatch::from_stored(decoded.batch.clone().into_bytes()).unwrap();
        prop_assert_eq!(stored.count(), decoded.batch.count());
    }

    #[test]
    fn message_header_round_trips(
        checksum in any::<u64>(), id in any::<u128>(), offset in any::<u64>(),
        timestamp in any::<u64>(), origin_timestamp in any::<u64>(),
        user_headers_length in any::<u32>(), payload_length in any::<u32>(), reserved in any::<u64>(),
    ) {
        // Proves the 64-byte message header encodes every field at its protocol.md 6.1 offset
        // and decodes back unchanged.
        let header = MessageHeader {
            checksum, id, offset, timestamp, origin_timestamp,
            user_headers_length, payload_length, reserved,
        };
        let bytes = assert_round_trip(&header);
        prop_assert_eq!(bytes.len(), 64);
        prop_assert_eq!(&bytes[0..8], &checksum.to_le_bytes()[..]);
        prop_assert_eq!(&bytes[8..24], &id.to_le_bytes()[..]);
        prop_assert_eq!(&bytes[40..48], &origin_timestamp.to_le_bytes()[..]);
        prop_assert_eq!(&bytes[48..52], &user_headers_length.to_le_bytes()[..]);
        prop_assert_eq!(&bytes[52..56], &payload_length.to_le_bytes()[..]);
    }

    #[test]
    fn user_headers_round_trip(pairs in header_pairs()) {
        // Proves a user-header blob written by user_headers::encode parses back to the same
        // key/value pairs, and encoded_len matches the blob.
        let mut blob = Vec::new();
        user_headers::encode(&pairs, &mut blob);
        prop_assert_eq!(blob.len(), user_headers::encoded_len(&pairs));
        prop_assert_eq!(user_headers::parse(&blob).unwrap(), pairs);
    }

    // ---- Primitives ----------------------------------------------------------------------------

    #[test]
    fn primitives_round_trip(
        identifier in identifier(), consumer in consumer(), partition in optional_partition(),
        strategy in polling_strategy(), partitioning in partitioning(), name in name(),
        password in short_string(), permissions in permissions(),
    ) {
        // Proves every shared encoding of protocol.md section 2 round-trips, with the fixed
        // sizes the protocol states (optional partition 5 bytes, strategy 9 bytes).
        assert_round_trip(&identifier);
        assert_round_trip(&consumer);
        prop_assert_eq!(assert_round_trip(&partition).len(), 5);
        prop_assert_eq!(assert_round_trip(&strategy).len(), 9);
        assert_round_trip(&partitioning);
        assert_round_trip(&name);
        assert_round_trip(&password);
        let blob = assert_round_trip(&permissions);
        let entries: usize = permissions.streams.iter().map(|s| 12 + 9 * s.topics.len()).sum();
        prop_assert_eq!(blob.len(), 11 + entries);
    }

    // ---- Responses -----------------------------------------------------------------------------

    #[test]
    fn stream_responses_round_trip(
        info in stream_info(), details in stream_details(), list in prop::collection::vec(stream_info(), 0..4),
    ) {
        // Proves Stream records, StreamDetails (with topics_count = following topics) and the
        // GetStreams list round-trip; the list decoder loops to the end of the payload.
        assert_round_trip(&info);
        assert_round_trip(&details);
        assert_round_trip(&list);
    }

    #[test]
    fn topic_responses_round_trip(
        info in topic_info(), details in topic_details(), partition in partition_info(),
        list in prop::collection::vec(topic_info(), 0..4),
    ) {
        // Proves TopicHeader (51 + n bytes), TopicDetails, Partition (40 bytes) and the
        // GetTopics list round-trip.
        prop_assert_eq!(assert_round_trip(&info).len(), 51 + info.name.as_str().len());
        assert_round_trip(&details);
        prop_assert_eq!(assert_round_trip(&partition).len(), 40);
        assert_round_trip(&list);
    }

    #[test]
    fn consumer_group_responses_round_trip(
        info in consumer_group_info(), member in consumer_group_member(),
        details in consumer_group_details(), list in prop::collection::vec(consumer_group_info(), 0..4),
        offset in consumer_offset_info(),
    ) {
        // Proves ConsumerGroup records, members, ConsumerGroupDetails, the GetConsumerGroups
        // list and ConsumerOffset (20 bytes) round-trip.
        prop_assert_eq!(assert_round_trip(&info).len(), 13 + info.name.as_str().len());
        assert_round_trip(&member);
        assert_round_trip(&details);
        assert_round_trip(&list);
        prop_assert_eq!(assert_round_trip(&offset).len(), 20);
    }

    #[test]
    fn system_responses_round_trip(
        stats in stats(), metric in cache_metric(), client in client_info(),
        clients in prop::collection::vec(client_info(), 0..4), group in client_group(),
        details in client_details(), node in cluster_node(), metadata in cluster_metadata(),
    ) {
        // Proves Stats (fixed part 108 bytes), cache metrics (32 bytes), Client records and the
        // GetClients list, ClientDetails (12-byte group entries) and ClusterMetadata round-trip.
        assert_round_trip(&stats);
        prop_assert_eq!(assert_round_trip(&metric).len(), 32);
        prop_assert_eq!(assert_round_trip(&client).len(), 17 + client.address.len());
        assert_round_trip(&clients);
        prop_assert_eq!(assert_round_trip(&group).len(), 12);
        let bytes = assert_round_trip(&details);
        prop_assert_eq!(bytes.len(), 17 + details.address.len() + 12 * details.consumer_groups.len());
        assert_round_trip(&node);
        assert_round_trip(&metadata);
    }

    #[test]
    fn user_responses_round_trip(
        user in user_info(), details in user_details(), users in prop::collection::vec(user_info(), 0..4),
        identity in identity_info(), token in raw_personal_access_token(),
        info in personal_access_token_info(), tokens in prop::collection::vec(personal_access_token_info(), 0..4),
    ) {
        // Proves User records (14 + n bytes), UserDetails with and without permissions, the
        // GetUsers list, the login identity (4 bytes), the raw PAT and the PAT list round-trip.
        prop_assert_eq!(assert_round_trip(&user).len(), 14 + user.username.as_str().len());
        let bytes = assert_round_trip(&details);
        if details.permissions.is_none() {
            prop_assert_eq!(&bytes[bytes.len() - 4..], &[0u8, 0, 0, 0][..]);
        }
        assert_round_trip(&users);
        prop_assert_eq!(assert_round_trip(&identity).len(), 4);
        assert_round_trip(&token);
        assert_round_trip(&info);
        assert_round_trip(&tokens);
    }

    #[test]
    fn polled_messages_round_trip(polled in polled_messages()) {
        // Proves the PollMessages response round-trips through both decoders (the zero-copy
        // decode_bytes and Decode::from_bytes), with count = the messages that follow and every
        // stored checksum still valid.
        let bytes = assert_round_trip(&polled);
        let decoded = PolledMessages::decode_bytes(Bytes::from(bytes.clone())).unwrap();
        prop_assert_eq!(&decoded, &polled);
        prop_assert_eq!(decoded.count as usize, MessageIter::new(decoded.messages_bytes()).count());
        prop_assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), polled.count);
        prop_assert!(decoded.messages().all(|m| m.checksum_is_valid()));
    }
}

#[test]
fn list_responses_round_trip_when_empty() {
    // Proves an empty list (the empty OK frame of protocol.md section 3) decodes as no records
    // for every list response, and a list of one record is exactly that record's bytes.
    assert!(Vec::<StreamInfo>::from_bytes(&[]).unwrap().is_empty());
    assert!(Vec::<TopicInfo>::from_bytes(&[]).unwrap().is_empty());
    assert!(Vec::<UserInfo>::from_bytes(&[]).unwrap().is_empty());
    assert!(Vec::<ClientInfo>::from_bytes(&[]).unwrap().is_empty());
    assert!(
        Vec::<ConsumerGroupInfo>::from_bytes(&[])
            .unwrap()
            .is_empty()
    );
    assert!(
        Vec::<PersonalAccessTokenInfo>::from_bytes(&[])
            .unwrap()
            .is_empty()
    );
    let token = PersonalAccessTokenInfo {
        name: rill_core::primitives::Name::new("pat").unwrap(),
        expiry_at: 0,
    };
    assert_eq!(vec![token.clone()].to_bytes(), token.to_bytes());
    // A truncated trailing record is an error (protocol.md 12.6), not silently dropped.
    let mut bytes = vec![token.clone(), token].to_bytes();
    bytes.pop();
    assert!(Vec::<PersonalAccessTokenInfo>::from_bytes(&bytes).is_err());
}
