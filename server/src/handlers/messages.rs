//! SendMessages, PollMessages, FlushUnsavedBuffer, DeleteSegments: routed to the partition's
//! owner.

use super::access::check;
use super::groups::resolve_group;
use super::response::{HandlerResult, Response};
use crate::permissions::Action;
use crate::session::{Generation, Session};
use crate::shard::Shard;
use crate::shard::message::{ConsumerKey, PollArgs};
use crate::shard::routing::Target;
use crate::shard::table::PartitionKey;
use rill_core::ErrorCode;
use rill_core::message::encode_poll_header;
use rill_core::primitives::{Consumer, ConsumerKind, Identifier, Partitioning, PollingKind};
use rill_core::requests::{DeleteSegments, FlushUnsavedBuffer, PollMessages, SendMessages};
use std::time::{Duration, Instant};

/// Maps a consumer to the key its offsets are stored under: numeric ids as they are, names
/// through xxHash32 (as upstream).
pub(super) fn consumer_key(consumer: &Consumer) -> ConsumerKey {
    let id = match &consumer.id {
        Identifier::Numeric(id) => *id,
        Identifier::String(name) => xxhash_rust::xxh32::xxh32(name.as_str().as_bytes(), 0),
    };
    match consumer.kind {
        ConsumerKind::Consumer => ConsumerKey::Consumer(id),
        ConsumerKind::ConsumerGroup => ConsumerKey::Group(id),
    }
}

/// Routes a data request to its partition's owner, noting the owner for the connection-move
/// policy.
fn route<'a>(
    shard: &'a Shard,
    session: &mut Session,
    key: PartitionKey,
) -> Result<Target<'a>, ErrorCode> {
    let target = shard.route(key)?;
    session.affinity.note_owner(target.owner(), shard.id);
    Ok(target)
}

pub async fn send(
    shard: &Shard,
    session: &mut Session,
    user_id: u32,
    request: SendMessages,
) -> HandlerResult {
    let key = shard.metadata(|metadata| {
        let (stream, topic) = metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
        check(metadata, user_id, Action::SendMessages(stream.id, topic.id))?;
        let partitions_count = topic.partitions.len() as u32;
        let partition_id = match &request.partitioning {
            Partitioning::PartitionId(id) if *id < partitions_count => *id,
            Partitioning::PartitionId(_) => return Err(ErrorCode::PartitionNotFound),
            _ if partitions_count == 0 => return Err(ErrorCode::NoPartitions),
            Partitioning::Balanced => {
                shard
                    .shared
                    .next_balanced(stream.id, topic.id, partitions_count)
            }
            Partitioning::MessagesKey(key) => {
                rill_core::hash::partition_for_key(key, partitions_count)
                    .expect("partitions_count > 0")
            }
        };
        Ok(PartitionKey::new(stream.id, topic.id, partition_id))
    })??;
    let Some(base_offset) = route(shard, session, key)?.append(request.batch).await? else {
        // Every message was a duplicate: acknowledged, nothing new to confirm (0.9 answers an
        // empty confirmation, protocol-0.9.md 6.6).
        return Ok(Response::Empty);
    };
    Ok(Response::Sent {
        stream_id: key.stream_id,
        topic_id: key.topic_id,
        partition_id: key.partition_id,
        base_offset,
    })
}

