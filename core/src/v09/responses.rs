//! 0.9 reply payloads (protocol-0.9.md section 5), written from the 0.8 ones the handlers
//! produce: stream, topic and user records gain their options blocks, topic headers lose the
//! replication factor, GetTopics gains a count. Every other payload is the same in both.

use super::options::{self, OptionEntry};
use crate::codec::{Decode, Encode, Reader};
use crate::error::DecodeError;
use crate::responses::{StreamDetails, StreamInfo, TopicDetails, TopicInfo, UserDetails, UserInfo};
use bytes::BufMut;

/// Rewrites the successful 0.8 payload of command `code` as 0.9 sends it. An empty payload
/// ("not found" for single-object reads, "none" for lists) stays empty, except GetTopics,
/// which always carries its count. `segment_size` gives the segment size of a topic (by id) of
/// the stream the command named, which 0.8's topic records have no room for.
pub fn translate(
    code: u32,
    payload: &[u8],
    segment_size: &dyn Fn(u32) -> Option<SegmentSize>,
) -> Result<Vec<u8>, DecodeError> {
    if payload.is_empty() && code != 301 {
        return Ok(Vec::new());
    }
    let mut reader = Reader::new(payload);
    let mut out = Vec::with_capacity(payload.len() + 64);
    match code {
        200 | 202 => {
            let details = StreamDetails::decode(&mut reader)?;
            stream(&details.stream, &mut out);
            details
                .topics
                .iter()
                .for_each(|t| topic(t, segment_size(t.id), &mut out));
        }
        201 => {
            while !reader.is_empty() {
                stream(&StreamInfo::decode(&mut reader)?, &mut out);
            }
        }
        300 | 302 => {
            let details = TopicDetails::decode(&mut reader)?;
            topic(&details.topic, segment_size(details.topic.id), &mut out);
            details.partitions.iter().for_each(|p| p.encode(&mut out));
        }
        301 => {
            let mut topics = Vec::new();
            while !reader.is_empty() {
                topics.push(TopicInfo::decode(&mut reader)?);
            }
            out.put_u32_le(topics.len() as u32);
            topics
                .iter()
                .for_each(|t| topic(t, segment_size(t.id), &mut out));
        }
        31 | 33 => {
            let details = UserDetails::decode(&mut reader)?;
            user(&details.user, &mut out);
            // The permissions part is the same as 0.8's: re-encode it after the options.
            let mut rest = Vec::new();
            details.encode(&mut rest);
            out.put_slice(&rest[details.user.encoded_len()..]);
        }
        32 => {
            while !reader.is_empty() {
                user(&UserInfo::decode(&mut reader)?, &mut out);
            }
        }
        _ => return Ok(payload.to_vec()),
    }
    Ok(out)
}

fn stream(stream: &StreamInfo, out: &mut Vec<u8>) {
    stream.encode(out);
    options::encode_prefixed(&[], out);
}

fn user(user: &UserInfo, out: &mut Vec<u8>) {
    user.encode(out);
    options::encode_prefixed(&[], out);
}

/// A topic's segment size, and whether the client chose it (an explicit option) or the server
/// did (a derived one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSize {
    pub bytes: u64,
    pub explicit: bool,
}

/// A topic header: 0.8's without the replication factor, then the explicit options (the
/// segment size, where the client chose it) and the derived ones (the other settings the
/// server holds for it).
fn topic(topic: &TopicInfo, segment_size: Option<SegmentSize>, out: &mut Vec<u8>) {
    out.put_u32_le(topic.id);
    out.put_u64_le(topic.created_at);
    out.put_u32_le(topic.partitions_count);
    out.put_u64_le(topic.message_expiry);
    out.put_u8(topic.compression_algorithm as u8);
    out.put_u64_le(topic.max_topic_size);
    out.put_u64_le(topic.size_bytes);
    out.put_u64_le(topic.messages_count);
    topic.name.encode(out);
    let (explicit, derived_size) = match segment_size {
        Some(size) if size.explicit => (vec![options::segment_size_entry(size.bytes)], None),
        Some(size) => (Vec::new(), Some(size.bytes)),
        None => (Vec::new(), None),
    };
    options::encode_prefixed(&explicit, out);
    let derived: Vec<OptionEntry> = options::derived_topic_options(
        topic.compression_algorithm,
        topic.message_expiry,
        topic.max_topic_size,
        derived_size,
    );
    options::encode_prefixed(&derived, out);
}

