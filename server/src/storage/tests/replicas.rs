//! What a cluster replica does to a log: copy another log's messages as they are stored, and
//! cut a tail that the leader's log does not share.

use super::helpers::*;
use crate::storage::*;
use bytes::BytesMut;
use rill_core::message::MessageBatch;

fn stored(read: &ReadOutcome) -> MessageBatch {
    MessageBatch::from_stored(BytesMut::from(&read.to_bytes()[..])).unwrap()
}

#[test]
fn a_replica_holds_the_same_bytes_as_the_log_it_copies() {
    let temp = tempfile::tempdir().unwrap();
    let (leader_dir, replica_dir) = (temp.path().join("a"), temp.path().join("b"));
    run(async {
        let leader = Partition::create(leader_dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        let replica = Partition::create(replica_dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        leader.append(batch(0, 10, 100), 1_000).await.unwrap();
        leader.append(batch(10, 5, 300), 2_000).await.unwrap();
        let copied = replica
            .append_replica(stored(&leader.read(0, 7).await.unwrap()))
            .await
            .unwrap();
        assert_eq!((copied.first_offset, copied.last_offset), (0, 6));
        replica
            .append_replica(stored(&leader.read(7, 100).await.unwrap()))
            .await
            .unwrap();
        assert_eq!(
            replica.read(0, 100).await.unwrap().to_bytes(),
            leader.read(0, 100).await.unwrap().to_bytes()
        );
        assert_eq!(replica.next_offset(), 15);

        // A batch that does not continue the log, or was damaged on the way, is refused and
        // leaves the log as it was.
        let again = replica.append_replica(stored(&leader.read(3, 2).await.unwrap()));
        assert!(matches!(again.await, Err(StorageError::InvalidBatch(_))));
        leader.append(batch(15, 2, 100), 3_000).await.unwrap();
        let mut damaged = BytesMut::from(&leader.read(15, 2).await.unwrap().to_bytes()[..]);
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        let damaged = replica.append_replica(MessageBatch::from_stored(damaged).unwrap());
        assert!(matches!(damaged.await, Err(StorageError::InvalidBatch(_))));
        assert_eq!(replica.next_offset(), 15);
        leader.close().await.unwrap();
        replica.close().await.unwrap();
    });
    let leader_log = std::fs::read(leader_dir.join("00000000000000000000.log")).unwrap();
    let replica_log = std::fs::read(replica_dir.join("00000000000000000000.log")).unwrap();
    assert_eq!(replica_log, leader_log[..replica_log.len()]);
}

#[test]
fn truncating_cuts_the_tail_across_segments_and_appends_continue() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let config = PartitionConfig {
            segment_size_bytes: 4096,
            ..config(AckMode::Written)
        };
        let partition = Partition::create(dir.clone(), config, pool())
            .await
            .unwrap();
        for n in 0..10 {
            partition
                .append(batch(n * 10, 10, 100), 1_000)
                .await
                .unwrap();
        }
        assert!(partition.stats().segments_count > 2);
        let whole = partition.read(0, 37).await.unwrap().to_bytes();

        // Past the end: nothing is removed.
        let (partition, _) = partition.truncate(500).await.unwrap();
        assert_eq!(partition.next_offset(), 100);
        let (partition, _) = partition.truncate(37).await.unwrap();
        assert_eq!(partition.next_offset(), 37);
        assert_eq!(partition.current_offset(), Some(36));
        assert_eq!(partition.read(0, 100).await.unwrap().to_bytes(), whole);
        partition.append(batch(37, 3, 100), 2_000).await.unwrap();
        assert_messages(&partition.read(37, 10).await.unwrap(), 37, 3, 100);

        // Cutting at a segment's first offset removes that segment's files.
        let (partition, _) = partition.truncate(0).await.unwrap();
        assert_eq!(partition.next_offset(), 0);
        assert!(partition.read(0, 10).await.unwrap().is_empty());
        partition.close().await.unwrap();
    });
    assert_eq!(
        segment_files(&dir),
        [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "clean_shutdown"
        ],
        "one fresh segment is left"
    );
}

#[test]
fn a_replica_behind_the_leaders_first_offset_restarts_its_log_there() {
    let temp = tempfile::tempdir().unwrap();
    let (leader_dir, replica_dir) = (temp.path().join("a"), temp.path().join("b"));
    run(async {
        let small = PartitionConfig {
            segment_size_bytes: 4096,
            ..config(AckMode::Written)
        };
        let leader = Partition::create(leader_dir.clone(), small.clone(), pool())
            .await
            .unwrap();
        let replica = Partition::create(replica_dir.clone(), small.clone(), pool())
            .await
            .unwrap();
        for k in 0..6u64 {
            leader.append(batch(k * 3, 3, 1000), k).await.unwrap();
        }
        leader.flush(true).await.unwrap();
        replica
            .append_replica(stored(&leader.read(0, 4).await.unwrap()))
            .await
            .unwrap();
        assert_eq!(leader.delete_oldest_segments(2).await.unwrap(), 2);
        let first = leader.first_offset();
        assert_eq!(first, 6);

        // Offsets never go back.
        assert!(matches!(
            replica.restart_at(3).await,
            Err(StorageError::InvalidConfig(_))
        ));
        let replica = replica.restart_at(first).await.unwrap();
        assert_eq!(
            (replica.first_offset(), replica.next_offset()),
            (first, first)
        );
        assert!(replica.read(0, 10).await.unwrap().is_empty());
        replica
            .append_replica(stored(&leader.read(first, 100).await.unwrap()))
            .await
            .unwrap();
        assert_eq!(
            replica.read(0, 100).await.unwrap().to_bytes(),
            leader.read(0, 100).await.unwrap().to_bytes()
        );
        replica.close().await.unwrap();
        leader.close().await.unwrap();
        // What the restarted log holds survives a reopen, and nothing of the old one is left.
        let (replica, _) = Partition::open(replica_dir.clone(), small, pool())
            .await
            .unwrap();
        assert_eq!((replica.first_offset(), replica.next_offset()), (first, 18));
        assert_messages(&replica.read(0, 100).await.unwrap(), first, 12, 1000);
        replica.close().await.unwrap();
    });
    assert!(!replica_dir.join("00000000000000000000.log").exists());
}
