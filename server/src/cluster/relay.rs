//! A follower relays its clients' data requests to the leader, which holds the data: the
//! request and the response as bytes, in a binary form of their own (a poll's messages are not
//! worth a JSON round).
//!
//! ```text
//! request   client u32 | user u32 | code u32 | payload (the 0.8 request payload)
//! response  status u32 (0 ok) | kind u8 | body
//!             kind 0 empty; 1 sent: stream u32, topic u32, partition u32, base offset u64;
//!             2 bytes: the payload; 3 polled: the 16-byte poll header, then the messages
//! gone      client u32           (the follower's session closed: drop its group membership)
//! ```

use bytes::Bytes;

/// A relayed request's answer, as the leader's handler gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    Empty,
    Sent {
        stream_id: u32,
        topic_id: u32,
        partition_id: u32,
        base_offset: u64,
    },
    Bytes(Vec<u8>),
    Polled {
        header: [u8; 16],
        messages: Bytes,
    },
}

/// A request relayed from a follower.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayRequest {
    /// The follower's session as the leader knows it (`leader_client_id`).
    pub client: u32,
    pub user_id: u32,
    pub code: u32,
    pub payload: Vec<u8>,
}

/// The client id a follower's session has on the leader: distinct per node, and apart from the
/// leader's own clients, whose ids count up from 1.
pub fn leader_client_id(replica_id: u64, client_id: u32) -> u32 {
    0x8000_0000 | ((replica_id as u32 & 0x7FF) << 20) | (client_id & 0x000F_FFFF)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

impl RelayRequest {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.payload.len());
        out.extend_from_slice(&self.client.to_le_bytes());
        out.extend_from_slice(&self.user_id.to_le_bytes());
        out.extend_from_slice(&self.code.to_le_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    pub fn decode(mut bytes: Vec<u8>) -> Option<RelayRequest> {
        let client = u32_at(&bytes, 0)?;
        let user_id = u32_at(&bytes, 4)?;
        let code = u32_at(&bytes, 8)?;
        bytes.drain(..12);
        Some(RelayRequest {
            client,
            user_id,
            code,
            payload: bytes,
        })
    }
}

/// Encodes an answer: `Ok` a response, `Err` a status code.
pub fn encode_answer(answer: &Result<Relayed, u32>) -> Vec<u8> {
    let mut out = Vec::new();
    match answer {
        Err(code) => out.extend_from_slice(&code.to_le_bytes()),
        Ok(relayed) => {
            out.extend_from_slice(&0u32.to_le_bytes());
            match relayed {
                Relayed::Empty => out.push(0),
                Relayed::Sent {
                    stream_id,
                    topic_id,
                    partition_id,
                    base_offset,
                } => {
                    out.push(1);
                    out.extend_from_slice(&stream_id.to_le_bytes());
                    out.extend_from_slice(&topic_id.to_le_bytes());
                    out.extend_from_slice(&partition_id.to_le_bytes());
                    out.extend_from_slice(&base_offset.to_le_bytes());
                }
                Relayed::Bytes(bytes) => {
                    out.push(2);
                    out.extend_from_slice(bytes);
                }
                Relayed::Polled { header, messages } => {
                    out.push(3);
                    out.extend_from_slice(header);
                    out.extend_from_slice(messages);
                }
            }
        }
    }
    out
}

pub fn decode_answer(bytes: Vec<u8>) -> Option<Result<Relayed, u32>> {
    let status = u32_at(&bytes, 0)?;
    if status != 0 {
        return Some(Err(status));
    }
    let kind = *bytes.get(4)?;
    let body = &bytes[5..];
    Some(Ok(match kind {
        0 if body.is_empty() => Relayed::Empty,
        1 if body.len() == 20 => Relayed::Sent {
            stream_id: u32_at(body, 0)?,
            topic_id: u32_at(body, 4)?,
            partition_id: u32_at(body, 8)?,
            base_offset: u64::from_le_bytes(body[12..20].try_into().ok()?),
        },
        2 => Relayed::Bytes(body.to_vec()),
        3 if body.len() >= 16 => {
            let header: [u8; 16] = body[..16].try_into().ok()?;
            Relayed::Polled {
                header,
                messages: Bytes::from(bytes).slice(5 + 16..),
            }
        }
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn requests_and_answers_round_trip() {
        let request = RelayRequest {
            client: leader_client_id(2, 17),
            user_id: 5,
            code: 101,
            payload: vec![1, 2, 3],
        };
        assert_eq!(RelayRequest::decode(request.encode()), Some(request));
        for answer in [
            Err(3007),
            Ok(Relayed::Empty),
            Ok(Relayed::Sent {
                stream_id: 1,
                topic_id: 2,
                partition_id: 3,
                base_offset: 4,
            }),
            Ok(Relayed::Bytes(vec![9; 40])),
            Ok(Relayed::Polled {
                header: [7; 16],
                messages: Bytes::from_static(b"messages"),
            }),
        ] {
            assert_eq!(decode_answer(encode_answer(&answer)), Some(answer));
        }
    }

    #[test]
    fn follower_sessions_never_take_a_leader_clients_id() {
        assert!(leader_client_id(0, 1) >= 0x8000_0000);
        assert_ne!(leader_client_id(1, 1), leader_client_id(2, 1));
    }

    proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = RelayRequest::decode(bytes.clone());
            let _ = decode_answer(bytes);
        }
    }
}
