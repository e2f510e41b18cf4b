//! The storage engine's error type and its mapping to wire status codes.

use rill_core::ErrorCode;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Which kind of file operation failed; decides the wire status an I/O error maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOperation {
    /// Listing or creating the partition directory.
    Directory,
    /// Opening an existing segment file.
    Open,
    /// Creating a new segment file.
    Create,
    /// Reading a segment file.
    Read,
    /// Writing (or preallocating) a segment file.
    Write,
    /// fsync / fdatasync.
    Sync,
    /// Truncating a segment file to its logical length.
    Truncate,
    /// Removing a segment file or the partition directory.
    Remove,
}

impl IoOperation {
    fn as_str(self) -> &'static str {
        match self {
            IoOperation::Directory => "directory operation",
            IoOperation::Open => "open",
            IoOperation::Create => "create",
            IoOperation::Read => "read",
            IoOperation::Write => "write",
            IoOperation::Sync => "sync",
            IoOperation::Truncate => "truncate",
            IoOperation::Remove => "remove",
        }
    }
}

/// Everything a storage operation can fail with.
///
/// Clone so that one failed write can be reported to every append that was waiting for it; the
/// `io::Error` is shared behind an `Arc` for that reason (and so the error can cross shards).
#[derive(Debug, Clone)]
pub enum StorageError {
    /// A file operation failed.
    Io {
        operation: IoOperation,
        path: PathBuf,
        source: Arc<io::Error>,
    },
    /// The partition configuration is unusable.
    InvalidConfig(String),
    /// A batch with no messages, or whose bytes do not parse as messages.
    InvalidBatch(&'static str),
    /// A batch larger than one append may be.
    BatchTooLarge { size_bytes: u64, max_bytes: u64 },
    /// Stored bytes are not what the index or the format says (found while reading, or a
    /// sealed segment that cannot be repaired on open).
    Corrupted {
        path: PathBuf,
        position: u64,
        reason: &'static str,
    },
    /// A stored message's checksum does not match its bytes: the message is not served.
    ChecksumMismatch {
        path: PathBuf,
        position: u64,
        offset: u64,
    },
    /// `open` was given a directory that does not exist.
    NotFound(PathBuf),
    /// `create` was given a directory that already holds segments.
    AlreadyExists(PathBuf),
    /// The partition was closed or deleted.
    Closed,
    /// An earlier write failed; the partition accepts no more appends until it is reopened
    /// (reopening runs recovery, which truncates whatever the failed write left behind).
    Failed(Box<StorageError>),
}

impl StorageError {
    pub(crate) fn io(operation: IoOperation, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StorageError::Io {
            operation,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// The wire status code a client is answered with.
    pub fn code(&self) -> ErrorCode {
        match self {
            StorageError::Io { operation, .. } => match operation {
                IoOperation::Directory => ErrorCode::CannotReadPartitions,
                IoOperation::Open => ErrorCode::CannotOpenPartitionLogFile,
                IoOperation::Create => ErrorCode::CannotCreateSegmentLogFile,
                IoOperation::Read => ErrorCode::CannotReadFile,
                IoOperation::Write => ErrorCode::CannotSaveMessagesToSegment,
                IoOperation::Sync => ErrorCode::CannotSyncFile,
                IoOperation::Truncate => ErrorCode::CannotOverwriteFile,
                IoOperation::Remove => ErrorCode::CannotDeleteFile,
            },
            StorageError::InvalidConfig(_) => ErrorCode::InvalidConfiguration,
            StorageError::InvalidBatch(_) => ErrorCode::InvalidMessagesCount,
            StorageError::BatchTooLarge { .. } => ErrorCode::InvalidMessagesSize,
            StorageError::Corrupted { .. } => ErrorCode::CannotReadMessage,
            StorageError::ChecksumMismatch { .. } => ErrorCode::InvalidMessageChecksum,
            StorageError::NotFound(_) => ErrorCode::PartitionNotFound,
            StorageError::AlreadyExists(_) => ErrorCode::CannotCreatePartition,
            StorageError::Closed => ErrorCode::SegmentClosed,
            StorageError::Failed(_) => ErrorCode::CannotAppendMessage,
        }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Io {
                operation,
                path,
                source,
            } => write!(
                f,
                "{} failed on {}: {source}",
                operation.as_str(),
                path.display()
            ),
            StorageError::InvalidConfig(why) => write!(f, "invalid partition configuration: {why}"),
            StorageError::InvalidBatch(why) => write!(f, "invalid message batch: {why}"),
            StorageError::BatchTooLarge {
                size_bytes,
                max_bytes,
            } => write!(
                f,
                "batch of {size_bytes} bytes exceeds the {max_bytes}-byte limit"
            ),
            StorageError::Corrupted {
                path,
                position,
                reason,
            } => write!(
                f,
                "corrupted data in {} at byte {position}: {reason}",
                path.display()
            ),
            StorageError::ChecksumMismatch {
                path,
                position,
                offset,
            } => write!(
                f,
                "message at offset {offset} (byte {position} of {}) does not match its checksum",
                path.display()
            ),
            StorageError::NotFound(path) => {
                write!(f, "partition directory {} does not exist", path.display())
            }
            StorageError::AlreadyExists(path) => {
                write!(
                    f,
                    "partition directory {} already holds segments",
                    path.display()
                )
            }
            StorageError::Closed => write!(f, "partition is closed"),
            StorageError::Failed(cause) => {
                write!(
                    f,
                    "partition stopped accepting writes after an earlier failure: {cause}"
                )
            }
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Io { source, .. } => Some(source.as_ref()),
            StorageError::Failed(cause) => Some(cause.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_and_map_to_wire_codes() {
        let error = StorageError::io(
            IoOperation::Write,
            "/data/0.log",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(error.code(), ErrorCode::CannotSaveMessagesToSegment);
        assert!(error.to_string().contains("/data/0.log"));
        let failed = StorageError::Failed(Box::new(error));
        assert_eq!(failed.code(), ErrorCode::CannotAppendMessage);
        assert!(failed.to_string().contains("earlier failure"));
        assert_eq!(
            StorageError::InvalidBatch("empty").code(),
            ErrorCode::InvalidMessagesCount
        );
        assert_eq!(StorageError::Closed.code(), ErrorCode::SegmentClosed);
    }
}
