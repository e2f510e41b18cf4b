//! Command options: [`TopicOptions`], [`SnapshotCompression`] and [`SnapshotType`].

use rill_core::primitives::CompressionAlgorithm;

// Named by the documentation only.
#[cfg(doc)]
use super::Client;

/// Topic settings for [`Client::create_topic`] and [`Client::update_topic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicOptions {
    /// Compression (stored, not applied, by the server).
    pub compression_algorithm: CompressionAlgorithm,
    /// µs; 0 = server default, `u64::MAX` = never expire.
    pub message_expiry: u64,
    /// Bytes; 0 = server default, `u64::MAX` = unlimited.
    pub max_topic_size: u64,
    /// 0 = default.
    pub replication_factor: u8,
}

impl Default for TopicOptions {
    fn default() -> Self {
        TopicOptions {
            compression_algorithm: CompressionAlgorithm::None,
            message_expiry: 0,
            max_topic_size: 0,
            replication_factor: 0,
        }
    }
}

/// Snapshot archive compression (protocol.md 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SnapshotCompression {
    /// No compression.
    Stored = 1,
    /// Deflate.
    Deflated = 2,
    /// bzip2.
    Bzip2 = 3,
    /// zstd.
    Zstd = 4,
    /// LZMA.
    Lzma = 5,
    /// xz.
    Xz = 6,
}

/// What a snapshot collects (protocol.md 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SnapshotType {
    /// Filesystem overview.
    FilesystemOverview = 1,
    /// Process list.
    ProcessList = 2,
    /// Resource usage.
    ResourceUsage = 3,
    /// Test entry.
    Test = 4,
    /// Server logs.
    ServerLogs = 5,
    /// Server configuration.
    ServerConfig = 6,
    /// Everything (must be alone).
    All = 100,
}
