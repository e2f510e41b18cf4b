//! Storage engine benchmark: prints a table of medians over several runs.
//!
//! * Append throughput (MB/s, messages/s) of 1 KiB messages in batches of 1000 in each ack mode,
//!   against a plain O_DIRECT sequential writer of the same bytes in the same run (the
//!   physical baseline), with the ratio.
//! * fsync mode: 8 concurrent appenders against 1 appender that waits for an fsync per batch
//!   (group commit), with 1000-message and 10-message batches.
//! * Sequential reads of a sealed segment against raw O_DIRECT reads of the same file.
//!
//! Run with `cargo bench -p rill-server --bench storage`. Files go to `$RILL_BENCH_DIR` or the
//! system temp directory (which must be a real disk for the figures to mean anything).

#![allow(clippy::disallowed_methods, reason = "tests and benchmarks may block")]

use bytes::Bytes;

// The daemon's allocator, so that allocating and freeing batches costs what it costs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use compio::BufResult;
use compio::io::{AsyncReadAt, AsyncWriteAt};
use rill_core::message::{MessageBatch, OutgoingMessage};
use rill_server::storage::{AckMode, AlignedBuf, BufferPool, Partition, PartitionConfig};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

const MESSAGE_PAYLOAD_BYTES: usize = 1024;
const RUNS: usize = 5;
/// Bytes appended per run of an append workload.
const RUN_BYTES: u64 = 256 << 20;

fn batch(count: usize) -> MessageBatch {
    let messages: Vec<_> = (0..count)
        .map(|n| OutgoingMessage {
            id: 0,
            origin_timestamp: n as u64,
            payload: Bytes::from(vec![(n % 251) as u8; MESSAGE_PAYLOAD_BYTES]),
            user_headers: Bytes::new(),
        })
        .collect();
    MessageBatch::from_messages(&messages)
}

fn bench_dir() -> PathBuf {
    std::env::var_os("RILL_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Row {
    name: String,
    bytes_per_second: f64,
    messages_per_second: f64,
    /// Median over runs of (this run's figure / the reference figure measured next to it).
    ratio: Option<f64>,
}

/// Per-run samples of one workload, each paired with the reference measured in the same run
/// right before it, so a machine whose disk speed drifts (it is shared) still gives fair
/// ratios.
#[derive(Default)]
struct Samples {
    bytes_per_second: Vec<f64>,
    messages_per_second: Vec<f64>,
    ratios: Vec<f64>,
}

impl Samples {
    fn push(&mut self, bytes: u64, messages: u64, seconds: f64, reference_bytes_per_second: f64) {
        let bytes_per_second = bytes as f64 / seconds;
        self.bytes_per_second.push(bytes_per_second);
        self.messages_per_second.push(messages as f64 / seconds);
        self.ratios
            .push(bytes_per_second / reference_bytes_per_second);
    }

    fn row(self, name: String) -> Row {
        Row {
            name,
            bytes_per_second: median(self.bytes_per_second),
            messages_per_second: median(self.messages_per_second),
            ratio: Some(median(self.ratios)),
        }
    }
}

fn print_table(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!(
        "| {:<58} | {:>10} | {:>12} | {:>9} |",
        "workload", "MB/s", "msgs/s", "ratio"
    );
    println!("|{:-<60}|{:->12}|{:->14}|{:->11}|", "", "", "", "");
    for row in rows {
        let ratio = row
            .ratio
            .map(|ratio| format!("{ratio:.2}"))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {:<58} | {:>10.0} | {:>12.0} | {:>9} |",
            row.name,
            row.bytes_per_second / 1e6,
            row.messages_per_second,
            ratio
        );
    }
}

