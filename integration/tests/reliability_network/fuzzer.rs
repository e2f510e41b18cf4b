//! The network fuzzer: a seeded RNG, fuzz connections, the mutations and cases it sends,
//! and the worker threads that run them.

use crate::helpers::MIB;
use crate::support;
use crate::support::every_command;
use rill_integration::raw::{frame, name};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

#[derive(Debug, Default)]
pub(crate) struct FuzzCounters {
    pub(crate) connections: AtomicU64,
    pub(crate) logged_in: AtomicU64,
    pub(crate) frames: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) responses: AtomicU64,
    pub(crate) closed_by_server: AtomicU64,
    /// Well-formed frames (declared length = bytes sent) the server neither answered nor closed
    /// the connection for within the answer deadline.
    pub(crate) unanswered: AtomicU64,
    /// Error responses carrying a payload (protocol.md 1.2 forbids it).
    pub(crate) malformed_responses: AtomicU64,
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

pub(crate) const CASES: usize = 11;
pub(crate) const CASE_NAMES: [&str; CASES] = [
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
pub(crate) fn token_login_frame(token: &str) -> Vec<u8> {
    frame(44, &name(token))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn fuzz_worker(
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
