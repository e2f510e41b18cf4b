//! Per-partition settings: acknowledgement mode, segment size, flush thresholds, retention and
//! the engine's internal limits.

use super::error::StorageError;
use super::pool::{BLOCK_SIZE, MAX_CLASS_BYTES};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// When an append is acknowledged, and therefore how far consumers may read (the watermark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AckMode {
    /// Acknowledged once accepted in memory; written when a flush threshold is crossed (as
    /// upstream Iggy does). A process crash loses what was not written yet.
    Memory,
    /// Acknowledged once the O_DIRECT write has completed: survives a process crash, not
    /// necessarily a power loss. The default, because it protects users at little cost.
    #[default]
    Written,
    /// Acknowledged once the data is durable (fdatasync, shared by concurrent appends).
    Fsync,
}

impl AckMode {
    /// The configuration spelling: "memory", "written" or "fsync".
    pub fn as_str(self) -> &'static str {
        match self {
            AckMode::Memory => "memory",
            AckMode::Written => "written",
            AckMode::Fsync => "fsync",
        }
    }
}

impl fmt::Display for AckMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AckMode {
    type Err = StorageError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "memory" => Ok(AckMode::Memory),
            "written" => Ok(AckMode::Written),
            "fsync" => Ok(AckMode::Fsync),
            other => Err(StorageError::InvalidConfig(format!(
                "unknown ack mode {other:?} (expected memory, written or fsync)"
            ))),
        }
    }
}

/// Which reads check each message's checksum before serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChecksumReads {
    /// Never: what recovery and the append path checked is trusted.
    None,
    /// Bytes read from segment files: a bit flipped on the device or in the page cache is
    /// caught there, and the cost (XXH3 runs far faster than the device reads) stays small.
    #[default]
    Disk,
    /// Also bytes still in memory (staging, the memory-mode journal), which this process
    /// checksummed itself moments ago.
    All,
}

/// Upstream caps segments at 1 GiB; index positions are u32, so segment plus one batch must
/// stay below 4 GiB.
pub const MAX_SEGMENT_SIZE_BYTES: u64 = 1 << 30;
/// The largest batch one append may carry (a SendMessages frame is far smaller in practice).
pub const MAX_BATCH_BYTES: u64 = 1 << 30;
const _: () = assert!(MAX_SEGMENT_SIZE_BYTES + MAX_BATCH_BYTES < u32::MAX as u64);

/// The smallest staging buffer: small appends share one, so it need not be large.
pub(crate) const MIN_WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// Settings of one partition; usually derived from the topic and the server defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    /// Rotate to a new segment before an append would take the active one past this size.
    pub segment_size_bytes: u64,
    pub ack_mode: AckMode,
    /// Memory mode: write once this many messages wait in memory.
    pub memory_flush_messages: u64,
    /// Memory mode: write once this many bytes wait in memory.
    pub memory_flush_bytes: u64,
    /// Memory mode: how often the caller's timer should call `Partition::flush(false)`.
    pub memory_flush_interval: Duration,
    /// Sealed segments whose newest message is older than this are deleted by retention.
    pub message_expiry: Option<Duration>,
    /// Retention deletes the oldest sealed segments while the partition is larger than this.
    pub max_size_bytes: Option<u64>,
    /// Largest staging buffer (a power of two, 64 KiB ..= 64 MiB); bigger rounds use several,
    /// written with one vectored write.
    pub write_buffer_bytes: usize,
    /// Appends wait while this many accepted bytes are not written yet (backpressure).
    pub max_unwritten_bytes: u64,
    /// A read returns at most this many bytes (always at least one message).
    pub max_read_bytes: u64,
    /// Largest step by which a segment file is preallocated (fallocate) ahead of the writes.
    pub preallocate_chunk_bytes: u64,
    /// Which reads verify checksums.
    pub checksum_reads: ChecksumReads,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            segment_size_bytes: MAX_SEGMENT_SIZE_BYTES,
            ack_mode: AckMode::default(),
            memory_flush_messages: 1024,
            memory_flush_bytes: 1 << 20,
            memory_flush_interval: Duration::from_secs(1),
            message_expiry: None,
            max_size_bytes: None,
            write_buffer_bytes: 4 << 20,
            max_unwritten_bytes: 64 << 20,
            max_read_bytes: 16 << 20,
            preallocate_chunk_bytes: 64 << 20,
            checksum_reads: ChecksumReads::default(),
        }
    }
}

impl PartitionConfig {
    /// Checks the relations the engine relies on.
    pub fn validate(&self) -> Result<(), StorageError> {
        let invalid = |why: String| Err(StorageError::InvalidConfig(why));
        if self.segment_size_bytes == 0 || self.segment_size_bytes > MAX_SEGMENT_SIZE_BYTES {
            return invalid(format!(
                "segment_size_bytes must be in 1..={MAX_SEGMENT_SIZE_BYTES}, got {}",
                self.segment_size_bytes
            ));
        }
        if !self.write_buffer_bytes.is_power_of_two()
            || self.write_buffer_bytes < MIN_WRITE_BUFFER_BYTES
            || self.write_buffer_bytes > MAX_CLASS_BYTES
        {
            return invalid(format!(
                "write_buffer_bytes must be a power of two in {MIN_WRITE_BUFFER_BYTES}..={MAX_CLASS_BYTES}, got {}",
                self.write_buffer_bytes
            ));
        }
        if self.memory_flush_messages == 0 || self.memory_flush_bytes == 0 {
            return invalid("memory flush thresholds must be positive".into());
        }
        if self.max_unwritten_bytes == 0 || self.max_read_bytes == 0 {
            return invalid("max_unwritten_bytes and max_read_bytes must be positive".into());
        }
        if self.preallocate_chunk_bytes < BLOCK_SIZE as u64 {
            return invalid(format!(
                "preallocate_chunk_bytes must be at least {BLOCK_SIZE}, got {}",
                self.preallocate_chunk_bytes
            ));
        }
        if self.max_size_bytes == Some(0) {
            return invalid("max_size_bytes must be positive when set".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_mode_parses_and_prints_config_names() {
        for mode in [AckMode::Memory, AckMode::Written, AckMode::Fsync] {
            assert_eq!(mode.as_str().parse::<AckMode>().unwrap(), mode);
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(" FSYNC ".parse::<AckMode>().unwrap(), AckMode::Fsync);
        assert!("sometimes".parse::<AckMode>().is_err());
        assert_eq!(AckMode::default(), AckMode::Written);
    }

    #[test]
    fn default_config_is_valid_and_bad_values_are_rejected() {
        let config = PartitionConfig::default();
        config.validate().unwrap();
        assert_eq!(config.segment_size_bytes, 1 << 30);
        assert_eq!(config.memory_flush_messages, 1024);
        assert_eq!(config.memory_flush_bytes, 1 << 20);
        for bad in [
            PartitionConfig {
                segment_size_bytes: 0,
                ..config.clone()
            },
            PartitionConfig {
                segment_size_bytes: 2 << 30,
                ..config.clone()
            },
            PartitionConfig {
                write_buffer_bytes: 100_000,
                ..config.clone()
            },
            PartitionConfig {
                memory_flush_messages: 0,
                ..config.clone()
            },
            PartitionConfig {
                max_size_bytes: Some(0),
                ..config.clone()
            },
            PartitionConfig {
                preallocate_chunk_bytes: 1,
                ..config.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
