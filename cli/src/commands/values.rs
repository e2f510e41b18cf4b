//! Turning command-line values into protocol values: identifiers, durations, compression,
//! user statuses, topic options, message headers, consumers.

use crate::args::*;
use crate::error::CliError;
use crate::util::*;
use rill_sdk::types::*;
use rill_sdk::{Header, HeaderValue, TopicOptions, parse_identifier};
use std::time::Duration;

pub(super) fn id(text: &str) -> Result<Identifier, CliError> {
    parse_identifier(text).map_err(CliError::from)
}

pub(super) fn parse_interval(flag: &str, value: Option<&String>) -> Result<Duration, CliError> {
    let value = value.map_or("1s", |v| v.as_str());
    rill_core::units::parse_duration(value.trim_matches('"'))
        .map_err(|e| CliError::usage(format!("invalid --{flag}: {e}")))
}

/// Upstream's QUIC durations are milliseconds; 0 disables.
pub(super) fn milliseconds(value: u64) -> Option<Duration> {
    (value > 0).then(|| Duration::from_millis(value))
}

pub(super) fn parse_compression(text: &str) -> Result<CompressionAlgorithm, CliError> {
    CompressionAlgorithm::from_name(text).ok_or_else(|| {
        CliError::usage(format!(
            "unknown compression algorithm '{}' (none or gzip)",
            text.to_ascii_lowercase()
        ))
    })
}

pub(super) fn user_status(status: UserStatusArg) -> UserStatus {
    match status {
        UserStatusArg::Active => UserStatus::Active,
        UserStatusArg::Inactive => UserStatus::Inactive,
    }
}

pub(super) fn topic_options(
    compression: &str,
    expiry: &[String],
    max_size: &str,
    replication: u8,
) -> Result<TopicOptions, CliError> {
    Ok(TopicOptions {
        compression_algorithm: parse_compression(compression)?,
        message_expiry: parse_expiry(expiry, 0)?,
        max_topic_size: parse_size(max_size)?,
        replication_factor: replication,
    })
}

pub(super) fn parse_headers(specs: &[String]) -> Result<Vec<Header>, CliError> {
    specs
        .iter()
        .filter(|spec| !spec.is_empty())
        .map(|spec| {
            let mut parts = spec.splitn(3, ':');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(key), Some(kind), Some(value)) => {
                    Ok(Header::new(key, HeaderValue::parse(kind, value)?))
                }
                _ => Err(CliError::usage(format!(
                    "invalid header '{spec}': expected key:kind:value"
                ))),
            }
        })
        .collect()
}

pub(super) fn consumer(kind: ConsumerKindArg, consumer_id: &str) -> Result<Consumer, CliError> {
    Ok(match kind {
        ConsumerKindArg::Consumer => Consumer::new(id(consumer_id)?),
        ConsumerKindArg::ConsumerGroup => Consumer::group(id(consumer_id)?),
    })
}
