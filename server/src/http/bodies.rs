//! Request bodies and query strings of the HTTP API, in upstream 0.8's JSON (and what the
//! 0.9-generation SDK adds: `options` maps, `null` for "keep"), turned into rill-core requests.
//!
//! A body that is not JSON, lacks a field or has one of the wrong type is answered 400 with
//! upstream's error body naming what is wrong (upstream answers 400 or 422 in plain text).

use super::reply::Reply;
use super::views::PermissionsView;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use hyper::StatusCode;
use rill_core::ErrorCode;
use rill_core::message::{MessageBatch, OutgoingMessage, SendMessages};
use rill_core::primitives::user_headers::{self, HeaderField, HeaderKind};
use rill_core::primitives::{
    CompressionAlgorithm, Consumer, Identifier, Name, Partitioning, UserStatus,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// A malformed request: 400 with `code`.
pub fn bad(code: ErrorCode, reason: impl std::fmt::Display) -> Reply {
    Reply::error_status(StatusCode::BAD_REQUEST, code, &reason.to_string())
}

/// The body as JSON of type `T`.
pub fn json<T: DeserializeOwned>(body: &Bytes) -> Result<T, Reply> {
    serde_json::from_slice(body).map_err(|error| {
        bad(
            ErrorCode::InvalidFormat,
            format!("invalid JSON body: {error}"),
        )
    })
}

/// A path or query identifier: numeric if it reads as a u32, otherwise a name.
pub fn identifier(text: &str) -> Result<Identifier, Reply> {
    match text.parse::<u32>() {
        Ok(id) => Ok(Identifier::numeric(id)),
        Err(_) => Identifier::named(text).map_err(|_| {
            bad(
                ErrorCode::InvalidIdentifier,
                format!("invalid identifier: {text:?}"),
            )
        }),
    }
}

pub fn name(text: String, code: ErrorCode) -> Result<Name, Reply> {
    Name::new(text).map_err(|error| bad(code, error))
}

pub fn compression(text: Option<&str>) -> Result<CompressionAlgorithm, Reply> {
    match text {
        None => Ok(CompressionAlgorithm::None),
        Some(text) => CompressionAlgorithm::from_name(text).ok_or_else(|| {
            bad(
                ErrorCode::InvalidFormat,
                format!("unknown compression algorithm {text:?}: none or gzip"),
            )
        }),
    }
}

pub fn user_status(text: &str) -> Result<UserStatus, Reply> {
    UserStatus::from_name(text).ok_or_else(|| {
        bad(
            ErrorCode::InvalidUserStatus,
            format!("unknown user status {text:?}: active or inactive"),
        )
    })
}

/// A consumer id as JSON carries it: a number, or a string that is a number or a name.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum ConsumerId {
    Number(u64),
    Text(String),
}

impl ConsumerId {
    pub fn identifier(&self) -> Result<Identifier, Reply> {
        match self {
            ConsumerId::Number(id) => u32::try_from(*id)
                .map(Identifier::numeric)
                .map_err(|_| bad(ErrorCode::InvalidIdentifier, "consumer id above u32")),
            ConsumerId::Text(text) => identifier(text),
        }
    }
}

fn one() -> u32 {
    1
}

#[derive(Deserialize)]
pub struct CreateStream {
    pub name: String,
}

#[derive(Deserialize)]
pub struct CreateTopic {
    #[serde(default = "one")]
    pub partitions_count: u32,
    pub compression_algorithm: Option<String>,
    #[serde(default)]
    pub message_expiry: Option<u64>,
    #[serde(default)]
    pub max_topic_size: Option<u64>,
    #[serde(default)]
    pub replication_factor: Option<u8>,
    pub name: String,
    /// The 0.9-generation SDK's topic options as text (`segment_size`, `durability`, ...),
    /// checked as the binary protocol checks them.
    #[serde(default)]
    pub options: Option<std::collections::BTreeMap<String, String>>,
}

