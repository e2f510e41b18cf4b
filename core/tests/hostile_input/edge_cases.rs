//! Edge cases: declared lengths near u32::MAX, and stamping an empty stored batch.

use bytes::BytesMut;
use rill_core::codec::{Decode, Encode};
use rill_core::error::ErrorCode;
use rill_core::message::{MessageBatch, MessageHeader, MessageView, SendMessages};
use rill_core::primitives::user_headers;
use rill_core::primitives::{Identifier, Partitioning};
use rill_core::responses::*;

use ErrorCode::*;

#[test]
fn huge_declared_lengths_fail_fast_without_allocating() {
    // Proves length and count fields near u32::MAX are rejected by comparing with the bytes
    // present (no allocation of the declared size, which would abort the process): Str32,
    // SendMessages count, index positions, message lengths, list counts and user headers.
    let max = u32::MAX.to_le_bytes();
    // ClusterMetadata: name Str32 of 4 GiB.
    assert!(ClusterMetadata::from_bytes(&max).is_err());
    // ClientDetails: consumer_groups_count u32::MAX with no entries.
    let mut client = ClientInfo {
        client_id: 1,
        user_id: 0,
        transport: rill_core::primitives::Transport::Tcp,
        address: String::new(),
        consumer_groups_count: u32::MAX,
    }
    .to_bytes();
    assert_eq!(
        ClientDetails::from_bytes(&client).unwrap_err().code,
        InvalidCommand
    );
    client.truncate(client.len() - 1);
    assert!(ClientInfo::from_bytes(&client).is_err());
    // Stats with cache_metrics_count u32::MAX.
    let mut stats = vec![0u8; 108];
    for _ in 0..5 {
        stats.extend_from_slice(&0u32.to_le_bytes());
    }
    stats.extend_from_slice(&0u32.to_le_bytes());
    stats.extend_from_slice(&max);
    assert_eq!(Stats::from_bytes(&stats).unwrap_err().code, InvalidCommand);
    // SendMessages: messages_count u32::MAX → index block larger than the payload (4034).
    let mut body = 18u32.to_le_bytes().to_vec();
    Identifier::numeric(0).encode(&mut body);
    Identifier::numeric(0).encode(&mut body);
    Partitioning::Balanced.encode(&mut body);
    body.extend_from_slice(&max);
    assert_eq!(
        SendMessages::decode_owned(BytesMut::from(&body[..]))
            .unwrap_err()
            .code,
        InvalidIndexesByteSize
    );
    // A message declaring a 4 GiB payload (4022) and 4 GiB of user headers (4017).
    let header = MessageHeader {
        payload_length: u32::MAX,
        ..MessageHeader::default()
    };
    assert_eq!(
        MessageView::parse(&header.to_bytes()).unwrap_err().code,
        TooBigMessagePayload
    );
    let header = MessageHeader {
        user_headers_length: u32::MAX,
        ..MessageHeader::default()
    };
    assert_eq!(
        MessageView::parse(&header.to_bytes()).unwrap_err().code,
        TooBigUserHeaders
    );
    // A user-header field declaring 4 GiB.
    assert_eq!(
        user_headers::parse(&[2, 0xff, 0xff, 0xff, 0xff, b'k'])
            .unwrap_err()
            .code,
        InvalidHeaderKey
    );
    // A user-header blob over 100 000 bytes (4017) even if well formed.
    let mut big = Vec::new();
    let field = user_headers::HeaderField {
        kind: user_headers::HeaderKind::Raw,
        value: vec![7; 255],
    };
    while big.len() <= 100_000 {
        user_headers::encode(&[(field.clone(), field.clone())], &mut big);
    }
    assert_eq!(
        user_headers::parse(&big).unwrap_err().code,
        TooBigUserHeaders
    );
}

#[test]
fn stamping_an_empty_stored_batch_does_not_panic() {
    // Proves MessageBatch::stamp on a batch with no messages (from_stored of an empty run, a
    // public path) leaves it untouched instead of underflowing `offset - 1` at offset 0.
    let mut batch = MessageBatch::from_stored(BytesMut::new()).unwrap();
    assert!(batch.is_empty());
    let last = batch.stamp(0, 1, || unreachable!("no messages"));
    assert_eq!(last, 0);
    assert_eq!(batch.size(), 0);
    let mut batch = MessageBatch::from_stored(BytesMut::new()).unwrap();
    assert_eq!(batch.stamp(5, 1, || 1), 4);
}
