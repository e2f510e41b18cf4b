//! Key-value options blocks (protocol-0.9.md 5.1): the user-header TLV encoding used as a
//! string-keyed map. In requests a block runs to the end of the body; in responses it is
//! prefixed by its length. Topics are the only objects with keys; the catalog below is what the
//! 0.9-generation clients send and DescribeOptions lists.

use crate::codec::put_str32;
use crate::error::{DecodeError, ErrorCode};
use crate::primitives::CompressionAlgorithm;
use crate::primitives::user_headers::{self, HeaderKind};
use crate::units::{parse_duration, parse_size};
use bytes::BufMut;

/// Most entries and bytes one block may hold.
pub const MAX_ENTRIES: usize = 1024;
pub const MAX_BLOCK_BYTES: usize = 100_000;

/// One entry: a key and a typed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionEntry {
    pub key: String,
    pub kind: HeaderKind,
    pub value: Vec<u8>,
}

/// Decodes a request's options block: string keys, valid kinds and lengths, no duplicates.
pub fn decode(block: &[u8]) -> Result<Vec<OptionEntry>, DecodeError> {
    if block.len() > MAX_BLOCK_BYTES {
        return Err(DecodeError::invalid("options block size"));
    }
    let pairs = user_headers::parse(block).map_err(|_| DecodeError::invalid("options block"))?;
    if pairs.len() > MAX_ENTRIES {
        return Err(DecodeError::invalid("options block entries"));
    }
    let mut entries: Vec<OptionEntry> = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        if key.kind != HeaderKind::String {
            return Err(DecodeError::invalid("option key kind"));
        }
        let key = String::from_utf8(key.value).map_err(|_| DecodeError::invalid("option key"))?;
        if entries.iter().any(|entry| entry.key == key) {
            return Err(DecodeError::invalid("duplicate option key"));
        }
        entries.push(OptionEntry {
            key,
            kind: value.kind,
            value: value.value,
        });
    }
    Ok(entries)
}

/// Encodes entries as a response block: its u32 length, then the entries.
pub fn encode_prefixed<B: BufMut>(entries: &[OptionEntry], out: &mut B) {
    let len: usize = entries
        .iter()
        .map(|entry| 1 + 4 + entry.key.len() + 1 + 4 + entry.value.len())
        .sum();
    out.put_u32_le(len as u32);
    encode_entries(entries, out);
}

/// Encodes entries as a request block (no prefix).
pub fn encode_entries<B: BufMut>(entries: &[OptionEntry], out: &mut B) {
    for entry in entries {
        out.put_u8(HeaderKind::String as u8);
        out.put_u32_le(entry.key.len() as u32);
        out.put_slice(entry.key.as_bytes());
        out.put_u8(entry.kind as u8);
        out.put_u32_le(entry.value.len() as u32);
        out.put_slice(&entry.value);
    }
}

/// Streams and users take no options (4041 for any key).
pub fn expect_none(entries: &[OptionEntry]) -> Result<(), DecodeError> {
    match entries.first() {
        None => Ok(()),
        Some(_) => Err(unsupported()),
    }
}

fn unsupported() -> DecodeError {
    DecodeError::new(ErrorCode::UnsupportedOptionKey, "option key")
}

fn invalid() -> DecodeError {
    DecodeError::new(ErrorCode::InvalidOptionValue, "option value")
}

/// A topic's settings as the options of a CreateTopic or UpdateTopic carry them: None where the
/// key was absent. Keys this server has no per-topic setting for (durability, save thresholds,
/// preallocation) are checked as upstream checks them and then not kept: durability follows the
/// server's ack mode, saving its write path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TopicOptions {
    pub compression: Option<CompressionAlgorithm>,
    /// µs; 0 = server default, u64::MAX = never.
    pub message_expiry: Option<u64>,
    /// Bytes; 0 = server default, u64::MAX = unlimited.
    pub max_topic_size: Option<u64>,
    /// Bytes, a multiple of 512 in 1 MiB..=1 GiB; None (or 0 on the wire) = the server's
    /// `system.segment.size`. Fixed at creation: UpdateTopic refuses the key.
    pub segment_size: Option<u64>,
}

