//! Parsing and formatting helpers: human durations and sizes, timestamps, permissions.

use crate::error::CliError;
use rill_core::units;
use rill_sdk::types::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};
use std::time::Duration;

/// Expiry as the protocol encodes it: 0 = server default, `u64::MAX` = never, else µs.
pub fn parse_expiry(words: &[String], default_when_empty: u64) -> Result<u64, CliError> {
    let text = words.join(" ");
    let text = text.trim();
    match text {
        "" => Ok(default_when_empty),
        "server_default" | "default" => Ok(0),
        "unlimited" | "never_expire" | "none" | "never" => Ok(u64::MAX),
        _ => units::parse_duration(text)
            .map(|duration| duration.as_micros().min(u64::MAX as u128 - 1) as u64)
            .map_err(|error| CliError::usage(format!("invalid expiry: {error}"))),
    }
}

/// A byte size like `15GB`, `512 MiB`, `1000`: 0 = server default, `u64::MAX` = unlimited.
pub fn parse_size(text: &str) -> Result<u64, CliError> {
    let text = text.trim();
    match text {
        "server_default" | "default" => return Ok(0),
        "unlimited" | "none" => return Ok(u64::MAX),
        _ => {}
    }
    units::parse_size(text).map_err(|error| CliError::usage(format!("invalid size: {error}")))
}

/// `1.50 KB`-style sizes (decimal units, as the official CLI prints them).
pub fn format_size(bytes: u64) -> String {
    if bytes == u64::MAX {
        return "unlimited".to_owned();
    }
    units::format_size(bytes)
}

/// Expiry for display.
pub fn format_expiry(micros: u64) -> String {
    match micros {
        0 => "server_default".to_owned(),
        u64::MAX => "unlimited".to_owned(),
        _ => units::format_duration(Duration::from_micros(micros)),
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) for µs since the epoch.
pub fn format_timestamp(micros: u64) -> String {
    let seconds = micros / 1_000_000;
    let days = (seconds / 86_400) as i64;
    let time = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        time / 3600,
        (time % 3600) / 60,
        time % 60
    )
}

/// Howard Hinnant's days-to-civil conversion.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn global_flag(permissions: &mut GlobalPermissions, name: &str) -> Result<(), CliError> {
    match name.trim() {
        "manage_servers" | "m_srv" => permissions.manage_servers = true,
        "read_servers" | "r_srv" => permissions.read_servers = true,
        "manage_users" | "m_usr" => permissions.manage_users = true,
        "read_users" | "r_usr" => permissions.read_users = true,
        "manage_streams" | "m_str" => permissions.manage_streams = true,
        "read_streams" | "r_str" => permissions.read_streams = true,
        "manage_topics" | "m_top" => permissions.manage_topics = true,
        "read_topics" | "r_top" => permissions.read_topics = true,
        "poll_messages" | "p_msg" => permissions.poll_messages = true,
        "send_messages" | "s_msg" => permissions.send_messages = true,
        "" => {}
        other => {
            return Err(CliError::usage(format!(
                "unknown global permission '{other}'"
            )));
        }
    }
    Ok(())
}

fn stream_flag(permissions: &mut StreamPermissions, name: &str) -> Result<(), CliError> {
    match name.trim() {
        "manage_stream" | "m_str" => permissions.manage_stream = true,
        "read_stream" | "r_str" => permissions.read_stream = true,
        "manage_topics" | "m_top" => permissions.manage_topics = true,
        "read_topics" | "r_top" => permissions.read_topics = true,
        "poll_messages" | "p_msg" => permissions.poll_messages = true,
        "send_messages" | "s_msg" => permissions.send_messages = true,
        "" => {}
        other => {
            return Err(CliError::usage(format!(
                "unknown stream permission '{other}'"
            )));
        }
    }
    Ok(())
}

fn topic_flag(permissions: &mut TopicPermissions, name: &str) -> Result<(), CliError> {
    match name.trim() {
        "manage_topic" | "m_top" => permissions.manage_topic = true,
        "read_topic" | "r_top" => permissions.read_topic = true,
        "poll_messages" | "p_msg" => permissions.poll_messages = true,
        "send_messages" | "s_msg" => permissions.send_messages = true,
        "" => {}
        other => {
            return Err(CliError::usage(format!(
                "unknown topic permission '{other}'"
            )));
        }
    }
    Ok(())
}

