//! Encryption at rest (`[system.encryption]`): AES-256-GCM (ring) over every stored message's
//! payload and user headers and over every metadata-log record, under keys derived from the
//! operator's master key. Clients never see it: a poll returns the plaintext.
//!
//! ```text
//! keys     HKDF-SHA256(salt "rill encryption at rest v1", master key)
//!            expanded with "partition" + stream id + topic id + partition id (u32 LE each)
//!            → one AES-256-GCM key per partition
//!            expanded with "metadata log" → the metadata log's key
//!            expanded with "key check" → 32 bytes stored in state/encryption.check
//! message  header (64 bytes, in the clear; payload_length = plaintext payload + 28)
//!          nonce 12 | AES-256-GCM(payload ++ user headers) | tag 16
//!          AAD: id u128 ++ origin_timestamp u64 ++ user_headers_length u32 (LE, as stored)
//! record   nonce 12 | AES-256-GCM(encoded op) | tag 16, AAD: where it sits (metadata/log.rs:
//!          "log" + sequence, or "snapshot" + covered sequence + index)
//! ```
//!
//! Nonces are never derived from offsets: an offset is reused after a failed write, a `memory`
//! mode crash or a purge. Each partition instead counts from a random 96-bit start drawn when
//! it opens, so within one opening no nonce repeats, and two openings collide only if their
//! ranges overlap (negligible at 2^96; far below the 2^-32 bound that random nonces would give
//! after 2^32 messages). Metadata records take a random nonce each (a handful per day).
//!
//! The key check lets a restart tell a wrong key, a missing key, or an attempt to switch an
//! existing plaintext data directory to encryption apart from corruption, and refuse to start
//! with a clear message instead of failing on every read. The key itself is never written
//! anywhere: `Debug` and the printed configuration show it redacted.

use crate::storage::random_message_id;
use base64::Engine as _;
use bytes::{BufMut, Bytes, BytesMut};
use rill_core::message::field::{
    CHECKSUM, ID, ORIGIN_TIMESTAMP, PAYLOAD_LENGTH, USER_HEADERS_LENGTH,
};
use rill_core::message::{HEADER_SIZE, MAX_PAYLOAD_BYTES, MessageBatch, MessageIter, checksum};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Prk, Salt};
use std::cell::Cell;
use std::io;
use std::path::Path;

/// What encryption adds to each message's payload: the nonce and the tag.
pub const OVERHEAD: usize = NONCE_LEN + TAG_LEN;
const TAG_LEN: usize = 16;
const KEY_LEN: usize = 32;
const SALT: &[u8] = b"rill encryption at rest v1";
/// The key-check file in the state directory.
pub const CHECK_FILE: &str = "encryption.check";
const CHECK_MAGIC: &[u8; 8] = b"RILLKEY1";

/// The operator's key, as HKDF's pseudo-random key (this type keeps no copy of the raw bytes;
/// the server clears the configuration's copy once it has parsed it).
pub struct MasterKey(Prk);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(redacted)")
    }
}

/// An HKDF output length for raw bytes (the key check).
struct Bytes32;

impl KeyType for Bytes32 {
    fn len(&self) -> usize {
        KEY_LEN
    }
}

impl MasterKey {
    /// Parses upstream's form: 32 bytes in standard base64. The error never repeats the key.
    pub fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| {
                "system.encryption.key is not valid base64 (generate one with \
                 `openssl rand -base64 32`)"
                    .to_string()
            })?;
        if bytes.len() != KEY_LEN {
            return Err(format!(
                "system.encryption.key must decode to 32 bytes, got {} (generate one with \
                 `openssl rand -base64 32`)",
                bytes.len()
            ));
        }
        Ok(MasterKey(Salt::new(HKDF_SHA256, SALT).extract(&bytes)))
    }

    fn aead_key(&self, info: &[&[u8]]) -> LessSafeKey {
        let okm = self
            .0
            .expand(info, &AES_256_GCM)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        LessSafeKey::new(UnboundKey::from(okm))
    }

    /// The cipher of one partition's messages, with a fresh random nonce start.
    pub fn partition(&self, stream_id: u32, topic_id: u32, partition_id: u32) -> MessageCipher {
        let key = self.aead_key(&[
            b"partition",
            &stream_id.to_le_bytes(),
            &topic_id.to_le_bytes(),
            &partition_id.to_le_bytes(),
        ]);
        MessageCipher {
            key,
            next_nonce: Cell::new(rand::random::<u128>() & NONCE_MASK),
        }
    }

    /// The cipher of the metadata log's records.
    pub fn metadata_log(&self) -> RecordCipher {
        RecordCipher(self.aead_key(&[b"metadata log"]))
    }

    fn check_value(&self) -> [u8; KEY_LEN] {
        let mut out = [0; KEY_LEN];
        self.0
            .expand(&[b"key check"], Bytes32)
            .and_then(|okm| okm.fill(&mut out))
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        out
    }
}

