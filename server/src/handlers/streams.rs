//! Stream and topic reads, and purges.

use super::access::{absent, check};
use super::response::{HandlerResult, Response};
use crate::metadata::Metadata;
use crate::permissions::Action;
use crate::shard::Shard;
use crate::shard::table::PartitionKey;
use crate::views::{self, Counts, WithRemote};
use futures_util::StreamExt;
use rill_core::ErrorCode;
use rill_core::requests::{GetStream, GetTopic, GetTopics, PurgeStream, PurgeTopic};
use std::collections::HashMap;

/// How many partitions' counters a stream or topic read asks for at once.
const REMOTE_COUNTS_IN_FLIGHT: usize = 16;

/// In a cluster: of the partitions `select` names (when the user may read them; otherwise the
/// read itself answers the refusal), those another node leads, with their counters as those
/// leaders answer. A leader that does not answer is left out: this node's copy is shown.
async fn remote_counts(
    shard: &Shard,
    select: impl FnOnce(&Metadata) -> Result<Vec<PartitionKey>, ErrorCode>,
) -> HashMap<PartitionKey, Counts> {
    let Some(cluster) = &shard.shared.cluster else {
        return HashMap::new();
    };
    let keys = shard
        .metadata(|metadata| select(metadata).unwrap_or_default())
        .unwrap_or_default();
    let elsewhere = keys.into_iter().filter(|key| {
        cluster
            .view
            .partition_leader(key)
            .is_some_and(|leader| leader != cluster.view.me)
    });
    let asked = elsewhere.map(|key| async move {
        let counts = shard.route(key).ok()?.counts().await.ok()?;
        Some((key, counts))
    });
    // A few at a time: each call in flight holds a replica connection.
    futures_util::stream::iter(asked)
        .buffer_unordered(REMOTE_COUNTS_IN_FLIGHT)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// What the views read counters from: this node's table, and `remote`.
fn counters<'a>(shard: &'a Shard, remote: &'a HashMap<PartitionKey, Counts>) -> WithRemote<'a> {
    WithRemote {
        table: &shard.shared.shards_table,
        remote,
    }
}

pub async fn get_stream(shard: &Shard, user_id: u32, request: GetStream) -> HandlerResult {
    let remote = remote_counts(shard, |metadata| {
        let stream = metadata
            .stream(&request.stream_id)
            .ok_or(ErrorCode::StreamIdNotFound)?;
        check(metadata, user_id, Action::ReadStream(stream.id))?;
        Ok(PartitionKey::of_stream(stream))
    })
    .await;
    let table = counters(shard, &remote);
    shard.metadata(|metadata| {
        let Some(stream) = metadata.stream(&request.stream_id) else {
            return absent(metadata, user_id, &request.stream_id, None);
        };
        check(metadata, user_id, Action::ReadStream(stream.id))?;
        Ok(Response::encoded(&views::stream_details(&table, stream)))
    })?
}

pub async fn get_streams(shard: &Shard, user_id: u32) -> HandlerResult {
    let remote = remote_counts(shard, |metadata| {
        check(metadata, user_id, Action::ReadStreams)?;
        Ok(metadata
            .streams
            .values()
            .flat_map(PartitionKey::of_stream)
            .collect())
    })
    .await;
    let table = counters(shard, &remote);
    shard.metadata(|metadata| {
        check(metadata, user_id, Action::ReadStreams)?;
        let streams: Vec<_> = metadata
            .streams
            .values()
            .map(|stream| views::stream_info(&table, stream))
            .collect();
        Ok(Response::encoded(&streams))
    })?
}

pub async fn get_topic(shard: &Shard, user_id: u32, request: GetTopic) -> HandlerResult {
    let remote = remote_counts(shard, |metadata| {
        let (stream, topic) = metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
        check(metadata, user_id, Action::ReadTopic(stream.id, topic.id))?;
        Ok(PartitionKey::of_topic(stream.id, topic))
    })
    .await;
    let table = counters(shard, &remote);
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
            &table, stream.id, topic,
        )))
    })?
}

pub async fn get_topics(shard: &Shard, user_id: u32, request: GetTopics) -> HandlerResult {
    let remote = remote_counts(shard, |metadata| {
        let stream = metadata
            .stream(&request.stream_id)
            .ok_or(ErrorCode::StreamIdNotFound)?;
        check(metadata, user_id, Action::ReadTopics(stream.id))?;
        Ok(PartitionKey::of_stream(stream))
    })
    .await;
    let table = counters(shard, &remote);
    shard.metadata(|metadata| {
        let Some(stream) = metadata.stream(&request.stream_id) else {
            return absent(metadata, user_id, &request.stream_id, None);
        };
        check(metadata, user_id, Action::ReadTopics(stream.id))?;
        let topics: Vec<_> = stream
            .topics
            .values()
            .map(|topic| views::topic_info(&table, stream.id, topic))
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
