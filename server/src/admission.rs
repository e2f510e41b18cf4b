//! Admission: how many connections may be open (in all and per address), how many request
//! bytes may be in flight at once, and how fast failed logins may be retried. Shared by every
//! shard; each check is made before anything is allocated for what it admits.

use crate::config::LimitsConfig;
use dashmap::DashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Most addresses and usernames whose failed logins are remembered at once: an attacker with
/// many addresses cannot grow the table without bound (past it, forgotten failures are dropped
/// first, and new keys are not recorded).
const MAX_REMEMBERED_FAILURES: usize = 65_536;

/// How often a refused-connection WARN line may be written (a flood must not flood the log).
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

pub struct Admission {
    limits: LimitsConfig,
    connections: AtomicUsize,
    per_address: DashMap<IpAddr, usize>,
    in_flight: AtomicU64,
    failures: DashMap<FailureKey, Failures>,
    started: Instant,
    last_refusal_log_ms: AtomicU64,
    refused_since_log: AtomicU64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FailureKey {
    Address(IpAddr),
    User(String),
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

/// Request bytes reserved from the in-flight budget; returned when dropped.
pub struct BodyPermit<'a> {
    admission: &'a Admission,
    bytes: u64,
}

impl Drop for BodyPermit<'_> {
    fn drop(&mut self) {
        let before = self
            .admission
            .in_flight
            .fetch_sub(self.bytes, Ordering::AcqRel);
        debug_assert!(before >= self.bytes, "in-flight budget returned twice");
    }
}

impl Admission {
    pub fn new(limits: LimitsConfig) -> Self {
        Admission {
            limits,
            connections: AtomicUsize::new(0),
            per_address: DashMap::new(),
            in_flight: AtomicU64::new(0),
            failures: DashMap::new(),
            started: Instant::now(),
            last_refusal_log_ms: AtomicU64::new(0),
            refused_since_log: AtomicU64::new(0),
        }
    }

