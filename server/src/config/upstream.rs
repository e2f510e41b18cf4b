//! Upstream Apache Iggy 0.8's configuration, accepted beside ours: a `server.toml` written for
//! upstream (or its `IGGY_*` variables) starts this server. Every upstream key either is one of
//! ours (same path, same meaning), or is renamed to ours, or is accepted with one WARN naming
//! what differs when its value asks for something this server does not do, or is accepted
//! silently where it changes nothing here (dead upstream too, or part of a feature that is off).
//! A key that asks for a protection this server cannot give (HTTPS) refuses the start. README, "Upstream configuration", has the table.
//!
//! The translation runs before the strict merge, so our own keys stay strict: a key that is
//! neither ours nor upstream's still stops the start.

use super::error::ConfigError;
use rill_core::units::parse_size;

/// What one upstream key that is not ours does here.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Changes nothing here: accepted silently.
    Quiet,
    /// A setting this server does not have: one WARN, saying what differs, when the value is
    /// not upstream's default (written as TOML).
    Unsupported(&'static str, &'static str),
    /// The same setting under our name.
    Rename(&'static str),
    /// Decided with the other keys' values (see [`translate`]).
    Special,
}

use Rule::{Quiet, Rename, Special, Unsupported};

/// Upstream 0.8.0's keys that are not ours, by path. Paths ending in `.` cover every key
/// below (arrays of tables).
const KEYS: &[(&str, Rule)] = &[
    (
        "consumer_group.rebalancing_check_interval",
        Unsupported(
            "\"5s\"",
            "revocations past consumer_group.rebalancing_timeout complete at the group's next use, \
             with no periodic check",
        ),
    ),
    ("http.web_ui", Unsupported("false", "there is no web UI")),
    (
        "http.jwt.trusted_issuers",
        Unsupported("", "tokens of other issuers (JWKS) are not accepted"),
    ),
    (
        "http.metrics.enabled",
        Unsupported("true", "/metrics is always served while [http] is enabled"),
    ),
    (
        "http.metrics.endpoint",
        Unsupported("\"/metrics\"", "the metrics path is /metrics"),
    ),
    (
        "tcp.socket_migration",
        Unsupported(
            "true",
            "connections always move to the shard owning their partitions",
        ),
    ),
    ("tcp.ipv6", Quiet),
    ("tcp.socket.nodelay", Special),
    ("quic.datagram_send_buffer_size", Quiet),
    ("message_saver.enforce_fsync", Quiet),
    (
        "personal_access_token.max_tokens_per_user",
        Unsupported("100", "each user may have 100 tokens"),
    ),
    (
        "personal_access_token.cleaner.enabled",
        Unsupported("true", "expired tokens are always removed, every minute"),
    ),
    (
        "personal_access_token.cleaner.interval",
        Unsupported("\"1 m\"", "expired tokens are removed every minute"),
    ),
    ("system.backup.", Quiet),
    ("system.state.enforce_fsync", Quiet),
    ("system.state.max_file_operation_retries", Quiet),
    ("system.state.retry_delay", Quiet),
    ("system.runtime.path", Quiet),
    ("system.logging.path", Rename("logging.file.directory")),
    ("system.logging.level", Rename("logging.level")),
    (
        "system.logging.file_enabled",
        Rename("logging.file.enabled"),
    ),
    ("system.logging.max_file_size", Special),
    ("system.logging.max_total_size", Special),
    ("system.logging.rotation_check_interval", Quiet),
    (
        "system.logging.retention",
        Unsupported(
            "\"7 days\"",
            "log files are bounded by logging.file.max_files, not by age",
        ),
    ),
    ("system.logging.sysinfo_print_interval", Quiet),
    ("system.compression.allow_override", Quiet),
    (
        "system.compression.default_algorithm",
        Unsupported(
            "\"none\"",
            "messages are stored as sent, as upstream stores them",
        ),
    ),
    (
        "system.stream.path",
        Unsupported(
            "\"streams\"",
            "the data directory layout is fixed (streams/)",
        ),
    ),
    (
        "system.topic.path",
        Unsupported("\"topics\"", "the data directory layout is fixed (topics/)"),
    ),
    (
        "system.partition.path",
        Unsupported(
            "\"partitions\"",
            "the data directory layout is fixed (partitions/)",
        ),
    ),
    ("system.partition.enforce_fsync", Special),
    (
        "system.partition.validate_checksum",
        Rename("system.partition.verify_checksums_at_boot"),
    ),
    ("system.segment.archive_expired", Quiet),
    (
        "system.segment.cache_indexes",
        Unsupported(
            "\"open_segment\"",
            "indexes are cached as for \"open_segment\"",
        ),
    ),
    ("system.recovery.recreate_missing_state", Quiet),
    (
        "system.memory_pool.",
        Unsupported(
            "",
            "buffers come from each shard's own pool, which has no settings",
        ),
    ),
    // Upstream's consensus (VSR) timers, repair and shard placement have no Raft equivalent.
    ("cluster.", Quiet),
];

