use super::*;
use bytes::Bytes;

fn message(size: usize) -> OutgoingMessage {
    OutgoingMessage::new(Bytes::from(vec![0u8; size]))
}

#[test]
fn batches_fill_by_count() {
    let now = Instant::now();
    let mut accumulator = Accumulator::new(3, 1 << 20, Duration::from_secs(1));
    assert!(
        accumulator
            .push(Partitioning::Balanced, message(1), now)
            .is_empty()
    );
    assert!(
        accumulator
            .push(Partitioning::Balanced, message(1), now)
            .is_empty()
    );
    let ready = accumulator.push(Partitioning::Balanced, message(1), now);
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].messages.len(), 3);
    assert!(accumulator.is_empty());
}

#[test]
fn batches_never_exceed_the_byte_limit() {
    // Each message is 64 + 36 = 100 bytes; a 250-byte limit holds two.
    let now = Instant::now();
    let mut accumulator = Accumulator::new(100, 250, Duration::from_secs(1));
    assert!(
        accumulator
            .push(Partitioning::Balanced, message(36), now)
            .is_empty()
    );
    assert!(
        accumulator
            .push(Partitioning::Balanced, message(36), now)
            .is_empty()
    );
    let ready = accumulator.push(Partitioning::Balanced, message(36), now);
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].messages.len(), 2);
    // The third message started a new batch.
    assert_eq!(accumulator.drain()[0].messages.len(), 1);
    // An oversized message goes alone.
    let ready = accumulator.push(Partitioning::Balanced, message(1000), now);
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].messages.len(), 1);
}

#[test]
fn linger_releases_old_batches_per_partitioning() {
    let start = Instant::now();
    let linger = Duration::from_millis(10);
    let mut accumulator = Accumulator::new(100, 1 << 20, linger);
    accumulator.push(Partitioning::PartitionId(0), message(1), start);
    accumulator.push(
        Partitioning::PartitionId(1),
        message(1),
        start + Duration::from_millis(5),
    );
    accumulator.push(
        Partitioning::PartitionId(0),
        message(1),
        start + Duration::from_millis(6),
    );
    assert_eq!(accumulator.next_deadline(), Some(start + linger));
    assert!(
        accumulator
            .expired(start + Duration::from_millis(9))
            .is_empty()
    );
    let ready = accumulator.expired(start + Duration::from_millis(10));
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].partitioning, Partitioning::PartitionId(0));
    assert_eq!(ready[0].messages.len(), 2);
    assert_eq!(
        accumulator.next_deadline(),
        Some(start + Duration::from_millis(15))
    );
    let rest = accumulator.drain();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].partitioning, Partitioning::PartitionId(1));
    assert_eq!(accumulator.next_deadline(), None);
}
