//! What a follower sends its leader, and the leader's side of it: metadata changes forwarded
//! to the leader's control lane (`FORWARD`), and data requests relayed to run there as the
//! client's user (`RELAY`, `GONE`), and data calls on a partition to the node that leads it
//! (`PARTITION`). All give up as soon as the leader they wait on is deposed.

use super::link::{
    ClusterView, Forward, ForwardAnswer, Forwarded, ForwardedCommand, Relay, STATUS_HEALTHY,
};
use super::network::{CallError, FORWARD, GONE, PARTITION, Peer, Peers, RELAY};
use super::partition_call::{self, NodeAnswer, NodeCall};
use super::relay::{self, RelayRequest, Relayed};
use super::types::{NodeId, Raft};
use crate::handlers::Response;
use crate::http::bridge::Bridge;
use crate::shard::message::{ControlCommand, ControlRequest};
use openraft::BasicNode;
use rill_core::ErrorCode;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long a follower waits for the leader to run a forwarded change.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends a follower's metadata changes to the current leader, one at a time, in order.
pub(super) async fn forward_to_leader(
    forwards: flume::Receiver<Forward>,
    peers: Peers,
    members: BTreeMap<NodeId, BasicNode>,
) {
    let mut clients: BTreeMap<NodeId, Peer> = members
        .into_iter()
        .filter(|(id, _)| *id != peers.me)
        .map(|(id, node)| (id, Peer::new(peers.clone(), id, node.addr)))
        .collect();
    while let Ok(forward) = forwards.recv_async().await {
        let not_accepted = Err(ErrorCode::TransientNotAccepted.code());
        let leader = peers.view.leader();
        let answer = match leader.and_then(|id| Some((id, clients.get_mut(&id)?))) {
            None => not_accepted,
            Some((leader, client)) => {
                let call =
                    client.call::<_, ForwardAnswer>(FORWARD, &forward.request, FORWARD_TIMEOUT);
                let answered = tokio::select! {
                    answered = call => answered,
                    () = deposed(&peers.view, leader) => Err(CallError::Network(
                        std::io::Error::other("the leader changed before it answered"),
                    )),
                };
                match answered {
                    Ok(answer) => answer,
                    // Never reached the leader: nothing happened, the client may retry.
                    Err(CallError::Unreachable(_)) => not_accepted,
                    Err(error) => {
                        // Sent, but no answer: the change may or may not be made.
                        tracing::warn!(%error, "a forwarded metadata change got no answer");
                        Err(ErrorCode::Error.code())
                    }
                }
            }
        };
        let _ = forward.reply.send(answer);
    }
}

/// Runs a follower's change on this node's control lane, as the leader.
pub(super) async fn run_forwarded(
    raft: &Raft,
    control: &flume::Sender<ControlRequest>,
    forwarded: Forwarded,
) -> ForwardAnswer {
    let command = match forwarded.command {
        ForwardedCommand::Request { code, payload } => {
            let request = rill_core::requests::Request::decode(code, payload.as_slice().into())
                .map_err(|_| ErrorCode::InvalidCommand.code())?;
            ControlCommand::Request(request)
        }
        ForwardedCommand::CreateTopic {
            payload,
            segment_size,
        } => {
            let code = rill_core::requests::CommandCode::CreateTopic.code();
            match rill_core::requests::Request::decode(code, payload.as_slice().into()) {
                Ok(rill_core::requests::Request::CreateTopic(request)) => {
                    ControlCommand::CreateTopic {
                        request,
                        segment_size,
                    }
                }
                _ => return Err(ErrorCode::InvalidCommand.code()),
            }
        }
        ForwardedCommand::SetPassword {
            user_id,
            verified_hash,
            new_hash,
        } => ControlCommand::SetPassword {
            user_id,
            verified_hash,
            new_hash,
        },
    };
    let (reply, answer) = flume::bounded(1);
    let request = ControlRequest {
        command,
        user_id: forwarded.user_id,
        client_id: forwarded.client_id,
        revoked: Default::default(),
        forwarded: true,
        reply,
    };
    let gone = ErrorCode::ShardCommunicationError.code();
    control.send_async(request).await.map_err(|_| gone)?;
    let payload = answer
        .recv_async()
        .await
        .map_err(|_| gone)?
        .map_err(ErrorCode::code)?;
    // The lane answers after applying the change, so what is applied covers it.
    let index = raft
        .metrics()
        .borrow()
        .last_applied
        .map_or(0, |log_id| log_id.index);
    Ok((payload, index))
}

