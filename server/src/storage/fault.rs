//! Storage fault injection for tests that run the real binary (`integration/tests/
//! reliability_disk_faults.rs`).
//!
//! When the environment variable [`FAULT_FILE_ENV`] names a file at startup, every segment
//! write (`.log`/`.index`, including `fallocate`) and every fsync of segment files and
//! partition directories first reads that file. Its first word picks the fault:
//!
//! | word | effect |
//! |---|---|
//! | `enospc` | writes and preallocations fail with ENOSPC |
//! | `eio` | writes and preallocations fail with EIO |
//! | `fsync` | fdatasync/fsync of segment files and partition directories fail with EIO |
//! | `off` (or a missing/empty file) | no fault |
//!
//! An optional second word limits the fault to paths containing it, e.g.
//! `eio streams/1/topics/1/partitions/1/` hits one partition only. Reads are never failed.
//!
//! Compiled only with the `fault-injection` cargo feature, which the integration test harness
//! builds its server with (`cargo build -p rill-server --features fault-injection`). A release
//! build ignores the variable: nobody can make a production broker fail its writes through its
//! environment. With the feature and the variable unset, the cost per write is one acquire
//! load of an initialised `OnceLock` and a predictable branch.

use std::io;
use std::path::Path;

/// Names the fault-control file; read once, when the first write or sync asks.
pub const FAULT_FILE_ENV: &str = "RILL_STORAGE_FAULT_FILE";

/// Where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultPoint {
    /// A write or preallocation of a segment file.
    Write,
    /// An fsync/fdatasync of a segment file or a partition directory.
    Sync,
}

#[cfg(feature = "fault-injection")]
static FAULT_FILE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// The error to fail this operation on `path` with, if a fault is switched on.
#[cfg(feature = "fault-injection")]
#[inline]
pub(crate) fn injected(point: FaultPoint, path: &Path) -> Option<io::Error> {
    let control = FAULT_FILE
        .get_or_init(|| std::env::var_os(FAULT_FILE_ENV).map(std::path::PathBuf::from))
        .as_deref()?;
    injected_from(control, point, path)
}

/// Without the `fault-injection` feature no fault is ever injected.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn injected(_point: FaultPoint, _path: &Path) -> Option<io::Error> {
    None
}

#[allow(
    clippy::disallowed_methods,
    reason = "test builds only (fault-injection feature)"
)]
#[cfg(feature = "fault-injection")]
#[cold]
fn injected_from(control: &Path, point: FaultPoint, path: &Path) -> Option<io::Error> {
    let spec = std::fs::read_to_string(control).ok()?;
    parse(&spec, point, path)
}

#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
fn parse(spec: &str, point: FaultPoint, path: &Path) -> Option<io::Error> {
    let mut words = spec.split_whitespace();
    let errno = match (words.next()?, point) {
        ("enospc", FaultPoint::Write) => libc::ENOSPC,
        ("eio", FaultPoint::Write) => libc::EIO,
        ("fsync", FaultPoint::Sync) => libc::EIO,
        _ => return None,
    };
    if let Some(scope) = words.next()
        && !path.to_string_lossy().contains(scope)
    {
        return None;
    }
    Some(io::Error::from_raw_os_error(errno))
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_word_picks_the_fault_and_the_scope_limits_it() {
        let log = Path::new("/d/streams/1/topics/1/partitions/2/00000000000000000000.log");
        let errno = |spec: &str, point| parse(spec, point, log).and_then(|e| e.raw_os_error());
        assert_eq!(errno("enospc\n", FaultPoint::Write), Some(libc::ENOSPC));
        assert_eq!(errno("enospc", FaultPoint::Sync), None);
        assert_eq!(errno("eio", FaultPoint::Write), Some(libc::EIO));
        assert_eq!(errno("fsync", FaultPoint::Sync), Some(libc::EIO));
        assert_eq!(errno("fsync", FaultPoint::Write), None);
        assert_eq!(errno("off", FaultPoint::Write), None);
        assert_eq!(errno("", FaultPoint::Write), None);
        assert_eq!(
            errno("eio partitions/2/", FaultPoint::Write),
            Some(libc::EIO)
        );
        assert_eq!(errno("eio partitions/3/", FaultPoint::Write), None);
    }
}