/// A CreateTopic body's options, checked as the 0.9 binary protocol checks an options block
/// (unknown keys 4041, bad values 4042); the topic's own segment size, if it asks for one.
pub fn topic_segment_size(topic: &CreateTopic) -> Result<Option<u64>, Reply> {
    let Some(options) = &topic.options else {
        return Ok(None);
    };
    let entries: Vec<rill_core::v09::options::OptionEntry> = options
        .iter()
        .map(|(key, value)| rill_core::v09::options::OptionEntry {
            key: key.clone(),
            kind: HeaderKind::String,
            value: value.as_bytes().to_vec(),
        })
        .collect();
    rill_core::v09::options::topic_options(&entries, false, topic.partitions_count)
        .map(|options| options.segment_size)
        .map_err(|error| Reply::error(error.code))
}

/// UpdateTopic: a missing or null field keeps the topic's current value (the 0.9-generation
/// SDK sends null for what it does not change).
#[derive(Deserialize)]
pub struct UpdateTopic {
    pub compression_algorithm: Option<String>,
    pub message_expiry: Option<u64>,
    pub max_topic_size: Option<u64>,
    pub replication_factor: Option<u8>,
    pub name: Option<String>,
}

#[derive(Deserialize)]
pub struct PartitionsCount {
    pub partitions_count: u32,
}

#[derive(Deserialize)]
pub struct StoreOffset {
    #[serde(default = "default_consumer")]
    pub consumer_id: ConsumerId,
    #[serde(default)]
    pub partition_id: Option<u32>,
    pub offset: u64,
}

fn default_consumer() -> ConsumerId {
    ConsumerId::Number(1)
}

#[derive(Deserialize)]
pub struct CreateUser {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub permissions: Option<PermissionsView>,
}

#[derive(Deserialize)]
pub struct UpdateUser {
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

#[derive(Deserialize)]
pub struct UpdatePermissions {
    #[serde(default)]
    pub permissions: Option<PermissionsView>,
}

#[derive(Deserialize)]
pub struct ChangePassword {
    pub current_password: String,
    pub new_password: String,
}

#[derive(Deserialize)]
pub struct Login {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub context: Option<String>,
}

#[derive(Deserialize)]
pub struct TokenBody {
    pub token: String,
}

#[derive(Deserialize)]
pub struct CreateToken {
    pub name: String,
    #[serde(default)]
    pub expiry: u64,
}

#[derive(Deserialize)]
pub struct Snapshot {
    pub compression: String,
    #[serde(default)]
    pub snapshot_types: Vec<String>,
}

impl Snapshot {
    pub fn request(&self) -> Result<rill_core::requests::GetSnapshot, Reply> {
        let compression = match self.compression.as_str() {
            "Stored" => 1,
            "Deflated" => 2,
            "Bzip2" => 3,
            "Zstd" => 4,
            "Lzma" => 5,
            "Xz" => 6,
            other => {
                return Err(bad(
                    ErrorCode::InvalidCommand,
                    format!("unknown snapshot compression {other:?}"),
                ));
            }
        };
        let types = self
            .snapshot_types
            .iter()
            .map(|kind| match kind.as_str() {
                "FilesystemOverview" => Ok(1),
                "ProcessList" => Ok(2),
                "ResourceUsage" => Ok(3),
                "Test" => Ok(4),
                "ServerLogs" => Ok(5),
                "ServerConfig" => Ok(6),
                "All" => Ok(100),
                other => Err(bad(
                    ErrorCode::InvalidCommand,
                    format!("unknown snapshot type {other:?}"),
                )),
            })
            .collect::<Result<Vec<u8>, Reply>>()?;
        if types.contains(&100) && types.len() > 1 {
            return Err(bad(
                ErrorCode::InvalidCommand,
                "All cannot be combined with other types",
            ));
        }
        Ok(rill_core::requests::GetSnapshot { compression, types })
    }
}

/// SendMessages as the HTTP clients send it: exactly `partitioning` and `messages`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Send {
    pub partitioning: PartitioningBody,
    pub messages: Vec<MessageBody>,
}

#[derive(Deserialize)]
pub struct PartitioningBody {
    pub kind: String,
    #[serde(default)]
    pub value: String,
}

