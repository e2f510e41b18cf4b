//! Server configuration: the embedded default (`configs/server.toml`), an optional file on top,
//! then `IGGY_*` environment variables on top of both.
//!
//! The default file is the schema: a key that it does not contain is unknown, and an unknown
//! key or a value of the wrong shape stops the start with a message naming the key.

mod env;
mod error;
pub mod units;
mod upstream;

use crate::storage::AckMode;
pub use error::ConfigError;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use units::{ByteSize, HumanDuration, Limit};

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
    pub heartbeat: HeartbeatConfig,
    pub consumer_group: ConsumerGroupConfig,
    pub http: HttpConfig,
    pub logging: LoggingConfig,
    pub limits: LimitsConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    pub path: PathBuf,
    pub io_driver: crate::io_driver::IoDriverSetting,
    pub sharding: ShardingConfig,
    pub segment: SegmentConfig,
    pub partition: PartitionDefaults,
    pub topic: TopicDefaults,
    pub message_deduplication: DeduplicationConfig,
    pub state: StateConfig,
}

/// `[system.message_deduplication]`: message ids remembered per partition.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeduplicationConfig {
    pub enabled: bool,
    pub max_entries: u64,
    /// Zero: ids are forgotten only when newer ones push them out.
    pub expiry: HumanDuration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardingConfig {
    pub cpu_allocation: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    pub size: ByteSize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionDefaults {
    pub ack_mode: AckModeSetting,
    /// Per-topic ack modes: `"stream/topic=mode"`, `*` matching any stream or topic name.
    pub ack_mode_overrides: Vec<AckModeOverride>,
    pub messages_required_to_save: u64,
    pub size_of_messages_required_to_save: ByteSize,
    pub verify_checksums_on_read: crate::storage::ChecksumReads,
    pub verify_checksums_at_boot: bool,
}

/// One `"stream/topic=mode"` entry of `ack_mode_overrides`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckModeOverride {
    pub stream: String,
    pub topic: String,
    pub ack_mode: AckMode,
}

impl std::str::FromStr for AckModeOverride {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let malformed = || format!("`{text}` is not \"stream/topic=mode\"");
        let (names, mode) = text.rsplit_once('=').ok_or_else(malformed)?;
        let (stream, topic) = names.split_once('/').ok_or_else(malformed)?;
        if stream.trim().is_empty() || topic.trim().is_empty() {
            return Err(malformed());
        }
        let ack_mode = mode
            .trim()
            .parse::<AckMode>()
            .map_err(|_| format!("unknown ack mode `{mode}` (memory, written, fsync)"))?;
        Ok(AckModeOverride {
            stream: stream.trim().to_string(),
            topic: topic.trim().to_string(),
            ack_mode,
        })
    }
}

