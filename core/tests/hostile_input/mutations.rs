//! Mutations: valid requests, messages, user headers and responses damaged at random.

use crate::common::*;
use crate::helpers::*;
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::TestRunner;
use rill_core::codec::Encode;
use rill_core::primitives::user_headers;

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
