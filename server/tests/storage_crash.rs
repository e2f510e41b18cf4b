//! Crash tests: a partition's files are cut at arbitrary byte positions, garbled, zero-filled
//! (a torn write that did not land, or preallocated space) or left unsealed, the way a crash
//! can leave them. Reopening must recover exactly a prefix of the appended messages, keep every
//! message that was intact before the damage (all of them were acknowledged in `written` or
//! `fsync` mode), leave an index that agrees with the log, and be idempotent.

#![allow(clippy::disallowed_methods, reason = "tests and benchmarks may block")]

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rill_core::message::{MessageBatch, MessageIter, OutgoingMessage};
use rill_server::storage::{
    AckMode, BufferPool, INDEX_ENTRY_SIZE, IndexEntry, Partition, PartitionConfig,
};
use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn run<F: std::future::Future>(future: F) -> F::Output {
    compio::runtime::Runtime::new().unwrap().block_on(future)
}

fn config(mode: AckMode) -> PartitionConfig {
    PartitionConfig {
        ack_mode: mode,
        segment_size_bytes: 64 * 1024,
        ..PartitionConfig::default()
    }
}

/// One stored message as the test knows it.
#[derive(Debug, Clone)]
struct Stored {
    segment_start: u64,
    end_position: u64,
    payload: Vec<u8>,
}

/// Appends random batches (acknowledged in `mode`), closes, and returns what each message is
/// and where it ends in its segment.
fn build(dir: &Path, mode: AckMode, seed: u64) -> Vec<Stored> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut payloads = Vec::new();
    run(async {
        let partition =
            Partition::create(dir.to_path_buf(), config(mode), Rc::new(BufferPool::new()))
                .await
                .unwrap();
        for _ in 0..60 {
            let count = rng.random_range(1..8);
            let messages: Vec<_> = (0..count)
                .map(|_| {
                    let size = rng.random_range(0..3000);
                    let payload: Vec<u8> = (0..size).map(|_| rng.random()).collect();
                    payloads.push(payload.clone());
                    OutgoingMessage::new(Bytes::from(payload))
                })
                .collect();
            partition
                .append(MessageBatch::from_messages(&messages), 1)
                .await
                .unwrap();
        }
        partition.close().await.unwrap();
    });
    let mut stored = Vec::new();
    for start in segment_starts(dir) {
        let log = std::fs::read(log_path(dir, start)).unwrap();
        let mut end = 0;
        for message in MessageIter::new(&log) {
            let message = message.unwrap();
            end += message.size() as u64;
            stored.push(Stored {
                segment_start: start,
                end_position: end,
                payload: message.payload().to_vec(),
            });
        }
    }
    assert_eq!(
        stored.iter().map(|s| &s.payload).collect::<Vec<_>>(),
        payloads.iter().collect::<Vec<_>>()
    );
    stored
}

fn segment_starts(dir: &Path) -> Vec<u64> {
    let mut starts: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")
                .map(|start| start.parse().unwrap())
        })
        .collect();
    starts.sort_unstable();
    starts
}

fn log_path(dir: &Path, start: u64) -> PathBuf {
    dir.join(format!("{start:020}.log"))
}

fn index_path(dir: &Path, start: u64) -> PathBuf {
    dir.join(format!("{start:020}.index"))
}

/// Copies a closed partition as a crash would have left it: without the clean-shutdown marker
/// a close writes (a crashed process never wrote one).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "clean_shutdown" {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn overwrite(path: &Path, position: u64, bytes: &[u8]) {
    let mut file = OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(position)).unwrap();
    file.write_all(bytes).unwrap();
}