impl<'de> Deserialize<'de> for AckModeOverride {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl PartitionDefaults {
    /// The ack mode of a topic: the first matching override, else the server default.
    pub fn ack_mode_for(&self, stream: &str, topic: &str) -> AckMode {
        self.ack_mode_overrides
            .iter()
            .find(|entry| {
                (entry.stream == "*" || entry.stream == stream)
                    && (entry.topic == "*" || entry.topic == topic)
            })
            .map_or(self.ack_mode.0, |entry| entry.ack_mode)
    }
}

/// The ack mode as written in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckModeSetting(pub AckMode);

impl<'de> Deserialize<'de> for AckModeSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse::<AckMode>().map(AckModeSetting).map_err(|_| {
            serde::de::Error::custom(format!(
                "unknown ack mode `{text}` (memory, written, fsync)"
            ))
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicDefaults {
    pub message_expiry: Limit<HumanDuration>,
    pub max_size: Limit<ByteSize>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    pub snapshot_threshold: ByteSize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageSaverConfig {
    pub enabled: bool,
    pub interval: HumanDuration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataMaintenanceConfig {
    pub messages: MessagesMaintenanceConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesMaintenanceConfig {
    pub cleaner_enabled: bool,
    pub interval: HumanDuration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    pub enabled: bool,
    pub address: SocketAddr,
    pub nodelay: bool,
    pub max_send_messages_size: ByteSize,
    pub unauthenticated_timeout: HumanDuration,
    pub read_timeout: HumanDuration,
    pub socket: TcpSocketConfig,
    pub tls: TlsConfig,
}

/// `[tcp.socket]`: options of accepted connections, when `override_defaults` is on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSocketConfig {
    pub override_defaults: bool,
    pub recv_buffer_size: ByteSize,
    pub send_buffer_size: ByteSize,
    pub keepalive: bool,
    pub linger: HumanDuration,
}

/// `[limits]`: what one client, one address, one user and all of them together may hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub max_sessions_per_user: usize,
    pub max_request_bytes_in_flight: ByteSize,
    pub max_request_size_without_send: ByteSize,
    pub idle_timeout: Limit<HumanDuration>,
    pub login: LoginLimitsConfig,
}

/// `[limits.login]`: throttling of failed logins.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginLimitsConfig {
    pub max_failures_per_connection: u32,
    pub failures_before_delay: u32,
    pub delay: HumanDuration,
    pub max_delay: HumanDuration,
    pub failure_window: HumanDuration,
}

/// `[tcp.tls]`: TLS on the TCP port.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub enabled: bool,
    pub self_signed: bool,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl TlsConfig {
    pub fn certificate(&self) -> CertificateConfig {
        CertificateConfig {
            self_signed: self.self_signed,
            cert_file: self.cert_file.clone(),
            key_file: self.key_file.clone(),
        }
    }
}

/// Where a TLS certificate comes from: PEM files, or generated at start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateConfig {
    pub self_signed: bool,
    /// Empty means "not given".
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl CertificateConfig {
    /// Whether PEM files were given (both paths non-empty).
    pub fn has_files(&self) -> bool {
        !self.cert_file.as_os_str().is_empty() && !self.key_file.as_os_str().is_empty()
    }

    fn validate(&self, section: &str) -> Result<(), ConfigError> {
        let cert = self.cert_file.as_os_str().is_empty();
        let key = self.key_file.as_os_str().is_empty();
        if cert != key {
            return Err(ConfigError(format!(
                "{section}: cert_file and key_file must be given together"
            )));
        }
        if cert && !self.self_signed {
            return Err(ConfigError(format!(
                "{section}: no certificate: set cert_file and key_file, or self_signed = true"
            )));
        }
        Ok(())
    }
}

/// `[quic]`: the QUIC front-end.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicConfig {
    pub enabled: bool,
    pub address: SocketAddr,
    pub max_concurrent_bidi_streams: u32,
    pub receive_window: ByteSize,
    pub send_window: ByteSize,
    pub initial_mtu: u16,
    pub keep_alive_interval: HumanDuration,
    pub max_idle_timeout: HumanDuration,
    pub socket_buffer_size: ByteSize,
    pub certificate: CertificateConfig,
}

/// `[consumer_group]`: cooperative rebalancing.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerGroupConfig {
    pub rebalancing_timeout: HumanDuration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatConfig {
    pub enabled: bool,
    pub interval: HumanDuration,
}

/// The operators' HTTP endpoint: `/metrics`, `/ping`, `/stats`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub enabled: bool,
    pub address: SocketAddr,
    /// How many of the most active partitions get their own series in `/metrics`.
    pub metrics_top_partitions: usize,
    /// `/stats` without credentials.
    pub public_stats: bool,
    /// The whole request head must arrive within this time.
    pub request_head_timeout: HumanDuration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    pub level: String,
    pub format: LogFormat,
    pub stdout: bool,
    /// Requests slower than this are logged (WARN) with their command and timing.
    pub slow_request_threshold: Limit<HumanDuration>,
    pub file: LogFileConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogFileConfig {
    pub enabled: bool,
    /// Directory of the log files; a relative path is under `system.path`.
    pub directory: PathBuf,
    /// The current file is rotated once it reaches this size.
    pub max_size: ByteSize,
    /// Rotated files kept besides the current one.
    pub max_files: u32,
}

impl LoggingConfig {
    /// The log directory, resolved against the data directory.
    pub fn file_directory(&self, data_dir: &Path) -> PathBuf {
        if self.file.directory.is_absolute() {
            self.file.directory.clone()
        } else {
            data_dir.join(&self.file.directory)
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
        let mut asks_for_https = false;
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
            asks_for_https |= translated.asks_for_https;
            merge(&mut table, translated.table, "")?;
        }
        let (mut notes, upstream_env) = env::apply(&mut table, &schema, environment)?;
        warnings.append(&mut notes);
        let mut translated = upstream::translate(upstream_env, &schema)?;
        warnings.append(&mut translated.warnings);
        merge(&mut table, translated.table, "")?;
        // Whichever source asked for HTTPS and whichever enabled the endpoint.
        if (asks_for_https || translated.asks_for_https) && is_enabled(&table, "http") {
            return Err(upstream::https_refusal());
        }
        generate_missing_certificates(&mut table, &mut warnings);
        let resolved = table.clone();
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

    fn validate(&self) -> Result<(), ConfigError> {
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
        for (key, certificate, enabled) in [
            ("tcp.tls", self.tcp.tls.certificate(), self.tcp.tls.enabled),
            ("quic.certificate", quic.certificate.clone(), quic.enabled),
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
    for (section, inner) in [("tcp", "tls"), ("quic", "certificate")] {
        let enabled = match section {
            "tcp" => table
                .get("tcp")
                .and_then(|tcp| tcp.get("tls"))
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
mod tests {
    use super::*;

    fn load(file_text: Option<&str>, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.toml");
        if let Some(text) = file_text {
            std::fs::write(&path, text).unwrap();
        }
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Config::load(file_text.map(|_| path.as_path()), env).map(|loaded| loaded.config)
    }

    #[test]
    fn embedded_default_loads_with_documented_values() {
        let config = load(None, &[]).unwrap();
        assert_eq!(config.tcp.address, "127.0.0.1:8090".parse().unwrap());
        assert_eq!(config.system.segment.size, ByteSize(1 << 30));
        assert_eq!(config.system.partition.ack_mode.0, AckMode::Written);
        assert!(config.tcp.nodelay);
        assert_eq!(config.system.topic.max_size, Limit::Unlimited);
        assert!(config.http.enabled);
        assert_eq!(config.http.address, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(config.logging.format, LogFormat::Text);
        assert!(config.logging.stdout);
        assert!(!config.logging.file.enabled);
        assert!(config.logging.slow_request_threshold.get().is_some());
    }

    #[test]
    fn observability_keys_follow_the_environment() {
        let config = load(
            None,
            &[
                ("IGGY_HTTP_ENABLED", "false"),
                ("IGGY_HTTP_ADDRESS", "127.0.0.1:0"),
                ("IGGY_HTTP_METRICS_TOP_PARTITIONS", "3"),
                ("IGGY_LOGGING_FORMAT", "json"),
                ("IGGY_LOGGING_SLOW_REQUEST_THRESHOLD", "none"),
                ("IGGY_LOGGING_FILE_ENABLED", "true"),
                ("IGGY_LOGGING_FILE_MAX_SIZE", "1 MiB"),
                ("IGGY_LOGGING_FILE_MAX_FILES", "2"),
                ("IGGY_LOGGING_FILE_DIRECTORY", "/var/log/iggy"),
            ],
        )
        .unwrap();
        assert!(!config.http.enabled);
        assert_eq!(config.http.address.port(), 0);
        assert_eq!(config.http.metrics_top_partitions, 3);
        assert_eq!(config.logging.format, LogFormat::Json);
        assert_eq!(config.logging.slow_request_threshold, Limit::Unlimited);
        assert!(config.logging.file.enabled);
        assert_eq!(config.logging.file.max_size, ByteSize(1 << 20));
        assert_eq!(config.logging.file.max_files, 2);
        assert_eq!(
            config.logging.file_directory(Path::new("/data")),
            PathBuf::from("/var/log/iggy")
        );
        let error = load(None, &[("IGGY_LOGGING_FORMAT", "xml")]).unwrap_err().0;
        assert!(error.contains("logging.format"), "{error}");
    }

    #[test]
    fn file_then_environment_override_defaults() {
        let config = load(
            Some("[tcp]\naddress = \"127.0.0.1:9000\"\n[system.segment]\nsize = \"64 MiB\"\n"),
            &[
                ("IGGY_TCP_ADDRESS", "127.0.0.1:9100"),
                ("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "4"),
                ("IGGY_TCP_NODELAY", "false"),
            ],
        )
        .unwrap();
        assert_eq!(config.tcp.address.port(), 9100);
        assert_eq!(config.system.segment.size, ByteSize(64 << 20));
        assert_eq!(config.system.sharding.cpu_allocation, "4");
        assert!(!config.tcp.nodelay);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let error = load(Some("[tcp]\nadress = \"x\"\n"), &[]).unwrap_err().0;
        assert!(error.contains("tcp.adress"), "{error}");
        let error = load(Some("[system.segment]\nsize = \"big\"\n"), &[])
            .unwrap_err()
            .0;
        assert!(error.contains("size"), "{error}");
        let error = load(None, &[("IGGY_TCP_NODELAY", "maybe")]).unwrap_err().0;
        assert!(error.contains("IGGY_TCP_NODELAY"), "{error}");
        let error = load(Some("[system.partition]\nack_mode = \"sometimes\"\n"), &[])
            .unwrap_err()
            .0;
        assert!(error.contains("ack mode"), "{error}");
        let error = load(
            None,
            &[("IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES", "orders")],
        )
        .unwrap_err()
        .0;
        assert!(error.contains("ack_mode_overrides"), "{error}");
    }

    #[test]
    fn per_topic_ack_modes_override_the_default() {
        let config = load(
            Some("[system.partition]\nack_mode_overrides = [\"orders/payments=fsync\", \"logs/*=memory\"]\n"),
            &[],
        )
        .unwrap();
        let partition = &config.system.partition;
        assert_eq!(partition.ack_mode_for("orders", "payments"), AckMode::Fsync);
        assert_eq!(partition.ack_mode_for("orders", "other"), AckMode::Written);
        assert_eq!(partition.ack_mode_for("logs", "anything"), AckMode::Memory);
        let config = load(
            None,
            &[(
                "IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES",
                "a/b=fsync, c/*=memory",
            )],
        )
        .unwrap();
        assert_eq!(
            config.system.partition.ack_mode_for("c", "x"),
            AckMode::Memory
        );
        assert_eq!(
            config.system.partition.ack_mode_for("a", "b"),
            AckMode::Fsync
        );
    }
}