pub async fn poll(
    shard: &Shard,
    session: &mut Session,
    user_id: u32,
    request: PollMessages,
) -> HandlerResult {
    let (key, consumer, ticket) = match request.consumer.kind {
        ConsumerKind::Consumer => {
            let key = shard.metadata(|metadata| {
                let (stream, topic) =
                    metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
                check(metadata, user_id, Action::PollMessages(stream.id, topic.id))?;
                let partition_id = request.partition_id.0.unwrap_or(0);
                if partition_id as usize >= topic.partitions.len() {
                    return Err(ErrorCode::PartitionNotFound);
                }
                Ok(PartitionKey::new(stream.id, topic.id, partition_id))
            })??;
            (key, consumer_key(&request.consumer), None)
        }
        ConsumerKind::ConsumerGroup => {
            let group = resolve_group(
                shard,
                user_id,
                &request.stream_id,
                &request.topic_id,
                &request.consumer.id,
                Action::PollMessages,
            )?;
            let groups = &shard.shared.groups;
            let ticket = match request.partition_id.0 {
                Some(partition_id) => {
                    match groups.poll_owned(&group, session.client_id, partition_id)? {
                        Some(ticket) => ticket,
                        // A partition the member does not hold (any more): nothing to read there.
                        None => {
                            let mut response =
                                empty_poll(shard, group.stream_id, group.topic_id, partition_id);
                            // A 0.9 client learns from partition u32::MAX that its assignment is
                            // stale and syncs again (protocol-0.9.md 5.6).
                            if session.generation == Generation::V09
                                && let Response::Polled { header, .. } = &mut response
                            {
                                header[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
                            }
                            return Ok(response);
                        }
                    }
                }
                None => match groups.next_partition(&group, session.client_id)? {
                    Some(ticket) => ticket,
                    // A member without partitions: partition 0, offset 0 (protocol.md 5.2).
                    None => {
                        return Ok(Response::Polled {
                            header: encode_poll_header(0, 0, 0),
                            chunks: Vec::new(),
                            frame_checksums: Vec::new(),
                        });
                    }
                },
            };
            (
                PartitionKey::new(group.stream_id, group.topic_id, ticket.partition),
                ConsumerKey::Group(group.group_id),
                Some(ticket),
            )
        }
    };
    // A plain consumer following a partition's tail may wait there for the next message (see
    // `TailPolls`); a group member's poll picks among its partitions and answers at once.
    let tail = (key.stream_id, key.topic_id, key.partition_id);
    let tails = ticket.is_none()
        && matches!(
            request.strategy.kind,
            PollingKind::Offset | PollingKind::Next
        );
    let wait_for_data = if tails {
        let wait = shard.shared.config.system.partition.empty_poll_wait.0;
        session.tail_polls.wait_for(tail, wait, Instant::now())
    } else {
        Duration::ZERO
    };
    let args = PollArgs {
        strategy: request.strategy,
        count: request.count,
        consumer: Some(consumer),
        auto_commit: request.auto_commit,
        wait_for_data,
    };
    let polled = route(shard, session, key)?.poll(args).await?;
    if tails {
        session
            .tail_polls
            .note(tail, polled.count == 0, Instant::now());
    }
    // What a group handed out, for the hand-over of revoked partitions (a failed poll drops
    // its ticket, which counts as handing out nothing).
    if let Some(ticket) = ticket {
        ticket.finish(polled.last_offset, request.auto_commit);
    }
    Ok(Response::Polled {
        header: encode_poll_header(polled.partition_id, polled.current_offset, polled.count),
        chunks: polled.chunks,
        frame_checksums: polled.frame_checksums,
    })
}

/// An empty poll result for a partition (a group member polling nothing it owns).
fn empty_poll(shard: &Shard, stream_id: u32, topic_id: u32, partition_id: u32) -> Response {
    let current_offset = shard
        .shared
        .shards_table
        .counters(&PartitionKey::new(stream_id, topic_id, partition_id))
        .map_or(0, |counters| counters.current_offset());
    Response::Polled {
        header: encode_poll_header(partition_id, current_offset, 0),
        chunks: Vec::new(),
        frame_checksums: Vec::new(),
    }
}

fn partition_key(
    shard: &Shard,
    user_id: u32,
    stream_id: &Identifier,
    topic_id: &Identifier,
    partition_id: u32,
    action: fn(u32, u32) -> Action,
) -> Result<PartitionKey, ErrorCode> {
    shard.metadata(|metadata| {
        let (stream, topic) = metadata.stream_and_topic(stream_id, topic_id)?;
        check(metadata, user_id, action(stream.id, topic.id))?;
        if partition_id as usize >= topic.partitions.len() {
            return Err(ErrorCode::PartitionNotFound);
        }
        Ok(PartitionKey::new(stream.id, topic.id, partition_id))
    })?
}

pub async fn flush(shard: &Shard, user_id: u32, request: FlushUnsavedBuffer) -> HandlerResult {
    let key = partition_key(
        shard,
        user_id,
        &request.stream_id,
        &request.topic_id,
        request.partition_id,
        Action::SendMessages,
    )?;
    shard.route(key)?.flush(request.fsync).await?;
    Ok(Response::Empty)
}

pub async fn delete_segments(
    shard: &Shard,
    user_id: u32,
    request: DeleteSegments,
) -> HandlerResult {
    let key = partition_key(
        shard,
        user_id,
        &request.stream_id,
        &request.topic_id,
        request.partition_id,
        Action::ManageTopic,
    )?;
    shard
        .route(key)?
        .delete_segments(request.segments_count)
        .await?;
    Ok(Response::Empty)
}