#[derive(Deserialize)]
pub struct MessageBody {
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    pub payload: String,
    #[serde(default)]
    pub user_headers: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct HeaderEntryBody {
    key: HeaderFieldBody,
    value: HeaderFieldBody,
}

#[derive(Deserialize)]
struct HeaderFieldBody {
    kind: String,
    value: String,
}

impl Send {
    pub fn request(
        self,
        stream_id: Identifier,
        topic_id: Identifier,
    ) -> Result<SendMessages, Reply> {
        let key = STANDARD
            .decode(self.partitioning.value.as_bytes())
            .map_err(|error| {
                bad(
                    ErrorCode::InvalidKeyValueLength,
                    format!("partitioning value: {error}"),
                )
            })?;
        let partitioning = match self.partitioning.kind.as_str() {
            "balanced" => Partitioning::Balanced,
            "partition_id" => {
                let bytes: [u8; 4] = key.as_slice().try_into().map_err(|_| {
                    bad(
                        ErrorCode::InvalidKeyValueLength,
                        "partition_id needs 4 bytes (u32, little endian)",
                    )
                })?;
                Partitioning::PartitionId(u32::from_le_bytes(bytes))
            }
            "messages_key" => Partitioning::key(key).map_err(|_| {
                bad(
                    ErrorCode::InvalidKeyValueLength,
                    "messages_key needs 1 to 255 bytes",
                )
            })?,
            other => {
                return Err(bad(
                    ErrorCode::InvalidFormat,
                    format!(
                        "unknown partitioning kind {other:?}: balanced, partition_id or messages_key"
                    ),
                ));
            }
        };
        if self.messages.is_empty() {
            return Err(bad(ErrorCode::InvalidMessagesCount, "no messages"));
        }
        let messages = self
            .messages
            .into_iter()
            .map(MessageBody::outgoing)
            .collect::<Result<Vec<_>, Reply>>()?;
        Ok(SendMessages {
            stream_id,
            topic_id,
            partitioning,
            batch: MessageBatch::from_messages(&messages),
        })
    }
}

impl MessageBody {
    fn outgoing(self) -> Result<OutgoingMessage, Reply> {
        let id = match &self.id {
            None | Some(serde_json::Value::Null) => 0,
            Some(serde_json::Value::Number(number)) => {
                number.as_u64().map(u128::from).ok_or_else(|| {
                    bad(
                        ErrorCode::InvalidFormat,
                        "message id: a number must fit u64; send larger ids as strings",
                    )
                })?
            }
            Some(serde_json::Value::String(text)) => parse_id(text).ok_or_else(|| {
                bad(
                    ErrorCode::InvalidFormat,
                    format!("message id {text:?}: a decimal number or 32 hex digits"),
                )
            })?,
            Some(other) => {
                return Err(bad(ErrorCode::InvalidFormat, format!("message id {other}")));
            }
        };
        let payload = STANDARD.decode(self.payload.as_bytes()).map_err(|error| {
            bad(
                ErrorCode::InvalidFormat,
                format!("payload is not base64: {error}"),
            )
        })?;
        if payload.is_empty() {
            return Err(bad(ErrorCode::EmptyMessagePayload, "empty payload"));
        }
        let headers = match self.user_headers {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::String(raw)) => {
                STANDARD.decode(raw.as_bytes()).map_err(|error| {
                    bad(
                        ErrorCode::InvalidHeaderValue,
                        format!("user_headers: {error}"),
                    )
                })?
            }
            Some(entries) => {
                let entries: Vec<HeaderEntryBody> =
                    serde_json::from_value(entries).map_err(|error| {
                        bad(
                            ErrorCode::InvalidHeaderKey,
                            format!("user_headers: {error}"),
                        )
                    })?;
                let pairs = entries
                    .into_iter()
                    .map(|entry| {
                        Ok((
                            header_field(entry.key, ErrorCode::InvalidHeaderKey)?,
                            header_field(entry.value, ErrorCode::InvalidHeaderValue)?,
                        ))
                    })
                    .collect::<Result<Vec<_>, Reply>>()?;
                let mut blob = Vec::with_capacity(user_headers::encoded_len(&pairs));
                user_headers::encode(&pairs, &mut blob);
                blob
            }
        };
        Ok(OutgoingMessage {
            id,
            origin_timestamp: crate::time::now_micros(),
            payload: payload.into(),
            user_headers: headers.into(),
        })
    }
}

fn header_field(field: HeaderFieldBody, code: ErrorCode) -> Result<HeaderField, Reply> {
    let kind = HeaderKind::from_name(&field.kind).ok_or_else(|| {
        bad(
            ErrorCode::InvalidHeaderKind,
            format!("unknown header kind {:?}", field.kind),
        )
    })?;
    let value = STANDARD
        .decode(field.value.as_bytes())
        .map_err(|error| bad(code, format!("header value is not base64: {error}")))?;
    let field = HeaderField { kind, value };
    field.validate(code).map_err(|error| bad(code, error))?;
    Ok(field)
}

