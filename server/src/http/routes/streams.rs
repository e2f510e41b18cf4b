//! `/streams/...`: streams, topics, partitions, segments, consumer groups and offsets; the
//! messages routes are in `messages.rs`.

use super::{Call, either, id, listed, messages, not_found};
use crate::http::bodies::{self, json, query_number};
use crate::http::reply::Reply;
use crate::http::views;
use hyper::{Method, StatusCode};
use rill_core::ErrorCode;
use rill_core::primitives::{Consumer, OptionalPartition};
use rill_core::requests as binary;
use rill_core::responses::{
    ConsumerGroupDetails, ConsumerGroupInfo, ConsumerOffsetInfo, StreamDetails, StreamInfo,
    TopicDetails, TopicInfo,
};

/// Whether `rest` (the path after `/streams`) is a route of the API.
pub fn is_known(rest: &[&str]) -> bool {
    matches!(
        rest,
        [] | [_]
            | [_, "purge"]
            | [_, "topics"]
            | [_, "topics", _]
            | [_, "topics", _, "purge"]
            | [_, "topics", _, "partitions"]
            | [_, "topics", _, "partitions", _]
            | [_, "topics", _, "consumer-groups"]
            | [_, "topics", _, "consumer-groups", _]
            | [_, "topics", _, "consumer-offsets"]
            | [_, "topics", _, "consumer-offsets", _]
            | [_, "topics", _, "messages"]
            | [_, "topics", _, "messages", "flush", _, _]
    )
}

pub async fn route(call: &Call<'_>, method: &Method, rest: &[&str]) -> Reply {
    let no_content = StatusCode::NO_CONTENT;
    match (method, rest) {
        (&Method::GET, []) => either(list_streams(call).await),
        (&Method::POST, []) => either(create_stream(call).await),
        (&Method::GET, [stream]) => either(get_stream(call, stream).await),
        (&Method::PUT, [stream]) => either(update_stream(call, stream).await),
        (&Method::DELETE, [stream]) => either(
            async {
                Ok(call
                    .act(
                        binary::DeleteStream {
                            stream_id: id(stream)?,
                        },
                        no_content,
                    )
                    .await)
            }
            .await,
        ),
        (&Method::DELETE, [stream, "purge"]) => either(
            async {
                Ok(call
                    .act(
                        binary::PurgeStream {
                            stream_id: id(stream)?,
                        },
                        no_content,
                    )
                    .await)
            }
            .await,
        ),
        (&Method::GET, [stream, "topics"]) => either(list_topics(call, stream).await),
        (&Method::POST, [stream, "topics"]) => either(create_topic(call, stream).await),
        (&Method::GET, [stream, "topics", topic]) => either(get_topic(call, stream, topic).await),
        (&Method::PUT, [stream, "topics", topic]) => {
            either(update_topic(call, stream, topic).await)
        }
        (&Method::DELETE, [stream, "topics", topic]) => either(
            async {
                let request = binary::DeleteTopic {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                };
                Ok(call.act(request, no_content).await)
            }
            .await,
        ),
        (&Method::DELETE, [stream, "topics", topic, "purge"]) => either(
            async {
                let request = binary::PurgeTopic {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                };
                Ok(call.act(request, no_content).await)
            }
            .await,
        ),
        (&Method::POST, [stream, "topics", topic, "partitions"]) => either(
            async {
                let body: bodies::PartitionsCount = json(&call.body)?;
                let request = binary::CreatePartitions {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                    partitions_count: body.partitions_count,
                };
                Ok(call.act(request, StatusCode::CREATED).await)
            }
            .await,
        ),
        (&Method::DELETE, [stream, "topics", topic, "partitions"]) => either(
            async {
                let request = binary::DeletePartitions {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                    partitions_count: required(call, "partitions_count")?,
                };
                Ok(call.act(request, no_content).await)
            }
            .await,
        ),
        (&Method::DELETE, [stream, "topics", topic, "partitions", partition]) => either(
            async {
                let request = binary::DeleteSegments {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                    partition_id: partition.parse().map_err(|_| {
                        bodies::bad(ErrorCode::InvalidFormat, "partition id is not a number")
                    })?,
                    segments_count: required(call, "segments_count")?,
                };
                Ok(call.act(request, no_content).await)
            }
            .await,
        ),
        (&Method::GET, [stream, "topics", topic, "consumer-groups"]) => {
            either(list_groups(call, stream, topic).await)
        }
        (&Method::POST, [stream, "topics", topic, "consumer-groups"]) => {
            either(create_group(call, stream, topic).await)
        }
        (&Method::GET, [stream, "topics", topic, "consumer-groups", group]) => {
            either(get_group(call, stream, topic, group).await)
        }
        (&Method::DELETE, [stream, "topics", topic, "consumer-groups", group]) => either(
            async {
                let request = binary::DeleteConsumerGroup {
                    stream_id: id(stream)?,
                    topic_id: id(topic)?,
                    group_id: id(group)?,
                };
                Ok(call.act(request, no_content).await)
            }
            .await,
        ),
        (&Method::GET, [stream, "topics", topic, "consumer-offsets"]) => {
            either(get_offset(call, stream, topic).await)
        }
        (&Method::PUT, [stream, "topics", topic, "consumer-offsets"]) => {
            either(store_offset(call, stream, topic).await)
        }
        (&Method::DELETE, [stream, "topics", topic, "consumer-offsets", consumer]) => {
            either(delete_offset(call, stream, topic, consumer).await)
        }
        (&Method::GET, [stream, "topics", topic, "messages"]) => {
            either(messages::poll(call, stream, topic).await)
        }
        (&Method::POST, [stream, "topics", topic, "messages"]) => {
            either(messages::send(call, stream, topic).await)
        }
        (
            &Method::GET | &Method::POST,
            [
                stream,
                "topics",
                topic,
                "messages",
                "flush",
                partition,
                fsync,
            ],
        ) => either(messages::flush(call, stream, topic, partition, fsync).await),
        _ => Reply::error_status(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::InvalidCommand,
            "method not allowed on this route",
        ),
    }
}