/// Upstream's default values of the prefix rules' keys, so that only a change WARNs.
const PREFIX_DEFAULTS: &[(&str, &str)] = &[
    (
        "http.jwt.trusted_issuers",
        "[{ issuer = \"test-issuer\", jwks_url = \"http://127.0.0.1:8081/.well-known/jwks.json\", audience = \"iggy.apache.org\" }]",
    ),
    ("system.memory_pool.enabled", "true"),
    ("system.memory_pool.size", "\"4 GiB\""),
    ("system.memory_pool.bucket_capacity", "8192"),
];

/// Keys whose values are secrets: never echoed in a message.
const SECRETS: &[&str] = &["http.jwt.encoding_secret", "http.jwt.decoding_secret"];

fn rule(path: &str) -> Option<Rule> {
    KEYS.iter()
        .find(|(key, _)| *key == path || (key.ends_with('.') && path.starts_with(key)))
        .map(|(_, rule)| *rule)
}

/// The `IGGY_*` names of upstream's keys that are not ours, with their paths. Arrays of tables
/// are spelled `_0_` .. `_9_` upstream; they only feed keys accepted silently, so a prefix match
/// is enough.
pub(super) fn env_path(name: &str) -> Option<String> {
    let rest = name.strip_prefix("IGGY_")?;
    KEYS.iter().find_map(|(key, _)| {
        let env = key
            .trim_end_matches('.')
            .replace('.', "_")
            .to_ascii_uppercase();
        if rest == env {
            Some(key.to_string())
        } else if key.ends_with('.') && rest.starts_with(&format!("{env}_")) {
            // Below a prefix: any variable names a key upstream has, or none we care about.
            Some(format!(
                "{key}{}",
                rest[env.len() + 1..].to_ascii_lowercase()
            ))
        } else {
            None
        }
    })
}

/// Every leaf of `table` as (dotted path, value); arrays are leaves.
fn leaves(table: &toml::Table, prefix: &str, out: &mut Vec<(String, toml::Value)>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => leaves(inner, &path, out),
            other => out.push((path, other.clone())),
        }
    }
}

/// Sets `path` in `table`; an existing value on the way that is not a table is an error (the
/// file gave, say, `[logging] file = "x"` beside `[system.logging]`).
pub(super) fn insert(
    table: &mut toml::Table,
    path: &str,
    value: toml::Value,
) -> Result<(), ConfigError> {
    let mut slot = table;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            slot.insert(part.to_string(), value);
            return Ok(());
        }
        slot = slot
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| {
                ConfigError(format!(
                    "configuration key `{part}` in `{path}` must be a table"
                ))
            })?;
    }
    Ok(())
}

