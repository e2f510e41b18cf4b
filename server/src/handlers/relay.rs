//! In a cluster, group membership lives on the metadata leader, so what needs it goes there:
//! joining, leaving and reading groups, and a group's polls and offsets, whose partition the
//! membership decides. This node keeps the session (login, heartbeats) and passes each such
//! request on as the session's user (`cluster::relay`). Every other data request runs here up
//! to its partitions, which the routing sends to the nodes leading them (`Route::Node`):
//! sends (this node picks a balanced or keyed partition), polls, offsets, flushes, purges,
//! segment deletions, and the counters the stream and topic reads show.

use super::response::{HandlerResult, Response};
use crate::cluster::link::Relay;
use crate::cluster::relay::{RelayRequest, Relayed, leader_client_id};
use crate::session::Session;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::primitives::ConsumerKind;
use rill_core::requests::Request;

/// The requests a follower relays. Metadata changes go through the control lane (forwarded to
/// the leader there); sessions, logins and the node's own view (clients, stats, cluster
/// metadata, snapshot) stay here.
pub fn relayed(request: &Request) -> bool {
    match request {
        Request::PollMessages(request) => request.consumer.kind == ConsumerKind::ConsumerGroup,
        Request::GetConsumerOffset(request) => request.consumer.kind == ConsumerKind::ConsumerGroup,
        Request::StoreConsumerOffset(request) => {
            request.consumer.kind == ConsumerKind::ConsumerGroup
        }
        Request::DeleteConsumerOffset(request) => {
            request.consumer.kind == ConsumerKind::ConsumerGroup
        }
        Request::GetConsumerGroup(_)
        | Request::GetConsumerGroups(_)
        | Request::JoinConsumerGroup(_)
        | Request::LeaveConsumerGroup(_) => true,
        _ => false,
    }
}

pub async fn relay(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: Request,
) -> HandlerResult {
    let cluster = shard
        .shared
        .cluster
        .as_ref()
        .expect("relaying in a cluster");
    let mut payload = Vec::with_capacity(request.payload_len());
    request.encode_payload(&mut payload);
    let (reply, answer) = flume::bounded(1);
    cluster
        .relay
        .send_async(Relay::Request {
            request: RelayRequest {
                client: leader_client_id(cluster.view.me, session.client_id),
                user_id,
                code: request.command().code(),
                payload,
            },
            reply,
        })
        .await
        .map_err(|_| ErrorCode::TransientNotAccepted)?;
    let relayed = answer
        .recv_async()
        .await
        .map_err(|_| ErrorCode::TransientNotAccepted)?
        .map_err(|code| ErrorCode::from_code(code).unwrap_or(ErrorCode::Error))?;
    Ok(match relayed {
        Relayed::Empty => Response::Empty,
        Relayed::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        } => Response::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        },
        Relayed::Bytes(bytes) => Response::Bytes(bytes),
        Relayed::Polled { header, messages } => Response::Polled {
            header,
            chunks: vec![messages],
            frame_checksums: Vec::new(),
        },
    })
}
