//! The two xxHash32 uses the protocol fixes: client ids and key partitioning.

/// Client id of a session: xxHash32 (seed 0) of the peer address as Rust prints it
/// (`"127.0.0.1:50000"`), protocol.md 1.4.
pub fn client_id(peer_address: &str) -> u32 {
    xxhash_rust::xxh32::xxh32(peer_address.as_bytes(), 0)
}

/// The partition a messages key maps to (protocol.md 5.1), or `None` for a topic without
/// partitions (upstream would divide by zero).
pub fn partition_for_key(key: &[u8], partitions_count: u32) -> Option<u32> {
    (partitions_count > 0).then(|| xxhash_rust::xxh32::xxh32(key, 0) % partitions_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_protocol_vectors() {
        assert_eq!(client_id("127.0.0.1:50000"), 163_361_442);
        assert_eq!(xxhash_rust::xxh32::xxh32(b"user-1", 0), 2_755_638_957);
        assert_eq!(partition_for_key(b"user-1", 3), Some(2_755_638_957 % 3));
        assert_eq!(partition_for_key(b"user-1", 0), None);
    }
}
