//! `iggy topic`, `iggy partition`, `iggy segment`.

use super::values::{id, topic_options};
use super::views::{TOPIC_HEADER, partition_json, topic_json, topic_rows};
use crate::args::*;
use crate::error::CliError;
use crate::output::{Printer, table};
use crate::util::*;
use rill_sdk::Client;
use serde_json::json;

pub(super) async fn topic_command(
    printer: &Printer,
    client: &Client,
    action: TopicAction,
) -> Result<(), CliError> {
    match action {
        TopicAction::Create {
            max_topic_size,
            replication_factor,
            stream_id,
            name,
            partitions_count,
            compression_algorithm,
            message_expiry,
            ..
        } => {
            let options = topic_options(
                &compression_algorithm,
                &message_expiry,
                &max_topic_size,
                replication_factor,
            )?;
            printer.info(format!("Executing create topic with name: {name}, partitions count: {partitions_count}, compression algorithm: {compression_algorithm}, message expiry: {}, max topic size: {max_topic_size}, replication factor: {replication_factor} in stream with ID: {stream_id}", message_expiry.join(" ")));
            let topic = client
                .create_topic(id(&stream_id)?, &name, partitions_count, options)
                .await?;
            printer.info(format!("Topic with name: {name}, ID: {}, partitions count: {partitions_count} created in stream with ID: {stream_id}", topic.topic.id));
            if printer.json {
                printer.json(&topic_json(&topic.topic));
            }
        }
        TopicAction::Delete {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing delete topic with ID: {topic_id} in stream with ID: {stream_id}"
            ));
            client.delete_topic(id(&stream_id)?, id(&topic_id)?).await?;
            printer.info(format!(
                "Topic with ID: {topic_id} in stream with ID: {stream_id} deleted"
            ));
        }
        TopicAction::Update {
            max_topic_size,
            replication_factor,
            stream_id,
            topic_id,
            name,
            compression_algorithm,
            message_expiry,
        } => {
            let options = topic_options(
                &compression_algorithm,
                &message_expiry,
                &max_topic_size,
                replication_factor,
            )?;
            printer.info(format!("Executing update topic with ID: {topic_id}, name: {name} in stream with ID: {stream_id}"));
            client
                .update_topic(id(&stream_id)?, id(&topic_id)?, &name, options)
                .await?;
            printer.info(format!(
                "Topic with ID: {topic_id} updated name: {name} in stream with ID: {stream_id}"
            ));
        }
        TopicAction::Get {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing get topic with ID: {topic_id} from stream with ID: {stream_id}"
            ));
            let Some(details) = client.get_topic(id(&stream_id)?, id(&topic_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "Topic with ID: {topic_id} in stream with ID: {stream_id} was not found"
                )));
            };
            let t = &details.topic;
            let mut json = topic_json(t);
            json["partitions"] = json!(
                details
                    .partitions
                    .iter()
                    .map(partition_json)
                    .collect::<Vec<_>>()
            );
            printer.properties(
                vec![
                    ("Topic id", t.id.to_string()),
                    ("Created", format_timestamp(t.created_at)),
                    ("Topic name", t.name.to_string()),
                    ("Topic size", format_size(t.size_bytes)),
                    ("Max topic size", format_size(t.max_topic_size)),
                    ("Message expiry", format_expiry(t.message_expiry)),
                    ("Compression", t.compression_algorithm.name().to_owned()),
                    ("Topic message count", t.messages_count.to_string()),
                    ("Partitions count", t.partitions_count.to_string()),
                    ("Replication factor", t.replication_factor.to_string()),
                ],
                json,
            );
            if !printer.json && !printer.quiet && !details.partitions.is_empty() {
                let rows = details
                    .partitions
                    .iter()
                    .map(|p| {
                        vec![
                            p.id.to_string(),
                            format_timestamp(p.created_at),
                            p.segments_count.to_string(),
                            p.current_offset.to_string(),
                            format_size(p.size_bytes),
                            p.messages_count.to_string(),
                        ]
                    })
                    .collect();
                println!(
                    "{}",
                    table(
                        &[
                            "Partition ID",
                            "Created",
                            "Segments",
                            "Current Offset",
                            "Size",
                            "Messages"
                        ],
                        rows
                    )
                );
            }
        }
        TopicAction::List { stream_id, list } => {
            printer.info(
                format!(
                    "Executing list topics from stream with ID: {stream_id} in {:?} mode",
                    list.list_mode
                )
                .to_lowercase(),
            );
            let topics = client.get_topics(id(&stream_id)?).await?;
            if topics.is_empty() && printer.mode(list.list_mode) != ListMode::Json {
                printer.info(format!("No topics found in stream with ID: {stream_id}"));
                return Ok(());
            }
            printer.rows(
                list.list_mode,
                &TOPIC_HEADER,
                topic_rows(&topics),
                json!(topics.iter().map(topic_json).collect::<Vec<_>>()),
            );
        }
        TopicAction::Purge {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing purge topic with ID: {topic_id} in stream with ID: {stream_id}"
            ));
            client.purge_topic(id(&stream_id)?, id(&topic_id)?).await?;
            printer.info(format!(
                "Topic with ID: {topic_id} in stream with ID: {stream_id} purged"
            ));
        }
    }
    Ok(())
}

pub(super) async fn partition_command(
    printer: &Printer,
    client: &Client,
    action: PartitionAction,
) -> Result<(), CliError> {
    match action {
        PartitionAction::Create {
            stream_id,
            topic_id,
            partitions_count,
        } => {
            printer.info(format!("Executing create {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
            client
                .create_partitions(id(&stream_id)?, id(&topic_id)?, partitions_count)
                .await?;
            printer.info(format!("Created {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
            Ok(())
        }
        PartitionAction::Delete {
            stream_id,
            topic_id,
            partitions_count,
        } => {
            printer.info(format!("Executing delete {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
            client
                .delete_partitions(id(&stream_id)?, id(&topic_id)?, partitions_count)
                .await?;
            printer.info(format!("Deleted {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
            Ok(())
        }
    }
}

pub(super) async fn segment_command(
    printer: &Printer,
    client: &Client,
    action: SegmentAction,
) -> Result<(), CliError> {
    let SegmentAction::Delete {
        stream_id,
        topic_id,
        partition_id,
        segments_count,
    } = action;
    printer.info(format!("Executing delete {segments_count} segments for topic with ID: {topic_id}, stream with ID: {stream_id} and partition with ID: {partition_id}"));
    client
        .delete_segments(
            id(&stream_id)?,
            id(&topic_id)?,
            partition_id,
            segments_count,
        )
        .await?;
    printer.info(format!("Deleted {segments_count} segments for topic with ID: {topic_id}, stream with ID: {stream_id} and partition with ID: {partition_id}"));
    Ok(())
}
