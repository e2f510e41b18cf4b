//! Consumer offsets, stored by the partition's owner, for plain consumers and consumer groups
//! (protocol.md 4.8).

use super::access::check;
use super::groups::resolve_group;
use super::messages::consumer_key;
use super::response::{HandlerResult, Response};
use crate::permissions::Action;
use crate::session::Session;
use crate::shard::Shard;
use crate::shard::message::ConsumerKey;
use crate::shard::table::PartitionKey;
use rill_core::ErrorCode;
use rill_core::primitives::{Consumer, ConsumerKind, Identifier, OptionalPartition};
use rill_core::requests::{DeleteConsumerOffset, GetConsumerOffset, StoreConsumerOffset};
use rill_core::responses::ConsumerOffsetInfo;

/// Which partition and whose offset a request addresses. For a group without a partition,
/// `member_partition` decides: store and delete use the member's current partition (and need
/// membership), get uses partition 0.
/// The addressing fields every offset command carries.
struct Address<'a> {
    consumer: &'a Consumer,
    stream_id: &'a Identifier,
    topic_id: &'a Identifier,
    partition: OptionalPartition,
}

fn target(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    address: Address<'_>,
    member_partition: bool,
) -> Result<(PartitionKey, ConsumerKey), ErrorCode> {
    let Address {
        consumer,
        stream_id,
        topic_id,
        partition,
    } = address;
    let (stream, topic, partitions_count, key) = match consumer.kind {
        ConsumerKind::Consumer => {
            let (stream, topic, count) = shard.metadata(|metadata| {
                let (stream, topic) = metadata.stream_and_topic(stream_id, topic_id)?;
                check(metadata, user_id, Action::PollMessages(stream.id, topic.id))?;
                Ok::<_, ErrorCode>((stream.id, topic.id, topic.partitions.len() as u32))
            })??;
            (stream, topic, count, consumer_key(consumer))
        }
        ConsumerKind::ConsumerGroup => {
            let group = resolve_group(
                shard,
                user_id,
                stream_id,
                topic_id,
                &consumer.id,
                Action::PollMessages,
            )?;
            let count = shard.metadata(|metadata| {
                metadata
                    .topic_by_ids(group.stream_id, group.topic_id)
                    .map_or(0, |topic| topic.partitions.len() as u32)
            })?;
            (
                group.stream_id,
                group.topic_id,
                count,
                ConsumerKey::Group(group.group_id),
            )
        }
    };
    let partition_id = match (key, member_partition) {
        // Storing and deleting a group's offset need membership, with or without a partition.
        (ConsumerKey::Group(group_id), true) => {
            let group = crate::groups::GroupKey {
                stream_id: stream,
                topic_id: topic,
                group_id,
            };
            let current = shard
                .shared
                .groups
                .current_partition(&group, session.client_id)?;
            match partition.0 {
                Some(partition_id) => partition_id,
                None => current.ok_or(ErrorCode::NotResolvedConsumer)?,
            }
        }
        _ => partition.0.unwrap_or(0),
    };
    if partition_id >= partitions_count {
        return Err(ErrorCode::PartitionNotFound);
    }
    Ok((PartitionKey::new(stream, topic, partition_id), key))
}

macro_rules! address {
    ($request:ident) => {
        Address {
            consumer: &$request.consumer,
            stream_id: &$request.stream_id,
            topic_id: &$request.topic_id,
            partition: $request.partition_id,
        }
    };
}

pub async fn get(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: GetConsumerOffset,
) -> HandlerResult {
    let target = target(shard, session, user_id, address!(request), false);
    // Unknown stream, topic, group or partition: empty OK, as upstream ("no offset").
    let (key, consumer) = match target {
        Ok(target) => target,
        Err(
            ErrorCode::StreamIdNotFound
            | ErrorCode::TopicIdNotFound
            | ErrorCode::PartitionNotFound
            | ErrorCode::ConsumerGroupIdNotFound,
        ) => return Ok(Response::Empty),
        Err(code) => return Err(code),
    };
    match shard.route(key)?.offset(consumer).await? {
        Some(offset) => Ok(Response::encoded(&ConsumerOffsetInfo {
            partition_id: key.partition_id,
            current_offset: offset.current_offset,
            stored_offset: offset.stored_offset,
        })),
        None => Ok(Response::Empty),
    }
}

pub async fn store(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: StoreConsumerOffset,
) -> HandlerResult {
    let (key, consumer) = target(shard, session, user_id, address!(request), true)?;
    shard
        .route(key)?
        .store_offset(consumer, request.offset)
        .await?;
    note_commit(shard, key, consumer, Some(request.offset));
    Ok(Response::Empty)
}

pub async fn delete(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: DeleteConsumerOffset,
) -> HandlerResult {
    let (key, consumer) = target(shard, session, user_id, address!(request), true)?;
    shard.route(key)?.delete_offset(consumer).await?;
    note_commit(shard, key, consumer, None);
    Ok(Response::Empty)
}

/// A group's stored offset changed: a revoked partition may now move to its new member.
fn note_commit(shard: &Shard, key: PartitionKey, consumer: ConsumerKey, offset: Option<u64>) {
    if let ConsumerKey::Group(group_id) = consumer {
        let group = crate::groups::GroupKey {
            stream_id: key.stream_id,
            topic_id: key.topic_id,
            group_id,
        };
        shard
            .shared
            .groups
            .committed(&group, key.partition_id, offset);
    }
}
