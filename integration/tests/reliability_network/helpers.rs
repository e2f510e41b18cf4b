//! Helpers shared by the network reliability tests: the server's memory, the well-behaved
//! client, and raw reads of a response or of the server closing a connection.

use iggy::prelude::*;
use rill_integration::TestServer;
use rill_integration::fixtures::{expected_of, test_messages};
use rill_integration::sdk::{id, root_client};
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) const MIB: u64 = 1024 * 1024;

pub(crate) fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|value| value.parse().ok())
}

// ---------------------------------------------------------------------------------------------
// Server memory
// ---------------------------------------------------------------------------------------------

/// VmRSS of `pid` in bytes.
pub(crate) fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|error| panic!("read /proc/{pid}/status: {error}"));
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|value| value.parse().ok())
        .expect("VmRSS value");
    kib * 1024
}

/// Samples the server's RSS every 100 ms on a thread until dropped; keeps the maximum.
pub(crate) struct RssSampler {
    max: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    pub(crate) fn start(pid: u32) -> RssSampler {
        let max = Arc::new(AtomicU64::new(rss_bytes(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (max, stop) = (max.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                        && let Some(kib) = status
                            .lines()
                            .find(|line| line.starts_with("VmRSS:"))
                            .and_then(|line| line.split_whitespace().nth(1))
                            .and_then(|value| value.parse::<u64>().ok())
                    {
                        max.fetch_max(kib * 1024, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        RssSampler {
            max,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

// ---------------------------------------------------------------------------------------------
// The well-behaved client
// ---------------------------------------------------------------------------------------------

/// What the well-behaved client did and every error it saw.
#[derive(Debug, Default)]
pub(crate) struct GoodReport {
    pub(crate) rounds: u64,
    pub(crate) messages: u64,
    pub(crate) errors: Vec<String>,
    pub(crate) max_round: Duration,
}

/// Until `stop`: sends a batch of 10 test messages to partition 0 of `stream`/topic 0, polls
/// them back by offset and compares ids, payloads and offsets. Every failure is recorded (not
/// panicked on) so the report says how many there were.
pub(crate) async fn well_behaved_client(
    server: Arc<TestServer>,
    stream: u32,
    tag: u32,
    stop: Arc<AtomicBool>,
) -> GoodReport {
    let client = root_client(&server).await;
    let (stream_id, topic_id) = (id(stream), id(0));
    let partitioning = Partitioning::partition_id(0);
    let consumer = Consumer::new(id(1));
    let mut report = GoodReport::default();
    let mut next_offset = 0u64;
    while !stop.load(Ordering::Relaxed) && report.errors.len() < 20 {
        let started = Instant::now();
        let mut messages = test_messages(tag, next_offset, 10);
        let expected: Vec<_> = messages.iter().map(expected_of).collect();
        if let Err(error) = client
            .send_messages(&stream_id, &topic_id, &partitioning, &mut messages)
            .await
        {
            report
                .errors
                .push(format!("send at offset {next_offset}: {error}"));
            continue;
        }
        let polled = match client
            .poll_messages(
                &stream_id,
                &topic_id,
                Some(0),
                &consumer,
                &PollingStrategy::offset(next_offset),
                10,
                false,
            )
            .await
        {
            Ok(polled) => polled,
            Err(error) => {
                report
                    .errors
                    .push(format!("poll at offset {next_offset}: {error}"));
                continue;
            }
        };
        let matches =
            polled.messages.len() == expected.len()
                && polled.messages.iter().zip(&expected).enumerate().all(
                    |(i, (message, expected))| {
                        message.header.offset == next_offset + i as u64
                            && message.header.id == expected.id
                            && message.payload == expected.payload
                    },
                );
        if !matches {
            report.errors.push(format!(
                "poll at offset {next_offset}: {} messages, not the 10 sent (first offset {:?})",
                polled.messages.len(),
                polled.messages.first().map(|m| m.header.offset)
            ));
        }
        next_offset += 10;
        report.rounds += 1;
        report.messages += 10;
        report.max_round = report.max_round.max(started.elapsed());
    }
    report
}

/// Reads one response header (and payload) with a deadline; the status, or None.
pub(crate) fn read_status(stream: &mut TcpStream, limit: Duration) -> Option<u32> {
    stream.set_read_timeout(Some(limit)).ok()?;
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).ok()?;
    let status = u32::from_le_bytes(header[0..4].try_into().ok()?);
    let length = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let mut payload = vec![0u8; length as usize];
    stream.read_exact(&mut payload).ok()?;
    Some(status)
}

/// Whether the server closes `stream` (EOF or reset) within `limit`.
pub(crate) fn closed_within(mut stream: &TcpStream, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    let mut byte = [0u8; 64];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).expect("read timeout");
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}
