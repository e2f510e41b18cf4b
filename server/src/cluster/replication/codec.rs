//! The replica port's partition-replication bodies, binary both ways (messages travel as
//! stored, so JSON is out of the question). Little-endian throughout.
//!
//! ```text
//! STATE  request  stream u32 | topic u32 | partition u32
//!        answer   0 | code u32                      refused (PartitionNotFound...)
//!                 1 | end u64 | epochs              the replica's state
//! FETCH  request  stream u32 | topic u32 | partition u32 | follower u64 | epoch u64
//!                 | recover u8 | end u64 | max_messages u32 | wait_ms u32
//!                 | offsets version (term u64 | changes u64) | epochs
//!        answer   0 | code u32
//!                 1 | end u64 | epochs              cut your log to end
//!                 2 | commit_end u64 | first u64 | epochs | offsets
//!                   | the messages, as stored, to the end (first: the leader's first offset)
//!                 3 | start u64 | epochs            empty your log and go on from start
//! offsets         0                                 your copy is current
//!                 1 | version (u64 | u64) | count u32 | count × (kind u8 | id u32 | offset u64)
//!                                                   kind 1 consumer, 2 group
//! ```
//! `epochs` is `Epochs::encode`'s form (checksummed).

use crate::cluster::reader::Reader;
use crate::shard::message::ConsumerKey;
use crate::shard::partitions::epochs::Epochs;
use crate::shard::partitions::replica::{FetchRequest, Fetched, OffsetsCopy, ReplicaState};
use crate::shard::table::PartitionKey;
use bytes::Bytes;
use std::time::Duration;

fn key_bytes(key: &PartitionKey, out: &mut Vec<u8>) {
    out.extend_from_slice(&key.stream_id.to_le_bytes());
    out.extend_from_slice(&key.topic_id.to_le_bytes());
    out.extend_from_slice(&key.partition_id.to_le_bytes());
}

impl Reader<'_> {
    fn offsets(&mut self) -> Option<Option<OffsetsCopy>> {
        match self.u8()? {
            0 => Some(None),
            1 => {
                let version = (self.u64()?, self.u64()?);
                let count = self.u32()? as usize;
                // Never trust the count for an allocation: each entry takes 13 bytes.
                let mut offsets = Vec::with_capacity(count.min(self.0.len() / 13));
                for _ in 0..count {
                    let consumer = match (self.u8()?, self.u32()?) {
                        (1, id) => ConsumerKey::Consumer(id),
                        (2, id) => ConsumerKey::Group(id),
                        _ => return None,
                    };
                    offsets.push((consumer, self.u64()?));
                }
                Some(Some(OffsetsCopy { version, offsets }))
            }
            _ => None,
        }
    }

    fn epochs(&mut self) -> Option<Epochs> {
        let (epochs, used) = Epochs::decode(self.0)?;
        self.0 = &self.0[used..];
        Some(epochs)
    }
}

/// A takeover's question to a replica: its state of `key`, and the term taking over.
pub fn encode_state_request(key: &PartitionKey, term: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    key_bytes(key, &mut out);
    out.extend_from_slice(&term.to_le_bytes());
    out
}

pub fn decode_state_request(body: &[u8]) -> Option<(PartitionKey, u64)> {
    let mut reader = Reader(body);
    let key = reader.key()?;
    let term = reader.u64()?;
    reader.0.is_empty().then_some((key, term))
}

pub fn encode_state_answer(answer: &Result<ReplicaState, u32>) -> Vec<u8> {
    let mut out = Vec::new();
    match answer {
        Err(code) => {
            out.push(0);
            out.extend_from_slice(&code.to_le_bytes());
        }
        Ok(state) => {
            out.push(1);
            out.extend_from_slice(&state.end.to_le_bytes());
            out.extend_from_slice(&state.deleted_through.to_le_bytes());
            state.epochs.encode(&mut out);
        }
    }
    out
}

