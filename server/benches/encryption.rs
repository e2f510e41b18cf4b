//! Encryption at rest: what sealing and opening cost per byte on one core, against a plain copy
//! of the same bytes (the work the path does anyway) measured in the same run.
//!
//! Batches of 1000 messages of 1000 bytes, as iggy-bench's default workloads send them; prints
//! the median MB/s of 5 runs of 1 GiB each. Run with
//! `cargo bench -p rill-server --bench encryption`.

use bytes::{Bytes, BytesMut};
use rill_core::message::{MessageBatch, OutgoingMessage};
use rill_server::encryption::MasterKey;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MESSAGES: usize = 1000;
const PAYLOAD: usize = 1000;
const RUNS: usize = 5;
const RUN_BYTES: usize = 1 << 30;

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

/// MB/s of `work` over `bytes` per call, repeated to RUN_BYTES, median of RUNS.
fn measure(bytes: usize, mut work: impl FnMut()) -> f64 {
    let calls = RUN_BYTES / bytes;
    median(
        (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                for _ in 0..calls {
                    work();
                }
                (calls * bytes) as f64 / started.elapsed().as_secs_f64() / 1e6
            })
            .collect(),
    )
}

fn main() {
    let key = MasterKey::from_base64("q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=").unwrap();
    let cipher = key.partition(1, 1, 1);
    let messages: Vec<_> = (0..MESSAGES)
        .map(|n| OutgoingMessage {
            id: n as u128 + 1,
            origin_timestamp: n as u64,
            payload: Bytes::from(vec![(n % 251) as u8; PAYLOAD]),
            user_headers: Bytes::new(),
        })
        .collect();
    let batch = MessageBatch::from_messages(&messages);
    let size = batch.size();
    let mut sealed = cipher.seal(&batch).unwrap();
    sealed.stamp(0, 1, || 1);
    let stored = [sealed.into_bytes().freeze()];

    let copy = measure(size, || {
        let copied = BytesMut::from(batch.as_bytes());
        std::hint::black_box(copied);
    });
    let seal = measure(size, || {
        std::hint::black_box(cipher.seal(&batch).unwrap());
    });
    let open = measure(size, || {
        std::hint::black_box(cipher.open(&stored).unwrap());
    });
    println!("encryption at rest, {MESSAGES} x {PAYLOAD} B batches, one core, median of {RUNS}:");
    println!("{:<28}{:>10}{:>10}", "", "MB/s", "vs copy");
    for (name, figure) in [("copy (baseline)", copy), ("seal", seal), ("open", open)] {
        println!("{name:<28}{figure:>10.0}{:>10.3}", figure / copy);
    }
}