fn set_len(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Every segment's index describes exactly its log's messages.
fn assert_index_agrees_with_log(dir: &Path) {
    for start in segment_starts(dir) {
        let log = std::fs::read(log_path(dir, start)).unwrap();
        let index = std::fs::read(index_path(dir, start)).unwrap();
        assert_eq!(index.len() % INDEX_ENTRY_SIZE, 0);
        let mut entries = index.chunks_exact(INDEX_ENTRY_SIZE);
        let mut end = 0u32;
        for message in MessageIter::new(&log) {
            let message = message.unwrap();
            assert!(message.checksum_is_valid());
            end += message.size() as u32;
            let entry = IndexEntry::decode(entries.next().expect("an entry per message"));
            assert_eq!(u64::from(entry.relative_offset) + start, message.offset());
            assert_eq!(entry.end_position, end);
            assert_eq!(entry.timestamp, message.timestamp());
        }
        assert!(
            entries.next().is_none(),
            "index longer than the log in {start}"
        );
    }
}

/// Opens the damaged copy and checks it holds exactly `expected` messages of `stored`.
fn reopen_and_check(dir: &Path, mode: AckMode, stored: &[Stored], expected: usize, what: &str) {
    run(async {
        let pool = Rc::new(BufferPool::new());
        let (partition, report) =
            Partition::open(dir.to_path_buf(), config(mode), Rc::clone(&pool))
                .await
                .unwrap_or_else(|error| panic!("{what}: open failed: {error}"));
        assert_eq!(report.next_offset, expected as u64, "{what}: {report}");
        let read = partition.read(0, u32::MAX).await.unwrap();
        assert_eq!(read.count as usize, expected, "{what}");
        let bytes = read.to_bytes();
        for (offset, message) in MessageIter::new(&bytes).enumerate() {
            let message = message.unwrap();
            assert_eq!(message.offset(), offset as u64);
            assert!(message.checksum_is_valid());
            assert_eq!(
                message.payload(),
                &stored[offset].payload[..],
                "{what}: offset {offset}"
            );
        }
        // The partition keeps working after recovery.
        let next = partition
            .append(
                MessageBatch::from_messages(&[OutgoingMessage::new("after")]),
                2,
            )
            .await
            .unwrap();
        assert_eq!(next.first_offset, expected as u64);
        partition.close().await.unwrap();
        let (partition, report) = Partition::open(dir.to_path_buf(), config(mode), pool)
            .await
            .unwrap();
        assert_eq!(
            report.truncated_bytes(),
            0,
            "{what}: recovery is idempotent: {report}"
        );
        assert_eq!(report.next_offset, expected as u64 + 1);
        partition.close().await.unwrap();
    });
    assert_index_agrees_with_log(dir);
}

/// How many messages end at or before `position` of the last segment (plus all earlier ones).
fn survivors(stored: &[Stored], last_start: u64, position: u64) -> usize {
    stored
        .iter()
        .take_while(|s| s.segment_start != last_start || s.end_position <= position)
        .count()
}

#[test]
fn cuts_garbles_and_zero_fills_of_the_last_segment_recover_exactly_a_prefix() {
    for (seed, mode) in [(1, AckMode::Written), (2, AckMode::Fsync)] {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().join("base");
        let stored = build(&base, mode, seed);
        let starts = segment_starts(&base);
        assert!(starts.len() >= 3, "the data spans several segments");
        let last = *starts.last().unwrap();
        let log_len = std::fs::metadata(log_path(&base, last)).unwrap().len();
        let index_len = std::fs::metadata(index_path(&base, last)).unwrap().len();
        let mut rng = StdRng::seed_from_u64(seed * 1000);
        for trial in 0..40 {
            let dir = temp.path().join(format!("trial-{trial}"));
            copy_dir(&base, &dir);
            let log = log_path(&dir, last);
            let index = index_path(&dir, last);
            let cut = rng.random_range(0..=log_len);
            let (what, expected) = match trial % 6 {
                0 => {
                    set_len(&log, cut);
                    ("log cut", survivors(&stored, last, cut))
                }
                1 => {
                    // A torn write: garbage from `cut` on (the file keeps its length).
                    let len = rng.random_range(1..=8192).min((log_len - cut).max(1)) as usize;
                    let garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                    if cut < log_len {
                        overwrite(&log, cut, &garbage);
                    }
                    let intact = if cut < log_len { cut } else { log_len };
                    ("log garbled", survivors(&stored, last, intact))
                }
                2 => {
                    // A write that never landed, followed by preallocated (zero) space.
                    set_len(&log, cut);
                    set_len(&log, log_len + (1 << 20));
                    set_len(&index, index_len + 64 * 1024);
                    ("log zero-filled", survivors(&stored, last, cut))
                }
                3 => {
                    // The index is cut mid-entry; the log is whole.
                    set_len(&index, rng.random_range(0..=index_len));
                    ("index cut", stored.len())
                }
                4 => {
                    // The index tail is garbage and the log is cut: the index runs ahead.
                    let from = rng.random_range(0..=index_len);
                    let garbage: Vec<u8> = (0..(index_len - from)).map(|_| rng.random()).collect();
                    overwrite(&index, from, &garbage);
                    set_len(&log, cut);
                    ("index garbled, log cut", survivors(&stored, last, cut))
                }
                _ => {
                    // Everything after `cut` zeroed in both files, then both preallocated.
                    let zeros = vec![0u8; (log_len - cut) as usize];
                    overwrite(&log, cut, &zeros);
                    std::fs::remove_file(&index).unwrap();
                    ("log zeroed, index lost", survivors(&stored, last, cut))
                }
            };
            let what = format!("{mode} trial {trial} ({what} at {cut} of {log_len})");
            reopen_and_check(&dir, mode, &stored, expected, &what);
        }
    }
}

#[test]
fn an_unsealed_earlier_segment_is_repaired_without_losing_messages() {
    // A crash between rotation and sealing leaves an earlier segment with preallocated zeros
    // after its data and index; the cheap sealed check fails and full validation repairs it.
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().join("base");
    let stored = build(&base, AckMode::Written, 7);
    std::fs::remove_file(base.join("clean_shutdown")).unwrap();
    let starts = segment_starts(&base);
    let middle = starts[starts.len() / 2];
    let log = log_path(&base, middle);
    let index = index_path(&base, middle);
    let log_len = std::fs::metadata(&log).unwrap().len();
    let index_len = std::fs::metadata(&index).unwrap().len();
    set_len(&log, log_len + 256 * 1024);
    set_len(&index, index_len + 16 * 1024);
    reopen_and_check(
        &base,
        AckMode::Written,
        &stored,
        stored.len(),
        "unsealed middle segment",
    );
}

#[test]
fn a_garbled_earlier_segment_is_cut_and_later_segments_stay_readable() {
    // Disk corruption inside a sealed segment: the segment is cut at the damage and the
    // offsets it lost become a gap; later segments stay intact.
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().join("base");
    let stored = build(&base, AckMode::Written, 9);
    let starts = segment_starts(&base);
    let first = starts[0];
    let last_message = stored.iter().filter(|s| s.segment_start == first).count() as u64 - 1;
    let log = log_path(&base, first);
    let log_len = std::fs::metadata(&log).unwrap().len();
    overwrite(&log, log_len - 10, &[0xFF; 10]);
    run(async {
        let (partition, report) = Partition::open(
            base.clone(),
            config(AckMode::Written),
            Rc::new(BufferPool::new()),
        )
        .await
        .unwrap();
        assert_eq!(report.repaired_segments, 1);
        assert_eq!(report.next_offset, stored.len() as u64);
        let read = partition.read(0, u32::MAX).await.unwrap();
        assert_eq!(
            read.count as usize,
            stored.len() - 1,
            "only the damaged message is lost"
        );
        let offsets: Vec<u64> = MessageIter::new(&read.to_bytes())
            .map(|message| message.unwrap().offset())
            .collect();
        assert!(!offsets.contains(&last_message));
        partition.close().await.unwrap();
    });
    assert_index_agrees_with_log(&base);
}

#[test]
fn stopping_mid_write_keeps_every_acknowledged_message() {
    // A real torn state: appenders run concurrently and the partition is dropped (its writer
    // cancelled) while writes are in flight, at a different moment in each round. Everything
    // acknowledged before the stop must come back, as a prefix of what was appended.
    for (round, mode) in [
        AckMode::Written,
        AckMode::Fsync,
        AckMode::Written,
        AckMode::Fsync,
    ]
    .into_iter()
    .enumerate()
    {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("p");
        let acked = Rc::new(std::cell::RefCell::new(Vec::<(u64, u64)>::new()));
        run(async {
            let config = PartitionConfig {
                segment_size_bytes: 256 * 1024,
                ..config(mode)
            };
            let partition = Rc::new(
                Partition::create(dir.clone(), config, Rc::new(BufferPool::new()))
                    .await
                    .unwrap(),
            );
            let tasks: Vec<_> = (0..4u8)
                .map(|task| {
                    let partition = Rc::clone(&partition);
                    let acked = Rc::clone(&acked);
                    compio::runtime::spawn(async move {
                        for n in 0.. {
                            let messages: Vec<_> = (0..1 + (n % 7))
                                .map(|k| OutgoingMessage::new(vec![task; 100 + k * 300]))
                                .collect();
                            let outcome = partition
                                .append(MessageBatch::from_messages(&messages), 1)
                                .await
                                .unwrap();
                            acked
                                .borrow_mut()
                                .push((outcome.first_offset, outcome.last_offset));
                        }
                    })
                })
                .collect();
            compio::time::sleep(std::time::Duration::from_millis(30 + 17 * round as u64)).await;
            drop(tasks);
            drop(partition);
            compio::time::sleep(std::time::Duration::from_millis(20)).await;
        });
        let acked = acked.borrow();
        let acked_end = acked.iter().map(|&(_, last)| last + 1).max().unwrap_or(0);
        assert!(acked_end > 0, "some appends were acknowledged");
        run(async {
            let (partition, report) =
                Partition::open(dir.clone(), config(mode), Rc::new(BufferPool::new()))
                    .await
                    .unwrap();
            assert!(
                report.next_offset >= acked_end,
                "{mode}: recovered {} < acknowledged {acked_end}: {report}",
                report.next_offset
            );
            let read = partition.read(0, u32::MAX).await.unwrap();
            assert_eq!(u64::from(read.count), report.next_offset);
            let bytes = read.to_bytes();
            for (offset, message) in MessageIter::new(&bytes).enumerate() {
                let message = message.unwrap();
                assert_eq!(message.offset(), offset as u64);
                assert!(message.checksum_is_valid());
            }
            partition.close().await.unwrap();
        });
        assert_index_agrees_with_log(&dir);
    }
}
