//! Server configuration: the embedded default (`configs/server.toml`), an optional file on top,
//! then `IGGY_*` environment variables on top of both.
//!
//! The default file is the schema: a key that it does not contain is unknown, and an unknown
//! key or a value of the wrong shape stops the start with a message naming the key.

mod cluster;
mod env;
mod error;
mod sections;
pub mod units;
mod upstream;

pub use cluster::*;
pub use error::ConfigError;
pub use sections::*;
use serde::Deserialize;
use std::path::Path;
use units::Limit;

/// The default configuration, compiled into the binary.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../../configs/server.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub system: SystemConfig,
    pub message_saver: MessageSaverConfig,
    pub data_maintenance: DataMaintenanceConfig,
    pub tcp: TcpConfig,
    pub quic: QuicConfig,
    pub websocket: WebSocketConfig,
    pub heartbeat: HeartbeatConfig,
    pub consumer_group: ConsumerGroupConfig,
    pub http: HttpConfig,
    pub logging: LoggingConfig,
    pub telemetry: TelemetryConfig,
    pub limits: LimitsConfig,
    pub cluster: ClusterConfig,
}

/// Keys whose values are never printed (`IGGY_DISPLAY_CONFIG`).
const SECRET_KEYS: &[&[&str]] = &[
    &["system", "encryption", "key"],
    &["http", "jwt", "encoding_secret"],
    &["http", "jwt", "decoding_secret"],
    &["cluster", "auth", "shared_secret"],
    &["cluster", "auth", "previous_shared_secret"],
];

fn redact_secrets(table: &mut toml::Table) {
    for path in SECRET_KEYS {
        let (last, parents) = path.split_last().expect("a path has a key");
        let mut slot = Some(&mut *table);
        for parent in parents {
            slot = slot
                .and_then(|table| table.get_mut(*parent))
                .and_then(toml::Value::as_table_mut);
        }
        if let Some(value) = slot.and_then(|table| table.get_mut(*last))
            && value.as_str().is_some_and(|text| !text.is_empty())
        {
            *value = toml::Value::String("(redacted)".into());
        }
    }
}

/// What [`Config::load`] found.
pub struct Loaded {
    pub config: Config,
    /// To log once logging is up.
    pub warnings: Vec<String>,
    /// Every key with the value in force (`IGGY_DISPLAY_CONFIG` prints it).
    pub resolved: toml::Table,
}

