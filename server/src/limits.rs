//! Process resource limits raised at start.
//!
//! Every TCP connection, partition file (`.log`, `.index`), io_uring instance and shard pipe is a
//! file descriptor. Distributions commonly start processes with a soft `RLIMIT_NOFILE` of 1024,
//! which a few hundred connections plus a few hundred partitions exhaust (accept then fails with
//! EMFILE). The hard limit is usually far higher (524288 on systemd), and an unprivileged process
//! may raise its soft limit up to it, so the server does that once at start and logs both values.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Below this hard limit the server warns: 1,000 connections and a few thousand partition files
/// would not fit.
pub const LOW_NOFILE_HARD_LIMIT: u64 = 4096;

/// What [`raise_nofile_limit`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// Soft limit before the change.
    pub old_soft: u64,
    /// Soft limit now in force.
    pub soft: u64,
    /// Hard limit (unchanged).
    pub hard: u64,
}

/// The soft limit to ask for: the hard limit, unless that is "unlimited", which Linux refuses for
/// RLIMIT_NOFILE above `fs.nr_open`; then `nr_open` (or the old soft limit if it cannot be read).
fn target_soft_limit(old_soft: u64, hard: u64, nr_open: Option<u64>) -> u64 {
    let target = if hard == nix::libc::RLIM_INFINITY {
        nr_open.unwrap_or(old_soft)
    } else {
        hard
    };
    target.max(old_soft)
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
fn read_nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit. Returns the limits, or the error of the
/// syscall that failed (the server still starts with whatever limit it has).
pub fn raise_nofile_limit() -> nix::Result<NofileLimit> {
    let (old_soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    let target = target_soft_limit(old_soft, hard, read_nr_open());
    if target != old_soft {
        setrlimit(Resource::RLIMIT_NOFILE, target, hard)?;
    }
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    Ok(NofileLimit {
        old_soft,
        soft,
        hard,
    })
}

/// [`raise_nofile_limit`] with its outcome logged: info with the old and new soft limits, a
/// warning when the hard limit is below [`LOW_NOFILE_HARD_LIMIT`] or the change failed.
pub fn raise_and_log_nofile_limit() {
    match raise_nofile_limit() {
        Ok(limit) => {
            tracing::info!(
                old_soft = limit.old_soft,
                soft = limit.soft,
                hard = limit.hard,
                "file descriptor limit (RLIMIT_NOFILE) raised to the hard limit"
            );
            if limit.hard < LOW_NOFILE_HARD_LIMIT {
                tracing::warn!(
                    hard = limit.hard,
                    "the hard file descriptor limit is low: connections and partition files \
                     beyond it will fail with EMFILE; raise it (ulimit -Hn, LimitNOFILE=)"
                );
            }
        }
        Err(error) => {
            tracing::warn!(%error, "cannot raise the file descriptor limit (RLIMIT_NOFILE)")
        }
    }
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_is_the_hard_limit() {
        assert_eq!(target_soft_limit(1024, 524_288, Some(1_048_576)), 524_288);
        assert_eq!(target_soft_limit(1024, 1024, None), 1024);
        // Never lowers the soft limit.
        assert_eq!(target_soft_limit(4096, 1024, None), 4096);
    }

    #[test]
    fn unlimited_hard_limit_uses_nr_open() {
        let infinity = nix::libc::RLIM_INFINITY;
        assert_eq!(
            target_soft_limit(1024, infinity, Some(1_048_576)),
            1_048_576
        );
        assert_eq!(target_soft_limit(1024, infinity, None), 1024);
    }

    #[test]
    fn raising_reaches_the_hard_limit() {
        // Raising is idempotent, so running it in the test process changes nothing another
        // test depends on (it never lowers a limit).
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
        let limit = raise_nofile_limit().expect("raise");
        assert_eq!(limit.old_soft, soft);
        assert_eq!(limit.hard, hard);
        let expected = target_soft_limit(soft, hard, read_nr_open());
        assert_eq!(limit.soft, expected);
        assert_eq!(
            getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit").0,
            expected
        );
    }
}
