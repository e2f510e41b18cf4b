//! A data call on one partition, sent to the node that leads it (`Route::Node`). Everything
//! about the request was settled where the client is connected: its user and permissions, and
//! which partition (balanced, by key, or a group's). The leader only runs the call on its
//! partition, so a partition's data stays on the nodes that replicate it. Binary both ways,
//! little-endian:
//!
//! ```text
//! request   stream u32 | topic u32 | partition u32 | op u8 | fields
//!             1 append          messages as the client sent them (validated again here)
//!             2 poll            kind u8 | value u64 | count u32 | consumer | auto_commit u8
//!             3 flush           fsync u8
//!             4 delete segments count u32
//!             5 purge
//!             6 store offset    consumer | offset u64
//!             7 get offset      consumer
//!             8 delete offset   consumer
//!             9 counters
//!           consumer: 0 none | 1 id u32 (a consumer) | 2 id u32 (a group)
//! answer    0 | code u32        refused
//!           1                   done
//!           2 | 0 | 1 base u64  appended (0: deduplication dropped every message)
//!           3 | partition u32 | current u64 | count u32 | 0 | 1 last u64 | messages to the end
//!           4 | 0 | 1 current u64 | stored u64   a stored offset
//!           5 | segments u32 | current u64 | size u64 | messages u64   counters
//! ```

use super::reader::Reader;
use crate::shard::message::{ConsumerKey, PollArgs, Polled, StoredOffset};
use crate::shard::table::PartitionKey;
use crate::views::Counts;
use bytes::{Bytes, BytesMut};
use rill_core::message::MessageBatch;
use rill_core::primitives::{PollingKind, PollingStrategy};
use std::time::Duration;

/// What a partition's leader is asked to do.
#[derive(Debug)]
pub enum NodeCall {
    Append(MessageBatch),
    Poll(PollArgs),
    Flush {
        fsync: bool,
    },
    DeleteSegments {
        count: u32,
    },
    Purge,
    StoreOffset {
        consumer: ConsumerKey,
        offset: u64,
    },
    GetOffset(ConsumerKey),
    DeleteOffset(ConsumerKey),
    /// The counters stream and topic reads show.
    Counters,
}

/// The leader's answer to a [`NodeCall`].
#[derive(Debug)]
pub enum NodeAnswer {
    Done,
    Appended(Option<u64>),
    Polled(Polled),
    Offset(Option<StoredOffset>),
    Counts(Counts),
}