fn same_value(value: &toml::Value, default: &str) -> bool {
    let parsed = format!("v = {default}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut table| table.remove("v"));
    match (value, parsed) {
        (toml::Value::String(text), Some(toml::Value::String(default))) => {
            text.trim().eq_ignore_ascii_case(default.trim())
        }
        (value, Some(default)) => *value == default,
        _ => false,
    }
}

fn is_true(value: Option<&toml::Value>) -> bool {
    match value {
        Some(toml::Value::Boolean(flag)) => *flag,
        Some(toml::Value::String(text)) => {
            matches!(text.trim().to_ascii_lowercase().as_str(), "true" | "1")
        }
        _ => false,
    }
}

fn size_of(path: &str, value: &toml::Value) -> Result<u64, ConfigError> {
    match value {
        toml::Value::Integer(bytes) if *bytes >= 0 => Ok(*bytes as u64),
        toml::Value::String(text) => {
            parse_size(text).map_err(|error| ConfigError(format!("`{path}`: {error}")))
        }
        other => Err(ConfigError(format!("`{path}`: `{other}` is not a size"))),
    }
}

/// What [`translate`] makes of a file or the variables.
pub(super) struct Translated {
    /// Our keys, to merge strictly.
    pub table: toml::Table,
    pub warnings: Vec<String>,
}

/// Splits `overrides` (a config file, or variables turned into a table) into our keys, which
/// stay for the strict merge, and upstream's, which are translated into ours here. Keys that
/// are neither stay too, so the merge names them.
pub(super) fn translate(
    overrides: toml::Table,
    schema: &toml::Table,
) -> Result<Translated, ConfigError> {
    let mut all = Vec::new();
    leaves(&overrides, "", &mut all);
    let ours = |path: &str| {
        let mut slot = schema;
        let mut parts = path.split('.').peekable();
        while let Some(part) = parts.next() {
            match slot.get(part) {
                Some(toml::Value::Table(inner)) if parts.peek().is_some() => slot = inner,
                Some(value) => return parts.peek().is_none() && !value.is_table(),
                None => return false,
            }
        }
        false
    };
    // Ours since [tcp.socket] is applied here, and what decides upstream's tcp.socket.nodelay.
    let tcp_override = all
        .iter()
        .any(|(path, value)| path == "tcp.socket.override_defaults" && is_true(Some(value)));
    let mut kept = toml::Table::new();
    let mut upstream: Vec<(String, toml::Value)> = Vec::new();
    for (path, value) in all {
        if ours(&path) || rule(&path).is_none() {
            insert(&mut kept, &path, value)?;
        } else {
            upstream.push((path, value));
        }
    }
    let value_of = |path: &str| {
        upstream
            .iter()
            .find(|(key, _)| key == path)
            .map(|(_, value)| value)
    };
    let mut warnings = Vec::new();
    let mut warn = |path: &str, value: &toml::Value, what: &str| {
        let shown = if SECRETS.contains(&path) {
            "(a secret)".to_string()
        } else {
            value.to_string()
        };
        warnings.push(format!(
            "upstream configuration key {path} = {shown} is accepted but has no effect here: {what}"
        ));
    };
    for (path, value) in &upstream {
        match rule(path).expect("only upstream keys here") {
            Quiet => {}
            Rename(ours) => insert(&mut kept, ours, value.clone())?,
            Unsupported(default, what) => {
                let default = if default.is_empty() {
                    PREFIX_DEFAULTS
                        .iter()
                        .find(|(key, _)| key == path)
                        .map_or("", |(_, default)| *default)
                } else {
                    default
                };
                if default.is_empty() || !same_value(value, default) {
                    warn(path, value, what);
                }
            }
            Special => match path.as_str() {
                "tcp.socket.nodelay" if tcp_override => {
                    insert(&mut kept, "tcp.nodelay", value.clone())?
                }
                "system.logging.max_file_size" => match size_of(path, value)? {
                    0 => warn(
                        path,
                        value,
                        "log files rotate at logging.file.max_size (100 MiB by default)",
                    ),
                    _ => insert(&mut kept, "logging.file.max_size", value.clone())?,
                },
                "system.logging.max_total_size" => {
                    let total = size_of(path, value)?;
                    let file = match value_of("system.logging.max_file_size") {
                        Some(size) => size_of("system.logging.max_file_size", size)?,
                        None => 500_000_000,
                    };
                    // The current file plus the rotated ones stay within the total.
                    let files = match (total, file) {
                        (0, _) | (_, 0) => i64::from(u32::MAX),
                        (total, file) => (total / file).saturating_sub(1).clamp(1, 1 << 20) as i64,
                    };
                    insert(
                        &mut kept,
                        "logging.file.max_files",
                        toml::Value::Integer(files),
                    )?;
                }
                "system.partition.enforce_fsync" if is_true(Some(value)) => insert(
                    &mut kept,
                    "system.partition.ack_mode",
                    toml::Value::String("fsync".into()),
                )?,
                _ => {}
            },
        }
    }
    Ok(Translated {
        table: kept,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> toml::Table {
        include_str!("../../../configs/server.toml")
            .parse()
            .unwrap()
    }

    fn run(text: &str) -> Result<(toml::Table, Vec<String>), ConfigError> {
        translate(text.parse().unwrap(), &schema()).map(|t| (t.table, t.warnings))
    }

    #[test]
    fn renames_and_keeps_ours() {
        let (kept, warnings) = run(
            "[system.logging]\nlevel = \"debug\"\nfile_enabled = true\nmax_file_size = \"100 MB\"\n\
             max_total_size = \"1 GB\"\n[tcp]\naddress = \"0.0.0.0:8090\"\n",
        )
        .unwrap();
        assert_eq!(kept["logging"]["level"].as_str(), Some("debug"));
        assert_eq!(kept["logging"]["file"]["max_files"].as_integer(), Some(9));
        assert_eq!(kept["tcp"]["address"].as_str(), Some("0.0.0.0:8090"));
        assert!(kept.get("system").is_none());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn warns_only_where_a_value_differs_and_hides_secrets() {
        // [http.jwt] is ours: kept, the secret included, no warning.
        let (kept, warnings) =
            run("[http.jwt]\nalgorithm = \"HS256\"\nencoding_secret = \"s3cr3t\"\n").unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            kept["http"]["jwt"]["encoding_secret"].as_str(),
            Some("s3cr3t")
        );
        let (_, warnings) = run("[http]\nweb_ui = true\n").unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let (_, warnings) = run("[consumer_group]\nrebalancing_check_interval = \"5s\"\n").unwrap();
        assert!(warnings.is_empty());
        let (_, warnings) = run("[consumer_group]\nrebalancing_check_interval = \"1s\"\n").unwrap();
        assert_eq!(warnings.len(), 1);
        // rebalancing_timeout is ours: kept, no warning.
        let (kept, warnings) = run("[consumer_group]\nrebalancing_timeout = \"10s\"\n").unwrap();
        assert_eq!(
            kept["consumer_group"]["rebalancing_timeout"].as_str(),
            Some("10s")
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn ours_are_kept_and_bad_shapes_are_errors() {
        // HTTPS is ours: kept as written.
        let (kept, _) = run("[http.tls]\nenabled = true\ncert_file = \"c.pem\"\n").unwrap();
        assert_eq!(kept["http"]["tls"]["enabled"].as_bool(), Some(true));
        // A rename onto a value that is not a table is an error, not a panic.
        assert!(run("[logging]\nfile = \"x\"\n[system.logging]\npath = \"l\"\n").is_err());
        // Encryption at rest is ours: kept as written.
        let (kept, warnings) = run("[system.encryption]\nenabled = true\nkey = \"k\"\n").unwrap();
        assert_eq!(
            kept["system"]["encryption"]["enabled"].as_bool(),
            Some(true)
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn socket_options_follow_override_defaults_and_fsync_maps_to_the_ack_mode() {
        let (kept, _) = run("[tcp.socket]\nnodelay = false\n").unwrap();
        assert!(
            kept.get("tcp").and_then(|tcp| tcp.get("nodelay")).is_none(),
            "ignored without override_defaults"
        );
        let (kept, warnings) =
            run("[tcp.socket]\noverride_defaults = true\nnodelay = false\nlinger = \"1 s\"\n")
                .unwrap();
        assert_eq!(kept["tcp"]["nodelay"].as_bool(), Some(false));
        // The other [tcp.socket] keys are ours: kept as they are, applied, no warning.
        assert_eq!(kept["tcp"]["socket"]["linger"].as_str(), Some("1 s"));
        assert_eq!(
            kept["tcp"]["socket"]["override_defaults"].as_bool(),
            Some(true)
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // [quic.socket] is ours too.
        let (kept, warnings) = run(
            "[quic.socket]\noverride_defaults = true\nrecv_buffer_size = \"1 MB\"\nsend_buffer_size = \"64 KB\"\n",
        )
        .unwrap();
        assert_eq!(
            kept["quic"]["socket"]["recv_buffer_size"].as_str(),
            Some("1 MB")
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let (kept, _) = run("[system.partition]\nenforce_fsync = true\n").unwrap();
        assert_eq!(
            kept["system"]["partition"]["ack_mode"].as_str(),
            Some("fsync")
        );
    }

    #[test]
    fn names_of_upstream_variables() {
        assert_eq!(env_path("IGGY_HTTP_TLS_ENABLED"), None, "ours");
        assert_eq!(env_path("IGGY_HTTP_WEB_UI").as_deref(), Some("http.web_ui"));
        assert_eq!(env_path("IGGY_SYSTEM_ENCRYPTION_ENABLED"), None, "ours");
        assert_eq!(
            env_path("IGGY_CLUSTER_NODE_OTHERS_0_PORTS_TCP").as_deref(),
            Some("cluster.node_others_0_ports_tcp")
        );
        assert_eq!(env_path("IGGY_TCP_ADDRESS"), None, "ours");
        assert!(rule("http.jwt.trusted_issuers").is_some() && rule("tcp.address").is_none());
    }
}