/// A partition record's size: the layout is 0.8's, unchanged.
pub const PARTITION_RECORD_SIZE: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::{CompressionAlgorithm, Name, UserStatus};
    use crate::responses::PartitionInfo;

    fn topic_info(id: u32) -> TopicInfo {
        TopicInfo {
            id,
            created_at: 5,
            partitions_count: 1,
            message_expiry: u64::MAX,
            compression_algorithm: CompressionAlgorithm::None,
            max_topic_size: u64::MAX,
            replication_factor: 1,
            size_bytes: 0,
            messages_count: 0,
            name: Name::new("t").unwrap(),
        }
    }

    /// The reply SDK 0.11.0 accepted for CreateStream "s" (protocol-0.9.md 11.3).
    #[test]
    fn a_stream_record_gains_an_empty_options_block() {
        let details = StreamDetails {
            stream: StreamInfo {
                id: 0,
                created_at: 1_700_000_000_000_000,
                topics_count: 0,
                size_bytes: 0,
                messages_count: 0,
                name: Name::new("s").unwrap(),
            },
            topics: vec![],
        };
        let body = translate(202, &details.to_bytes(), &|_| None).unwrap();
        let mut expected = vec![0, 0, 0, 0];
        expected.extend_from_slice(&1_700_000_000_000_000u64.to_le_bytes());
        expected.extend_from_slice(&[0; 4 + 8 + 8]);
        expected.extend_from_slice(b"\x01s\x00\x00\x00\x00");
        assert_eq!(body, expected);
    }

    #[test]
    fn topic_headers_lose_the_replication_factor_and_gain_two_blocks() {
        let details = TopicDetails {
            topic: topic_info(3),
            partitions: vec![PartitionInfo {
                id: 0,
                created_at: 5,
                segments_count: 1,
                current_offset: 0,
                size_bytes: 0,
                messages_count: 0,
            }],
        };
        let body = translate(300, &details.to_bytes(), &|_| None).unwrap();
        // 49 fixed bytes, name, empty explicit block, derived block, one partition.
        let derived_len = u32::from_le_bytes(body[55..59].try_into().unwrap()) as usize;
        assert_eq!(&body[51..55], &[0, 0, 0, 0]);
        assert_eq!(body.len(), 59 + derived_len + PARTITION_RECORD_SIZE);
        assert_eq!(body[24], 1, "compression right after the expiry");
        let derived = options::decode(&body[59..59 + derived_len]).unwrap();
        assert_eq!(derived.len(), 3);
        let list = translate(
            301,
            &[topic_info(0).to_bytes(), topic_info(1).to_bytes()].concat(),
            &|_| None,
        )
        .unwrap();
        assert_eq!(&list[..4], &2u32.to_le_bytes());
        assert_eq!(translate(301, &[], &|_| None).unwrap(), vec![0, 0, 0, 0]);
    }

    /// The options blocks of each topic header of a GetTopics reply: (explicit, derived).
    fn options_of(list: &[u8]) -> Vec<(Vec<OptionEntry>, Vec<OptionEntry>)> {
        let count = u32::from_le_bytes(list[..4].try_into().unwrap());
        let mut reader = &list[4..];
        let mut blocks = Vec::new();
        let block = |reader: &mut &[u8]| {
            let len = u32::from_le_bytes(reader[..4].try_into().unwrap()) as usize;
            let entries = options::decode(&reader[4..4 + len]).unwrap();
            *reader = &reader[4 + len..];
            entries
        };
        for _ in 0..count {
            reader = &reader[50 + reader[49] as usize..];
            let explicit = block(&mut reader);
            blocks.push((explicit, block(&mut reader)));
        }
        assert!(reader.is_empty());
        blocks
    }

    /// A topic's segment size is reported: explicit where the client chose it, derived where
    /// the server did, so SDK 0.11.0's `Topic::options` shows it either way.
    #[test]
    fn a_known_segment_size_is_an_option() {
        let sizes = |id: u32| match id {
            1 => Some(SegmentSize {
                bytes: 4 << 20,
                explicit: true,
            }),
            2 => Some(SegmentSize {
                bytes: 1 << 30,
                explicit: false,
            }),
            _ => None,
        };
        let headers = [topic_info(0), topic_info(1), topic_info(2)].map(|t| t.to_bytes());
        let list = translate(301, &headers.concat(), &sizes).unwrap();
        let blocks = options_of(&list);
        let keys = |entries: &[OptionEntry]| -> Vec<String> {
            entries.iter().map(|entry| entry.key.clone()).collect()
        };
        let base = ["compression_algorithm", "max_topic_size", "message_expiry"];
        assert!(blocks[0].0.is_empty());
        assert_eq!(keys(&blocks[0].1), base);
        assert_eq!(blocks[1].0, vec![options::segment_size_entry(4 << 20)]);
        assert_eq!(keys(&blocks[1].1), base);
        assert!(blocks[2].0.is_empty());
        assert_eq!(keys(&blocks[2].1), [&base[..], &["segment_size"]].concat());
        assert_eq!(blocks[2].1[3], options::segment_size_entry(1 << 30));
    }

    #[test]
    fn user_records_gain_an_options_block_and_keep_their_permissions() {
        let info = UserInfo {
            id: 4,
            created_at: 1,
            status: UserStatus::Active,
            username: Name::new("ann").unwrap(),
        };
        let details = UserDetails {
            user: info.clone(),
            permissions: None,
        };
        let body = translate(31, &details.to_bytes(), &|_| None).unwrap();
        let head = info.to_bytes();
        assert_eq!(&body[..head.len()], &head[..]);
        assert_eq!(&body[head.len()..], &[0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(translate(31, &[], &|_| None).unwrap(), Vec::<u8>::new());
        assert_eq!(translate(10, b"abc", &|_| None).unwrap(), b"abc".to_vec());
    }
}