const NONCE_MASK: u128 = (1 << 96) - 1;

fn nonce_bytes(counter: u128) -> [u8; NONCE_LEN] {
    counter.to_le_bytes()[..NONCE_LEN]
        .try_into()
        .expect("12 bytes")
}

/// Why stored bytes could not be decrypted: tampered with, corrupted, or not encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecryptError {
    /// The message's offset, when the header was readable.
    pub offset: Option<u64>,
}

impl std::fmt::Display for DecryptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "the message at offset {offset} fails authentication"),
            None => f.write_str("a stored message is malformed"),
        }
    }
}

/// One partition's message cipher. Single-threaded, as the partition it belongs to.
pub struct MessageCipher {
    key: LessSafeKey,
    next_nonce: Cell<u128>,
}

impl std::fmt::Debug for MessageCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MessageCipher")
    }
}

impl MessageCipher {
    fn take_nonce(&self) -> [u8; NONCE_LEN] {
        let counter = self.next_nonce.get();
        self.next_nonce.set(counter.wrapping_add(1) & NONCE_MASK);
        nonce_bytes(counter)
    }

    /// Encrypts every message of a client's batch. Messages sent with id 0 get their random id
    /// here (the AAD covers the id, so it must be final before sealing). Fails only for a
    /// payload too big to grow by [`OVERHEAD`].
    pub fn seal(&self, batch: &MessageBatch) -> Result<MessageBatch, SealError> {
        let mut out = BytesMut::with_capacity(batch.size() + OVERHEAD * batch.count() as usize);
        for message in batch.iter() {
            let payload_length = message.payload().len();
            if payload_length + OVERHEAD > MAX_PAYLOAD_BYTES {
                return Err(SealError::PayloadTooBig);
            }
            let start = out.len();
            out.put_slice(&message.as_bytes()[..HEADER_SIZE]);
            let header = &mut out[start..];
            if message.id() == 0 {
                header[ID..ID + 16].copy_from_slice(&random_message_id().to_le_bytes());
            }
            header[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4]
                .copy_from_slice(&((payload_length + OVERHEAD) as u32).to_le_bytes());
            let aad = aad_of(&out[start..start + HEADER_SIZE]);
            let nonce = self.take_nonce();
            out.put_slice(&nonce);
            let body = out.len();
            out.put_slice(&message.as_bytes()[HEADER_SIZE..]);
            let tag = self
                .key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    &mut out[body..],
                )
                .map_err(|_| SealError::Cipher)?;
            out.put_slice(tag.as_ref());
        }
        MessageBatch::from_stored(out).map_err(|_| SealError::Cipher)
    }

    /// Decrypts stored messages (back to back, possibly split over several buffers) into one
    /// buffer of plaintext messages, each with its checksum recomputed over the plaintext.
    pub fn open(&self, chunks: &[Bytes]) -> Result<Bytes, DecryptError> {
        let total: usize = chunks.iter().map(Bytes::len).sum();
        let mut out = BytesMut::with_capacity(total);
        for chunk in chunks {
            if self.open_into(chunk, &mut out).is_err() {
                // Buffers cut inside a message (storage does not slice so): join them.
                out.clear();
                self.open_into(&chunks.concat(), &mut out)?;
                break;
            }
        }
        Ok(out.freeze())
    }

    fn open_into(&self, stored: &[u8], out: &mut BytesMut) -> Result<(), DecryptError> {
        for message in MessageIter::new(stored) {
            let message = message.map_err(|_| DecryptError { offset: None })?;
            let failed = DecryptError {
                offset: Some(message.offset()),
            };
            let bytes = message.as_bytes();
            let sealed_payload = message.payload().len();
            if sealed_payload < OVERHEAD {
                return Err(failed);
            }
            let aad = aad_of(&bytes[..HEADER_SIZE]);
            let nonce: [u8; NONCE_LEN] = bytes[HEADER_SIZE..HEADER_SIZE + NONCE_LEN]
                .try_into()
                .expect("12 bytes");
            let start = out.len();
            out.put_slice(&bytes[..HEADER_SIZE]);
            out.put_slice(&bytes[HEADER_SIZE + NONCE_LEN..]);
            let plain_len = self
                .key
                .open_in_place(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(aad),
                    &mut out[start + HEADER_SIZE..],
                )
                .map_err(|_| failed)?
                .len();
            out.truncate(start + HEADER_SIZE + plain_len);
            let record = &mut out[start..];
            record[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4]
                .copy_from_slice(&((sealed_payload - OVERHEAD) as u32).to_le_bytes());
            let sum = checksum(record);
            record[CHECKSUM..CHECKSUM + 8].copy_from_slice(&sum.to_le_bytes());
        }
        Ok(())
    }
}