/// The catalog of topic option keys: (key, updatable, default kind, default value bytes,
/// description), in key order as DescribeOptions lists them.
const CATALOG: [(&str, bool, HeaderKind, &[u8], &str); 9] = [
    (
        "compression_algorithm",
        true,
        HeaderKind::String,
        b"none",
        "Compression of stored messages: none or gzip.",
    ),
    (
        "consumer_offset_durability",
        false,
        HeaderKind::String,
        b"replicated",
        "How stored consumer offsets are made durable: replicated or persisted.",
    ),
    (
        "durability",
        false,
        HeaderKind::String,
        b"replicated",
        "How appended messages are made durable: replicated or persisted.",
    ),
    (
        "max_topic_size",
        true,
        HeaderKind::Uint64,
        &u64::MAX.to_le_bytes(),
        "Largest size of the topic in bytes before the oldest segments are deleted; unlimited by default.",
    ),
    (
        "message_expiry",
        true,
        HeaderKind::Uint64,
        &u64::MAX.to_le_bytes(),
        "How long messages are kept, in microseconds; never expire by default.",
    ),
    (
        "messages_required_to_save",
        false,
        HeaderKind::Uint32,
        &1024u32.to_le_bytes(),
        "Messages buffered before they are saved (1..=16777216).",
    ),
    (
        "preallocate_segments",
        false,
        HeaderKind::Bool,
        &[0],
        "Whether segment files are preallocated.",
    ),
    (
        "segment_size",
        false,
        HeaderKind::Uint64,
        &(1u64 << 30).to_le_bytes(),
        "Size of one segment in bytes: a multiple of 512 from 1 MiB to 1 GiB.",
    ),
    (
        "size_of_messages_required_to_save",
        false,
        HeaderKind::Uint64,
        &(1u64 << 20).to_le_bytes(),
        "Bytes buffered before they are saved (at most 1 GiB).",
    ),
];

/// Parses a topic's options. `update` allows only the updatable keys (4041 for the others).
pub fn topic_options(
    entries: &[OptionEntry],
    update: bool,
    partitions: u32,
) -> Result<TopicOptions, DecodeError> {
    let mut options = TopicOptions::default();
    let mut segment_size = 1u64 << 30;
    let mut preallocate = false;
    for entry in entries {
        let Some(&(_, updatable, ..)) = CATALOG.iter().find(|(key, ..)| *key == entry.key) else {
            return Err(unsupported());
        };
        if update && !updatable {
            return Err(unsupported());
        }
        match entry.key.as_str() {
            "compression_algorithm" => {
                options.compression = Some(match (entry.kind, entry.value.as_slice()) {
                    (HeaderKind::Uint8, [1]) => CompressionAlgorithm::None,
                    (HeaderKind::Uint8, [2]) => CompressionAlgorithm::Gzip,
                    (HeaderKind::String, _) => {
                        CompressionAlgorithm::from_name(text(entry)?).ok_or_else(invalid)?
                    }
                    _ => return Err(invalid()),
                })
            }
            "message_expiry" => {
                options.message_expiry = Some(match entry.kind {
                    HeaderKind::String => expiry(text(entry)?)?,
                    _ => unsigned(entry)?,
                })
            }
            "max_topic_size" => {
                options.max_topic_size = Some(match entry.kind {
                    HeaderKind::String => size(text(entry)?)?,
                    _ => unsigned(entry)?,
                })
            }
            "segment_size" => {
                let value = match entry.kind {
                    HeaderKind::String => size(text(entry)?)?,
                    _ => unsigned(entry)?,
                };
                if value != 0 {
                    if value % 512 != 0 || !((1 << 20)..=(1 << 30)).contains(&value) {
                        return Err(invalid());
                    }
                    segment_size = value;
                    options.segment_size = Some(value);
                }
            }
            "durability" | "consumer_offset_durability" => {
                if entry.kind != HeaderKind::String
                    || !matches!(
                        text(entry)?.to_ascii_lowercase().as_str(),
                        "replicated" | "persisted"
                    )
                {
                    return Err(invalid());
                }
            }
            "messages_required_to_save" => {
                let value = match entry.kind {
                    HeaderKind::String => text(entry)?.trim().parse().map_err(|_| invalid())?,
                    _ => unsigned(entry)?,
                };
                if !(1..=16_777_216).contains(&value) {
                    return Err(invalid());
                }
            }
            "size_of_messages_required_to_save" => {
                let value = match entry.kind {
                    HeaderKind::String => size(text(entry)?)?,
                    _ => unsigned(entry)?,
                };
                if value > 1 << 30 {
                    return Err(invalid());
                }
            }
            "preallocate_segments" => {
                preallocate = match (entry.kind, entry.value.as_slice()) {
                    (HeaderKind::Bool, [value @ (0 | 1)]) => *value == 1,
                    (HeaderKind::String, _) => match text(entry)?.to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(invalid()),
                    },
                    _ => return Err(invalid()),
                }
            }
            _ => unreachable!("every catalog key is handled"),
        }
    }
    if preallocate && segment_size.saturating_mul(u64::from(partitions)) > 64 << 30 {
        return Err(invalid());
    }
    Ok(options)
}

