//! Checksums on reads and the checksum scan.

use super::helpers::*;
use crate::storage::*;
use rill_core::message::MessageIter;
use std::path::Path;

/// Flips one payload byte of the message at `offset`, wherever it is stored under `dir`.
fn flip_payload_byte(dir: &Path, offset: u64) {
    for name in segment_files(dir)
        .iter()
        .filter(|name| name.ends_with(".log"))
    {
        let path = dir.join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let mut position = 0;
        for message in MessageIter::new(&bytes.clone()) {
            let message = message.unwrap();
            if message.offset() == offset {
                bytes[position + rill_core::message::HEADER_SIZE + 3] ^= 0x10;
                std::fs::write(&path, bytes).unwrap();
                return;
            }
            position += message.size();
        }
    }
    panic!("no message at offset {offset}");
}

#[test]
fn reads_never_serve_a_message_whose_checksum_fails_and_the_scan_finds_it() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    let size = 1000;
    let config_with = |checksum_reads| PartitionConfig {
        segment_size_bytes: 8192,
        checksum_reads,
        ..config(AckMode::Written)
    };
    run(async {
        let partition = Partition::create(dir.clone(), config_with(ChecksumReads::Disk), pool())
            .await
            .unwrap();
        for first in (0..60).step_by(3) {
            partition.append(batch(first, 3, size), 1).await.unwrap();
        }
        partition.close().await.unwrap();
    });
    // One message in a sealed segment (read through its index file), one in the active one.
    flip_payload_byte(&dir, 10);
    flip_payload_byte(&dir, 58);
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config_with(ChecksumReads::Disk), pool())
            .await
            .unwrap();
        // A read stops before a broken message and fails when it is the first one.
        assert_messages(&partition.read(0, 60).await.unwrap(), 0, 10, size);
        for broken in [10, 58] {
            match partition.read(broken, 5).await {
                Err(StorageError::ChecksumMismatch { offset, .. }) => assert_eq!(offset, broken),
                other => panic!("offset {broken}: {:?}", other.map(|read| read.count)),
            }
        }
        assert_messages(&partition.read(11, 30).await.unwrap(), 11, 30, size);
        assert_messages(&partition.read(50, 60).await.unwrap(), 50, 8, size);
        assert_messages(&partition.read(59, 60).await.unwrap(), 59, 1, size);
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 60);
        let found: Vec<u64> = scan.mismatches.iter().map(|found| found.offset).collect();
        assert_eq!(found, [10, 58]);
        assert_eq!(
            StorageError::ChecksumMismatch {
                path: dir.clone(),
                position: 0,
                offset: 10
            }
            .code(),
            rill_core::ErrorCode::InvalidMessageChecksum
        );
        partition.close().await.unwrap();
    });
    // Without verification the flipped byte would be served as good data.
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config_with(ChecksumReads::None), pool())
            .await
            .unwrap();
        let read = partition.read(10, 1).await.unwrap();
        assert_eq!(read.count, 1);
        let message = rill_core::message::MessageView::parse(&read.bytes[0]).unwrap();
        assert!(!message.checksum_is_valid());
        partition.close().await.unwrap();
    });
}

#[test]
fn the_scan_reads_messages_larger_than_its_chunk() {
    let temp = tempfile::tempdir().unwrap();
    let dir = dir_in(&temp);
    run(async {
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        // 9 MiB messages, each longer than a scan step, then small ones.
        partition.append(batch(0, 2, 9 << 20), 1).await.unwrap();
        partition.append(batch(2, 100, 100), 1).await.unwrap();
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 102);
        assert!(scan.mismatches.is_empty());
        partition.close().await.unwrap();
    });
    flip_payload_byte(&dir, 1);
    run(async {
        let (partition, _) = Partition::open(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        let scan = partition.scan_checksums().await.unwrap();
        assert_eq!(scan.messages, 102);
        assert_eq!(scan.mismatches.len(), 1);
        assert_eq!(scan.mismatches[0].offset, 1);
        partition.close().await.unwrap();
    });
}
