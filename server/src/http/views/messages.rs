//! Polled messages as upstream's JSON has them: header fields as numbers (ids as u128), payload
//! and header values in base64.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rill_core::message::MessageView;
use serde::Serialize;

/// A polled message: its header's fields, payload and user headers.
#[derive(Serialize)]
pub struct Message {
    header: MessageHeader,
    payload: String,
    user_headers: UserHeaders,
}

#[derive(Serialize)]
struct MessageHeader {
    checksum: u64,
    id: u128,
    offset: u64,
    timestamp: u64,
    origin_timestamp: u64,
    user_headers_length: u32,
    payload_length: u32,
    reserved: u64,
}

/// Entries when the headers parse, else their raw bytes in base64 (as upstream falls back).
#[derive(Serialize)]
#[serde(untagged)]
enum UserHeaders {
    Entries(Vec<HeaderEntry>),
    Raw(String),
}

#[derive(Serialize)]
struct HeaderEntry {
    key: HeaderField,
    value: HeaderField,
}

#[derive(Serialize)]
pub struct HeaderField {
    pub kind: &'static str,
    pub value: String,
}

fn header_field(field: &rill_core::primitives::user_headers::HeaderField) -> HeaderField {
    HeaderField {
        kind: field.kind.name(),
        value: STANDARD.encode(&field.value),
    }
}

impl From<&MessageView<'_>> for Message {
    fn from(message: &MessageView<'_>) -> Self {
        let header = message.header();
        let raw_headers = message.user_headers();
        let user_headers = match rill_core::primitives::user_headers::parse(raw_headers) {
            Ok(entries) => UserHeaders::Entries(
                entries
                    .iter()
                    .map(|(key, value)| HeaderEntry {
                        key: header_field(key),
                        value: header_field(value),
                    })
                    .collect(),
            ),
            Err(_) => UserHeaders::Raw(STANDARD.encode(raw_headers)),
        };
        Message {
            header: MessageHeader {
                checksum: header.checksum,
                id: header.id,
                offset: header.offset,
                timestamp: header.timestamp,
                origin_timestamp: header.origin_timestamp,
                user_headers_length: raw_headers.len() as u32,
                payload_length: message.payload().len() as u32,
                reserved: 0,
            },
            payload: STANDARD.encode(message.payload()),
            user_headers,
        }
    }
}

#[derive(Serialize)]
pub struct Polled {
    pub partition_id: u32,
    pub current_offset: u64,
    pub count: u32,
    pub messages: Vec<Message>,
}
