//! Stream and topic reads, and purges.

use super::access::{absent, check};
use super::response::{HandlerResult, Response};
use crate::permissions::Action;
use crate::shard::Shard;
use crate::shard::table::PartitionKey;
use crate::views;
use rill_core::ErrorCode;
use rill_core::requests::{GetStream, GetTopic, GetTopics, PurgeStream, PurgeTopic};

pub fn get_stream(shard: &Shard, user_id: u32, request: GetStream) -> HandlerResult {
    let table = &shard.shared.shards_table;
    shard.metadata(|metadata| {
        let Some(stream) = metadata.stream(&request.stream_id) else {
            return absent(metadata, user_id, &request.stream_id, None);
        };
        check(metadata, user_id, Action::ReadStream(stream.id))?;
        Ok(Response::encoded(&views::stream_details(table, stream)))
    })?
}

pub fn get_streams(shard: &Shard, user_id: u32) -> HandlerResult {
    let table = &shard.shared.shards_table;
    shard.metadata(|metadata| {
        check(metadata, user_id, Action::ReadStreams)?;
        let streams: Vec<_> = metadata
            .streams
            .values()
            .map(|stream| views::stream_info(table, stream))
            .collect();
        Ok(Response::encoded(&streams))
    })?
}

pub fn get_topic(shard: &Shard, user_id: u32, request: GetTopic) -> HandlerResult {
    let table = &shard.shared.shards_table;
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
        Ok(Response::encoded(&views::topic_details(
            table, stream.id, topic,
        )))
    })?
}

pub fn get_topics(shard: &Shard, user_id: u32, request: GetTopics) -> HandlerResult {
    let table = &shard.shared.shards_table;
    shard.metadata(|metadata| {
        let Some(stream) = metadata.stream(&request.stream_id) else {
            return absent(metadata, user_id, &request.stream_id, None);
        };
        check(metadata, user_id, Action::ReadTopics(stream.id))?;
        let topics: Vec<_> = stream
            .topics
            .values()
            .map(|topic| views::topic_info(table, stream.id, topic))
            .collect();
        Ok(Response::encoded(&topics))
    })?
}

/// Purges every given partition on its owner, in parallel.
async fn purge_partitions(shard: &Shard, keys: Vec<PartitionKey>) -> HandlerResult {
    let results = futures_util::future::join_all(
        keys.into_iter()
            .map(|key| async move { shard.route(key)?.purge().await }),
    )
    .await;
    for result in results {
        result?;
    }
    Ok(Response::Empty)
}

pub async fn purge_stream(shard: &Shard, user_id: u32, request: PurgeStream) -> HandlerResult {
    let keys = shard.metadata(|metadata| {
        let stream = metadata
            .stream(&request.stream_id)
            .ok_or(ErrorCode::StreamIdNotFound)?;
        check(metadata, user_id, Action::ManageStream(stream.id))?;
        Ok::<_, ErrorCode>(PartitionKey::of_stream(stream))
    })??;
    purge_partitions(shard, keys).await
}

pub async fn purge_topic(shard: &Shard, user_id: u32, request: PurgeTopic) -> HandlerResult {
    let keys = shard.metadata(|metadata| {
        let (stream, topic) = metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
        check(metadata, user_id, Action::ManageTopic(stream.id, topic.id))?;
        Ok::<_, ErrorCode>(PartitionKey::of_topic(stream.id, topic))
    })??;
    purge_partitions(shard, keys).await
}
