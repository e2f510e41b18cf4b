//! A process-wide counting semaphore bounding how many test servers run at once.
//!
//! Tests in one file run on parallel threads and each starts its own server (two or four shard
//! threads each); on a small machine too many at once make every test slow and timing-sensitive.
//! [`acquire`] blocks the calling test thread until a slot is free; the slot is returned when the
//! [`Slot`] is dropped (together with its [`crate::TestServer`]).

use std::sync::{Condvar, Mutex};

/// Environment variable overriding the number of servers allowed to run at once.
pub const MAX_SERVERS_ENV: &str = "IGGY_TEST_MAX_SERVERS";

/// Servers allowed at once when `IGGY_TEST_MAX_SERVERS` is not set.
const DEFAULT_MAX_SERVERS: usize = 2;

static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// One held slot; dropping it frees the slot.
#[derive(Debug)]
pub struct Slot(());

fn max_servers() -> usize {
    std::env::var(MAX_SERVERS_ENV)
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&value| value > 0)
        .unwrap_or(DEFAULT_MAX_SERVERS)
}

/// Blocks until fewer than the maximum number of servers are running, then takes a slot.
pub fn acquire() -> Slot {
    let limit = max_servers();
    // A panicking test never holds the lock while panicking, but recover anyway: the count
    // itself is always consistent because it is only changed under the lock.
    let mut running = RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    while *running >= limit {
        running = FREED
            .wait(running)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    *running += 1;
    Slot(())
}

/// Takes `count` slots at once (a cluster's nodes run together): waits until they fit, or,
/// when more than the limit is asked for, until no other server runs.
pub fn acquire_many(count: usize) -> Vec<Slot> {
    let limit = max_servers();
    let mut running = RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    while *running > 0 && *running + count > limit {
        running = FREED
            .wait(running)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    *running += count;
    (0..count).map(|_| Slot(())).collect()
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut running = RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *running -= 1;
        FREED.notify_all();
    }
}