    /// Takes a connection slot for a client at `address`, or names the limit it would pass.
    /// Every admitted connection is [`release`](Admission::release)d exactly once.
    pub fn admit_connection(&self, address: IpAddr) -> Result<(), &'static str> {
        let total = self.connections.fetch_add(1, Ordering::AcqRel);
        if total >= self.limits.max_connections {
            self.connections.fetch_sub(1, Ordering::AcqRel);
            return Err("limits.max_connections");
        }
        let mut count = self.per_address.entry(address).or_insert(0);
        if *count >= self.limits.max_connections_per_address {
            drop(count);
            self.connections.fetch_sub(1, Ordering::AcqRel);
            return Err("limits.max_connections_per_address");
        }
        *count += 1;
        Ok(())
    }

    pub fn release_connection(&self, address: IpAddr) {
        let before = self.connections.fetch_sub(1, Ordering::AcqRel);
        assert!(before > 0, "a connection slot released twice");
        let emptied = match self.per_address.get_mut(&address) {
            Some(mut count) => {
                *count -= 1;
                *count == 0
            }
            None => false,
        };
        if emptied {
            self.per_address.remove_if(&address, |_, count| *count == 0);
        }
    }

    /// Connections open now (every transport).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Logs a refused connection at WARN, at most once a second, with how many were refused
    /// since the last line.
    pub fn log_refusal(&self, address: IpAddr, limit: &'static str) {
        let refused = self.refused_since_log.fetch_add(1, Ordering::Relaxed) + 1;
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last_refusal_log_ms.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= REFUSAL_LOG_INTERVAL.as_millis() as u64)
            && self
                .last_refusal_log_ms
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.refused_since_log.store(0, Ordering::Relaxed);
            tracing::warn!(%address, limit, refused, "connection refused: limit reached");
        }
    }

    /// Reserves `bytes` of request body from the global in-flight budget, if they fit now.
    pub fn try_reserve_body(&self, bytes: u64) -> Option<BodyPermit<'_>> {
        let limit = self.limits.max_request_bytes_in_flight.0;
        let mut current = self.in_flight.load(Ordering::Relaxed);
        loop {
            let next = current.checked_add(bytes).filter(|&next| next <= limit)?;
            match self.in_flight.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(BodyPermit {
                        admission: self,
                        bytes,
                    });
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// How long a login attempt from `address` for `username` waits before it is checked:
    /// nothing until `failures_before_delay` recent failures, then `delay` doubling per further
    /// failure up to `max_delay` (the larger of the address's and the username's).
    pub fn login_delay(&self, address: IpAddr, username: Option<&str>) -> Duration {
        let failures =
            self.recent_failures(&FailureKey::Address(address))
                .max(username.map_or(0, |name| {
                    self.recent_failures(&FailureKey::User(name.to_string()))
                }));
        let login = &self.limits.login;
        let Some(over) = failures.checked_sub(login.failures_before_delay) else {
            return Duration::ZERO;
        };
        let factor = 1u32.checked_shl(over.min(31)).unwrap_or(u32::MAX);
        login
            .delay
            .0
            .checked_mul(factor)
            .unwrap_or(login.max_delay.0)
            .min(login.max_delay.0)
    }

    fn recent_failures(&self, key: &FailureKey) -> u32 {
        self.failures
            .get(key)
            .filter(|failures| failures.last.elapsed() < self.limits.login.failure_window.0)
            .map_or(0, |failures| failures.count)
    }

    pub fn login_failed(&self, address: IpAddr, username: Option<&str>) {
        let window = self.limits.login.failure_window.0;
        if self.failures.len() >= MAX_REMEMBERED_FAILURES {
            self.failures
                .retain(|_, failures| failures.last.elapsed() < window);
        }
        let keys = std::iter::once(FailureKey::Address(address))
            .chain(username.map(|name| FailureKey::User(name.to_string())));
        for key in keys {
            if self.failures.len() >= MAX_REMEMBERED_FAILURES && !self.failures.contains_key(&key) {
                continue;
            }
            let mut entry = self.failures.entry(key).or_insert(Failures {
                count: 0,
                last: Instant::now(),
            });
            if entry.last.elapsed() >= window {
                entry.count = 0;
            }
            entry.count = entry.count.saturating_add(1);
            entry.last = Instant::now();
        }
    }

    pub fn login_succeeded(&self, address: IpAddr, username: Option<&str>) {
        self.failures.remove(&FailureKey::Address(address));
        if let Some(name) = username {
            self.failures.remove(&FailureKey::User(name.to_string()));
        }
    }

    pub fn limits(&self) -> &LimitsConfig {
        &self.limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn admission(edit: impl FnOnce(&mut LimitsConfig)) -> Admission {
        let config = Config::load(None, Vec::new()).unwrap().config;
        let mut limits = config.limits;
        edit(&mut limits);
        Admission::new(limits)
    }

    #[test]
    fn connections_are_capped_in_all_and_per_address() {
        let admission = admission(|limits| {
            limits.max_connections = 3;
            limits.max_connections_per_address = 2;
        });
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(admission.admit_connection(a).is_ok());
        assert!(admission.admit_connection(a).is_ok());
        assert_eq!(
            admission.admit_connection(a),
            Err("limits.max_connections_per_address")
        );
        assert!(admission.admit_connection(b).is_ok());
        assert_eq!(admission.admit_connection(b), Err("limits.max_connections"));
        admission.release_connection(a);
        assert!(admission.admit_connection(b).is_ok());
        assert_eq!(admission.connections(), 3);
        for address in [a, b, b] {
            admission.release_connection(address);
        }
        assert_eq!(admission.connections(), 0);
        assert!(admission.per_address.is_empty(), "no entry is left behind");
    }

    #[test]
    fn the_body_budget_is_shared_and_returned() {
        let admission = admission(|limits| {
            limits.max_request_bytes_in_flight = crate::config::units::ByteSize(100)
        });
        let first = admission.try_reserve_body(60).unwrap();
        assert!(admission.try_reserve_body(50).is_none());
        let second = admission.try_reserve_body(40).unwrap();
        drop(first);
        assert!(admission.try_reserve_body(60).is_some());
        drop(second);
        assert_eq!(admission.in_flight.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn failed_logins_delay_further_attempts_until_a_success() {
        let admission = admission(|limits| {
            limits.login.failures_before_delay = 2;
            limits.login.delay = crate::config::units::HumanDuration(Duration::from_millis(100));
            limits.login.max_delay = crate::config::units::HumanDuration(Duration::from_secs(1));
        });
        let address: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(admission.login_delay(address, Some("u")), Duration::ZERO);
        admission.login_failed(address, Some("u"));
        admission.login_failed(address, Some("u"));
        assert_eq!(
            admission.login_delay(address, None),
            Duration::from_millis(100)
        );
        // The username's failures follow it to another address.
        assert_eq!(
            admission.login_delay(other, Some("u")),
            Duration::from_millis(100)
        );
        for _ in 0..10 {
            admission.login_failed(address, Some("u"));
        }
        assert_eq!(admission.login_delay(address, None), Duration::from_secs(1));
        admission.login_succeeded(address, Some("u"));
        assert_eq!(admission.login_delay(address, Some("u")), Duration::ZERO);
    }
}