impl Config {
    #[allow(
        clippy::disallowed_methods,
        reason = "boot: runs before any shard serves"
    )]
    /// Loads the configuration: embedded default, then `file` (if any), then the environment.
    /// Returns the config, the warnings to log once logging is up, and the resolved values.
    pub fn load(
        file: Option<&Path>,
        environment: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, ConfigError> {
        let mut table: toml::Table = DEFAULT_CONFIG_TOML
            .parse()
            .expect("the embedded default config is valid TOML");
        let schema = table.clone();
        let mut warnings = Vec::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|error| {
                ConfigError(format!(
                    "cannot read config file {}: {error}",
                    path.display()
                ))
            })?;
            let overrides: toml::Table = text.parse().map_err(|error| {
                ConfigError(format!(
                    "config file {} is not valid TOML: {error}",
                    path.display()
                ))
            })?;
            let mut translated = upstream::translate(overrides, &schema)?;
            warnings.append(&mut translated.warnings);
            merge(&mut table, translated.table, "")?;
        }
        let (mut notes, upstream_env) = env::apply(&mut table, &schema, environment)?;
        warnings.append(&mut notes);
        let mut translated = upstream::translate(upstream_env, &schema)?;
        warnings.append(&mut translated.warnings);
        merge(&mut table, translated.table, "")?;
        generate_missing_certificates(&mut table, &mut warnings);
        let mut resolved = table.clone();
        redact_secrets(&mut resolved);
        let config: Config = serde_path_to_error::deserialize(table).map_err(|error| {
            ConfigError(format!(
                "invalid configuration value for `{}`: {}",
                error.path(),
                error.inner()
            ))
        })?;
        config.validate()?;
        Ok(Loaded {
            config,
            warnings,
            resolved,
        })
    }

    /// Places this process in its cluster (`--replica-id`): checks the roster and gives each
    /// transport the port the roster lists for this node, keeping the transport's own address
    /// (its interface) and its own port where the roster gives none.
    pub fn join_cluster(&mut self, replica_id: Option<u64>) -> Result<(), ConfigError> {
        self.cluster.validate(replica_id)?;
        self.cluster.replica_id = replica_id;
        let Some(node) = replica_id.and_then(|id| self.cluster.node(id)) else {
            return Ok(());
        };
        let ports = node.ports;
        for (address, port) in [
            (&mut self.tcp.address, ports.tcp),
            (&mut self.quic.address, ports.quic),
            (&mut self.http.address, ports.http),
            (&mut self.websocket.address, ports.websocket),
        ] {
            if port != 0 {
                address.set_port(port);
            }
        }
        self.validate_websocket()
    }

    fn validate_websocket(&self) -> Result<(), ConfigError> {
        let websocket = &self.websocket;
        if !websocket.enabled {
            return Ok(());
        }
        if self.tcp.enabled
            && websocket.address == self.tcp.address
            && websocket.address.port() != 0
        {
            return Err(ConfigError(format!(
                "websocket.address and tcp.address are both {}: the WebSocket front-end needs a \
                 port of its own",
                websocket.address
            )));
        }
        for (key, value) in [
            ("websocket.read_buffer_size", websocket.read_buffer_size),
            ("websocket.write_buffer_size", websocket.write_buffer_size),
        ] {
            if !(1024..=(1 << 30)).contains(&value.0) {
                return Err(ConfigError(format!(
                    "{key} must be between 1 KiB and 1 GiB, got {} bytes",
                    value.0
                )));
            }
        }
        if let Some(max) = websocket.max_write_buffer_size.get()
            && max.0 < websocket.write_buffer_size.0
        {
            return Err(ConfigError(
                "websocket.max_write_buffer_size must be at least websocket.write_buffer_size"
                    .into(),
            ));
        }
        for (key, value) in [
            ("websocket.max_message_size", websocket.max_message_size),
            ("websocket.max_frame_size", websocket.max_frame_size),
        ] {
            if value.get().is_some_and(|size| size.0 < 1024) {
                return Err(ConfigError(format!("{key} must be at least 1 KiB")));
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.system.encryption.master_key().map_err(ConfigError)?;
        if !matches!(
            self.http.jwt.algorithm.to_ascii_uppercase().as_str(),
            "HS256" | "HS384" | "HS512"
        ) {
            return Err(ConfigError(format!(
                "http.jwt.algorithm = {:?}: only HMAC tokens (HS256, HS384, HS512) are offered; \
                 RSA and ECDSA keys are not supported",
                self.http.jwt.algorithm
            )));
        }
        if self.telemetry.enabled {
            for (key, export) in [
                ("telemetry.logs.endpoint", &self.telemetry.logs),
                ("telemetry.traces.endpoint", &self.telemetry.traces),
            ] {
                if export
                    .endpoint
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("https:")
                {
                    return Err(ConfigError(format!(
                        "{key} = {:?}: TLS to the collector is not supported yet; use an \
                         http:// endpoint (a collector or agent on the same host or network)",
                        export.endpoint
                    )));
                }
            }
        }
        let segment = self.system.segment.size.0;
        if !(4096..=crate::storage::MAX_SEGMENT_SIZE_BYTES).contains(&segment)
            || !segment.is_multiple_of(4096)
        {
            return Err(ConfigError(format!(
                "system.segment.size must be a multiple of 4 KiB between 4 KiB and 1 GiB, got {segment} bytes"
            )));
        }
        if let Limit::Limited(max) = self.system.topic.max_size
            && max.0 < segment
        {
            return Err(ConfigError(
                "system.topic.max_size must be at least system.segment.size".into(),
            ));
        }
        let dedup = &self.system.message_deduplication;
        if dedup.enabled && !(1..=100_000_000).contains(&dedup.max_entries) {
            return Err(ConfigError(format!(
                "system.message_deduplication.max_entries must be between 1 and 100000000 when \
                 deduplication is enabled (each id costs about 64 bytes per partition), got {}",
                dedup.max_entries
            )));
        }
        if let Some(wal) = self.system.wal.storage() {
            wal.validate()
                .map_err(|error| ConfigError(format!("system.wal: {error}")))?;
        }
        if self.system.partition.messages_required_to_save == 0 {
            return Err(ConfigError(
                "system.partition.messages_required_to_save must be at least 1".into(),
            ));
        }
        if self.logging.file.enabled && self.logging.file.max_size.0 < 4096 {
            return Err(ConfigError(
                "logging.file.max_size must be at least 4 KiB".into(),
            ));
        }
        if self.tcp.max_send_messages_size.0 > u32::MAX as u64 {
            return Err(ConfigError(
                "tcp.max_send_messages_size must fit a frame (< 4 GiB)".into(),
            ));
        }
        let limits = &self.limits;
        for (key, value) in [
            ("limits.max_connections", limits.max_connections),
            (
                "limits.max_connections_per_address",
                limits.max_connections_per_address,
            ),
            ("limits.max_sessions_per_user", limits.max_sessions_per_user),
        ] {
            if value == 0 {
                return Err(ConfigError(format!("{key} must be at least 1")));
            }
        }
        if limits.max_request_bytes_in_flight.0 < self.tcp.max_send_messages_size.0 {
            return Err(ConfigError(format!(
                "limits.max_request_bytes_in_flight ({} bytes) must be at least tcp.max_send_messages_size ({} bytes), or the largest request could never be read",
                limits.max_request_bytes_in_flight.0, self.tcp.max_send_messages_size.0
            )));
        }
        if self.http.enabled && limits.max_request_bytes_in_flight.0 < self.http.max_request_size.0
        {
            return Err(ConfigError(format!(
                "limits.max_request_bytes_in_flight ({} bytes) must be at least http.max_request_size ({} bytes), or the largest HTTP request could never be read",
                limits.max_request_bytes_in_flight.0, self.http.max_request_size.0
            )));
        }
        if limits.login.max_failures_per_connection == 0 {
            return Err(ConfigError(
                "limits.login.max_failures_per_connection must be at least 1".into(),
            ));
        }
        if limits.login.max_delay.0 < limits.login.delay.0 {
            return Err(ConfigError(
                "limits.login.max_delay must be at least limits.login.delay".into(),
            ));
        }
        let quic = &self.quic;
        if quic.enabled {
            if quic.initial_mtu < 1200 {
                return Err(ConfigError(format!(
                    "quic.initial_mtu must be at least 1200 (QUIC's minimum), got {}",
                    quic.initial_mtu
                )));
            }
            if quic.max_concurrent_bidi_streams == 0 {
                return Err(ConfigError(
                    "quic.max_concurrent_bidi_streams must be at least 1".into(),
                ));
            }
            for (key, value) in [
                ("quic.receive_window", quic.receive_window),
                ("quic.send_window", quic.send_window),
            ] {
                if value.0 < 1024 || value.0 > (1 << 40) {
                    return Err(ConfigError(format!(
                        "{key} must be between 1 KiB and 1 TiB, got {} bytes",
                        value.0
                    )));
                }
            }
            if quic.max_idle_timeout.0.is_zero() {
                return Err(ConfigError(
                    "quic.max_idle_timeout must be greater than zero".into(),
                ));
            }
        }
        self.validate_websocket()?;
        for (key, certificate, enabled) in [
            ("tcp.tls", self.tcp.tls.certificate(), self.tcp.tls.enabled),
            ("quic.certificate", quic.certificate.clone(), quic.enabled),
            (
                "websocket.tls",
                self.websocket.tls.certificate(),
                self.websocket.enabled && self.websocket.tls.enabled,
            ),
        ] {
            if enabled {
                certificate.validate(key)?;
            }
        }
        for (key, value) in [
            ("message_saver.interval", self.message_saver.interval),
            (
                "data_maintenance.messages.interval",
                self.data_maintenance.messages.interval,
            ),
            ("heartbeat.interval", self.heartbeat.interval),
            ("tcp.read_timeout", self.tcp.read_timeout),
            (
                "tcp.unauthenticated_timeout",
                self.tcp.unauthenticated_timeout,
            ),
        ] {
            if value.0.is_zero() {
                return Err(ConfigError(format!("{key} must be greater than zero")));
            }
        }
        Ok(())
    }
}

/// Merges `overrides` into `base`, refusing keys the base (the schema) does not have.
fn merge(base: &mut toml::Table, overrides: toml::Table, prefix: &str) -> Result<(), ConfigError> {
    for (key, value) in overrides {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (base.get_mut(&key), value) {
            (None, _) => return Err(ConfigError(format!("unknown configuration key `{path}`"))),
            (Some(toml::Value::Table(base_table)), toml::Value::Table(override_table)) => {
                merge(base_table, override_table, &path)?;
            }
            (Some(toml::Value::Table(_)), _) => {
                return Err(ConfigError(format!(
                    "configuration key `{path}` must be a table"
                )));
            }
            (Some(slot), value) => *slot = coerce(slot, value, &path)?,
        }
    }
    Ok(())
}

/// A value in upstream's form for a key we share, written as ours: an integer CPU allocation
/// (`cpu_allocation = 4`) as text, a size where we take a number (`initial_mtu = "8 KB"`).
fn coerce(slot: &toml::Value, value: toml::Value, path: &str) -> Result<toml::Value, ConfigError> {
    Ok(match (slot, value) {
        (toml::Value::String(_), toml::Value::Integer(number)) => {
            toml::Value::String(number.to_string())
        }
        (toml::Value::Integer(_), toml::Value::String(text)) => {
            let bytes = rill_core::units::parse_size(&text)
                .map_err(|error| ConfigError(format!("`{path}`: {error}")))?;
            toml::Value::Integer(
                i64::try_from(bytes)
                    .map_err(|_| ConfigError(format!("`{path}`: {text} is out of range")))?,
            )
        }
        (_, value) => value,
    })
}

/// Where upstream's default configuration puts its certificates.
const UPSTREAM_CERTIFICATES: &str = "core/certs/";

/// `[section] enabled` in the configuration so far.
fn is_enabled(table: &toml::Table, section: &str) -> bool {
    table
        .get(section)
        .and_then(|section| section.get("enabled"))
        .and_then(toml::Value::as_bool)
        .unwrap_or(false)
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Upstream's default file names certificates in `core/certs/`, which only upstream's source
/// tree has, with `self_signed = true`: upstream then generates one, and so do we, with a WARN.
/// Any other path must exist (a typo in a real path still stops the start).
fn generate_missing_certificates(table: &mut toml::Table, warnings: &mut Vec<String>) {
    for (section, inner) in [
        ("tcp", "tls"),
        ("http", "tls"),
        ("quic", "certificate"),
        ("websocket", "tls"),
    ] {
        let enabled = match section {
            "tcp" | "http" | "websocket" => table
                .get(section)
                .and_then(|outer| outer.get("tls"))
                .and_then(|tls| tls.get("enabled"))
                .and_then(toml::Value::as_bool)
                .unwrap_or(false),
            _ => is_enabled(table, section),
        };
        if !enabled {
            continue;
        }
        let Some(toml::Value::Table(certificate)) = table
            .get_mut(section)
            .and_then(|section| section.get_mut(inner))
        else {
            continue;
        };
        let self_signed = certificate
            .get("self_signed")
            .and_then(toml::Value::as_bool);
        let cert_file = certificate
            .get("cert_file")
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string();
        if self_signed == Some(true)
            && cert_file.starts_with(UPSTREAM_CERTIFICATES)
            && !std::path::Path::new(&cert_file).exists()
        {
            warnings.push(format!(
                "{section}.{inner}: cert_file {cert_file} does not exist and self_signed is true: \
                 generating a self-signed certificate, as upstream does"
            ));
            certificate.insert("cert_file".into(), toml::Value::String(String::new()));
            certificate.insert("key_file".into(), toml::Value::String(String::new()));
        }
    }
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests;
