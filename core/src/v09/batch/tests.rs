use super::*;
use bytes::{Bytes, BytesMut};

fn message(id: u128, origin: u64, payload: &str, headers: &[u8]) -> OutgoingMessage {
    OutgoingMessage {
        id,
        origin_timestamp: origin,
        payload: Bytes::copy_from_slice(payload.as_bytes()),
        user_headers: Bytes::copy_from_slice(headers),
    }
}

/// The captured SendMessages body of protocol-0.9.md 11.5.
#[test]
fn decodes_the_captured_send() {
    let messages = [message(1, 1_700_000_000_002_000, "hello", b"")];
    let body = encode_send(
        &Identifier::Numeric(0),
        &Identifier::Numeric(0),
        &Partitioning::PartitionId(0),
        &messages,
    );
    assert_eq!(body.len(), 335);
    assert_eq!(
        &body[26 + 40..26 + 48],
        &0x708d77a236defceau64.to_le_bytes()
    );
    assert_eq!(&body[282..290], &0xb9bfbddb9ea55c8eu64.to_le_bytes());
    let send = decode_send(&body).unwrap();
    assert_eq!(send.partitioning, Partitioning::PartitionId(0));
    let view = send.batch.iter().next().unwrap();
    assert_eq!(
        (view.id(), view.origin_timestamp()),
        (1, 1_700_000_000_002_000)
    );
    assert_eq!(view.payload(), b"hello");
}

