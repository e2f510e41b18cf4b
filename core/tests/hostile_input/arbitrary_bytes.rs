//! Arbitrary bytes: every request, message, poll-response, user-header, frame-header and
//! response decoder fed random bytes, and the response table's coverage.

use crate::common::*;
use crate::helpers::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rill_core::error::ErrorCode;
use rill_core::frame::{RequestHeader, ResponseHeader};
use rill_core::requests::CommandCode;

use ErrorCode::*;

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