fn text(entry: &OptionEntry) -> Result<&str, DecodeError> {
    std::str::from_utf8(&entry.value).map_err(|_| invalid())
}

/// An unsigned integer value of any unsigned kind.
fn unsigned(entry: &OptionEntry) -> Result<u64, DecodeError> {
    let value = &entry.value;
    match entry.kind {
        HeaderKind::Uint8 | HeaderKind::Uint16 | HeaderKind::Uint32 | HeaderKind::Uint64 => {
            let mut bytes = [0u8; 8];
            bytes[..value.len()].copy_from_slice(value);
            Ok(u64::from_le_bytes(bytes))
        }
        _ => Err(invalid()),
    }
}

fn is_unlimited(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "none" | "never" | "unlimited"
    )
}

/// A message expiry written by a person: "none"/"never", "server_default", "0" or a duration.
fn expiry(text: &str) -> Result<u64, DecodeError> {
    if is_unlimited(text) {
        return Ok(u64::MAX);
    }
    if text.trim().eq_ignore_ascii_case("server_default") {
        return Ok(0);
    }
    let duration = parse_duration(text).map_err(|_| invalid())?;
    u64::try_from(duration.as_micros()).map_err(|_| invalid())
}

fn size(text: &str) -> Result<u64, DecodeError> {
    if is_unlimited(text) {
        return Ok(u64::MAX);
    }
    if text.trim().eq_ignore_ascii_case("server_default") {
        return Ok(0);
    }
    parse_size(text).map_err(|_| invalid())
}

/// One key of the option catalog: its name, kind, default (in the kind's encoding) and what it
/// does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    pub key: &'static str,
    pub kind: HeaderKind,
    pub default: &'static [u8],
    pub description: &'static str,
}

/// The option catalog of `scope` (1 topic, 2 stream, 3 user): topics have options, streams and
/// users none yet.
pub fn specs(scope: u8) -> Result<Vec<OptionSpec>, DecodeError> {
    match scope {
        1 => Ok(CATALOG
            .iter()
            .map(|&(key, _, kind, default, description)| OptionSpec {
                key,
                kind,
                default,
                description,
            })
            .collect()),
        2 | 3 => Ok(Vec::new()),
        _ => Err(DecodeError::invalid("options scope")),
    }
}

/// DescribeOptions (13) for `scope` (1 topic, 2 stream, 3 user): the catalog with each key's
/// default and description (protocol-0.9.md 5.1.4).
pub fn describe(scope: u8) -> Result<Vec<u8>, DecodeError> {
    let specs = specs(scope)?;
    let mut out = Vec::new();
    out.put_u32_le(specs.len() as u32);
    for spec in specs {
        out.put_u8(spec.key.len() as u8);
        out.put_slice(spec.key.as_bytes());
        out.put_u8(spec.kind as u8);
        out.put_u32_le(spec.default.len() as u32);
        out.put_slice(spec.default);
        put_str32(&mut out, spec.description);
    }
    Ok(out)
}

/// The options a topic reports as derived (filled in by the server) for its settings, sorted
/// by key as SDK 0.11.0 sorts its own. `segment_size` is left out where it is not known.
pub fn derived_topic_options(
    compression: CompressionAlgorithm,
    message_expiry: u64,
    max_topic_size: u64,
    segment_size: Option<u64>,
) -> Vec<OptionEntry> {
    let compression = compression.name();
    let mut entries = vec![
        OptionEntry {
            key: "compression_algorithm".into(),
            kind: HeaderKind::String,
            value: compression.as_bytes().to_vec(),
        },
        OptionEntry {
            key: "max_topic_size".into(),
            kind: HeaderKind::Uint64,
            value: max_topic_size.to_le_bytes().to_vec(),
        },
        OptionEntry {
            key: "message_expiry".into(),
            kind: HeaderKind::Uint64,
            value: message_expiry.to_le_bytes().to_vec(),
        },
    ];
    entries.extend(segment_size.map(segment_size_entry));
    entries
}

