//! The configuration's sections as typed structs, one per table of `configs/server.toml`
//! (which documents every key); `Config` in `mod.rs` holds them.

use super::ConfigError;
use super::units::{ByteSize, CacheSize, HumanDuration, Limit};
use crate::storage::AckMode;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    pub path: PathBuf,
    pub io_driver: crate::io_driver::IoDriverSetting,
    pub sharding: ShardingConfig,
    pub segment: SegmentConfig,
    pub partition: PartitionDefaults,
    pub read_cache: ReadCacheConfig,
    pub buffers: BuffersConfig,
    pub wal: WalSection,
    pub topic: TopicDefaults,
    pub message_deduplication: DeduplicationConfig,
    pub encryption: EncryptionConfig,
    pub state: StateConfig,
}

/// `[system.read_cache]`: recently written batches kept in memory for consumers.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadCacheConfig {
    pub size: CacheSize,
    /// Memory for reads ahead of consumers reading the segment files, for the whole server.
    pub read_ahead: CacheSize,
}

impl ReadCacheConfig {
    /// "auto": a 256th of the memory the server may use, between 4 and 64 MiB (a 1 MB poll
    /// read ahead for each of a few dozen consumers on a large machine, a few in a container).
    pub fn read_ahead_bytes(&self, memory_limit_bytes: u64) -> u64 {
        match self.read_ahead {
            CacheSize::Auto => (memory_limit_bytes / 256).clamp(4 << 20, 64 << 20),
            CacheSize::Fixed(size) => size.0,
        }
    }
}

/// `[system.buffers]`: the memory direct I/O reads into and writes from.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuffersConfig {
    /// Buffers of 64 KiB and more carved from 2 MiB transparent huge pages (storage/huge_pages).
    pub huge_pages: bool,
}

/// `[system.wal]`: the shards' write-ahead logs for `written` mode (storage/wal).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalSection {
    pub enabled: bool,
    /// Each shard's log file.
    pub size: ByteSize,
    /// Rounds up to this size (with the record's header) are logged; larger ones are written
    /// to the segment files directly.
    pub max_record_size: ByteSize,
}

impl WalSection {
    /// The storage configuration, when the log is on.
    pub fn storage(&self) -> Option<crate::storage::WalConfig> {
        self.enabled.then_some(crate::storage::WalConfig {
            size_bytes: self.size.0,
            max_record_bytes: self.max_record_size.0,
        })
    }
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
pub struct EncryptionConfig {
    pub enabled: bool,
    pub key: Secret,
}

impl EncryptionConfig {
    /// The master key when encryption is on (a bad key is refused when the config loads).
    pub fn master_key(&self) -> Result<Option<crate::encryption::MasterKey>, String> {
        if !self.enabled {
            return Ok(None);
        }
        if self.key.0.trim().is_empty() {
            return Err(
                "system.encryption.enabled = true needs system.encryption.key (32 random \
                 bytes in base64: `openssl rand -base64 32`, or IGGY_SYSTEM_ENCRYPTION_KEY)"
                    .into(),
            );
        }
        crate::encryption::MasterKey::from_base64(&self.key.0).map(Some)
    }
}

/// A configuration value that must never be shown: `Debug` (the snapshot's configuration,
/// logs) prints it redacted.
#[derive(Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "\"\""
        } else {
            "(redacted)"
        })
    }
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
    /// How long a consumer's repeated poll of an empty tail waits for the next message
    /// (`session::TailPolls`); 0 answers every poll at once.
    pub empty_poll_wait: HumanDuration,
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

    pub(super) fn validate(&self, section: &str) -> Result<(), ConfigError> {
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
    pub socket: QuicSocketConfig,
    pub certificate: CertificateConfig,
}

/// `[quic.socket]`: upstream's UDP socket options, when `override_defaults` is on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicSocketConfig {
    pub override_defaults: bool,
    pub recv_buffer_size: ByteSize,
    pub send_buffer_size: ByteSize,
    pub keepalive: bool,
}

/// The options set on each shard's QUIC socket (buffer sizes in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpSocketOptions {
    pub recv_buffer: usize,
    pub send_buffer: usize,
    pub keepalive: bool,
}

impl QuicConfig {
    /// What each shard's UDP socket is given: `[quic.socket]` with `override_defaults`,
    /// otherwise `socket_buffer_size` both ways and no keepalive.
    pub fn socket_options(&self) -> UdpSocketOptions {
        let size = |bytes: &ByteSize| usize::try_from(bytes.0).unwrap_or(usize::MAX);
        if self.socket.override_defaults {
            UdpSocketOptions {
                recv_buffer: size(&self.socket.recv_buffer_size),
                send_buffer: size(&self.socket.send_buffer_size),
                keepalive: self.socket.keepalive,
            }
        } else {
            UdpSocketOptions {
                recv_buffer: size(&self.socket_buffer_size),
                send_buffer: size(&self.socket_buffer_size),
                keepalive: false,
            }
        }
    }
}

/// `[websocket]`: the WebSocket front-end (upstream's keys; the sizes are explained in
/// `configs/server.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSocketConfig {
    pub enabled: bool,
    pub address: SocketAddr,
    pub read_buffer_size: ByteSize,
    pub write_buffer_size: ByteSize,
    pub max_write_buffer_size: Limit<ByteSize>,
    pub max_message_size: Limit<ByteSize>,
    pub max_frame_size: Limit<ByteSize>,
    pub accept_unmasked_frames: bool,
    pub tls: TlsConfig,
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
    /// The whole request body must arrive within this time.
    pub request_body_timeout: HumanDuration,
    /// Largest request body accepted (upstream's key); larger ones get 413.
    pub max_request_size: ByteSize,
    /// HTTP connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
    pub cors: HttpCorsConfig,
    pub jwt: HttpJwtConfig,
    pub tls: TlsConfig,
}

/// `[http.cors]`, upstream's keys and defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpCorsConfig {
    pub enabled: bool,
    pub allowed_methods: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub allowed_headers: Vec<String>,
    pub exposed_headers: Vec<String>,
    pub allow_credentials: bool,
    pub allow_private_network: bool,
}

/// `[http.jwt]`, upstream's keys: how access tokens are signed and checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpJwtConfig {
    /// HS256, HS384 or HS512.
    pub algorithm: String,
    pub issuer: String,
    pub audience: String,
    pub valid_issuers: Vec<String>,
    pub valid_audiences: Vec<String>,
    pub access_token_expiry: HumanDuration,
    pub clock_skew: HumanDuration,
    pub not_before: HumanDuration,
    /// Empty: a random secret is generated once and kept in the data directory.
    pub encoding_secret: Secret,
    /// Empty: the encoding secret.
    pub decoding_secret: Secret,
    pub use_base64_secret: bool,
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

/// `[telemetry]`: OpenTelemetry export of logs and request spans over OTLP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    pub enabled: bool,
    pub service_name: String,
    pub logs: OtlpExport,
    pub traces: OtlpExport,
}

/// Where one signal goes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpExport {
    pub transport: OtlpTransport,
    pub endpoint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtlpTransport {
    Grpc,
    Http,
}
