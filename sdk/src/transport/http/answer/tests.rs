use super::*;

#[test]
fn polled_ids_keep_all_128_bits() {
    let body = br#"{"partition_id":1,"current_offset":0,"count":1,"messages":[{"header":{"checksum":7,"id":340282366920938463463374607431768211455,"offset":0,"timestamp":5,"origin_timestamp":4,"user_headers_length":0,"payload_length":1,"reserved":0},"payload":"eA==","user_headers":[]}]}"#;
    let bytes = payload(Answer::Polled, body).unwrap();
    let message = rill_core::message::MessageIter::new(&bytes[16..])
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(message.id(), u128::MAX);
    assert_eq!((message.payload(), message.timestamp()), (&b"x"[..], 5));
}

proptest::proptest! {
    /// Whatever the body, reading it never panics.
    #[test]
    fn arbitrary_answers_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
        for answer in [Answer::Stats, Answer::Polled, Answer::User, Answer::Stream, Answer::Group, Answer::Cluster, Answer::Client] {
            let _ = payload(answer, &body);
        }
    }
}