pub fn decode_state_answer(body: &[u8]) -> Option<Result<ReplicaState, u32>> {
    let mut reader = Reader(body);
    let answer = match reader.u8()? {
        0 => Err(reader.u32()?),
        1 => {
            let end = reader.u64()?;
            let deleted_through = reader.u64()?;
            Ok(ReplicaState {
                end,
                deleted_through,
                epochs: reader.epochs()?,
            })
        }
        _ => return None,
    };
    reader.0.is_empty().then_some(answer)
}

pub fn encode_fetch_request(key: &PartitionKey, request: &FetchRequest) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    key_bytes(key, &mut out);
    out.extend_from_slice(&request.follower.to_le_bytes());
    out.extend_from_slice(&request.epoch.to_le_bytes());
    out.push(u8::from(request.recover));
    out.extend_from_slice(&request.state.end.to_le_bytes());
    out.extend_from_slice(&request.state.deleted_through.to_le_bytes());
    out.extend_from_slice(&request.max_messages.to_le_bytes());
    let wait = u32::try_from(request.wait.as_millis()).unwrap_or(u32::MAX);
    out.extend_from_slice(&wait.to_le_bytes());
    out.extend_from_slice(&request.offsets_version.0.to_le_bytes());
    out.extend_from_slice(&request.offsets_version.1.to_le_bytes());
    request.state.epochs.encode(&mut out);
    out
}

pub fn decode_fetch_request(body: &[u8]) -> Option<(PartitionKey, FetchRequest)> {
    let mut reader = Reader(body);
    let key = reader.key()?;
    let follower = reader.u64()?;
    let epoch = reader.u64()?;
    let recover = match reader.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let end = reader.u64()?;
    let deleted_through = reader.u64()?;
    let max_messages = reader.u32()?;
    let wait = Duration::from_millis(u64::from(reader.u32()?));
    let offsets_version = (reader.u64()?, reader.u64()?);
    let epochs = reader.epochs()?;
    let request = FetchRequest {
        follower,
        epoch,
        recover,
        state: ReplicaState {
            epochs,
            end,
            deleted_through,
        },
        max_messages,
        wait,
        offsets_version,
    };
    reader.0.is_empty().then_some((key, request))
}

pub fn encode_fetch_answer(answer: &Result<Fetched, u32>) -> Vec<u8> {
    let mut out = Vec::new();
    match answer {
        Err(code) => {
            out.push(0);
            out.extend_from_slice(&code.to_le_bytes());
        }
        Ok(Fetched::Truncate { epochs, end }) => {
            out.push(1);
            out.extend_from_slice(&end.to_le_bytes());
            epochs.encode(&mut out);
        }
        Ok(Fetched::Restart { epochs, start }) => {
            out.push(3);
            out.extend_from_slice(&start.to_le_bytes());
            epochs.encode(&mut out);
        }
        Ok(Fetched::Messages {
            epochs,
            commit_end,
            first_offset,
            messages,
            offsets,
        }) => {
            out.reserve(messages.len() + 64);
            out.push(2);
            out.extend_from_slice(&commit_end.to_le_bytes());
            out.extend_from_slice(&first_offset.to_le_bytes());
            epochs.encode(&mut out);
            match offsets {
                None => out.push(0),
                Some(copy) => {
                    out.push(1);
                    out.extend_from_slice(&copy.version.0.to_le_bytes());
                    out.extend_from_slice(&copy.version.1.to_le_bytes());
                    out.extend_from_slice(&(copy.offsets.len() as u32).to_le_bytes());
                    for (consumer, offset) in &copy.offsets {
                        let (kind, id) = match consumer {
                            ConsumerKey::Consumer(id) => (1u8, id),
                            ConsumerKey::Group(id) => (2u8, id),
                        };
                        out.push(kind);
                        out.extend_from_slice(&id.to_le_bytes());
                        out.extend_from_slice(&offset.to_le_bytes());
                    }
                }
            }
            out.extend_from_slice(messages);
        }
    }
    out
}

