//! `iggy message send`, `poll` and `flush`.

use super::values::{id, parse_headers};
use crate::args::*;
use crate::error::CliError;
use crate::output::{Printer, table};
use crate::util::*;
use bytes::Bytes;
use rill_core::message::{MessageIter, OutgoingMessage};
use rill_sdk::message::random_message_id;
use rill_sdk::types::*;
use rill_sdk::{Client, Message, SendMessage};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::time::Instant;

/// Largest number of messages sent in one SendMessages when reading standard input.
pub(super) const SEND_BATCH_MESSAGES: usize = 1000;

pub(super) async fn send_command(
    printer: &Printer,
    client: &Client,
    args: SendArgs,
) -> Result<(), CliError> {
    let partitioning = match (&args.partition_id, &args.message_key) {
        (Some(partition), _) => Partitioning::PartitionId(*partition),
        (None, Some(key)) => Partitioning::key(key.as_bytes())
            .map_err(|_| CliError::usage("message key must be 1..=255 bytes"))?,
        (None, None) => Partitioning::Balanced,
    };
    let headers = parse_headers(&args.headers)?;
    let stream_id = id(&args.stream_id)?;
    let topic_id = id(&args.topic_id)?;
    let build = |payload: Bytes| -> Result<OutgoingMessage, CliError> {
        let mut message = SendMessage::new(payload).with_id(random_message_id());
        message.headers = headers.clone();
        Ok(message.into_outgoing()?)
    };
    printer.info(format!(
        "Executing send messages to topic with ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    let mut sent = 0usize;
    if let Some(path) = &args.input_file {
        let bytes =
            std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
        let mut messages = Vec::new();
        for view in MessageIter::new(&bytes) {
            let view = view
                .map_err(|e| CliError::usage(format!("{path} is not a file of messages: {e}")))?;
            messages.push(OutgoingMessage {
                id: view.id(),
                origin_timestamp: view.origin_timestamp(),
                payload: Bytes::copy_from_slice(view.payload()),
                user_headers: Bytes::copy_from_slice(view.user_headers()),
            });
        }
        if messages.is_empty() {
            return Err(CliError::usage(format!("{path} contains no messages")));
        }
        for chunk in messages.chunks(SEND_BATCH_MESSAGES) {
            client
                .send_messages(
                    stream_id.clone(),
                    topic_id.clone(),
                    partitioning.clone(),
                    chunk,
                )
                .await?;
            sent += chunk.len();
        }
    } else if let Some(path) = &args.payload_file {
        let bytes =
            std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
        client
            .send_messages(
                stream_id,
                topic_id,
                partitioning,
                &[build(Bytes::from(bytes))?],
            )
            .await?;
        sent = 1;
    } else if !args.messages.is_empty() {
        let messages = args
            .messages
            .iter()
            .map(|m| build(Bytes::from(m.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        client
            .send_messages(stream_id, topic_id, partitioning, &messages)
            .await?;
        sent = messages.len();
    } else {
        let stdin = std::io::stdin();
        let mut batch = Vec::new();
        for line in stdin.lock().lines() {
            batch.push(build(Bytes::from(line?))?);
            if batch.len() == SEND_BATCH_MESSAGES {
                client
                    .send_messages(
                        stream_id.clone(),
                        topic_id.clone(),
                        partitioning.clone(),
                        &batch,
                    )
                    .await?;
                sent += batch.len();
                batch.clear();
            }
        }
        if !batch.is_empty() {
            client
                .send_messages(
                    stream_id.clone(),
                    topic_id.clone(),
                    partitioning.clone(),
                    &batch,
                )
                .await?;
            sent += batch.len();
        }
        if sent == 0 {
            return Err(CliError::usage(
                "no messages given (arguments, --input-file, --payload-file or standard input)",
            ));
        }
    }
    printer.info(format!(
        "Sent {sent} message(s) to topic with ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    if printer.json {
        printer.json(&json!({"sent": sent}));
    }
    Ok(())
}

pub(super) fn payload_text(message: &Message, format: PayloadFormat) -> String {
    let payload = message.payload();
    match format {
        PayloadFormat::Text => String::from_utf8_lossy(&payload).into_owned(),
        PayloadFormat::Hex => hex(&payload),
    }
}

pub(super) fn message_json(message: &Message, format: PayloadFormat) -> Value {
    let headers = message.headers().unwrap_or_default();
    json!({
        "partition_id": message.partition_id(), "offset": message.offset(), "id": message.id().to_string(),
        "timestamp": message.timestamp(), "origin_timestamp": message.origin_timestamp(), "checksum": message.checksum(),
        "length": message.payload().len(), "payload": payload_text(message, format),
        "headers": headers.iter().map(|h| json!({"key": h.key.to_string(), "kind": h.value.kind_name(), "value": h.value.to_string()})).collect::<Vec<_>>(),
    })
}

pub(super) fn print_messages(
    printer: &Printer,
    messages: &[Message],
    args: &PollArgs,
    json_lines: bool,
) {
    if printer.json {
        if json_lines {
            for message in messages {
                println!("{}", message_json(message, args.format));
            }
        } else {
            printer.json(&json!(
                messages
                    .iter()
                    .map(|m| message_json(m, args.format))
                    .collect::<Vec<_>>()
            ));
        }
        return;
    }
    if printer.quiet {
        return;
    }
    let mut header_columns: Vec<(String, &'static str)> = Vec::new();
    if args.show_headers {
        for message in messages {
            for header in message.headers().unwrap_or_default() {
                let column = (header.key.to_string(), header.value.kind_name());
                if !header_columns.contains(&column) {
                    header_columns.push(column);
                }
            }
        }
    }
    let mut titles: Vec<String> = ["Offset", "Timestamp", "ID", "Length", "Payload"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    titles.extend(
        header_columns
            .iter()
            .map(|(key, kind)| format!("Header: {key}\n{kind}")),
    );
    let rows = messages
        .iter()
        .map(|message| {
            let mut row = vec![
                message.offset().to_string(),
                format_timestamp(message.timestamp()),
                message.id().to_string(),
                message.payload().len().to_string(),
                payload_text(message, args.format),
            ];
            if !header_columns.is_empty() {
                let headers = message.headers().unwrap_or_default();
                for (key, kind) in &header_columns {
                    row.push(
                        headers
                            .iter()
                            .find(|h| &h.key.to_string() == key && h.value.kind_name() == *kind)
                            .map(|h| h.value.to_string())
                            .unwrap_or_default(),
                    );
                }
            }
            row
        })
        .collect();
    let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
    println!("{}", table(&titles, rows));
}

pub(super) async fn poll_command(
    printer: &Printer,
    client: &Client,
    args: PollArgs,
) -> Result<(), CliError> {
    let stream_id = id(&args.stream_id)?;
    let topic_id = id(&args.topic_id)?;
    let consumer = Consumer::new(id(&args.consumer)?);
    let mut strategy = if let Some(offset) = args.offset {
        PollingStrategy::offset(offset)
    } else if args.first {
        PollingStrategy::first()
    } else if args.last {
        PollingStrategy::last()
    } else {
        PollingStrategy::next()
    };
    let interval = rill_core::units::parse_duration(&args.follow_interval)
        .map_err(|e| CliError::usage(format!("invalid --follow-interval: {e}")))?;
    printer.info(format!(
        "Executing poll messages from topic ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    let mut output_file = match &args.output_file {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| CliError::usage(format!("cannot open {path}: {e}")))?,
        ),
        None => None,
    };
    loop {
        let start = Instant::now();
        let polled = client
            .poll_messages(
                stream_id.clone(),
                topic_id.clone(),
                Some(args.partition_id),
                &consumer,
                strategy,
                args.message_count,
                args.auto_commit,
            )
            .await
            .map_err(|e| {
                CliError::from(e).context(format!(
                    "Problem polling messages from topic with ID: {} and stream with ID: {}",
                    args.topic_id, args.stream_id
                ))
            })?;
        let messages: Vec<Message> = Message::from_polled(&polled).collect();
        if !args.follow || !messages.is_empty() {
            let size: usize = messages.iter().map(|m| m.as_bytes().len()).sum();
            printer.info(format!("Polled messages from topic with ID: {} and stream with ID: {} (from partition with ID: {})", args.topic_id, args.stream_id, polled.partition_id));
            printer.info(format!(
                "Polled {} message(s) of total size {}, it took {:.2} ms",
                messages.len(),
                format_size(size as u64),
                start.elapsed().as_secs_f64() * 1000.0
            ));
            if let Some(file) = output_file.as_mut() {
                for message in &messages {
                    file.write_all(message.as_bytes())?;
                }
                printer.info(format!(
                    "Stored {} message(s) of total size {} to {} binary file",
                    messages.len(),
                    format_size(size as u64),
                    args.output_file.as_deref().unwrap_or_default()
                ));
            } else {
                print_messages(printer, &messages, &args, args.follow);
            }
            let _ = std::io::stdout().flush();
        }
        if !args.follow {
            return Ok(());
        }
        match messages.last() {
            // Continue right after what was printed, whatever the initial strategy was.
            Some(last) => strategy = PollingStrategy::offset(last.offset() + 1),
            None => {
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                }
            }
        }
    }
}

pub(super) async fn flush_command(
    printer: &Printer,
    client: &Client,
    fsync: bool,
    stream_id: String,
    topic_id: String,
    partition_id: u32,
) -> Result<(), CliError> {
    printer.info(format!("Executing flush messages for partition with ID: {partition_id} in topic with ID: {topic_id} and stream with ID: {stream_id}"));
    client
        .flush_unsaved_buffer(id(&stream_id)?, id(&topic_id)?, partition_id, fsync)
        .await?;
    printer.info(format!("Flushed messages from partition with ID: {partition_id}, topic with ID: {topic_id} and stream with ID: {stream_id} (fsync: {fsync})"));
    Ok(())
}
