//! Consumer group reads, join and leave.

use super::access::{absent, check};
use super::response::{HandlerResult, Response};
use crate::groups::GroupKey;
use crate::permissions::Action;
use crate::session::Session;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::primitives::{Identifier, Name};
use rill_core::requests::{
    GetConsumerGroup, GetConsumerGroups, JoinConsumerGroup, LeaveConsumerGroup,
};
use rill_core::responses::{ConsumerGroupDetails, ConsumerGroupInfo, ConsumerGroupMember};

fn group_info(
    shard: &Shard,
    key: GroupKey,
    name: &str,
    partitions_count: u32,
) -> ConsumerGroupDetails {
    let members: Vec<_> = shard
        .shared
        .groups
        .members(&key)
        .into_iter()
        .map(|(id, partitions)| ConsumerGroupMember { id, partitions })
        .collect();
    ConsumerGroupDetails {
        group: ConsumerGroupInfo {
            id: key.group_id,
            partitions_count,
            members_count: members.len() as u32,
            name: Name::new(name).expect("validated on creation"),
        },
        members,
    }
}

pub fn get_group(shard: &Shard, user_id: u32, request: GetConsumerGroup) -> HandlerResult {
    shard.metadata(|metadata| {
        let Ok((stream, topic)) = metadata.stream_and_topic(&request.stream_id, &request.topic_id)
        else {
            return absent(
                metadata,
                user_id,
                &request.stream_id,
                Some(&request.topic_id),
            );
        };
        check(metadata, user_id, Action::ReadTopic(stream.id, topic.id))?;
        let Some(group) = topic.group(&request.group_id) else {
            return Ok(Response::Empty);
        };
        let key = GroupKey {
            stream_id: stream.id,
            topic_id: topic.id,
            group_id: group.id,
        };
        Ok(Response::encoded(&group_info(
            shard,
            key,
            &group.name,
            topic.partitions.len() as u32,
        )))
    })?
}

pub fn get_groups(shard: &Shard, user_id: u32, request: GetConsumerGroups) -> HandlerResult {
    shard.metadata(|metadata| {
        let Ok((stream, topic)) = metadata.stream_and_topic(&request.stream_id, &request.topic_id)
        else {
            return absent(
                metadata,
                user_id,
                &request.stream_id,
                Some(&request.topic_id),
            );
        };
        check(metadata, user_id, Action::ReadTopic(stream.id, topic.id))?;
        let groups: Vec<_> = topic
            .groups
            .values()
            .map(|group| {
                let key = GroupKey {
                    stream_id: stream.id,
                    topic_id: topic.id,
                    group_id: group.id,
                };
                group_info(shard, key, &group.name, topic.partitions.len() as u32).group
            })
            .collect();
        Ok(Response::encoded(&groups))
    })?
}

/// Resolves a group and checks that the user may do `action` on its topic.
pub(super) fn resolve_group(
    shard: &Shard,
    user_id: u32,
    stream_id: &Identifier,
    topic_id: &Identifier,
    group_id: &Identifier,
    action: fn(u32, u32) -> Action,
) -> Result<GroupKey, ErrorCode> {
    shard.metadata(|metadata| {
        let (stream, topic) = metadata.stream_and_topic(stream_id, topic_id)?;
        check(metadata, user_id, action(stream.id, topic.id))?;
        let group = topic
            .group(group_id)
            .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
        Ok(GroupKey {
            stream_id: stream.id,
            topic_id: topic.id,
            group_id: group.id,
        })
    })?
}

pub fn join(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: JoinConsumerGroup,
) -> HandlerResult {
    let key = resolve_group(
        shard,
        user_id,
        &request.stream_id,
        &request.topic_id,
        &request.group_id,
        Action::ReadTopic,
    )?;
    shard.shared.groups.join(&key, session.client_id)?;
    shard.shared.clients.join_group(
        session.client_id,
        (key.stream_id, key.topic_id, key.group_id),
    );
    Ok(Response::Empty)
}

pub fn leave(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: LeaveConsumerGroup,
) -> HandlerResult {
    let key = resolve_group(
        shard,
        user_id,
        &request.stream_id,
        &request.topic_id,
        &request.group_id,
        Action::ReadTopic,
    )?;
    shard.shared.groups.leave(&key, session.client_id)?;
    shard.shared.clients.leave_group(
        session.client_id,
        (key.stream_id, key.topic_id, key.group_id),
    );
    Ok(Response::Empty)
}

/// SyncConsumerGroup (606, Iggy 0.9 only): the caller's partitions in the group (without those
/// it is handing over to another member, so that its SDK stops polling them and the hand-over
/// can complete), after a generation that changes whenever they do; empty when the caller is
/// not a member.
pub fn sync(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: GetConsumerGroup,
) -> HandlerResult {
    let key = resolve_group(
        shard,
        user_id,
        &request.stream_id,
        &request.topic_id,
        &request.group_id,
        Action::ReadTopic,
    )?;
    let Some(partitions) = shard.shared.groups.assigned(&key, session.client_id) else {
        return Ok(Response::Empty);
    };
    let mut out = Vec::with_capacity(12 + 4 * partitions.len());
    let listed: Vec<u8> = partitions.iter().flat_map(|p| p.to_le_bytes()).collect();
    // Any value that changes with the assignment will do: the SDK only compares it with the
    // previous one to restart its round robin.
    let generation = rill_core::hash::xxh3_64(&listed);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(partitions.len() as u32).to_le_bytes());
    out.extend_from_slice(&listed);
    Ok(Response::Bytes(out))
}
