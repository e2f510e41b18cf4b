//! `iggy stream`.

use super::values::id;
use super::views::{stream_json, stream_rows, topic_json};
use crate::args::*;
use crate::error::CliError;
use crate::output::Printer;
use crate::util::*;
use rill_sdk::Client;
use serde_json::json;

pub(super) async fn stream_command(
    printer: &Printer,
    client: &Client,
    action: StreamAction,
) -> Result<(), CliError> {
    match action {
        StreamAction::Create { name, .. } => {
            printer.info(format!(
                "Executing create stream with name: {name} and ID auto incremented"
            ));
            let stream = client.create_stream(&name).await?;
            printer.info(format!(
                "Stream with name: {name} and ID: {} created",
                stream.stream.id
            ));
            if printer.json {
                printer.json(&stream_json(&stream.stream));
            }
        }
        StreamAction::Delete { stream_id } => {
            printer.info(format!("Executing delete stream with ID: {stream_id}"));
            client.delete_stream(id(&stream_id)?).await?;
            printer.info(format!("Stream with ID: {stream_id} deleted"));
        }
        StreamAction::Update { stream_id, name } => {
            printer.info(format!(
                "Executing update stream with ID: {stream_id} and name: {name}"
            ));
            client.update_stream(id(&stream_id)?, &name).await?;
            printer.info(format!("Stream with ID: {stream_id} updated name: {name}"));
        }
        StreamAction::Get { stream_id } => {
            printer.info(format!("Executing get stream with ID: {stream_id}"));
            let Some(details) = client.get_stream(id(&stream_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "Stream with ID: {stream_id} was not found"
                )));
            };
            let s = &details.stream;
            let mut json = stream_json(s);
            json["topics"] = json!(details.topics.iter().map(topic_json).collect::<Vec<_>>());
            printer.properties(
                vec![
                    ("Stream ID", s.id.to_string()),
                    ("Created", format_timestamp(s.created_at)),
                    ("Stream name", s.name.to_string()),
                    ("Stream size", format_size(s.size_bytes)),
                    ("Stream message count", s.messages_count.to_string()),
                    ("Stream topics count", s.topics_count.to_string()),
                ],
                json,
            );
        }
        StreamAction::List(list) => {
            printer.info(
                format!("Executing list streams in {:?} mode", list.list_mode).to_lowercase(),
            );
            let streams = client.get_streams().await?;
            if streams.is_empty() && printer.mode(list.list_mode) != ListMode::Json {
                printer.info("No streams found!");
                return Ok(());
            }
            printer.rows(
                list.list_mode,
                &["ID", "Created", "Name", "Size (B)", "Messages", "Topics"],
                stream_rows(&streams),
                json!(streams.iter().map(stream_json).collect::<Vec<_>>()),
            );
        }
        StreamAction::Purge { stream_id } => {
            printer.info(format!("Executing purge stream with ID: {stream_id}"));
            client.purge_stream(id(&stream_id)?).await?;
            printer.info(format!("Stream with ID: {stream_id} purged"));
        }
    }
    Ok(())
}