/// A query number the route cannot do without.
fn required(call: &Call<'_>, key: &str) -> Result<u32, Reply> {
    query_number(&call.query(), key)?.ok_or_else(|| {
        bodies::bad(
            ErrorCode::InvalidFormat,
            format!("query parameter {key} is required"),
        )
    })
}

async fn list_streams(call: &Call<'_>) -> Result<Reply, Reply> {
    let mut streams: Vec<StreamInfo> = listed(call.run(binary::GetStreams {}).await?)?;
    streams.sort_by_key(|stream| stream.id);
    Ok(Reply::ok(
        &streams.iter().map(views::Stream::from).collect::<Vec<_>>(),
    ))
}

async fn create_stream(call: &Call<'_>) -> Result<Reply, Reply> {
    let body: bodies::CreateStream = json(&call.body)?;
    let request = binary::CreateStream {
        name: bodies::name(body.name, ErrorCode::InvalidStreamName)?,
    };
    let details: StreamDetails = call.fetch(request).await?;
    Ok(Reply::ok(&views::StreamWithTopics::from(&details)))
}

async fn get_stream(call: &Call<'_>, stream: &str) -> Result<Reply, Reply> {
    let details: StreamDetails = call
        .fetch(binary::GetStream {
            stream_id: id(stream)?,
        })
        .await?;
    Ok(Reply::ok(&views::StreamWithTopics::from(&details)))
}

