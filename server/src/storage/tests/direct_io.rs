//! O_DIRECT on the real disk and on tmpfs, and the buffered fallback.

use super::helpers::*;
use crate::storage::*;
use std::path::Path;

#[test]
fn segment_files_are_o_direct_on_the_real_disk() {
    let temp = tempfile::tempdir().unwrap();
    run(async {
        let partition = Partition::create(dir_in(&temp), config(AckMode::Written), pool())
            .await
            .unwrap();
        assert!(
            partition.uses_direct_io(),
            "/tmp is ext4 here and accepts O_DIRECT"
        );
        partition.close().await.unwrap();
    });
}

#[test]
fn tmpfs_works_whether_or_not_it_takes_o_direct() {
    // Linux >= 6.6 accepts O_DIRECT on tmpfs (older kernels refuse it and take the fallback).
    if !Path::new("/dev/shm").is_dir() {
        return;
    }
    let temp = tempfile::tempdir_in("/dev/shm").unwrap();
    run(async {
        let dir = dir_in(&temp);
        let partition = Partition::create(dir.clone(), config(AckMode::Written), pool())
            .await
            .unwrap();
        partition.append(batch(0, 20, 5000), 1).await.unwrap();
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 20, 5000);
        partition.close().await.unwrap();
    });
}

#[test]
fn a_filesystem_refusing_o_direct_falls_back_to_buffered_writes_with_a_warning() {
    let temp = tempfile::tempdir().unwrap();
    file::REFUSE_DIRECT_IO.with(|refuse| refuse.set(true));
    run(async {
        let dir = dir_in(&temp);
        let partition = Partition::create(dir.clone(), config(AckMode::Fsync), pool())
            .await
            .unwrap();
        assert!(!partition.uses_direct_io());
        assert!(file::buffered_fallback_warned());
        partition.append(batch(0, 50, 500), 1).await.unwrap();
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 50, 500);
        partition.close().await.unwrap();
        let (partition, report) = Partition::open(dir, config(AckMode::Fsync), pool())
            .await
            .unwrap();
        assert_eq!(report.messages_count, 50);
        assert_messages(&partition.read(0, 100).await.unwrap(), 0, 50, 500);
        partition.close().await.unwrap();
    });
    file::REFUSE_DIRECT_IO.with(|refuse| refuse.set(false));
}
