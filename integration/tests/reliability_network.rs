//! Reliability under hostile and broken network peers (issue 10): a fuzzer sends random and
//! mutated frames while a well-behaved client produces and consumes, and abusive clients (never
//! reading responses, never sending, dripping bytes) must neither grow the server's memory
//! without bound nor starve anyone else.
//!
//! Environment:
//! - `RILL_FUZZ_SECONDS`: how long the network fuzzer runs (default 20).
//! - `RILL_FUZZ_SEED`: the fuzzer's seed (default: from the clock; always printed, so a failing
//!   run can be replayed with the same sequence of cases per worker).

mod support;

use iggy::prelude::*;
use rill_integration::fixtures::{expected_of, test_messages};
use rill_integration::raw::{frame, login_payload, name};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::every_command;

const MIB: u64 = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Small deterministic RNG (SplitMix64): the whole fuzz sequence follows from the printed seed.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (bound > 0).
    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn chance(&mut self, numerator: u64, denominator: u64) -> bool {
        self.below(denominator) < numerator
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|value| value.parse().ok())
}

// ---------------------------------------------------------------------------------------------
// Server memory
// ---------------------------------------------------------------------------------------------

/// VmRSS of `pid` in bytes.
fn rss_bytes(pid: u32) -> u64 {
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
struct RssSampler {
    max: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start(pid: u32) -> RssSampler {
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

    fn max(&self) -> u64 {
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

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

// ---------------------------------------------------------------------------------------------
// The well-behaved client
// ---------------------------------------------------------------------------------------------

/// What the well-behaved client did and every error it saw.
#[derive(Debug, Default)]
struct GoodReport {
    rounds: u64,
    messages: u64,
    errors: Vec<String>,
    max_round: Duration,
}

/// Until `stop`: sends a batch of 10 test messages to partition 0 of `stream`/topic 0, polls
/// them back by offset and compares ids, payloads and offsets. Every failure is recorded (not
/// panicked on) so the report says how many there were.
async fn well_behaved_client(
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

// ---------------------------------------------------------------------------------------------
// The fuzzer
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct FuzzCounters {
    connections: AtomicU64,
    logged_in: AtomicU64,
    frames: AtomicU64,
    bytes: AtomicU64,
    responses: AtomicU64,
    closed_by_server: AtomicU64,
    /// Well-formed frames (declared length = bytes sent) the server neither answered nor closed
    /// the connection for within the answer deadline.
    unanswered: AtomicU64,
    /// Error responses carrying a payload (protocol.md 1.2 forbids it).
    malformed_responses: AtomicU64,
}

/// Command codes worth aiming at: every code of protocol.md section 3 plus neighbours.
const KNOWN_CODES: &[u32] = &[
    1, 10, 11, 12, 20, 21, 22, 31, 32, 33, 34, 35, 36, 37, 38, 39, 41, 42, 43, 44, 100, 101, 102,
    120, 121, 122, 200, 201, 202, 203, 204, 205, 300, 301, 302, 303, 304, 305, 402, 403, 503, 600,
    601, 602, 603, 604, 605,
];

/// How long a well-formed frame may wait for its answer before it counts as unanswered. Long,
/// because two debug-built processes share two cores with other test servers.
const ANSWER_DEADLINE: Duration = Duration::from_secs(10);

enum Outcome {
    /// The connection is in sync; keep sending on it.
    InSync,
    /// The frame broke framing (or the server closed): drop the connection.
    Done,
}

struct FuzzConnection {
    stream: TcpStream,
}

impl FuzzConnection {
    fn open(address: SocketAddr) -> Option<FuzzConnection> {
        let stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).ok()?;
        stream.set_nodelay(true).ok()?;
        stream
            .set_write_timeout(Some(Duration::from_secs(5)))
            .ok()?;
        Some(FuzzConnection { stream })
    }

    fn send(&mut self, bytes: &[u8], counters: &FuzzCounters) -> bool {
        counters.frames.fetch_add(1, Ordering::Relaxed);
        counters
            .bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.stream.write_all(bytes).is_ok()
    }

    /// Reads one response within `deadline`. `Ok(Some(status))`, `Ok(None)` if the server
    /// closed the connection, `Err(())` on timeout.
    fn read_response(
        &mut self,
        deadline: Duration,
        counters: &FuzzCounters,
    ) -> Result<Option<u32>, ()> {
        let until = Instant::now() + deadline;
        let mut header = [0u8; 8];
        if !self.read_exact_until(&mut header, until)? {
            counters.closed_by_server.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let status = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
        let length = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
        counters.responses.fetch_add(1, Ordering::Relaxed);
        if status != 0 && length != 0 {
            counters.malformed_responses.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        if status == 0 && length > 0 {
            let mut payload = vec![0u8; length as usize];
            if !self.read_exact_until(&mut payload, until)? {
                counters.closed_by_server.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
        }
        Ok(Some(status))
    }

    /// `Ok(true)` when `buffer` was filled, `Ok(false)` on EOF or reset, `Err(())` on timeout.
    fn read_exact_until(&mut self, buffer: &mut [u8], until: Instant) -> Result<bool, ()> {
        let mut filled = 0;
        while filled < buffer.len() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(());
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("read timeout");
            match self.stream.read(&mut buffer[filled..]) {
                Ok(0) => return Ok(false),
                Ok(n) => filled += n,
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return Err(());
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Reads and discards whatever arrives within `window` (answers to frames that broke sync).
    fn drain(&mut self, window: Duration) {
        let until = Instant::now() + window;
        let mut sink = [0u8; 4096];
        while Instant::now() < until {
            let left = until
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut sink) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }
}

/// A well-formed frame: header whose length matches the payload.
fn well_formed(code: u32, payload: &[u8]) -> Vec<u8> {
    frame(code, payload)
}

/// Mutates `payload` in place: bit flips, byte overwrites with interesting values, truncation,
/// extension with garbage, or splicing a length field to an extreme.
fn mutate(rng: &mut Rng, payload: &mut Vec<u8>) {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(6) {
            0 if !payload.is_empty() => {
                let at = rng.below(payload.len() as u64) as usize;
                payload[at] ^= 1 << rng.below(8);
            }
            1 if !payload.is_empty() => {
                let at = rng.below(payload.len() as u64) as usize;
                payload[at] = [0, 1, 0x7f, 0x80, 0xff][rng.below(5) as usize];
            }
            2 if !payload.is_empty() => {
                let keep = rng.below(payload.len() as u64) as usize;
                payload.truncate(keep);
            }
            3 => {
                let extra = rng.below(64) as usize;
                payload.extend(rng.bytes(extra));
            }
            4 if payload.len() >= 4 => {
                let at = rng.below(payload.len() as u64 - 3) as usize;
                let value: u32 =
                    [0, 1, 255, 256, 65_535, 0x7fff_ffff, u32::MAX][rng.below(7) as usize];
                payload[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            _ => {
                let extra = rng.below(8) as usize;
                payload.extend(rng.bytes(extra));
            }
        }
    }
}

/// One fuzz case on `connection`. Well-formed frames are answered (or the connection is closed
/// by the server); anything that breaks framing ends the connection.
fn fuzz_case(
    rng: &mut Rng,
    connection: &mut FuzzConnection,
    commands: &[support::RawCommand],
    counters: &FuzzCounters,
    max_send_bytes: u32,
    case_counts: &[AtomicU64; CASES],
) -> Outcome {
    let case = rng.below(CASES as u64) as usize;
    case_counts[case].fetch_add(1, Ordering::Relaxed);
    let in_sync = |connection: &mut FuzzConnection, bytes: Vec<u8>| {
        if !connection.send(&bytes, counters) {
            return Outcome::Done;
        }
        match connection.read_response(ANSWER_DEADLINE, counters) {
            Ok(Some(_)) => Outcome::InSync,
            Ok(None) => Outcome::Done,
            Err(()) => {
                counters.unanswered.fetch_add(1, Ordering::Relaxed);
                Outcome::Done
            }
        }
    };
    let broken = |connection: &mut FuzzConnection, bytes: Vec<u8>| {
        connection.send(&bytes, counters);
        connection.drain(Duration::from_millis(50));
        Outcome::Done
    };
    match case {
        // A valid command with a mutated payload, length consistent.
        0..=2 => {
            let command = &commands[rng.below(commands.len() as u64) as usize];
            let mut payload = command.payload.clone();
            mutate(rng, &mut payload);
            in_sync(connection, well_formed(command.code, &payload))
        }
        // A known code with a garbage payload of random size.
        3 => {
            let code = KNOWN_CODES[rng.below(KNOWN_CODES.len() as u64) as usize];
            let len = [0, 1, 2, 7, 16, 100, 1000, 4096][rng.below(8) as usize];
            in_sync(connection, well_formed(code, &rng.bytes(len)))
        }
        // A random command code (mostly unknown).
        4 => {
            let code = if rng.chance(1, 2) {
                rng.next_u64() as u32
            } else {
                rng.below(1000) as u32
            };
            let len = rng.below(64) as usize;
            in_sync(connection, well_formed(code, &rng.bytes(len)))
        }
        // Declared length below 4: answered with 3, framing continues.
        5 => {
            let mut bytes = (rng.below(4) as u32).to_le_bytes().to_vec();
            bytes.extend_from_slice(&1u32.to_le_bytes());
            in_sync(connection, bytes)
        }
        // Declared length shorter than the bytes sent: the rest is read as the next header.
        6 => {
            let command = &commands[rng.below(commands.len() as u64) as usize];
            let mut bytes = well_formed(command.code, &command.payload);
            let declared = 4 + rng.below(command.payload.len() as u64 + 1) as u32;
            bytes[0..4].copy_from_slice(&declared.to_le_bytes());
            let extra = rng.below(16) as usize;
            bytes.extend(rng.bytes(extra));
            broken(connection, bytes)
        }
        // Declared length longer than the bytes sent, then close: a truncated frame.
        7 => {
            let command = &commands[rng.below(commands.len() as u64) as usize];
            let mut bytes = well_formed(command.code, &command.payload);
            let cut = rng.below(bytes.len() as u64) as usize;
            if rng.chance(1, 2) {
                bytes.truncate(cut);
            } else {
                let declared = bytes.len() as u32 + 1 + rng.below(1 << 20) as u32;
                bytes[0..4].copy_from_slice(&declared.to_le_bytes());
            }
            broken(connection, bytes)
        }
        // Huge declared lengths: over every limit (answered with 3 and closed), or at the limit
        // with only a little of the body sent.
        8 => {
            let code = KNOWN_CODES[rng.below(KNOWN_CODES.len() as u64) as usize];
            let (length, code) = match rng.below(5) {
                0 => (u32::MAX, code),
                1 => (4 + 10 * MIB as u32 + 1, 1),
                2 => (4 + max_send_bytes + 1, 101),
                3 => (4 + 10 * MIB as u32, code),
                _ => (4 + max_send_bytes, 101),
            };
            let mut bytes = length.to_le_bytes().to_vec();
            bytes.extend_from_slice(&code.to_le_bytes());
            let extra = rng.below(4096) as usize;
            bytes.extend(rng.bytes(extra));
            broken(connection, bytes)
        }
        // Pure garbage.
        9 => {
            let len = 1 + rng.below(2048) as usize;
            broken(connection, rng.bytes(len))
        }
        // A large well-formed garbage body (1-2 MiB) for a known code.
        _ => {
            let code = [101, 100, 202, 302, 33][rng.below(5) as usize];
            let len = MIB as usize + rng.below(MIB) as usize;
            in_sync(connection, well_formed(code, &rng.bytes(len)))
        }
    }
}

const CASES: usize = 11;
const CASE_NAMES: [&str; CASES] = [
    "mutated command",
    "mutated command",
    "mutated command",
    "known code, garbage payload",
    "random code",
    "length < 4",
    "length too short",
    "truncated / length too long",
    "huge declared length",
    "garbage bytes",
    "1-2 MiB garbage body",
];

/// LoginWithPersonalAccessToken (44): Name token.
fn token_login_frame(token: &str) -> Vec<u8> {
    frame(44, &name(token))
}

#[allow(clippy::too_many_arguments)]
fn fuzz_worker(
    worker: u64,
    seed: u64,
    address: SocketAddr,
    token: String,
    deadline: Instant,
    counters: Arc<FuzzCounters>,
    case_counts: Arc<[AtomicU64; CASES]>,
    max_send_bytes: u32,
) {
    let mut rng = Rng(seed ^ worker.wrapping_mul(0xA076_1D64_78BD_642F));
    let commands = every_command();
    while Instant::now() < deadline {
        let Some(mut connection) = FuzzConnection::open(address) else {
            continue;
        };
        counters.connections.fetch_add(1, Ordering::Relaxed);
        // Half the connections fuzz as a logged-in user (reaching the handlers), half before
        // login (everything but Ping and the logins is refused with 40).
        if rng.chance(1, 2) {
            if !connection.send(&token_login_frame(&token), &counters) {
                continue;
            }
            match connection.read_response(ANSWER_DEADLINE, &counters) {
                Ok(Some(0)) => {
                    counters.logged_in.fetch_add(1, Ordering::Relaxed);
                }
                Ok(status) => panic!("fuzz user's token login answered {status:?}"),
                Err(()) => {
                    counters.unanswered.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        let frames = 1 + rng.below(24);
        for _ in 0..frames {
            if Instant::now() >= deadline {
                break;
            }
            match fuzz_case(
                &mut rng,
                &mut connection,
                &commands,
                &counters,
                max_send_bytes,
                &case_counts,
            ) {
                Outcome::InSync => {}
                Outcome::Done => break,
            }
        }
    }
}

/// Sends `bytes` one at a time with `gap` between them. False if a write failed.
fn drip(stream: &mut TcpStream, bytes: &[u8], gap: Duration) -> bool {
    for byte in bytes {
        if stream.write_all(std::slice::from_ref(byte)).is_err() {
            return false;
        }
        std::thread::sleep(gap);
    }
    true
}

/// Reads one response header (and payload) with a deadline; the status, or None.
fn read_status(stream: &mut TcpStream, limit: Duration) -> Option<u32> {
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
fn closed_within(mut stream: &TcpStream, limit: Duration) -> bool {
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

/// Slow-drip peers, run once each while the fuzzer runs: a login dripped byte by byte within
/// the read timeout is answered; a body dripped slower than the read timeout allows is cut off.
/// Returns a description of each failure.
fn slow_drip_cases(address: SocketAddr, token: &str, read_timeout: Duration) -> Vec<String> {
    let mut failures = Vec::new();
    // 1. Token login, 8 header bytes + ~70 body bytes at 20 ms each (~1.6 s < read timeout).
    let mut stream = TcpStream::connect(address).expect("connect drip");
    stream.set_nodelay(true).expect("nodelay");
    if !drip(
        &mut stream,
        &token_login_frame(token),
        Duration::from_millis(20),
    ) {
        failures.push("drip login: write failed".into());
    } else {
        match read_status(&mut stream, Duration::from_secs(10)) {
            Some(0) => {
                // And a dripped Ping on the logged-in session.
                if !drip(&mut stream, &frame(1, &[]), Duration::from_millis(50))
                    || read_status(&mut stream, Duration::from_secs(10)) != Some(0)
                {
                    failures.push("drip ping after drip login not answered with 0".into());
                }
            }
            other => failures.push(format!("drip login answered {other:?}")),
        }
    }
    // 2. A header announcing 100 bytes, then one byte every 500 ms: slower than the read
    //    timeout allows for the whole body, so the server must close the connection.
    let mut stream = TcpStream::connect(address).expect("connect drip");
    stream.set_nodelay(true).expect("nodelay");
    let started = Instant::now();
    let _ = stream.write_all(&frame(38, &[0u8; 100])[..8]);
    let mut closed = false;
    while started.elapsed() < read_timeout + Duration::from_secs(5) {
        if stream.write_all(&[0]).is_err() || closed_within(&stream, Duration::from_millis(500)) {
            closed = true;
            break;
        }
    }
    let took = started.elapsed();
    if !closed {
        failures.push(format!(
            "a body dripped slower than the read timeout ({read_timeout:?}) was not cut off after {took:?}"
        ));
    } else if took + Duration::from_millis(600) < read_timeout {
        failures.push(format!(
            "a dripped body was cut off after {took:?}, before the read timeout ({read_timeout:?})"
        ));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_fuzzer_does_not_disturb_a_well_behaved_client() {
    // Proves: for a bounded time (RILL_FUZZ_SECONDS, default 20 s) four fuzzer threads open
    // connection after connection, before and after login, and send mutated valid commands,
    // garbage payloads under valid headers, random command codes, lengths below 4, lengths
    // shorter and longer than the bytes sent, truncated frames, huge declared lengths (up to
    // u32::MAX, and exactly at the 10 MiB / max_send_messages_size limits with almost no body),
    // pure garbage and 1-2 MiB garbage bodies; slow-drip peers drip a login byte by byte and a
    // body slower than the read timeout. Meanwhile a well-behaved official client sends and
    // polls back batches and sees no error and no wrong message; every well-formed fuzz frame is
    // answered (or its connection closed), no error frame carries a payload, the server's RSS
    // stays within 256 MiB of where it started, and at the end the server is alive, answers,
    // holds exactly what the good client sent, and has logged no panic.
    let seconds = env_u64("RILL_FUZZ_SECONDS").unwrap_or(20);
    let seed = env_u64("RILL_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos() as u64
    });
    println!("network fuzzer: seed {seed} (RILL_FUZZ_SEED={seed} replays it), {seconds} s");
    let read_timeout = Duration::from_secs(3);
    let max_send_bytes = 8 * MIB as u32;
    let server = Arc::new(TestServer::start(
        ServerOptions::new()
            // Mutated logins from one address fail by the thousand: with throttling on, the
            // delays they earn (up to limits.login.max_delay) would outlast ANSWER_DEADLINE.
            // Throttling has its own tests (security_limits.rs).
            .env("IGGY_LIMITS_LOGIN_FAILURES_BEFORE_DELAY", "4000000000")
            .env("IGGY_TCP_READ_TIMEOUT", "3 s")
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "10 s")
            .env("IGGY_TCP_MAX_SEND_MESSAGES_SIZE", "8 MiB")
            .env("IGGY_HTTP_ENABLED", "false"),
    ));
    let pid = server.pid().expect("server pid");

    // Stream 0 is the fuzzer's playground (it may send to and poll it); stream 1 belongs to the
    // well-behaved client. The fuzz user can touch nothing but stream 0 and cannot create
    // streams, topics, partitions or users, so the fuzzer cannot change the good client's data.
    let root = root_client(&server).await;
    let fuzz_stream = create_stream(&root, "fuzz").await;
    assert_eq!(fuzz_stream, 0);
    create_topic(&root, fuzz_stream, "fuzz-topic", 1).await;
    let good_stream = create_stream(&root, "good").await;
    create_topic(&root, good_stream, "good-topic", 1).await;
    let mut streams = std::collections::BTreeMap::new();
    streams.insert(
        fuzz_stream as usize,
        StreamPermissions {
            read_stream: true,
            read_topics: true,
            poll_messages: true,
            send_messages: true,
            ..StreamPermissions::default()
        },
    );
    root.create_user(
        "fuzzer",
        "fuzzer-password",
        UserStatus::Active,
        Some(Permissions {
            global: GlobalPermissions::default(),
            streams: Some(streams),
        }),
    )
    .await
    .expect("create fuzz user");
    let fuzz_user = support::login_client(&server, "fuzzer", "fuzzer-password").await;
    let token = fuzz_user
        .create_personal_access_token("fuzz-token", PersonalAccessTokenExpiry::NeverExpire)
        .await
        .expect("create fuzz token")
        .token;

    let stop_good = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(well_behaved_client(
        server.clone(),
        good_stream,
        7,
        stop_good.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_bytes(pid);
    let sampler = RssSampler::start(pid);

    let counters = Arc::new(FuzzCounters::default());
    let case_counts: Arc<[AtomicU64; CASES]> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (counters, case_counts, token) = (counters.clone(), case_counts.clone(), token.clone());
        let address = server.address();
        workers.push(std::thread::spawn(move || {
            fuzz_worker(
                worker,
                seed,
                address,
                token,
                deadline,
                counters,
                case_counts,
                max_send_bytes,
            )
        }));
    }
    let drip_failures = {
        let (address, token) = (server.address(), token.clone());
        tokio::task::spawn_blocking(move || slow_drip_cases(address, &token, read_timeout))
    };
    let drip_failures = drip_failures.await.expect("drip thread");
    for worker in workers {
        tokio::task::spawn_blocking(move || worker.join())
            .await
            .expect("join")
            .unwrap_or_else(|_| panic!("fuzz worker panicked (seed {seed})"));
    }
    stop_good.store(true, Ordering::Relaxed);
    let good = good.await.expect("good client task");
    let rss_max = sampler.max();
    drop(sampler);
    // Connections the fuzzer left are gone; give the allocator a moment to settle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss_bytes(pid);

    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    println!(
        "network fuzzer: {} connections ({} logged in), {} frames, {:.1} MiB sent, {} responses, \
         {} closed by the server, {} unanswered, {} malformed responses",
        load(&counters.connections),
        load(&counters.logged_in),
        load(&counters.frames),
        mib(load(&counters.bytes)),
        load(&counters.responses),
        load(&counters.closed_by_server),
        load(&counters.unanswered),
        load(&counters.malformed_responses),
    );
    for (name, count) in CASE_NAMES.iter().zip(case_counts.iter()) {
        println!("  case {name}: {}", load(count));
    }
    println!(
        "well-behaved client: {} rounds, {} messages, slowest round {:?}, {} errors",
        good.rounds,
        good.messages,
        good.max_round,
        good.errors.len()
    );
    println!(
        "server RSS: {:.1} MiB before, {:.1} MiB max during, {:.1} MiB after",
        mib(rss_before),
        mib(rss_max),
        mib(rss_after)
    );

    assert!(
        good.errors.is_empty(),
        "the well-behaved client saw errors (seed {seed}): {:?}",
        good.errors
    );
    assert!(
        good.rounds >= 5,
        "the well-behaved client was starved: {} rounds",
        good.rounds
    );
    assert!(
        drip_failures.is_empty(),
        "slow-drip cases failed: {drip_failures:?}"
    );
    assert!(
        load(&counters.frames) >= 200,
        "the fuzzer sent too little to mean anything"
    );
    assert_eq!(
        load(&counters.unanswered),
        0,
        "well-formed frames went unanswered (seed {seed})"
    );
    assert_eq!(
        load(&counters.malformed_responses),
        0,
        "error responses carried a payload (seed {seed})"
    );
    assert!(
        rss_max < rss_before + 256 * MIB,
        "server RSS grew from {:.1} MiB to {:.1} MiB under fuzzing",
        mib(rss_before),
        mib(rss_max)
    );

    // Still alive, still answering, still holding exactly what the good client sent.
    let mut server = Arc::into_inner(server).expect("only the test holds the server");
    assert!(server.is_running(), "iggy-server died (seed {seed})");
    let streams = root.get_streams().await.expect("GetStreams after fuzzing");
    assert!(streams.iter().any(|stream| stream.name == "good"));
    let polled =
        rill_integration::fixtures::poll_partition(&root, &id(good_stream), &id(0), 0, 1000).await;
    assert_eq!(polled.len() as u64, good.messages, "good partition content");
    for (offset, message) in polled.iter().enumerate() {
        let sequence = offset as u64;
        assert_eq!(
            message.header.id,
            rill_integration::fixtures::message_id(7, sequence)
        );
    }
    let log = server.log();
    assert!(
        !log.contains("panicked"),
        "the server log shows a panic (seed {seed})"
    );
    server.stop();
}

// ---------------------------------------------------------------------------------------------
// Slow and abusive clients
// ---------------------------------------------------------------------------------------------

/// PollMessages (100) for partition 0 of stream/topic 0, consumer 1, from offset 0.
fn poll_frame(stream: u32, count: u32) -> Vec<u8> {
    let mut payload = vec![1u8, 1, 4];
    payload.extend_from_slice(&1u32.to_le_bytes()); // consumer 1
    payload.extend_from_slice(&[1, 4]);
    payload.extend_from_slice(&stream.to_le_bytes());
    payload.extend_from_slice(&[1, 4]);
    payload.extend_from_slice(&0u32.to_le_bytes()); // topic 0
    payload.push(1);
    payload.extend_from_slice(&0u32.to_le_bytes()); // partition 0
    payload.push(1); // strategy: offset
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&count.to_le_bytes());
    payload.push(0); // no auto-commit
    frame(100, &payload)
}

/// Connects and logs in as root with a raw login frame.
fn raw_root_login(address: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
        .write_all(&frame(38, &login_payload("iggy", "iggy")))
        .expect("send login");
    assert_eq!(
        read_status(&mut stream, Duration::from_secs(30)),
        Some(0),
        "raw root login"
    );
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_or_never_send_neither_grow_memory_nor_starve_others() {
    // Proves: (1) 8 logged-in connections that pipeline 100 large polls each (~3 MiB answers,
    // ~2.4 GiB requested in all) and never read a byte make the server hold at most about one
    // answer per connection: its RSS grows by less than 256 MiB; (2) 200 connections that never
    // send and 20 that send 3 bytes of a header are still open after 1 s and closed by the server
    // once `tcp.unauthenticated_timeout` (IGGY_TCP_UNAUTHENTICATED_TIMEOUT, here 2 s) passes,
    // while 10 logged-in idle connections stay open and answer Ping; (3) meanwhile a
    // well-behaved client keeps sending and polling with no error.
    let unauthenticated_timeout = Duration::from_secs(2);
    let server = Arc::new(TestServer::start(
        ServerOptions::new()
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "2 s")
            .env("IGGY_HTTP_ENABLED", "false"),
    ));
    let pid = server.pid().expect("server pid");
    let address = server.address();
    let root = root_client(&server).await;
    let big_stream = create_stream(&root, "big").await;
    create_topic(&root, big_stream, "big-topic", 1).await;
    let good_stream = create_stream(&root, "good").await;
    create_topic(&root, good_stream, "good-topic", 1).await;
    // 200 messages of 16 KiB: a poll of 200 answers ~3.2 MiB.
    for batch in 0..4u128 {
        let mut messages: Vec<IggyMessage> = (0..50u128)
            .map(|i| {
                IggyMessage::builder()
                    .id(batch * 50 + i + 1)
                    .payload(bytes::Bytes::from(vec![b'x'; 16 * 1024]))
                    .build()
                    .expect("message")
            })
            .collect();
        root.send_messages(
            &id(big_stream),
            &id(0),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .expect("fill big partition");
    }

    let stop_good = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(well_behaved_client(
        server.clone(),
        good_stream,
        9,
        stop_good.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = rss_bytes(pid);
    let sampler = RssSampler::start(pid);

    // (1) Non-readers: write pipelined polls until the write blocks for 2 s (the server stopped
    // reading because its answer cannot be sent) or 100 are written; never read.
    let non_reader_count = env_u64("RILL_NON_READERS").unwrap_or(8);
    let non_readers: Vec<_> = (0..non_reader_count)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = raw_root_login(address);
                stream
                    .set_write_timeout(Some(Duration::from_secs(2)))
                    .expect("write timeout");
                let request = poll_frame(big_stream, 200);
                let mut written = 0u32;
                while written < 100 && stream.write_all(&request).is_ok() {
                    written += 1;
                }
                (stream, written)
            })
        })
        .collect();

    // (2) Silent and half-header connections; then (after checking they are still open well
    // before the timeout) logged-in idle ones, whose logins take a while.
    let opened = Instant::now();
    let silent: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(address).expect("connect silent"))
        .collect();
    let partial: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut stream = TcpStream::connect(address).expect("connect partial");
            stream.write_all(&[8, 0, 0]).expect("partial header");
            stream
        })
        .collect();
    let opened_in = opened.elapsed();
    // Before the timeout: still open (sampled; a read that times out means open).
    let early_closed = silent
        .iter()
        .chain(partial.iter())
        .step_by(11)
        .filter(|stream| closed_within(stream, Duration::from_millis(20)))
        .count();
    let early_checked_after = opened.elapsed();
    let mut idle_logged_in: Vec<TcpStream> = (0..10).map(|_| raw_root_login(address)).collect();
    // After the timeout (plus scheduling slack): every one of them closed.
    let mut still_open = 0;
    for stream in silent.iter().chain(partial.iter()) {
        let left = (unauthenticated_timeout + Duration::from_secs(5))
            .saturating_sub(opened.elapsed())
            .max(Duration::from_millis(10));
        if !closed_within(stream, left) {
            still_open += 1;
        }
    }
    let all_closed_after = opened.elapsed();
    // Logged-in idle sessions are not subject to the unauthenticated timeout.
    let mut idle_failures = 0;
    for stream in &mut idle_logged_in {
        if stream.write_all(&frame(1, &[])).is_err()
            || read_status(stream, Duration::from_secs(10)) != Some(0)
        {
            idle_failures += 1;
        }
    }

    let mut written_total = 0;
    let mut non_reader_streams = Vec::new();
    for thread in non_readers {
        let (stream, written) = thread.join().expect("non-reader thread");
        written_total += written;
        non_reader_streams.push(stream);
    }
    // Let the good client run a little longer with the non-readers still connected.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_max = sampler.max();
    // Steady state with every non-reader stalled: what their pending answers pin.
    let rss_stalled = rss_bytes(pid);
    stop_good.store(true, Ordering::Relaxed);
    let good = good.await.expect("good client task");
    drop(non_reader_streams);
    drop(sampler);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss_bytes(pid);

    println!(
        "abusive clients: {non_reader_count} non-readers wrote {written_total} polls of ~3.2 MiB answers \
         (~{:.0} MiB requested); 220 silent/partial connections opened in {opened_in:?}, \
         {early_closed}/20 closed {early_checked_after:?} after opening, {still_open} still open and all others closed \
         {all_closed_after:?} after opening; {idle_failures} idle logged-in sessions failed Ping",
        written_total as f64 * 3.2
    );
    println!(
        "well-behaved client: {} rounds, slowest round {:?}, {} errors",
        good.rounds,
        good.max_round,
        good.errors.len()
    );
    println!(
        "server RSS: {:.1} MiB before, {:.1} MiB max, {:.1} MiB with the non-readers stalled, \
         {:.1} MiB after they left",
        mib(rss_before),
        mib(rss_max),
        mib(rss_stalled),
        mib(rss_after)
    );

    assert!(
        good.errors.is_empty(),
        "good client errors: {:?}",
        good.errors
    );
    assert!(
        good.rounds >= 5,
        "good client starved: {} rounds",
        good.rounds
    );
    assert_eq!(
        early_closed, 0,
        "connections closed before the unauthenticated timeout"
    );
    assert_eq!(
        still_open, 0,
        "silent connections outlived the unauthenticated timeout"
    );
    assert_eq!(idle_failures, 0, "logged-in idle sessions were disturbed");
    assert!(
        written_total >= 8,
        "the non-readers could not even send their first polls"
    );
    assert!(
        rss_max < rss_before + 256 * MIB,
        "server RSS grew from {:.1} MiB to {:.1} MiB with non-reading clients",
        mib(rss_before),
        mib(rss_max)
    );
    assert!(
        rss_after < rss_before + 64 * MIB,
        "server RSS stayed at {:.1} MiB after the non-readers left (was {:.1} MiB)",
        mib(rss_after),
        mib(rss_before)
    );
    let log = server.log();
    assert!(
        log.contains("closing connection: timed out") && log.contains("what=\"login\""),
        "the server did not log the unauthenticated timeouts"
    );
    let mut server = Arc::into_inner(server).expect("only the test holds the server");
    assert!(server.is_running(), "iggy-server died");
    root.ping().await.expect("ping after the abusive clients");
    server.stop();
}