pub fn decode_fetch_answer(body: Vec<u8>) -> Option<Result<Fetched, u32>> {
    let mut reader = Reader(&body);
    let answer = match reader.u8()? {
        0 => {
            let code = reader.u32()?;
            if !reader.0.is_empty() {
                return None;
            }
            Err(code)
        }
        1 => {
            let end = reader.u64()?;
            let epochs = reader.epochs()?;
            if !reader.0.is_empty() {
                return None;
            }
            Ok(Fetched::Truncate { epochs, end })
        }
        3 => {
            let start = reader.u64()?;
            let epochs = reader.epochs()?;
            if !reader.0.is_empty() {
                return None;
            }
            Ok(Fetched::Restart { epochs, start })
        }
        2 => {
            let commit_end = reader.u64()?;
            let first_offset = reader.u64()?;
            let epochs = reader.epochs()?;
            let offsets = reader.offsets()?;
            let at = body.len() - reader.0.len();
            let messages = Bytes::from(body).slice(at..);
            Ok(Fetched::Messages {
                epochs,
                commit_end,
                first_offset,
                messages,
                offsets,
            })
        }
        _ => return None,
    };
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::partitions::epochs::arbitrary as epochs;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = PartitionKey> {
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(s, t, p)| PartitionKey::new(s, t, p))
    }

    proptest! {
        #[test]
        fn fetch_requests_round_trip(
            key in key(), epochs in epochs(), follower in any::<u64>(), epoch in any::<u64>(),
            recover in any::<bool>(), end in any::<u64>(), max in any::<u32>(), wait in 0u32..100_000,
            version in any::<(u64, u64)>(), deleted_through in any::<u64>(),
        ) {
            let request = FetchRequest {
                follower, epoch, recover, state: ReplicaState { epochs, end, deleted_through },
                max_messages: max,
                wait: Duration::from_millis(u64::from(wait)), offsets_version: version,
            };
            let bytes = encode_fetch_request(&key, &request);
            prop_assert_eq!(decode_fetch_request(&bytes), Some((key, request)));
            prop_assert_eq!(decode_fetch_request(&bytes[..bytes.len() - 1]), None);
        }

        #[test]
        fn fetch_answers_round_trip(
            epochs in epochs(), end in any::<u64>(), code in any::<u32>(),
            messages in proptest::collection::vec(any::<u8>(), 0..64), which in 0u8..4,
            offsets in proptest::option::of((
                any::<(u64, u64)>(),
                proptest::collection::vec((any::<bool>(), any::<u32>(), any::<u64>()), 0..5),
            )),
        ) {
            let offsets = offsets.map(|(version, entries)| OffsetsCopy {
                version,
                offsets: entries
                    .into_iter()
                    .map(|(group, id, offset)| {
                        let consumer =
                            if group { ConsumerKey::Group(id) } else { ConsumerKey::Consumer(id) };
                        (consumer, offset)
                    })
                    .collect(),
            });
            let answer = match which {
                0 => Err(code),
                1 => Ok(Fetched::Truncate { epochs, end }),
                2 => Ok(Fetched::Restart { epochs, start: end }),
                _ => Ok(Fetched::Messages {
                    epochs, commit_end: end, first_offset: code.into(),
                    messages: Bytes::from(messages), offsets,
                }),
            };
            let bytes = encode_fetch_answer(&answer);
            prop_assert_eq!(decode_fetch_answer(bytes), Some(answer));
        }

        #[test]
        fn state_round_trips(key in key(), epochs in epochs(), end in any::<u64>(), code in any::<u32>(), ok in any::<bool>()) {
            prop_assert_eq!(decode_state_request(&encode_state_request(&key, end)), Some((key, end)));
            let state = ReplicaState { epochs, end, deleted_through: u64::from(code) };
            let answer = if ok { Ok(state) } else { Err(code) };
            prop_assert_eq!(decode_state_answer(&encode_state_answer(&answer)), Some(answer));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
            let _ = decode_fetch_request(&bytes);
            let _ = decode_fetch_answer(bytes.clone());
            let _ = decode_state_request(&bytes);
            let _ = decode_state_answer(&bytes);
        }
    }
}