/// Found by the v09 fuzz target: stored offsets at the end of the u64 range.
#[test]
fn offsets_at_the_end_of_the_range_do_not_overflow() {
    let mut batch =
        MessageBatch::from_messages(&[message(1, 5, "a", b""), message(2, 5, "b", b"")]);
    batch.stamp(0, 7, || 0);
    // Both stored at offset u64::MAX (bytes 24..32 of each 64-byte header; 1-byte payloads).
    let mut stored = BytesMut::from(batch.as_bytes());
    for at in [24, 65 + 24] {
        stored[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    let mut head = [0u8; 16];
    head[12..16].copy_from_slice(&2u32.to_le_bytes());
    let body = encode_polled(&head, &stored).unwrap();
    let (_, _, messages) = decode_polled(&body).unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (messages[0].offset, messages[1].offset),
        (u64::MAX, u64::MAX)
    );
}

#[test]
fn refuses_bad_checksums_counts_and_lengths() {
    let messages = [message(1, 10, "a", b""), message(2, 11, "bb", b"")];
    let good = encode_send(
        &Identifier::Numeric(1),
        &Identifier::Numeric(1),
        &Partitioning::Balanced,
        &messages,
    );
    assert!(decode_send(&good).is_ok());
    let code = |body: &[u8]| decode_send(body).unwrap_err().code;
    let mut payload = good.clone();
    let last = payload.len() - 1;
    payload[last] ^= 1;
    assert_eq!(code(&payload), ErrorCode::InvalidMessageChecksum);
    let mut batch = good.clone();
    batch[26 + 24] ^= 1; // origin timestamp: covered by the batch checksum only
    assert_eq!(code(&batch), ErrorCode::InvalidBatchChecksum);
    let mut count = good.clone();
    let at = u32_at(&good, 0) as usize; // metadata messages_count: its last 4 bytes
    count[at] = 3;
    assert_eq!(code(&count), ErrorCode::InvalidMessagesCount);
    assert_eq!(code(&good[..good.len() - 1]), ErrorCode::InvalidCommand);
    let mut longer = good.clone();
    longer.push(0);
    assert_eq!(code(&longer), ErrorCode::InvalidCommand);
}

/// Stored messages of two appends come back as two batches with their own timestamps.
#[test]
fn polled_messages_become_batches_with_identical_values() {
    let mut first = MessageBatch::from_messages(&[
        message(7, 100, "one", b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v"),
        message(8, 90, "two", b""),
    ]);
    first.stamp(40, 5_000, || 0);
    let mut second = MessageBatch::from_messages(&[message(9, 200, "three", b"")]);
    second.stamp(42, 6_000, || 0);
    let mut stored = BytesMut::from(first.as_bytes());
    stored.extend_from_slice(second.as_bytes());
    let mut head = [0u8; 16];
    head[0..4].copy_from_slice(&3u32.to_le_bytes());
    head[4..12].copy_from_slice(&42u64.to_le_bytes());
    head[12..16].copy_from_slice(&3u32.to_le_bytes());
    let body = encode_polled(&head, &stored).unwrap();
    let (partition, current, messages) = decode_polled(&body).unwrap();
    assert_eq!((partition, current), (3, 42));
    let got: Vec<_> = messages
        .iter()
        .map(|m| {
            (
                m.id,
                m.offset,
                m.timestamp,
                m.origin_timestamp,
                m.payload.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (7, 40, 5_000, 100, b"one".to_vec()),
            (8, 41, 5_000, 90, b"two".to_vec()),
            (9, 42, 6_000, 200, b"three".to_vec()),
        ]
    );
    assert_eq!(messages[0].user_headers.len(), 12);
    // Two batches: the second header starts after the first batch's length.
    let first_len = u64_at(&body[16..], BATCH_LENGTH) as usize;
    assert_eq!(u64_at(&body[16 + first_len..], 8), 42);
    assert_eq!(encode_polled(&head, &[]).unwrap(), head.to_vec());
    // The same messages in the buffers a poll gathers them from: the same reply.
    let chunks = [first.as_bytes(), second.as_bytes()];
    assert_eq!(encode_polled_chunks(&head, &chunks).unwrap(), body);
    // Planned as pieces, the payloads and user headers stay in the stored buffers.
    let planned = polled_pieces(&head, &chunks).unwrap();
    let stored_pieces: Vec<_> = planned
        .pieces
        .iter()
        .filter(|piece| matches!(piece, Piece::Stored { .. }))
        .map(|piece| planned.bytes(piece, &chunks))
        .collect();
    let two = b"two".to_vec();
    let mut one = b"one".to_vec();
    one.extend_from_slice(b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v");
    assert_eq!(stored_pieces, [&one[..], &two[..], b"three"]);
    assert!(stored_pieces.iter().all(|piece| {
        chunks
            .iter()
            .any(|chunk| chunk.as_ptr_range().contains(&piece.as_ptr()))
    }));
    // A message without payload or headers adds no stored piece.
    let mut empty = MessageBatch::from_messages(&[message(1, 1, "", b"")]);
    empty.stamp(0, 1, || 0);
    let planned = polled_pieces(&head, &[empty.as_bytes()]).unwrap();
    assert_eq!(planned.pieces.len(), 1);
    assert_eq!(decode_polled(&planned.heads).unwrap().2.len(), 1);
    // A message cut between two buffers is refused (the caller joins them).
    let (left, right) = stored.split_at(70);
    assert!(encode_polled_chunks(&head, &[left, right]).is_err());
}

/// A send body whose frames are given as (id, offset delta, timestamp delta), against a batch
/// origin timestamp of 1000; every checksum right.
fn send_with_frames(frames: &[(u128, u32, u32)]) -> Vec<u8> {
    let messages: Vec<OutgoingMessage> = frames
        .iter()
        .map(|&(id, _, delta)| message(id, 1000 + u64::from(delta), "body", b""))
        .collect();
    // The routing metadata as encode_send writes it, then the hand-built batch.
    let mut body = encode_send(
        &Identifier::Numeric(1),
        &Identifier::Numeric(1),
        &Partitioning::Balanced,
        &messages,
    );
    let metadata = 4 + u32_at(&body, 0) as usize;
    body.truncate(metadata);
    let payload = b"body";
    let frames = frames
        .iter()
        .map(|&(id, offset_delta, delta)| (id, offset_delta, delta, &payload[..], &b""[..]));
    write_batch(&mut body, [0, 0, 0], 1000, frames);
    body
}

#[test]
fn a_send_keeps_its_frame_checksums_only_when_a_poll_would_build_the_same_frames() {
    let sums = |frames: &[(u128, u32, u32)]| {
        decode_send(&send_with_frames(frames))
            .unwrap()
            .batch
            .frame_checksums()
            .cloned()
    };
    let kept = sums(&[(1, 0, 0), (2, 1, 5)]).expect("kept");
    let body = send_with_frames(&[(1, 0, 0), (2, 1, 5)]);
    let frame_sum = |at: usize| u64_at(&body, at);
    let first = 4 + u32_at(&body, 0) as usize + BATCH_HEADER_SIZE;
    assert_eq!(
        &kept[..],
        [frame_sum(first), frame_sum(first + FRAME_HEADER_SIZE + 4)]
    );
    // The server assigns ids to id 0: the frame it polls is not the one sent.
    assert_eq!(sums(&[(1, 0, 0), (0, 1, 5)]), None);
    // Offset deltas other than 0, 1, 2...
    assert_eq!(sums(&[(1, 0, 0), (2, 7, 5)]), None);
    // Timestamp deltas not counted from the smallest origin timestamp.
    assert_eq!(sums(&[(1, 0, 3), (2, 1, 5)]), None);
}

#[test]
fn a_poll_of_a_whole_sent_batch_sends_its_checksums_back() {
    let body = send_with_frames(&[(1, 0, 0), (2, 1, 5), (3, 2, 9)]);
    let mut batch = decode_send(&body).unwrap().batch;
    let sums = batch.frame_checksums().cloned().unwrap();
    batch.stamp(40, 7_000, || 0);
    let stored = batch.as_bytes();
    let mut head = [0u8; 16];
    head[12..16].copy_from_slice(&3u32.to_le_bytes());
    let computed = polled_pieces(&head, &[stored]).unwrap();
    let reused = polled_pieces_known(&head, &[stored], &[Some(&sums)]).unwrap();
    assert_eq!(reused, computed);
    // They are taken as they are (so the hashing is skipped): bogus ones show up in the reply.
    let bogus = [7u64, 8, 9];
    let planned = polled_pieces_known(&head, &[stored], &[Some(&bogus)]).unwrap();
    let reply = encode(&planned, &[stored]);
    let first_frame = 16 + BATCH_HEADER_SIZE;
    assert_eq!(u64_at(&reply, first_frame), 7);
    assert!(decode_polled(&reply).is_err());
    // A poll from the second message builds other frames: the checksums are not used.
    let second = MessageView::parse(stored).unwrap().size();
    let tail = &stored[second..];
    assert_eq!(
        polled_pieces_known(&head, &[tail], &[Some(&bogus)]).unwrap(),
        polled_pieces(&head, &[tail]).unwrap()
    );
}

fn encode(planned: &PolledPieces, chunks: &[&[u8]]) -> Vec<u8> {
    planned
        .pieces
        .iter()
        .flat_map(|piece| planned.bytes(piece, chunks).to_vec())
        .collect()
}
