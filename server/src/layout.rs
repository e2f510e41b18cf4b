//! Where things live in the data directory (`system.path`). Storage takes a partition's
//! directory as given; this module is the one place that knows how the namespace maps to paths.
//!
//! ```text
//! <data>/state/                  metadata log and snapshot (metadata::log)
//! <data>/certs/                  self-signed certificates written at start (tls)
//! <data>/streams/<stream>/topics/<topic>/partitions/<partition>/   segments, offsets/
//! ```

use std::path::{Path, PathBuf};

pub fn stream_dir(data: &Path, stream_id: u32) -> PathBuf {
    data.join("streams").join(stream_id.to_string())
}

pub fn topic_dir(data: &Path, stream_id: u32, topic_id: u32) -> PathBuf {
    stream_dir(data, stream_id)
        .join("topics")
        .join(topic_id.to_string())
}

pub fn partition_dir(data: &Path, stream_id: u32, topic_id: u32, partition_id: u32) -> PathBuf {
    topic_dir(data, stream_id, topic_id)
        .join("partitions")
        .join(partition_id.to_string())
}