fn split_id(text: &str) -> Result<(u32, Option<&str>), CliError> {
    let (id, flags) = match text.split_once(':') {
        Some((id, flags)) => (id, Some(flags)),
        None => (text, None),
    };
    let id = id
        .trim()
        .parse()
        .map_err(|_| CliError::usage(format!("invalid id '{id}' in permissions")))?;
    Ok((id, flags))
}

/// Builds permissions from `-g` and `-s` options; `None` when neither is given.
pub fn parse_permissions(
    global: Option<&str>,
    streams: Option<&[String]>,
) -> Result<Option<Permissions>, CliError> {
    if global.is_none() && streams.is_none_or(|s| s.is_empty()) {
        return Ok(None);
    }
    let mut permissions = Permissions {
        global: GlobalPermissions::none(),
        streams: Vec::new(),
    };
    if let Some(global) = global {
        for flag in global.split(',') {
            global_flag(&mut permissions.global, flag)?;
        }
    }
    for spec in streams.unwrap_or_default() {
        let mut parts = spec.split('#');
        let (stream_id, flags) = split_id(parts.next().unwrap_or_default())?;
        let mut stream = StreamPermissions {
            stream_id,
            manage_stream: false,
            read_stream: false,
            manage_topics: false,
            read_topics: false,
            poll_messages: false,
            send_messages: false,
            topics: Vec::new(),
        };
        for flag in flags.unwrap_or_default().split(',') {
            stream_flag(&mut stream, flag)?;
        }
        for topic_spec in parts {
            let (topic_id, flags) = split_id(topic_spec)?;
            let mut topic = TopicPermissions {
                topic_id,
                manage_topic: false,
                read_topic: false,
                poll_messages: false,
                send_messages: false,
            };
            for flag in flags.unwrap_or_default().split(',') {
                topic_flag(&mut topic, flag)?;
            }
            stream.topics.push(topic);
        }
        permissions.streams.push(stream);
    }
    Ok(Some(permissions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_and_sizes() {
        assert_eq!(parse_expiry(&[], 0).unwrap(), 0);
        assert_eq!(parse_expiry(&["unlimited".into()], 0).unwrap(), u64::MAX);
        assert_eq!(
            parse_expiry(&["1day".into(), "1s".into()], 0).unwrap(),
            86_401_000_000
        );
        assert!(parse_expiry(&["soon".into()], 0).is_err());
        assert_eq!(parse_size("15GB").unwrap(), 15_000_000_000);
        assert_eq!(parse_size("1 KiB").unwrap(), 1024);
        assert_eq!(parse_size("unlimited").unwrap(), u64::MAX);
        assert_eq!(parse_size("server_default").unwrap(), 0);
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(format_size(999), "999 B");
        assert_eq!(format_size(1_500), "1.50 KB");
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(format_timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(
            format_timestamp(1_700_000_000_000_000),
            "2023-11-14 22:13:20"
        );
    }

    #[test]
    fn permissions_follow_the_official_syntax() {
        let permissions = parse_permissions(
            Some("m_srv,read_users"),
            Some(&["4:manage_stream,r_top#1:s_msg,p_msg#2:manage_topic".to_owned()]),
        )
        .unwrap()
        .unwrap();
        assert!(permissions.global.manage_servers && permissions.global.read_users);
        assert!(!permissions.global.send_messages);
        let stream = &permissions.streams[0];
        assert_eq!(stream.stream_id, 4);
        assert!(stream.manage_stream && stream.read_topics && !stream.poll_messages);
        assert_eq!(stream.topics.len(), 2);
        assert!(stream.topics[0].send_messages && stream.topics[0].poll_messages);
        assert!(stream.topics[1].manage_topic);
        assert!(parse_permissions(None, None).unwrap().is_none());
        assert!(parse_permissions(Some("fly"), None).is_err());
    }
}
