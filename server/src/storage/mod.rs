//! The storage engine (doc written below once the code settles).

mod config;
mod error;
mod file;
mod index;
mod partition;
mod pool;
mod segment;
mod wait;

pub use config::{AckMode, MAX_BATCH_BYTES, MAX_SEGMENT_SIZE_BYTES, PartitionConfig};
pub use error::{IoOperation, StorageError};
pub use index::{INDEX_ENTRY_SIZE, IndexEntry};
pub use partition::{
    AppendOutcome, Partition, PartitionStats, ReadOutcome, RecoveryReport, RetentionOutcome,
};
pub use pool::{
    AlignedBuf, BLOCK_SIZE, BufferPool, MAX_CLASS_BYTES, MIN_CLASS_BYTES, PoolStats, PooledBuf,
};

#[cfg(test)]
mod tests;
