//! Integrity failures of a partition's stored messages: the opt-in boot scan, and the refusal of
//! a poll that meets a message failing its checksum or, with encryption at rest, its
//! authentication (both counted in `checksum_mismatches`, logged once per offset).

use super::{LocalPartition, storage_error};
use crate::storage;
use rill_core::ErrorCode;

impl LocalPartition {
    /// `verify_checksums_at_boot`: reads every written message back and checks its checksum.
    /// Mismatches are logged and counted; nothing is removed (the read path refuses them).
    pub async fn scan_checksums(&self) {
        let started = std::time::Instant::now();
        match self.storage().scan_checksums().await {
            Ok(scan) => {
                for mismatch in scan.mismatches.iter().take(10) {
                    tracing::error!(
                        partition = %self.key,
                        offset = mismatch.offset,
                        file = %mismatch.path.display(),
                        "stored message does not match its checksum"
                    );
                }
                self.metrics
                    .checksum_mismatches
                    .add(scan.mismatches.len() as u64);
                let took_ms = started.elapsed().as_millis() as u64;
                if scan.mismatches.is_empty() {
                    tracing::info!(partition = %self.key, messages = scan.messages, bytes = scan.bytes, took_ms, "checksums verified");
                } else {
                    tracing::error!(partition = %self.key, messages = scan.messages, mismatches = scan.mismatches.len(), took_ms, "checksum scan found corrupted messages; polls of them are refused");
                }
            }
            Err(error) => {
                tracing::error!(partition = %self.key, %error, "checksum scan could not read the partition")
            }
        }
    }

    /// Maps a read's storage error to its status; a checksum mismatch is counted and logged.
    pub(super) fn read_error(&self, error: storage::StorageError) -> ErrorCode {
        let storage::StorageError::ChecksumMismatch { offset, .. } = &error else {
            return storage_error(error);
        };
        self.report_corrupted(
            Some(*offset),
            &error,
            "stored message is corrupted: polls from its offset are refused with \
             InvalidMessageChecksum until it is deleted (segment retention or purge)",
        );
        error.code()
    }

    /// A stored message that fails AES-GCM authentication: counted and logged as a checksum
    /// mismatch is, answered CannotDecryptData.
    pub(super) fn decrypt_error(&self, error: crate::encryption::DecryptError) -> ErrorCode {
        self.report_corrupted(
            error.offset,
            &error,
            "stored message cannot be decrypted (altered on disk, or corrupted): polls \
             reaching it are refused with CannotDecryptData",
        );
        ErrorCode::CannotDecryptData
    }

    /// Counts a stored message that failed verification and logs it at ERROR once per offset
    /// (a consumer retrying the same broken message would flood the log otherwise).
    fn report_corrupted(&self, offset: Option<u64>, error: &dyn std::fmt::Display, what: &str) {
        self.metrics.checksum_mismatches.inc();
        if offset.is_some() && self.reported_mismatch.replace(offset) == offset {
            tracing::debug!(partition = %self.key, %error, "poll refused again");
        } else {
            tracing::error!(partition = %self.key, %error, "{what}");
        }
    }
}
