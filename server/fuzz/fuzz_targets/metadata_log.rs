//! Fuzzes the server's metadata decoders: a record payload through `metadata::codec::decode`
//! (an accepted op must re-encode to as many bytes, decoding to the same op), and boot-time recovery
//! (`metadata::log::recover`) of a metadata.log made of the input, either raw (corruption) or cut
//! into payloads wrapped in records with valid sequences and checksums, so that arbitrary ops
//! reach `Metadata::apply`. Must never panic or allocate without bound; recovery must leave a log
//! that a second recovery accepts whole (nothing more to truncate). A record whose checksum
//! holds but whose payload does not decode is refused (an error, not a truncation), so such
//! inputs end with `recover` returning an error, which is fine. Plaintext logs only: the
//! encrypted form is the same records around sealed payloads (property-tested in
//! `encryption/tests.rs` and `metadata/log.rs`).
//!
//! The first input byte selects the mode (modulo 3).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rill_server::metadata::codec;
use rill_server::metadata::log::{LOG_FILE, recover};
use std::path::PathBuf;

fn op(payload: &[u8]) {
    if let Ok(op) = codec::decode(payload) {
        // Flags may be non-canonical (any non-zero byte is "present"), but the length must be
        // the same: an op takes the bytes it was decoded from.
        let encoded = codec::encode(&op);
        assert_eq!(encoded.len(), payload.len(), "an accepted op re-encodes to its length");
        assert_eq!(codec::decode(&encoded).expect("re-encoded op decodes"), op);
    }
}

/// Records as metadata/log.rs writes them: length u32, sequence u64, checksum u64
/// (XXH3-64 over the sequence bytes and the payload), payload.
fn wrap_records(mut input: &[u8]) -> Vec<u8> {
    let mut log = Vec::new();
    let mut sequence = 1u64;
    // Each payload is a u8 length then that many bytes.
    while let Some((&len, rest)) = input.split_first() {
        let len = usize::from(len).min(rest.len());
        let (payload, rest) = rest.split_at(len);
        let mut hashed = sequence.to_le_bytes().to_vec();
        hashed.extend_from_slice(payload);
        log.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        log.extend_from_slice(&sequence.to_le_bytes());
        log.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&hashed).to_le_bytes());
        log.extend_from_slice(payload);
        sequence += 1;
        input = rest;
    }
    log
}

fn directory() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rill-fuzz-metadata-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create fuzz directory");
    dir
}

fn recover_log(bytes: &[u8]) {
    let dir = directory();
    std::fs::write(dir.join(LOG_FILE), bytes).expect("write metadata.log");
    if let Ok(first) = recover(&dir, None) {
        assert!(first.log_len <= bytes.len() as u64);
        assert_eq!(first.log_len + first.truncated_bytes, bytes.len() as u64);
        let second = recover(&dir, None).expect("a recovered log recovers again");
        assert_eq!(second.truncated_bytes, 0, "recovery left bytes to truncate");
        assert_eq!(second.log_len, first.log_len);
        assert_eq!(second.replayed_records, first.replayed_records);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => op(rest),
        1 => recover_log(rest),
        _ => recover_log(&wrap_records(rest)),
    }
});