/// A topic's segment size as an option entry.
pub fn segment_size_entry(size: u64) -> OptionEntry {
    OptionEntry {
        key: "segment_size".into(),
        kind: HeaderKind::Uint64,
        value: size.to_le_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, kind: HeaderKind, value: &[u8]) -> OptionEntry {
        OptionEntry {
            key: key.into(),
            kind,
            value: value.to_vec(),
        }
    }

    fn block(entries: &[OptionEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_entries(entries, &mut out);
        out
    }

    /// The options block of the captured CreateTopic (protocol-0.9.md 11.4).
    #[test]
    fn decodes_the_default_topic_options_of_sdk_0_11() {
        let captured =
            b"\x02\x1a\x00\x00\x00consumer_offset_durability\x02\x0a\x00\x00\x00replicated\
\x02\x0a\x00\x00\x00durability\x02\x0a\x00\x00\x00replicated";
        let entries = decode(captured).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(block(&entries), captured.to_vec());
        assert_eq!(
            topic_options(&entries, false, 1).unwrap(),
            TopicOptions::default()
        );
    }

    #[test]
    fn maps_topic_settings_from_numbers_and_text() {
        let entries = [
            entry("compression_algorithm", HeaderKind::String, b"gzip"),
            entry("message_expiry", HeaderKind::String, b"1 h"),
            entry(
                "max_topic_size",
                HeaderKind::Uint64,
                &(5u64 << 30).to_le_bytes(),
            ),
        ];
        let options = topic_options(&decode(&block(&entries)).unwrap(), true, 1).unwrap();
        assert_eq!(options.compression, Some(CompressionAlgorithm::Gzip));
        assert_eq!(options.message_expiry, Some(3_600_000_000));
        assert_eq!(options.max_topic_size, Some(5 << 30));
        let unlimited = [entry("max_topic_size", HeaderKind::String, b"unlimited")];
        assert_eq!(
            topic_options(&unlimited, false, 1).unwrap().max_topic_size,
            Some(u64::MAX)
        );
    }

    #[test]
    fn refuses_unknown_keys_bad_values_and_fixed_keys_on_update() {
        let code = |entries: &[OptionEntry], update| {
            topic_options(entries, update, 1000).unwrap_err().code
        };
        let unknown = [entry("partitions_count", HeaderKind::Uint32, &[1, 0, 0, 0])];
        assert_eq!(code(&unknown, false), ErrorCode::UnsupportedOptionKey);
        let durability = [entry("durability", HeaderKind::String, b"eventual")];
        assert_eq!(code(&durability, false), ErrorCode::InvalidOptionValue);
        let fixed = [entry("durability", HeaderKind::String, b"persisted")];
        assert_eq!(code(&fixed, true), ErrorCode::UnsupportedOptionKey);
        assert!(topic_options(&fixed, false, 1).is_ok());
        let segment = [entry(
            "segment_size",
            HeaderKind::Uint64,
            &1000u64.to_le_bytes(),
        )];
        assert_eq!(code(&segment, false), ErrorCode::InvalidOptionValue);
        let huge = [
            entry(
                "segment_size",
                HeaderKind::Uint64,
                &(1u64 << 30).to_le_bytes(),
            ),
            entry("preallocate_segments", HeaderKind::Bool, &[1]),
        ];
        assert_eq!(code(&huge, false), ErrorCode::InvalidOptionValue);
        assert_eq!(
            expect_none(&fixed).unwrap_err().code,
            ErrorCode::UnsupportedOptionKey
        );
    }

    #[test]
    fn refuses_malformed_blocks() {
        let twice = block(&[
            entry("durability", HeaderKind::String, b"persisted"),
            entry("durability", HeaderKind::String, b"persisted"),
        ]);
        assert!(decode(&twice).is_err());
        let mut numeric_key = block(&[entry("x", HeaderKind::String, b"y")]);
        numeric_key[0] = HeaderKind::Uint8 as u8;
        assert!(decode(&numeric_key).is_err());
        assert!(decode(&[2, 1, 0]).is_err());
        assert_eq!(decode(&[]).unwrap(), vec![]);
    }

    #[test]
    fn describes_the_topic_catalog_and_nothing_for_streams_and_users() {
        let topic = describe(1).unwrap();
        assert_eq!(u32::from_le_bytes(topic[..4].try_into().unwrap()), 9);
        assert_eq!(describe(2).unwrap(), vec![0, 0, 0, 0]);
        assert_eq!(describe(3).unwrap(), vec![0, 0, 0, 0]);
        assert!(describe(4).is_err());
    }
}
