//! The hashes the protocol fixes: XXH3-64 for message, frame and body checksums, xxHash32 for
//! client ids and key partitioning.

/// XXH3-64 with seed 0, the checksum of stored messages (protocol.md 6.2) and of 0.9 frames,
/// batches and request bodies. Every message is hashed on send and on read, and a 0.9 poll hashes
/// every polled byte once more, so this is on the hot path of both generations.
///
/// twox-hash rather than xxhash-rust here: it picks AVX2 at run time where the CPU has it, while
/// xxhash-rust only uses what the build targets (baseline x86-64, so SSE2). On this machine that
/// is 1.2-1.6x more bytes per second for 200 B to 1 MiB. Both compute the same function; a
/// property test in `tests` holds them to it.
#[inline]
pub fn xxh3_64(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// [`xxh3_64`] of `parts` back to back, without copying them together first: for inputs whose
/// large part sits in its own buffer (a metadata record's payload after its sequence). Where
/// the parts are small, copying them into one slice and calling [`xxh3_64`] is faster.
pub fn xxh3_64_of(parts: &[&[u8]]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = twox_hash::XxHash3_64::new();
    for part in parts {
        hasher.write(part);
    }
    hasher.finish()
}

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

    proptest::proptest! {
        #[test]
        fn xxh3_is_the_reference_function(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..5000)) {
            proptest::prop_assert_eq!(xxh3_64(&bytes), xxhash_rust::xxh3::xxh3_64(&bytes));
        }
    }

    #[test]
    fn parts_hash_as_their_concatenation() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        for split in [0, 1, 8, 240, 241, 1024, 2999, 3000] {
            let (head, tail) = bytes.split_at(split);
            assert_eq!(
                xxh3_64_of(&[head, tail]),
                xxhash_rust::xxh3::xxh3_64(&bytes),
                "{split}"
            );
        }
        assert_eq!(xxh3_64_of(&[]), xxhash_rust::xxh3::xxh3_64(&[]));
    }

    #[test]
    fn xxh3_matches_the_reference_at_every_length_boundary() {
        let bytes: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in (0..=1100).chain([4095, 4096, 4097, 65_535, 65_536, 70_000]) {
            assert_eq!(
                xxh3_64(&bytes[..len]),
                xxhash_rust::xxh3::xxh3_64(&bytes[..len]),
                "{len}"
            );
        }
    }
}
