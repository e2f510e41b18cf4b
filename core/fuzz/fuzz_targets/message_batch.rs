//! Fuzzes the message path: the input as a SendMessages body (`SendMessages::decode_owned`;
//! an accepted batch is iterated and stamped as the server does), and the same bytes as stored
//! messages (`MessageIter`, `MessageBatch::from_stored`). Must never panic; stamped messages
//! must carry consecutive offsets and valid checksums.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rill_core::ErrorCode;
use rill_core::codec::Encode;
use rill_core::message::{MessageBatch, MessageIter, SendMessages};

fn check_batch(batch: &mut MessageBatch) {
    let count = batch.count();
    assert_eq!(batch.iter().count() as u32, count);
    assert_eq!(batch.iter().map(|m| m.size()).sum::<usize>(), batch.size());
    let last = batch.stamp(100, 1_700_000_000_000_000, || 42);
    if count > 0 {
        assert_eq!(last, 100 + u64::from(count) - 1);
    }
    for (i, message) in batch.iter().enumerate() {
        assert_eq!(message.offset(), 100 + i as u64);
        assert!(message.checksum_is_valid());
        let _ = (message.header(), message.payload(), message.user_headers());
    }
}

fuzz_target!(|data: &[u8]| {
    match SendMessages::decode_owned(BytesMut::from(data)) {
        Ok(mut send) => {
            let encoded = send.to_bytes();
            assert_eq!(encoded.len(), send.encoded_len());
            let again = SendMessages::decode_owned(BytesMut::from(&encoded[..]))
                .expect("a re-encoded batch decodes");
            assert_eq!(again, send);
            check_batch(&mut send.batch);
        }
        Err(error) => assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code)),
    }

    let mut walked = 0;
    for message in MessageIter::new(data) {
        match message {
            Ok(view) => walked += view.size(),
            Err(error) => assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code)),
        }
    }
    assert!(walked <= data.len());
    if let Ok(mut batch) = MessageBatch::from_stored(BytesMut::from(data)) {
        assert_eq!(walked, data.len());
        check_batch(&mut batch);
    }
});
