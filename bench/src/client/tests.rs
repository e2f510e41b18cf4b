use super::*;
use rill_core::message::encode_poll_header;

#[test]
fn prepared_batches_decode_as_the_server_would() {
    let batch = prepare_batch(
        &Identifier::named("bench-stream-1").unwrap(),
        &Identifier::numeric(0),
        &Partitioning::PartitionId(0),
        &[10, 20, 30],
        Protocol::V08,
    );
    assert_eq!(batch.messages, 3);
    assert_eq!(batch.payload_bytes, 60);
    assert_eq!(batch.bytes, 3 * 64 + 60);
    let header = rill_core::frame::RequestHeader::parse(batch.frame[..8].try_into().unwrap());
    assert_eq!(header.code, 101);
    assert_eq!(header.length as usize, batch.frame.len() - 4);
    let decoded = SendMessages::decode_owned(BytesMut::from(&batch.frame[8..])).unwrap();
    assert_eq!(decoded.batch.count(), 3);
    let payload_sizes: Vec<_> = decoded.batch.iter().map(|m| m.payload().len()).collect();
    assert_eq!(payload_sizes, [10, 20, 30]);
}

#[test]
fn poll_summaries_count_messages_and_bytes() {
    let batch = MessageBatch::from_messages(&[
        OutgoingMessage::new(&b"hello"[..]),
        OutgoingMessage::new(&b"world!"[..]),
    ]);
    let mut batch = MessageBatch::from_stored(batch.into_bytes()).unwrap();
    batch.stamp(41, 7, || 9);
    let mut payload = encode_poll_header(3, 42, 2).to_vec();
    payload.extend_from_slice(batch.as_bytes());
    let summary = summarise_poll(&payload).unwrap();
    assert_eq!(
        summary,
        PollSummary {
            partition_id: 3,
            current_offset: 42,
            messages: 2,
            bytes: 2 * 64 + 11,
            payload_bytes: 11,
            last_offset: Some(42),
        }
    );
    let empty = summarise_poll(&encode_poll_header(0, 0, 0)).unwrap();
    assert_eq!(empty.messages, 0);
    assert_eq!(empty.last_offset, None);
    assert!(summarise_poll(&payload[..20]).is_err());
}