/// Why a batch could not be encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// A payload within [`OVERHEAD`] bytes of the largest payload a message may carry.
    PayloadTooBig,
    Cipher,
}

fn aad_of(header: &[u8]) -> [u8; 28] {
    let mut aad = [0; 28];
    aad[..16].copy_from_slice(&header[ID..ID + 16]);
    aad[16..24].copy_from_slice(&header[ORIGIN_TIMESTAMP..ORIGIN_TIMESTAMP + 8]);
    aad[24..28].copy_from_slice(&header[USER_HEADERS_LENGTH..USER_HEADERS_LENGTH + 4]);
    aad
}

/// The metadata log's record cipher.
pub struct RecordCipher(LessSafeKey);

impl std::fmt::Debug for RecordCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordCipher")
    }
}

impl RecordCipher {
    /// `plain` sealed under a random nonce, bound to `aad` (where the record sits).
    pub fn seal(&self, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let mut out = Vec::with_capacity(plain.len() + OVERHEAD);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let tag = self
            .0
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[NONCE_LEN..],
            )
            .expect("a metadata record is far below AES-GCM's length limit");
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// The plaintext of a sealed record, or None if it fails authentication (or was sealed
    /// with another `aad`).
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < OVERHEAD {
            return None;
        }
        let nonce: [u8; NONCE_LEN] = sealed[..NONCE_LEN].try_into().expect("12 bytes");
        let mut in_out = sealed[NONCE_LEN..].to_vec();
        let len = self
            .0
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut in_out,
            )
            .ok()?
            .len();
        in_out.truncate(len);
        Some(in_out)
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Checks the data directory against the configured key before anything is read, and records
/// the key's check value the first time encryption is on. `has_data`: the state directory
/// already holds metadata (written with or without encryption).
pub fn check_data_dir(
    state_dir: &Path,
    key: Option<&MasterKey>,
    has_data: bool,
) -> Result<(), String> {
    let path = state_dir.join(CHECK_FILE);
    let stored = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    match (key, stored) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(format!(
            "the data in {} was written with encryption at rest ({} exists): set \
             [system.encryption] enabled = true and the same key to start",
            state_dir.parent().unwrap_or(state_dir).display(),
            path.display()
        )),
        (Some(key), Some(stored)) => {
            if stored.len() != CHECK_MAGIC.len() + KEY_LEN || &stored[..8] != CHECK_MAGIC {
                return Err(format!("{} is not a key-check file", path.display()));
            }
            if stored[8..] != key.check_value() {
                return Err(format!(
                    "system.encryption.key is not the key the data in {} was written with: \
                     refusing to start (nothing was read or changed)",
                    state_dir.parent().unwrap_or(state_dir).display()
                ));
            }
            Ok(())
        }
        (Some(_), None) if has_data => Err(format!(
            "the data in {} was written without encryption: encryption at rest can only be \
             turned on for a new data directory (start a server with encryption on an empty \
             system.path and move the data over)",
            state_dir.parent().unwrap_or(state_dir).display()
        )),
        (Some(key), None) => {
            let mut bytes = CHECK_MAGIC.to_vec();
            bytes.extend_from_slice(&key.check_value());
            write_durably(state_dir, &path, &bytes)
                .map_err(|error| format!("cannot write {}: {error}", path.display()))
        }
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
fn write_durably(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir)?;
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests;