fn put_consumer(consumer: Option<ConsumerKey>, out: &mut Vec<u8>) {
    let (kind, id) = match consumer {
        None => (0u8, 0),
        Some(ConsumerKey::Consumer(id)) => (1, id),
        Some(ConsumerKey::Group(id)) => (2, id),
    };
    out.push(kind);
    if kind != 0 {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

fn consumer(reader: &mut Reader<'_>) -> Option<Option<ConsumerKey>> {
    Some(match reader.u8()? {
        0 => None,
        1 => Some(ConsumerKey::Consumer(reader.u32()?)),
        2 => Some(ConsumerKey::Group(reader.u32()?)),
        _ => return None,
    })
}

pub fn encode_call(key: &PartitionKey, call: &NodeCall) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(&key.stream_id.to_le_bytes());
    out.extend_from_slice(&key.topic_id.to_le_bytes());
    out.extend_from_slice(&key.partition_id.to_le_bytes());
    match call {
        NodeCall::Append(batch) => {
            out.push(1);
            out.extend_from_slice(batch.as_bytes());
        }
        NodeCall::Poll(args) => {
            out.push(2);
            out.push(args.strategy.kind.as_u8());
            out.extend_from_slice(&args.strategy.value.to_le_bytes());
            out.extend_from_slice(&args.count.to_le_bytes());
            put_consumer(args.consumer, &mut out);
            out.push(u8::from(args.auto_commit));
        }
        NodeCall::Flush { fsync } => {
            out.push(3);
            out.push(u8::from(*fsync));
        }
        NodeCall::DeleteSegments { count } => {
            out.push(4);
            out.extend_from_slice(&count.to_le_bytes());
        }
        NodeCall::Purge => out.push(5),
        NodeCall::StoreOffset { consumer, offset } => {
            out.push(6);
            put_consumer(Some(*consumer), &mut out);
            out.extend_from_slice(&offset.to_le_bytes());
        }
        NodeCall::GetOffset(consumer) => {
            out.push(7);
            put_consumer(Some(*consumer), &mut out);
        }
        NodeCall::DeleteOffset(consumer) => {
            out.push(8);
            put_consumer(Some(*consumer), &mut out);
        }
        NodeCall::Counters => out.push(9),
    }
    out
}

fn bool_byte(byte: u8) -> Option<bool> {
    match byte {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// None for anything malformed (the caller refuses it with InvalidCommand).
pub fn decode_call(body: &[u8]) -> Option<(PartitionKey, NodeCall)> {
    let mut reader = Reader(body);
    let key = reader.key()?;
    let call = match reader.u8()? {
        1 => {
            let batch = MessageBatch::from_stored(BytesMut::from(reader.rest())).ok()?;
            if batch.is_empty() {
                return None;
            }
            return Some((key, NodeCall::Append(batch)));
        }
        2 => {
            let kind = PollingKind::from_u8(reader.u8()?).ok()?;
            let value = reader.u64()?;
            let count = reader.u32()?;
            let consumer = consumer(&mut reader)?;
            let auto_commit = bool_byte(reader.u8()?)?;
            NodeCall::Poll(PollArgs {
                strategy: PollingStrategy { kind, value },
                count,
                consumer,
                auto_commit,
                // A partition call answers at once: the caller's wait is not sent.
                wait_for_data: Duration::ZERO,
            })
        }
        3 => NodeCall::Flush {
            fsync: bool_byte(reader.u8()?)?,
        },
        4 => NodeCall::DeleteSegments {
            count: reader.u32()?,
        },
        5 => NodeCall::Purge,
        6 => NodeCall::StoreOffset {
            consumer: consumer(&mut reader)??,
            offset: reader.u64()?,
        },
        7 => NodeCall::GetOffset(consumer(&mut reader)??),
        8 => NodeCall::DeleteOffset(consumer(&mut reader)??),
        9 => NodeCall::Counters,
        _ => return None,
    };
    reader.rest().is_empty().then_some((key, call))
}

pub fn encode_answer(answer: &Result<NodeAnswer, u32>) -> Vec<u8> {
    let mut out = Vec::new();
    match answer {
        Err(code) => {
            out.push(0);
            out.extend_from_slice(&code.to_le_bytes());
        }
        Ok(NodeAnswer::Done) => out.push(1),
        Ok(NodeAnswer::Appended(base)) => {
            out.push(2);
            put_option(*base, &mut out);
        }
        Ok(NodeAnswer::Polled(polled)) => {
            let size: usize = polled.chunks.iter().map(Bytes::len).sum();
            out.reserve(30 + size);
            out.push(3);
            out.extend_from_slice(&polled.partition_id.to_le_bytes());
            out.extend_from_slice(&polled.current_offset.to_le_bytes());
            out.extend_from_slice(&polled.count.to_le_bytes());
            put_option(polled.last_offset, &mut out);
            for chunk in &polled.chunks {
                out.extend_from_slice(chunk);
            }
        }
        Ok(NodeAnswer::Counts(counts)) => {
            out.push(5);
            out.extend_from_slice(&counts.segments_count.to_le_bytes());
            out.extend_from_slice(&counts.current_offset.to_le_bytes());
            out.extend_from_slice(&counts.size_bytes.to_le_bytes());
            out.extend_from_slice(&counts.messages_count.to_le_bytes());
        }
        Ok(NodeAnswer::Offset(offset)) => {
            out.push(4);
            match offset {
                None => out.push(0),
                Some(offset) => {
                    out.push(1);
                    out.extend_from_slice(&offset.current_offset.to_le_bytes());
                    out.extend_from_slice(&offset.stored_offset.to_le_bytes());
                }
            }
        }
    }
    out
}

fn put_option(value: Option<u64>, out: &mut Vec<u8>) {
    match value {
        None => out.push(0),
        Some(value) => {
            out.push(1);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

fn option(reader: &mut Reader<'_>) -> Option<Option<u64>> {
    match reader.u8()? {
        0 => Some(None),
        1 => Some(Some(reader.u64()?)),
        _ => None,
    }
}

/// None for anything malformed. A poll's messages stay in `body`'s allocation.
pub fn decode_answer(body: Vec<u8>) -> Option<Result<NodeAnswer, u32>> {
    let mut reader = Reader(&body);
    let answer = match reader.u8()? {
        0 => Err(reader.u32()?),
        1 => Ok(NodeAnswer::Done),
        2 => Ok(NodeAnswer::Appended(option(&mut reader)?)),
        3 => {
            let partition_id = reader.u32()?;
            let current_offset = reader.u64()?;
            let count = reader.u32()?;
            let last_offset = option(&mut reader)?;
            let at = body.len() - reader.rest().len();
            let messages = Bytes::from(body).slice(at..);
            let chunks = if messages.is_empty() {
                Vec::new()
            } else {
                vec![messages]
            };
            return Some(Ok(NodeAnswer::Polled(Polled {
                partition_id,
                current_offset,
                count,
                last_offset,
                chunks,
                frame_checksums: Vec::new(),
            })));
        }
        4 => Ok(NodeAnswer::Offset(match reader.u8()? {
            0 => None,
            1 => Some(StoredOffset {
                current_offset: reader.u64()?,
                stored_offset: reader.u64()?,
            }),
            _ => return None,
        })),
        5 => Ok(NodeAnswer::Counts(Counts {
            segments_count: reader.u32()?,
            current_offset: reader.u64()?,
            size_bytes: reader.u64()?,
            messages_count: reader.u64()?,
        })),
        _ => return None,
    };
    reader.rest().is_empty().then_some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rill_core::message::OutgoingMessage;

    fn key() -> PartitionKey {
        PartitionKey::new(1, 2, 3)
    }

    #[test]
    fn calls_round_trip() {
        let batch = MessageBatch::from_messages(&[
            OutgoingMessage::new(&b"one"[..]),
            OutgoingMessage::new(&b"two"[..]),
        ]);
        let calls = [
            NodeCall::Append(batch),
            NodeCall::Poll(PollArgs {
                strategy: PollingStrategy::offset(7),
                count: 10,
                consumer: Some(ConsumerKey::Group(4)),
                auto_commit: true,
                wait_for_data: Duration::ZERO,
            }),
            NodeCall::Poll(PollArgs {
                strategy: PollingStrategy::next(),
                count: 1,
                consumer: None,
                auto_commit: false,
                wait_for_data: Duration::ZERO,
            }),
            NodeCall::Flush { fsync: true },
            NodeCall::DeleteSegments { count: 2 },
            NodeCall::Purge,
            NodeCall::StoreOffset {
                consumer: ConsumerKey::Consumer(9),
                offset: 40,
            },
            NodeCall::GetOffset(ConsumerKey::Group(5)),
            NodeCall::DeleteOffset(ConsumerKey::Consumer(6)),
            NodeCall::Counters,
        ];
        for call in calls {
            let bytes = encode_call(&key(), &call);
            let (decoded_key, decoded) = decode_call(&bytes).expect("decodes");
            assert_eq!(decoded_key, key());
            // Encoding again gives the same bytes: every field survived.
            assert_eq!(encode_call(&key(), &decoded), bytes, "{call:?}");
        }
    }

    #[test]
    fn answers_round_trip() {
        let answers = [
            Err(3007),
            Ok(NodeAnswer::Done),
            Ok(NodeAnswer::Appended(None)),
            Ok(NodeAnswer::Appended(Some(12))),
            Ok(NodeAnswer::Polled(Polled {
                partition_id: 3,
                current_offset: 99,
                count: 2,
                last_offset: Some(11),
                chunks: vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")],
                frame_checksums: Vec::new(),
            })),
            Ok(NodeAnswer::Offset(None)),
            Ok(NodeAnswer::Counts(Counts {
                segments_count: 1,
                current_offset: 2,
                size_bytes: 3,
                messages_count: 4,
            })),
            Ok(NodeAnswer::Offset(Some(StoredOffset {
                current_offset: 5,
                stored_offset: 4,
            }))),
        ];
        for answer in answers {
            let bytes = encode_answer(&answer);
            let decoded = decode_answer(bytes.clone()).expect("decodes");
            assert_eq!(encode_answer(&decoded), bytes);
        }
        let Some(Ok(NodeAnswer::Polled(polled))) =
            decode_answer(encode_answer(&Ok(NodeAnswer::Polled(Polled {
                chunks: vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")],
                ..Polled::default()
            }))))
        else {
            panic!("a poll answer");
        };
        assert_eq!(polled.chunks, vec![Bytes::from_static(b"abcd")]);
    }

    #[test]
    fn malformed_calls_are_refused() {
        let mut bytes = encode_call(&key(), &NodeCall::Flush { fsync: true });
        bytes.push(0);
        assert!(decode_call(&bytes).is_none(), "trailing bytes");
        let mut bytes = encode_call(&key(), &NodeCall::Flush { fsync: true });
        *bytes.last_mut().unwrap() = 2;
        assert!(decode_call(&bytes).is_none(), "not a bool");
        let mut bytes = encode_call(&key(), &NodeCall::Purge);
        bytes[12] = 1;
        assert!(decode_call(&bytes).is_none(), "an append without messages");
        bytes.extend_from_slice(&[1, 2, 3]);
        assert!(decode_call(&bytes).is_none(), "messages cut short");
    }

    proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = decode_call(&bytes);
            let _ = decode_answer(bytes);
        }
    }
}