/// How long a relayed request may take on the leader (a long-polling consumer included).
const RELAY_TIMEOUT: Duration = Duration::from_secs(60);

/// Passes followers' data requests to the leader, and partition calls to the partition's
/// leader, each on a connection of its own from a small pool, so a slow request does not hold
/// up the others.
pub(super) async fn relay_to_leader(
    relays: flume::Receiver<Relay>,
    peers: Peers,
    members: BTreeMap<NodeId, BasicNode>,
) {
    let idle: Arc<std::sync::Mutex<Vec<Peer>>> = Arc::default();
    while let Ok(relay) = relays.recv_async().await {
        let target = match &relay {
            Relay::Partition { leader, .. } => Some(*leader),
            Relay::Request { .. } | Relay::Gone { .. } => peers.view.leader(),
        };
        let Some(leader) = target.filter(|leader| *leader != peers.me) else {
            match relay {
                Relay::Request { reply, .. } => {
                    let _ = reply.send(Err(ErrorCode::TransientNotAccepted.code()));
                }
                Relay::Partition { reply, .. } => {
                    let _ = reply.send(Err(ErrorCode::TransientNotAccepted.code()));
                }
                Relay::Gone { .. } => {}
            }
            continue;
        };
        let Some(node) = members.get(&leader) else {
            continue;
        };
        let pooled = {
            let mut idle = idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let position = idle.iter().position(|peer| peer.target() == leader);
            position.map(|position| idle.swap_remove(position))
        };
        let mut client =
            pooled.unwrap_or_else(|| Peer::new(peers.clone(), leader, node.addr.clone()));
        let idle = idle.clone();
        let view = peers.view.clone();
        tokio::spawn(async move {
            match relay {
                Relay::Request { request, reply } => {
                    let body = request.encode();
                    let answer = call_leader(&mut client, RELAY, &body, deposed(&view, leader))
                        .await
                        .and_then(|bytes| {
                            relay::decode_answer(bytes).unwrap_or(Err(ErrorCode::Error.code()))
                        });
                    let _ = reply.send(answer);
                }
                Relay::Partition {
                    key, call, reply, ..
                } => {
                    let body = partition_call::encode_call(&key, &call);
                    // A partition whose leader moved, or whose leader went silent, is asked
                    // again by the client: waiting on the old one could take the whole timeout.
                    // (Silence counts once this node has run long enough to have heard it.)
                    let moved = async {
                        while view.partition_leader(&key) == Some(leader)
                            && (view.status(leader) == STATUS_HEALTHY || !view.warmed_up())
                        {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    };
                    let answer = call_leader(&mut client, PARTITION, &body, moved)
                        .await
                        .and_then(|bytes| {
                            partition_call::decode_answer(bytes)
                                .unwrap_or(Err(ErrorCode::Error.code()))
                        });
                    let _ = reply.send(answer);
                }
                Relay::Gone { client: gone } => {
                    let _ = client
                        .call_raw(GONE, &gone.to_le_bytes(), Duration::from_secs(5))
                        .await;
                }
            }
            let mut idle = idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if idle.len() < 16 {
                idle.push(client);
            }
        });
    }
}

/// One call to a leader that gives up once `deposed` returns (a leader that is gone may never
/// answer: a vanished container's address does not even refuse). A call that never reached
/// the leader is 58 TransientNotAccepted (nothing happened, the client may retry); one sent but
/// not answered is a plain error (it may or may not have happened).
async fn call_leader(
    client: &mut Peer,
    kind: u8,
    body: &[u8],
    deposed: impl std::future::Future<Output = ()>,
) -> Result<Vec<u8>, u32> {
    let call = client.call_raw(kind, body, RELAY_TIMEOUT);
    let answer = tokio::select! {
        answer = call => answer,
        () = deposed => return Err(ErrorCode::Error.code()),
    };
    match answer {
        Ok(bytes) => Ok(bytes),
        Err(CallError::Unreachable(_)) => Err(ErrorCode::TransientNotAccepted.code()),
        Err(error) => {
            tracing::warn!(%error, "a call to a leader got no answer");
            Err(ErrorCode::Error.code())
        }
    }
}

/// Returns once `leader` no longer leads as far as this node knows.
async fn deposed(view: &ClusterView, leader: NodeId) {
    while view.leader() == Some(leader) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs a follower's relayed request here, the leader, as its user.
pub(super) async fn run_relayed(
    view: &ClusterView,
    bridge: &Bridge,
    body: Vec<u8>,
) -> Result<Relayed, u32> {
    if !view.is_leader() {
        return Err(ErrorCode::TransientNotAccepted.code());
    }
    let request = RelayRequest::decode(body).ok_or(ErrorCode::InvalidCommand.code())?;
    let decoded =
        rill_core::requests::Request::decode(request.code, request.payload.as_slice().into())
            .map_err(|_| ErrorCode::InvalidCommand.code())?;
    let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let response = bridge
        .run_as(
            request.client,
            rill_core::primitives::Transport::Tcp,
            Some(request.user_id),
            peer,
            decoded,
        )
        .await
        .map_err(ErrorCode::code)?;
    Ok(match response {
        Response::Empty => Relayed::Empty,
        Response::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        } => Relayed::Sent {
            stream_id,
            topic_id,
            partition_id,
            base_offset,
        },
        Response::Bytes(bytes) => Relayed::Bytes(bytes),
        Response::Polled { header, chunks, .. } => {
            let mut messages = Vec::with_capacity(chunks.iter().map(bytes::Bytes::len).sum());
            for chunk in &chunks {
                messages.extend_from_slice(chunk);
            }
            Relayed::Polled {
                header,
                messages: messages.into(),
            }
        }
    })
}

/// Runs a partition call here, where the partition is led (`partition_call.rs`). The caller
/// checked the user; this node checks that it still leads the partition.
pub(super) async fn run_partition_call(
    view: &ClusterView,
    bridge: &Bridge,
    body: &[u8],
) -> Result<NodeAnswer, u32> {
    let (key, call) = partition_call::decode_call(body).ok_or(ErrorCode::InvalidCommand.code())?;
    if view.partition_leader(&key) != Some(view.me) {
        return Err(ErrorCode::TransientNotAccepted.code());
    }
    let owner = usize::from(key.owner(bridge.shard_count().max(1)));
    bridge
        .call_on(owner, move |shard| {
            Box::pin(async move {
                let target = shard.route(key)?;
                Ok(match call {
                    NodeCall::Append(batch) => NodeAnswer::Appended(target.append(batch).await?),
                    NodeCall::Poll(args) => NodeAnswer::Polled(target.poll(args).await?),
                    NodeCall::Flush { fsync } => {
                        target.flush(fsync).await?;
                        NodeAnswer::Done
                    }
                    NodeCall::DeleteSegments { count } => {
                        target.delete_segments(count).await?;
                        NodeAnswer::Done
                    }
                    NodeCall::Purge => {
                        target.purge().await?;
                        NodeAnswer::Done
                    }
                    NodeCall::StoreOffset { consumer, offset } => {
                        target.store_offset(consumer, offset).await?;
                        NodeAnswer::Done
                    }
                    NodeCall::GetOffset(consumer) => {
                        NodeAnswer::Offset(target.offset(consumer).await?)
                    }
                    NodeCall::DeleteOffset(consumer) => {
                        target.delete_offset(consumer).await?;
                        NodeAnswer::Done
                    }
                    NodeCall::Counters => NodeAnswer::Counts(target.counts().await?),
                })
            })
        })
        .await
        .unwrap_or(Err(ErrorCode::ShardCommunicationError))
        .map_err(ErrorCode::code)
}