async fn update_stream(call: &Call<'_>, stream: &str) -> Result<Reply, Reply> {
    let body: bodies::CreateStream = json(&call.body)?;
    let request = binary::UpdateStream {
        stream_id: id(stream)?,
        name: bodies::name(body.name, ErrorCode::InvalidStreamName)?,
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

async fn list_topics(call: &Call<'_>, stream: &str) -> Result<Reply, Reply> {
    let mut topics: Vec<TopicInfo> = listed(
        call.run(binary::GetTopics {
            stream_id: id(stream)?,
        })
        .await?,
    )?;
    topics.sort_by_key(|topic| topic.id);
    Ok(Reply::ok(
        &topics.iter().map(views::Topic::from).collect::<Vec<_>>(),
    ))
}

async fn create_topic(call: &Call<'_>, stream: &str) -> Result<Reply, Reply> {
    let body: bodies::CreateTopic = json(&call.body)?;
    let segment_size = bodies::topic_segment_size(&body)?;
    let request = binary::CreateTopic {
        stream_id: id(stream)?,
        partitions_count: body.partitions_count,
        compression_algorithm: bodies::compression(body.compression_algorithm.as_deref())?,
        message_expiry: body.message_expiry.unwrap_or(0),
        max_topic_size: body.max_topic_size.unwrap_or(0),
        replication_factor: body.replication_factor.unwrap_or(0),
        name: bodies::name(body.name, ErrorCode::InvalidTopicName)?,
    };
    let details: TopicDetails = match segment_size {
        None => call.fetch(request).await?,
        Some(segment_size) => {
            let command = crate::shard::message::ControlCommand::CreateTopic {
                request,
                segment_size,
            };
            let payload = call.control(command).await?;
            super::decoded(crate::handlers::Response::from_payload(payload))?
        }
    };
    Ok(Reply::ok(&views::TopicWithPartitions::from(&details)))
}

async fn get_topic(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let details: TopicDetails = call
        .fetch(binary::GetTopic {
            stream_id: id(stream)?,
            topic_id: id(topic)?,
        })
        .await?;
    Ok(Reply::ok(&views::TopicWithPartitions::from(&details)))
}

/// UpdateTopic: what the body leaves out (or sends as null) keeps the topic's current value.
async fn update_topic(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let body: bodies::UpdateTopic = json(&call.body)?;
    let (stream_id, topic_id) = (id(stream)?, id(topic)?);
    let current: TopicDetails = call
        .fetch(binary::GetTopic {
            stream_id: stream_id.clone(),
            topic_id: topic_id.clone(),
        })
        .await?;
    let current = current.topic;
    let request = binary::UpdateTopic {
        stream_id,
        topic_id,
        compression_algorithm: match body.compression_algorithm.as_deref() {
            Some(text) => bodies::compression(Some(text))?,
            None => current.compression_algorithm,
        },
        message_expiry: body.message_expiry.unwrap_or(current.message_expiry),
        max_topic_size: body.max_topic_size.unwrap_or(current.max_topic_size),
        replication_factor: body
            .replication_factor
            .unwrap_or(current.replication_factor),
        name: match body.name {
            Some(name) => bodies::name(name, ErrorCode::InvalidTopicName)?,
            None => current.name,
        },
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

async fn list_groups(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let mut groups: Vec<ConsumerGroupInfo> = listed(
        call.run(binary::GetConsumerGroups {
            stream_id: id(stream)?,
            topic_id: id(topic)?,
        })
        .await?,
    )?;
    groups.sort_by_key(|group| group.id);
    Ok(Reply::ok(
        &groups
            .iter()
            .map(views::ConsumerGroup::from)
            .collect::<Vec<_>>(),
    ))
}

async fn create_group(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let body: bodies::CreateStream = json(&call.body)?;
    let request = binary::CreateConsumerGroup {
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        name: bodies::name(body.name, ErrorCode::InvalidConsumerGroupName)?,
    };
    let group: ConsumerGroupInfo = call.fetch(request).await?;
    let details = ConsumerGroupDetails {
        group,
        members: Vec::new(),
    };
    Ok(Reply::json(
        StatusCode::CREATED,
        &views::ConsumerGroupWithMembers::from(&details),
    ))
}

async fn get_group(
    call: &Call<'_>,
    stream: &str,
    topic: &str,
    group: &str,
) -> Result<Reply, Reply> {
    let details: ConsumerGroupDetails = call
        .fetch(binary::GetConsumerGroup {
            stream_id: id(stream)?,
            topic_id: id(topic)?,
            group_id: id(group)?,
        })
        .await?;
    Ok(Reply::ok(&views::ConsumerGroupWithMembers::from(&details)))
}

async fn get_offset(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let query = call.query();
    let request = binary::GetConsumerOffset {
        consumer: bodies::consumer(&query)?,
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        partition_id: OptionalPartition(query_number(&query, "partition_id")?),
    };
    match call.run(request).await {
        Ok(crate::handlers::Response::Bytes(bytes)) => {
            let offset = <ConsumerOffsetInfo as rill_core::Decode>::from_bytes(&bytes)
                .map_err(|_| Reply::error(ErrorCode::Error))?;
            Ok(Reply::ok(&views::ConsumerOffset::from(&offset)))
        }
        // Nothing stored, or nothing to store it in: upstream's lookup 404 (the SDK's None).
        Ok(_) => Err(not_found()),
        Err(reply) if reply.status == StatusCode::NOT_FOUND => Err(not_found()),
        Err(reply) => Err(reply),
    }
}

async fn store_offset(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let body: bodies::StoreOffset = json(&call.body)?;
    let request = binary::StoreConsumerOffset {
        consumer: Consumer::new(body.consumer_id.identifier()?),
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        partition_id: OptionalPartition(body.partition_id),
        offset: body.offset,
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

async fn delete_offset(
    call: &Call<'_>,
    stream: &str,
    topic: &str,
    consumer: &str,
) -> Result<Reply, Reply> {
    let request = binary::DeleteConsumerOffset {
        consumer: Consumer::new(bodies::identifier(consumer)?),
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        partition_id: OptionalPartition(query_number(&call.query(), "partition_id")?),
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}