/// Appends `batches` batches of `batch_size` messages from `appenders` concurrent tasks.
/// Returns (seconds, bytes, messages).
async fn append_run(
    dir: &Path,
    mode: AckMode,
    appenders: usize,
    batch_size: usize,
    batches: usize,
) -> (f64, u64, u64) {
    let config = PartitionConfig {
        ack_mode: mode,
        ..PartitionConfig::default()
    };
    let partition = Rc::new(
        Partition::create(dir.to_path_buf(), config, Rc::new(BufferPool::new()))
            .await
            .expect("create partition"),
    );
    // Batches are built before timing: the broker receives them ready from the network.
    let prepared: Vec<Vec<MessageBatch>> = (0..appenders)
        .map(|task| {
            (0..batches / appenders + usize::from(task < batches % appenders))
                .map(|_| batch(batch_size))
                .collect()
        })
        .collect();
    let bytes: u64 = prepared.iter().flatten().map(|b| b.size() as u64).sum();
    settle();
    let messages: u64 = prepared
        .iter()
        .flatten()
        .map(|b| u64::from(b.count()))
        .sum();
    let started = Instant::now();
    let tasks: Vec<_> = prepared
        .into_iter()
        .map(|batches| {
            let partition = Rc::clone(&partition);
            compio::runtime::spawn(async move {
                for batch in batches {
                    partition.append(batch, 1).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("appender");
    }
    // Memory mode acks before writing: count the time to get everything written.
    if mode == AckMode::Memory {
        partition.flush(false).await.expect("flush");
    }
    let seconds = started.elapsed().as_secs_f64();
    partition.close().await.expect("close");
    // Files stay until the end: deleting 256 MiB right before the next measurement would make
    // the filesystem free extents while that measurement runs.
    (seconds, bytes, messages)
}

/// Flushes whatever earlier workloads left for the filesystem to do, so it does not run during
/// the next measurement.
fn settle() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

fn fallocate(file: &compio::fs::File, len: u64) {
    // SAFETY: plain syscall on a descriptor we own.
    let result = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as i64) };
    assert_eq!(result, 0, "fallocate: {}", std::io::Error::last_os_error());
}

async fn open_direct(path: &Path) -> compio::fs::File {
    compio::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .await
        .expect("open O_DIRECT")
}

const PREALLOCATE_STEP_BYTES: u64 = 64 << 20;

/// The physical baseline: the same bytes written sequentially with O_DIRECT, one write per
/// batch (rounded to whole blocks) into preallocated space, each awaited before the next;
/// with `fsync`, an fdatasync after every write. fallocate time is included (as for the engine).
async fn raw_write_run(dir: &Path, batch_bytes: usize, batches: usize, fsync: bool) -> f64 {
    let path = dir.join("raw.bin");
    std::fs::create_dir_all(dir).unwrap();
    let file = open_direct(&path).await;
    let block_bytes = batch_bytes.div_ceil(4096) * 4096;
    let total = (block_bytes * batches) as u64;
    let mut allocated = 0u64;
    // Same power-of-two capacity as the engine's pooled staging buffer, so both get the same
    // kind of memory (a 2 MiB allocation can be backed by a huge page, which direct I/O pins
    // faster than 4 KiB pages).
    let mut buffer = AlignedBuf::zeroed(block_bytes.next_power_of_two());
    buffer.whole_mut().fill(7);
    buffer.set_filled(block_bytes);
    settle();
    let started = Instant::now();
    let mut position = 0u64;
    let mut writer = &file;
    for _ in 0..batches {
        // Preallocated in 64 MiB steps, like the engine at full speed. (One fallocate of the
        // whole file up front made every write on this ext4 several times slower.)
        if position + block_bytes as u64 > allocated {
            allocated = (allocated + PREALLOCATE_STEP_BYTES).min(total);
            fallocate(&file, allocated);
        }
        let BufResult(result, returned) = writer.write_at(buffer, position).await;
        assert_eq!(result.expect("write"), block_bytes);
        buffer = returned;
        if fsync {
            file.sync_data().await.expect("fdatasync");
        }
        position += block_bytes as u64;
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(file);
    seconds
}

async fn append_workloads(root: &Path) -> Vec<Row> {
    let batch_bytes = batch(1000).size();
    let batches = (RUN_BYTES / batch_bytes as u64) as usize;
    let messages = (batches * 1000) as u64;
    let raw_bytes = (batch_bytes * batches) as u64;
    let workloads = [
        (AckMode::Memory, 1),
        (AckMode::Written, 1),
        (AckMode::Fsync, 1),
        (AckMode::Written, 4),
    ];
    let mut baseline = Samples::default();
    let mut samples: Vec<Samples> = workloads.iter().map(|_| Samples::default()).collect();
    for run in 0..RUNS {
        for (k, &(mode, appenders)) in workloads.iter().enumerate() {
            let raw_dir = root.join(format!("raw-{run}-{k}"));
            let seconds = raw_write_run(&raw_dir, batch_bytes, batches, false).await;
            let raw = raw_bytes as f64 / seconds;
            baseline.push(raw_bytes, messages, seconds, raw);
            let dir = root.join(format!("append-{mode}-{appenders}-{run}"));
            let (seconds, bytes, messages) = append_run(&dir, mode, appenders, 1000, batches).await;
            samples[k].push(bytes, messages, seconds, raw);
        }
    }
    let mut rows =
        vec![baseline.row("raw O_DIRECT sequential writer (baseline, same bytes)".into())];
    for (&(mode, appenders), samples) in workloads.iter().zip(samples) {
        let name = if appenders == 1 {
            format!("append, ack {mode}, 1 appender")
        } else {
            format!("append, ack {mode}, {appenders} concurrent appenders")
        };
        rows.push(samples.row(name));
    }
    rows
}

async fn group_commit_workloads(root: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for (batch_size, batches) in [(1000usize, 96usize), (10, 4000)] {
        let batch_bytes = batch(batch_size).size();
        let mut single = Samples::default();
        let mut concurrent = Samples::default();
        let mut raw = Samples::default();
        for run in 0..RUNS {
            let dir = root.join(format!("fsync1-{batch_size}-{run}"));
            let (seconds, bytes, messages) =
                append_run(&dir, AckMode::Fsync, 1, batch_size, batches).await;
            let one = bytes as f64 / seconds;
            single.push(bytes, messages, seconds, one);
            let dir = root.join(format!("fsync8-{batch_size}-{run}"));
            let (seconds, bytes, messages) =
                append_run(&dir, AckMode::Fsync, 8, batch_size, batches).await;
            concurrent.push(bytes, messages, seconds, one);
            let seconds = raw_write_run(
                &root.join(format!("rawsync-{run}")),
                batch_bytes,
                batches,
                true,
            )
            .await;
            raw.push((batch_bytes * batches) as u64, messages, seconds, one);
        }
        rows.push(single.row(format!(
            "fsync, {batch_size}-msg batches, 1 appender (fsync per batch)"
        )));
        rows.push(concurrent.row(format!(
            "fsync, {batch_size}-msg batches, 8 concurrent appenders"
        )));
        rows.push(raw.row(format!(
            "raw O_DIRECT write + fdatasync per {batch_size}-msg batch"
        )));
    }
    rows
}

async fn read_workloads(root: &Path) -> Vec<Row> {
    // One sealed segment of 256 MiB, then a second segment so the first is sealed.
    let dir = root.join("read");
    let segment_size_bytes = 256 << 20;
    let config = PartitionConfig {
        segment_size_bytes,
        ack_mode: AckMode::Written,
        ..PartitionConfig::default()
    };
    let partition = Partition::create(dir.clone(), config.clone(), Rc::new(BufferPool::new()))
        .await
        .unwrap();
    let batch_bytes = batch(1000).size() as u64;
    let sealed_batches = segment_size_bytes / batch_bytes;
    for _ in 0..=sealed_batches {
        partition.append(batch(1000), 1).await.unwrap();
    }
    partition.close().await.unwrap();
    let (partition, _) = Partition::open(dir.clone(), config, Rc::new(BufferPool::new()))
        .await
        .unwrap();
    let sealed_messages = sealed_batches * 1000;
    let log = dir.join(format!("{:020}.log", 0));
    let log_bytes = std::fs::metadata(&log).unwrap().len();
    let mut engine = Samples::default();
    let mut raw = Samples::default();
    for _ in 0..RUNS {
        // Raw: the same file, O_DIRECT, sequential reads of the same size as the engine's.
        let file = compio::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&log)
            .await
            .unwrap();
        let chunk = (batch_bytes as usize).div_ceil(4096) * 4096;
        let started = Instant::now();
        let mut position = 0u64;
        while position < log_bytes {
            let buffer = AlignedBuf::zeroed(chunk);
            let BufResult(result, buffer) = file.read_at(buffer, position).await;
            let n = result.unwrap();
            assert!(n > 0);
            std::hint::black_box(buffer);
            position += n as u64;
        }
        let seconds = started.elapsed().as_secs_f64();
        let reference = log_bytes as f64 / seconds;
        raw.push(log_bytes, sealed_messages, seconds, reference);

        let started = Instant::now();
        let mut offset = 0;
        let mut bytes = 0u64;
        while offset < sealed_messages {
            let read = partition.read(offset, 1000).await.unwrap();
            assert!(read.count > 0);
            offset += u64::from(read.count);
            bytes += read.size_bytes();
        }
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(bytes, log_bytes);
        engine.push(bytes, offset, seconds, reference);
    }
    let rows = vec![
        raw.row("raw O_DIRECT sequential read of the sealed .log (~1 MiB reads)".into()),
        engine.row("partition.read(offset, 1000) over the sealed segment".into()),
    ];
    partition.close().await.unwrap();
    partition.delete().await.unwrap();
    rows
}

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes nothing and
    // only checks that the benchmark builds and starts.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("storage bench: run with `cargo bench -p rill-server --bench storage`");
        return;
    }
    let temp = tempfile::tempdir_in(bench_dir()).expect("bench temp dir");
    let root = temp.path().to_path_buf();
    let runtime = compio::runtime::Runtime::new().expect("io_uring runtime");
    println!(
        "storage bench: {} runs per figure, medians; 1 KiB payloads (1088 bytes stored per message); files in {}",
        RUNS,
        root.display()
    );
    let append = runtime.block_on(append_workloads(&root));
    print_table(
        "Append throughput (ratio: to the raw O_DIRECT writer)",
        &append,
    );
    let group = runtime.block_on(group_commit_workloads(&root));
    print_table(
        "fsync mode, group commit (ratio: to 1 appender with an fsync per batch)",
        &group,
    );
    let read = runtime.block_on(read_workloads(&root));
    print_table(
        "Sequential read of a sealed 256 MiB segment (ratio: to the raw read)",
        &read,
    );
}
