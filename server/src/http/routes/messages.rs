//! `/streams/{s}/topics/{t}/messages`: poll, send, flush.

use super::{Call, id};
use crate::handlers::Response;
use crate::http::bodies::{self, json, query_number, query_value};
use crate::http::reply::Reply;
use crate::http::views;
use hyper::StatusCode;
use rill_core::ErrorCode;
use rill_core::message::MessageIter;
use rill_core::primitives::{OptionalPartition, PollingKind, PollingStrategy};
use rill_core::requests as binary;

/// Upstream's names of the polling kinds, and their one-letter forms.
fn polling_kind(text: &str) -> Result<PollingKind, Reply> {
    Ok(match text.to_ascii_lowercase().as_str() {
        "offset" | "o" => PollingKind::Offset,
        "timestamp" | "t" => PollingKind::Timestamp,
        "first" | "f" => PollingKind::First,
        "last" | "l" => PollingKind::Last,
        "next" | "n" => PollingKind::Next,
        other => {
            return Err(bodies::bad(
                ErrorCode::InvalidFormat,
                format!("unknown polling kind {other:?}: offset, timestamp, first, last or next"),
            ));
        }
    })
}

/// GET: `consumer_id` (1), `partition_id` (0), `kind` (offset), `value` (0), `count` (10),
/// `auto_commit` (false), upstream's defaults.
pub async fn poll(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let query = call.query();
    let kind = match query_value(&query, "kind") {
        Some(text) => polling_kind(text)?,
        None => PollingKind::Offset,
    };
    let auto_commit = match query_value(&query, "auto_commit") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(bodies::bad(
                ErrorCode::InvalidFormat,
                format!("auto_commit={other:?}: true or false"),
            ));
        }
    };
    let request = binary::PollMessages {
        consumer: bodies::consumer(&query)?,
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        partition_id: OptionalPartition(Some(query_number(&query, "partition_id")?.unwrap_or(0))),
        strategy: PollingStrategy {
            kind,
            value: query_number(&query, "value")?.unwrap_or(0),
        },
        count: query_number(&query, "count")?.unwrap_or(10),
        auto_commit,
    };
    let Response::Polled { header, chunks, .. } = call.run(request).await? else {
        return Err(Reply::error(ErrorCode::Error));
    };
    // The poll header: partition id u32, current offset u64, count u32.
    let partition_id = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
    let current_offset = u64::from_le_bytes(header[4..12].try_into().expect("8 bytes"));
    // Messages may straddle the stored buffers they are sliced from: walked as one.
    let bytes: Vec<u8> = match chunks.as_slice() {
        [one] => one.to_vec(),
        many => many.concat(),
    };
    let messages: Vec<views::Message> = MessageIter::new(&bytes)
        .map_while(Result::ok)
        .map(|message| views::Message::from(&message))
        .collect();
    Ok(Reply::ok(&views::Polled {
        partition_id,
        current_offset,
        count: messages.len() as u32,
        messages,
    }))
}

/// POST: 201 with no body, as upstream.
pub async fn send(call: &Call<'_>, stream: &str, topic: &str) -> Result<Reply, Reply> {
    let body: bodies::Send = json(&call.body)?;
    let request = body.request(id(stream)?, id(topic)?)?;
    Ok(call.act(request, StatusCode::CREATED).await)
}

/// `.../flush/{partition}/{fsync}`: the fsync segment is `true`/`false`, or `fsync=true` as
/// the official SDKs send it.
pub async fn flush(
    call: &Call<'_>,
    stream: &str,
    topic: &str,
    partition: &str,
    fsync: &str,
) -> Result<Reply, Reply> {
    let fsync = match fsync.strip_prefix("fsync=").unwrap_or(fsync) {
        "true" => true,
        "false" => false,
        other => {
            return Err(bodies::bad(
                ErrorCode::InvalidFormat,
                format!("fsync {other:?}: true or false"),
            ));
        }
    };
    let request = binary::FlushUnsavedBuffer {
        stream_id: id(stream)?,
        topic_id: id(topic)?,
        partition_id: partition
            .parse()
            .map_err(|_| bodies::bad(ErrorCode::InvalidFormat, "partition id is not a number"))?,
        fsync,
    };
    Ok(call.act(request, StatusCode::OK).await)
}