/// A u128 message id written as a decimal number, or as 32 hex digits (a UUID, dashes allowed).
fn parse_id(text: &str) -> Option<u128> {
    if let Ok(id) = text.parse::<u128>() {
        return Some(id);
    }
    let hex: String = text.chars().filter(|character| *character != '-').collect();
    (hex.len() == 32)
        .then(|| u128::from_str_radix(&hex, 16).ok())
        .flatten()
}

/// The consumer a query names (`consumer_id`, 1 when absent, as upstream): always a plain
/// consumer, as over HTTP upstream has no consumer-group kind.
pub fn consumer(query: &[(String, String)]) -> Result<Consumer, Reply> {
    let consumer_id = match query_value(query, "consumer_id") {
        Some(text) => identifier(text)?,
        None => Identifier::numeric(1),
    };
    Ok(Consumer::new(consumer_id))
}

/// The query string's values by name (percent-decoded; `+` is a space).
pub fn query(uri: &hyper::Uri) -> Vec<(String, String)> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                decode(&key.replace('+', " ")),
                decode(&value.replace('+', " ")),
            )
        })
        .collect()
}

pub fn query_value<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
}

/// A query number: absent is None, unparseable is a 400 naming it.
pub fn query_number<T: std::str::FromStr>(
    query: &[(String, String)],
    key: &str,
) -> Result<Option<T>, Reply> {
    query_value(query, key)
        .map(|value| {
            value.parse::<T>().map_err(|_| {
                bad(
                    ErrorCode::InvalidFormat,
                    format!("query parameter {key}={value:?} is not a number"),
                )
            })
        })
        .transpose()
}

/// Percent-decoding of a path segment or query part; invalid escapes stay as they are.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let Some(byte) = std::str::from_utf8(&bytes[index + 1..index + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every parser of this module on untrusted input, for the `http_bodies` fuzz target: `body` as
/// each JSON body the API takes (turned into its request where it parses), `target` as a path
/// and query string. Returns how many bodies parsed; it must never panic.
pub fn parse_everything(body: &[u8], target: &str) -> usize {
    let body = Bytes::copy_from_slice(body);
    let mut parsed = 0;
    if let Ok(send) = json::<Send>(&body) {
        parsed += 1;
        let _ = send.request(Identifier::numeric(1), Identifier::numeric(2));
    }
    if let Ok(snapshot) = json::<Snapshot>(&body) {
        parsed += 1;
        let _ = snapshot.request();
    }
    if let Ok(user) = json::<CreateUser>(&body) {
        parsed += 1;
        let _ = user_status(user.status.as_deref().unwrap_or("active"));
        let _ = user
            .permissions
            .map(rill_core::primitives::Permissions::from);
    }
    if let Ok(topic) = json::<CreateTopic>(&body) {
        parsed += 1;
        let _ = compression(topic.compression_algorithm.as_deref());
        let _ = topic_segment_size(&topic);
        let _ = name(topic.name, ErrorCode::InvalidTopicName);
    }
    if let Ok(offset) = json::<StoreOffset>(&body) {
        parsed += 1;
        let _ = offset.consumer_id.identifier();
    }
    parsed += usize::from(json::<UpdateTopic>(&body).is_ok());
    parsed += usize::from(json::<UpdateUser>(&body).is_ok());
    parsed += usize::from(json::<UpdatePermissions>(&body).is_ok());
    parsed += usize::from(json::<ChangePassword>(&body).is_ok());
    parsed += usize::from(json::<Login>(&body).is_ok());
    parsed += usize::from(json::<TokenBody>(&body).is_ok());
    parsed += usize::from(json::<CreateToken>(&body).is_ok());
    parsed += usize::from(json::<PartitionsCount>(&body).is_ok());
    if let Ok(uri) = target.parse::<hyper::Uri>() {
        let query = query(&uri);
        let _ = consumer(&query);
        let _ = query_number::<u64>(&query, "value");
        for segment in uri.path().split('/') {
            let _ = identifier(&decode(segment));
        }
    }
    parsed
}

#[cfg(test)]
mod tests;
