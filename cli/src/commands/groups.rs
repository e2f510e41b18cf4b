//! `iggy consumer-group` and `iggy consumer-offset`.

use super::values::{consumer, id};
use super::views::group_json;
use crate::args::*;
use crate::error::CliError;
use crate::output::Printer;
use rill_sdk::Client;
use serde_json::json;

pub(super) async fn group_command(
    printer: &Printer,
    client: &Client,
    action: ConsumerGroupAction,
) -> Result<(), CliError> {
    match action {
        ConsumerGroupAction::Create {
            stream_id,
            topic_id,
            name,
            ..
        } => {
            printer.info(format!("Executing create consumer group with name: {name} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            let group = client
                .create_consumer_group(id(&stream_id)?, id(&topic_id)?, &name)
                .await?;
            printer.info(format!("Consumer group with ID: {}, name: {name} created for stream with ID: {stream_id} and topic with ID: {topic_id}", group.group.id));
            if printer.json {
                printer.json(&group_json(&group.group));
            }
        }
        ConsumerGroupAction::Delete {
            stream_id,
            topic_id,
            group_id,
        } => {
            printer.info(format!("Executing delete consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            client
                .delete_consumer_group(id(&stream_id)?, id(&topic_id)?, id(&group_id)?)
                .await?;
            printer.info(format!("Consumer group with ID: {group_id} deleted for stream with ID: {stream_id} and topic with ID: {topic_id}"));
        }
        ConsumerGroupAction::Get {
            stream_id,
            topic_id,
            group_id,
        } => {
            printer.info(format!("Executing get consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            let Some(details) = client
                .get_consumer_group(id(&stream_id)?, id(&topic_id)?, id(&group_id)?)
                .await?
            else {
                return Err(CliError::not_found(format!(
                    "Consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id} was not found"
                )));
            };
            let g = &details.group;
            let mut json = group_json(g);
            json["members"] = json!(
                details
                    .members
                    .iter()
                    .map(|m| json!({"id": m.id, "partitions": m.partitions}))
                    .collect::<Vec<_>>()
            );
            let members: Vec<String> = details
                .members
                .iter()
                .map(|m| format!("{}: {:?}", m.id, m.partitions))
                .collect();
            printer.properties(
                vec![
                    ("Consumer group ID", g.id.to_string()),
                    ("Consumer group name", g.name.to_string()),
                    ("Partitions count", g.partitions_count.to_string()),
                    ("Members count", g.members_count.to_string()),
                    ("Members (id: partitions)", members.join(", ")),
                ],
                json,
            );
        }
        ConsumerGroupAction::List {
            stream_id,
            topic_id,
            list,
        } => {
            printer.info(format!("Executing list consumer groups for stream with ID: {stream_id} and topic with ID: {topic_id} in {:?} mode", list.list_mode).to_lowercase());
            let groups = client
                .get_consumer_groups(id(&stream_id)?, id(&topic_id)?)
                .await?;
            let rows = groups
                .iter()
                .map(|g| {
                    vec![
                        g.id.to_string(),
                        g.name.to_string(),
                        g.partitions_count.to_string(),
                        g.members_count.to_string(),
                    ]
                })
                .collect();
            printer.rows(
                list.list_mode,
                &["ID", "Name", "Partitions Count", "Members Count"],
                rows,
                json!(groups.iter().map(group_json).collect::<Vec<_>>()),
            );
        }
    }
    Ok(())
}

pub(super) async fn offset_command(
    printer: &Printer,
    client: &Client,
    action: ConsumerOffsetAction,
) -> Result<(), CliError> {
    match action {
        ConsumerOffsetAction::Get {
            consumer_id,
            stream_id,
            topic_id,
            partition_id,
            kind,
        } => {
            printer.info(format!("Executing get consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id}"));
            let consumer = consumer(kind, &consumer_id)?;
            let Some(offset) = client
                .get_consumer_offset(
                    &consumer,
                    id(&stream_id)?,
                    id(&topic_id)?,
                    Some(partition_id),
                )
                .await?
            else {
                return Err(CliError::not_found(format!(
                    "Consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} was not found"
                )));
            };
            printer.properties(vec![("Consumer ID", consumer_id.clone()), ("Stream ID", stream_id.clone()), ("Topic ID", topic_id.clone()),
                ("Partition ID", offset.partition_id.to_string()), ("Current offset", offset.current_offset.to_string()),
                ("Stored offset", offset.stored_offset.to_string())],
                json!({"consumer_id": consumer_id, "stream_id": stream_id, "topic_id": topic_id, "partition_id": offset.partition_id,
                    "current_offset": offset.current_offset, "stored_offset": offset.stored_offset}));
        }
        ConsumerOffsetAction::Set {
            consumer_id,
            stream_id,
            topic_id,
            partition_id,
            offset,
            kind,
        } => {
            printer.info(format!("Executing set consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} to {offset}"));
            let consumer = consumer(kind, &consumer_id)?;
            client
                .store_consumer_offset(
                    &consumer,
                    id(&stream_id)?,
                    id(&topic_id)?,
                    Some(partition_id),
                    offset,
                )
                .await?;
            printer.info(format!("Consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} set to {offset}"));
        }
    }
    Ok(())
}
