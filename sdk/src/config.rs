//! Client configuration: the builder's options and the connection string that sets them.
//!
//! A connection string looks like
//! `iggy://user:password@host:port?option=value&...` (also `iggy+tcp://`, `iggy+tls://` for TLS
//! over TCP and `iggy+quic://` for QUIC). A user part without a colon (`iggy://TOKEN@host:port`)
//! is a personal access token. The port defaults to 8090 (8080 for QUIC).
//!
//! Options of every transport: `protocol` (`0.8`, the default, or `0.9`: the wire protocol
//! generation, see [`Protocol`]), `request_timeout`, `connect_timeout`, `heartbeat_interval`
//! (`0`/`none` disables), `reconnection_retries` (a number or `unlimited`; upstream's QUIC name
//! `reconnection_max_retries` is accepted too), `reconnection_interval` (initial backoff),
//! `reconnection_max_interval`, `reconnection` (bool).
//!
//! TCP: `nodelay` (bool), `tls` (bool), `tls_domain`, `tls_ca_file` (PEM),
//! `tls_validate_certificate` (bool, default true).
//!
//! QUIC: `server_name` (default `localhost`), `client_address` (local UDP address to bind),
//! `validate_certificate` (bool, default false), `tls_ca_file` (PEM), `response_buffer_size`
//! (bytes, default 10 000 000), `keep_alive_interval` and `max_idle_timeout` (durations, `0`
//! disables), `max_concurrent_bidi_streams`, `datagram_send_buffer_size`, `initial_mtu`,
//! `send_window`, `receive_window`.
//!
//! Durations accept `us`, `ms`, `s`, `m`, `h` suffixes (`250ms`, `5s`); a bare number is
//! milliseconds.

use crate::error::{Error, Result};
use std::fmt;
use std::time::Duration;

/// The SDK's default server address (protocol.md 9).
pub const DEFAULT_TCP_ADDRESS: &str = "127.0.0.1:8090";
/// The default QUIC server address (UDP).
pub const DEFAULT_QUIC_ADDRESS: &str = "127.0.0.1:8080";
/// The QUIC server name upstream's SDK uses (the name in the server's default self-signed
/// certificate).
pub const DEFAULT_QUIC_SERVER_NAME: &str = "localhost";
/// Upstream's default limit on one QUIC response (`response_buffer_size`).
pub const DEFAULT_QUIC_RESPONSE_BUFFER_SIZE: usize = 10_000_000;
/// Default root credentials of a development server.
pub const DEFAULT_USERNAME: &str = "iggy";
/// Default root credentials of a development server.
pub const DEFAULT_PASSWORD: &str = "iggy";

/// The wire protocol generation a client speaks. A rill server serves both on the same ports;
/// an upstream Iggy server speaks only its own (0.8.x servers 0.8, 0.9.x servers 0.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Iggy 0.8 (`../shared/docs/protocol.md`): 8-byte frame headers, as SDK 0.10.0 speaks.
    #[default]
    V08,
    /// Iggy 0.9 (`protocol-0.9.md`): 256-byte headers, sessions and numbered requests, 0.9
    /// message batches, as SDK 0.11.0 speaks.
    V09,
}

impl Protocol {
    /// Parses `0.8`/`v08`/`8` or `0.9`/`v09`/`9`.
    pub fn parse(text: &str) -> Option<Protocol> {
        match text.trim().to_ascii_lowercase().as_str() {
            "0.8" | "v0.8" | "v08" | "08" | "8" => Some(Protocol::V08),
            "0.9" | "v0.9" | "v09" | "09" | "9" => Some(Protocol::V09),
            _ => None,
        }
    }

    /// `0.8` or `0.9`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::V08 => "0.8",
            Protocol::V09 => "0.9",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Protocol::parse(text)
            .ok_or_else(|| format!("unknown protocol '{text}': expected 0.8 or 0.9"))
    }
}

/// How the client authenticates after each (re)connection.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Credentials {
    /// No automatic login; call [`crate::Client::login_user`] yourself.
    #[default]
    None,
    /// LoginUser (38) with a username and password.
    UsernamePassword {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// LoginWithPersonalAccessToken (44).
    PersonalAccessToken(String),
}

impl fmt::Debug for Credentials {
    // Secrets never appear in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::UsernamePassword { username, .. } => {
                write!(f, "UsernamePassword({username}, <password>)")
            }
            Credentials::PersonalAccessToken(_) => f.write_str("PersonalAccessToken(<token>)"),
        }
    }
}

/// Which transport carries the frames. Every transport implements [`crate::transport::Connector`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportKind {
    /// Plain TCP.
    Tcp,
    /// TLS over TCP (same port, protocol.md 1.5).
    TcpTls(TlsOptions),
    /// QUIC over UDP, one bidirectional stream per request (protocol.md 1.6).
    Quic(QuicOptions),
}

/// TLS-over-TCP options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Server name for SNI and certificate validation; defaults to the address's host (an IP
    /// address is allowed).
    pub domain: Option<String>,
    /// A PEM file of CA certificates to trust instead of the built-in web PKI roots (a
    /// self-signed server certificate itself works too).
    pub ca_file: Option<String>,
    /// Whether to validate the server certificate (default true, as upstream's SDK); false
    /// accepts any certificate.
    pub validate_certificate: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            domain: None,
            ca_file: None,
            validate_certificate: true,
        }
    }
}

/// QUIC options. Defaults follow upstream's SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuicOptions {
    /// Name for SNI and certificate validation (default `localhost`).
    pub server_name: String,
    /// Local UDP address to bind; by default the unspecified address of the server's family
    /// with a free port. The server derives the client id from this address.
    pub client_address: Option<String>,
    /// Whether to validate the server certificate (default false: servers use a self-signed
    /// certificate by default).
    pub validate_certificate: bool,
    /// A PEM file of CA certificates to trust instead of the built-in web PKI roots.
    pub ca_file: Option<String>,
    /// The largest response accepted, in bytes (default 10 000 000). A poll can return more
    /// than that: raise it for large polls.
    pub response_buffer_size: usize,
    /// Interval of QUIC keep-alive packets (default 5 s); `None` disables them.
    pub keep_alive_interval: Option<Duration>,
    /// The connection closes after this long without packets (default 10 s); `None` leaves it
    /// to the server.
    pub max_idle_timeout: Option<Duration>,
    /// Streams the server may open towards this client (default 10 000; the protocol never
    /// needs any, upstream's SDK sets it anyway).
    pub max_concurrent_bidi_streams: u64,
    /// Datagram send buffer in bytes (default 100 000).
    pub datagram_send_buffer_size: usize,
    /// Initial MTU (default 1200).
    pub initial_mtu: u16,
    /// Send window in bytes: data in flight before the server acknowledges it (default 8 MiB).
    /// Upstream's SDK defaults to 100 000, which caps a connection at about one window per
    /// acknowledgement delay: 1 MB batches crawled at 4 MB/s over loopback.
    pub send_window: u64,
    /// Receive window in bytes: how much of a response the server may send ahead of our reads
    /// (default 8 MiB; upstream 100 000, which throttles large polls the same way).
    pub receive_window: u64,
}

/// QUIC flow-control windows of our clients (see [`QuicOptions::send_window`]).
pub const DEFAULT_QUIC_WINDOW: u64 = 8 << 20;

impl Default for QuicOptions {
    fn default() -> Self {
        QuicOptions {
            server_name: DEFAULT_QUIC_SERVER_NAME.to_owned(),
            client_address: None,
            validate_certificate: false,
            ca_file: None,
            response_buffer_size: DEFAULT_QUIC_RESPONSE_BUFFER_SIZE,
            keep_alive_interval: Some(Duration::from_secs(5)),
            max_idle_timeout: Some(Duration::from_secs(10)),
            max_concurrent_bidi_streams: 10_000,
            datagram_send_buffer_size: 100_000,
            initial_mtu: 1200,
            send_window: DEFAULT_QUIC_WINDOW,
            receive_window: DEFAULT_QUIC_WINDOW,
        }
    }
}

/// Reconnection with bounded exponential backoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Whether a broken connection is re-established at all.
    pub enabled: bool,
    /// How many connection attempts one (re)connection may make; `None` is unlimited.
    pub max_attempts: Option<u32>,
    /// The wait before the second attempt; doubled after each failure.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            enabled: true,
            max_attempts: Some(10),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl ReconnectPolicy {
    /// The wait before attempt number `attempt` (1-based; the first attempt does not wait):
    /// `initial_backoff × 2^(attempt-2)`, capped at `max_backoff`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let exponent = (attempt - 2).min(31);
        self.initial_backoff
            .checked_mul(1u32 << exponent)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }

    /// Whether attempt number `attempt` (1-based) is allowed.
    pub fn allows(&self, attempt: u32) -> bool {
        attempt == 1 || (self.enabled && self.max_attempts.is_none_or(|max| attempt <= max))
    }
}

/// Everything a [`crate::Client`] needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// `host:port` of the server.
    pub address: String,
    /// The transport.
    pub transport: TransportKind,
    /// The wire protocol generation.
    pub protocol: Protocol,
    /// Login performed after every (re)connection.
    pub credentials: Credentials,
    /// TCP_NODELAY on the socket (default on: Nagle adds ~40 ms per small request).
    pub nodelay: bool,
    /// The longest one request may take, from write to the end of the response.
    pub request_timeout: Duration,
    /// The longest one connection attempt may take.
    pub connect_timeout: Duration,
    /// Interval of background Ping (1) requests; `None` disables them.
    pub heartbeat_interval: Option<Duration>,
    /// Reconnection behaviour.
    pub reconnect: ReconnectPolicy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            address: DEFAULT_TCP_ADDRESS.to_owned(),
            transport: TransportKind::Tcp,
            protocol: Protocol::V08,
            credentials: Credentials::None,
            nodelay: true,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            heartbeat_interval: Some(Duration::from_secs(5)),
            reconnect: ReconnectPolicy::default(),
        }
    }
}

impl ClientConfig {
    /// Parses `iggy://user:password@host:port?options` (see the module documentation).
    pub fn from_connection_string(text: &str) -> Result<Self> {
        let invalid = |message: &str| Error::InvalidConnectionString(message.to_owned());
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| invalid("expected iggy://user:password@host:port"))?;
        let mut config = ClientConfig::default();
        let mut default_port = 8090;
        match scheme {
            "iggy" | "iggy+tcp" => {}
            "iggy+tls" | "iggy+tcps" => {
                config.transport = TransportKind::TcpTls(TlsOptions::default())
            }
            "iggy+quic" => {
                config.transport = TransportKind::Quic(QuicOptions::default());
                default_port = 8080;
            }
            other => {
                return Err(invalid(&format!(
                    "unsupported scheme '{other}' (expected iggy, iggy+tcp, iggy+tls or iggy+quic)"
                )));
            }
        }
        let (authority, query) = match rest.split_once('?') {
            Some((authority, query)) => (authority, Some(query)),
            None => (rest, None),
        };
        let authority = authority.trim_end_matches('/');
        let (user_info, host) = match authority.rsplit_once('@') {
            Some((user_info, host)) => (Some(user_info), host),
            None => (None, authority),
        };
        if host.is_empty() {
            return Err(invalid("missing host"));
        }
        config.address = if host.contains(':') && !host.ends_with(']') {
            let (_, port) = host.rsplit_once(':').expect("contains ':'");
            port.parse::<u16>()
                .map_err(|_| invalid(&format!("invalid port '{port}'")))?;
            host.to_owned()
        } else {
            format!("{host}:{default_port}")
        };
        config.credentials = match user_info {
            None => Credentials::None,
            Some(user_info) => match user_info.split_once(':') {
                Some((username, password)) => {
                    if username.is_empty() {
                        return Err(invalid("empty username"));
                    }
                    Credentials::UsernamePassword {
                        username: percent_decode(username)?,
                        password: percent_decode(password)?,
                    }
                }
                None if user_info.is_empty() => return Err(invalid("empty credentials")),
                None => Credentials::PersonalAccessToken(percent_decode(user_info)?),
            },
        };
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if pair.is_empty() {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
            config.apply_option(key, value)?;
        }
        Ok(config)
    }

    fn apply_option(&mut self, key: &str, value: &str) -> Result<()> {
        let invalid =
            || Error::InvalidConnectionString(format!("invalid value for {key}: {value}"));
        match key {
            "tls" => match (parse_bool(value).ok_or_else(invalid)?, &self.transport) {
                (_, TransportKind::Quic(_)) => {
                    return Err(Error::InvalidConnectionString(
                        "tls applies to TCP; QUIC is always encrypted".to_owned(),
                    ));
                }
                (true, TransportKind::Tcp) => {
                    self.transport = TransportKind::TcpTls(TlsOptions::default())
                }
                (true, _) => {}
                (false, _) => self.transport = TransportKind::Tcp,
            },
            "tls_domain" | "tls_validate_certificate" => {
                let TransportKind::TcpTls(options) = &mut self.transport else {
                    return Err(Error::InvalidConnectionString(format!(
                        "{key} needs tls=true (or iggy+tls://)"
                    )));
                };
                match key {
                    "tls_domain" => options.domain = Some(value.to_owned()),
                    _ => options.validate_certificate = parse_bool(value).ok_or_else(invalid)?,
                }
            }
            "tls_ca_file" => match &mut self.transport {
                TransportKind::TcpTls(options) => options.ca_file = Some(value.to_owned()),
                TransportKind::Quic(options) => options.ca_file = Some(value.to_owned()),
                TransportKind::Tcp => {
                    return Err(Error::InvalidConnectionString(
                        "tls_ca_file needs tls=true (or iggy+tls://)".to_owned(),
                    ));
                }
            },
            "server_name"
            | "client_address"
            | "validate_certificate"
            | "response_buffer_size"
            | "keep_alive_interval"
            | "max_idle_timeout"
            | "max_concurrent_bidi_streams"
            | "datagram_send_buffer_size"
            | "initial_mtu"
            | "send_window"
            | "receive_window" => {
                let TransportKind::Quic(options) = &mut self.transport else {
                    return Err(Error::InvalidConnectionString(format!(
                        "{key} is a QUIC option (use iggy+quic://)"
                    )));
                };
                let optional_duration = |value: &str| match value {
                    "0" | "none" | "disabled" => Some(None),
                    _ => parse_duration(value).map(Some),
                };
                match key {
                    "server_name" => options.server_name = value.to_owned(),
                    "client_address" => options.client_address = Some(value.to_owned()),
                    "validate_certificate" => {
                        options.validate_certificate = parse_bool(value).ok_or_else(invalid)?
                    }
                    "response_buffer_size" => {
                        options.response_buffer_size = value.parse().map_err(|_| invalid())?
                    }
                    "keep_alive_interval" => {
                        options.keep_alive_interval =
                            optional_duration(value).ok_or_else(invalid)?
                    }
                    "max_idle_timeout" => {
                        options.max_idle_timeout = optional_duration(value).ok_or_else(invalid)?
                    }
                    "max_concurrent_bidi_streams" => {
                        options.max_concurrent_bidi_streams =
                            value.parse().map_err(|_| invalid())?
                    }
                    "datagram_send_buffer_size" => {
                        options.datagram_send_buffer_size = value.parse().map_err(|_| invalid())?
                    }
                    "initial_mtu" => options.initial_mtu = value.parse().map_err(|_| invalid())?,
                    "send_window" => options.send_window = value.parse().map_err(|_| invalid())?,
                    _ => options.receive_window = value.parse().map_err(|_| invalid())?,
                }
            }
            "nodelay" => self.nodelay = parse_bool(value).ok_or_else(invalid)?,
            "protocol" => self.protocol = Protocol::parse(value).ok_or_else(invalid)?,
            "request_timeout" => {
                self.request_timeout = parse_duration(value).ok_or_else(invalid)?
            }
            "connect_timeout" => {
                self.connect_timeout = parse_duration(value).ok_or_else(invalid)?
            }
            "heartbeat_interval" => {
                self.heartbeat_interval = match value {
                    "none" | "0" | "disabled" => None,
                    _ => Some(parse_duration(value).ok_or_else(invalid)?),
                }
            }
            "reconnection" => self.reconnect.enabled = parse_bool(value).ok_or_else(invalid)?,
            "reconnection_retries" | "reconnection_max_retries" => {
                self.reconnect.max_attempts = match value {
                    "unlimited" => None,
                    _ => Some(value.parse().map_err(|_| invalid())?),
                }
            }
            "reconnection_interval" => {
                self.reconnect.initial_backoff = parse_duration(value).ok_or_else(invalid)?
            }
            "reconnection_max_interval" => {
                self.reconnect.max_backoff = parse_duration(value).ok_or_else(invalid)?
            }
            _ => {
                return Err(Error::InvalidConnectionString(format!(
                    "unknown option '{key}'"
                )));
            }
        }
        Ok(())
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Parses `250ms`, `5s`, `2m`, `1h`, `1500us` or a bare number of milliseconds.
pub fn parse_duration(value: &str) -> Option<Duration> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: u64 = number.parse().ok()?;
    Some(match unit {
        "" | "ms" => Duration::from_millis(number),
        "us" => Duration::from_micros(number),
        "s" => Duration::from_secs(number),
        "m" | "min" => Duration::from_secs(number.checked_mul(60)?),
        "h" => Duration::from_secs(number.checked_mul(3600)?),
        _ => return None,
    })
}

/// Decodes `%XX` escapes so passwords may contain `@`, `:` or `/`.
fn percent_decode(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| Error::InvalidConnectionString("bad % escape".to_owned()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Error::InvalidConnectionString("invalid UTF-8".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form() {
        let config =
            ClientConfig::from_connection_string("iggy://iggy:secret@10.0.0.7:9000").unwrap();
        assert_eq!(config.address, "10.0.0.7:9000");
        assert_eq!(
            config.credentials,
            Credentials::UsernamePassword {
                username: "iggy".into(),
                password: "secret".into()
            }
        );
        assert_eq!(config.transport, TransportKind::Tcp);
        assert!(config.nodelay);
    }

    #[test]
    fn default_port_token_escapes_and_options() {
        let config = ClientConfig::from_connection_string(
            "iggy+tcp://TOKEN123@localhost?request_timeout=250ms&heartbeat_interval=none&reconnection_retries=unlimited&reconnection_interval=2s&nodelay=false",
        )
        .unwrap();
        assert_eq!(config.address, "localhost:8090");
        assert_eq!(
            config.credentials,
            Credentials::PersonalAccessToken("TOKEN123".into())
        );
        assert_eq!(config.request_timeout, Duration::from_millis(250));
        assert_eq!(config.heartbeat_interval, None);
        assert_eq!(config.reconnect.max_attempts, None);
        assert_eq!(config.reconnect.initial_backoff, Duration::from_secs(2));
        assert!(!config.nodelay);

        let config = ClientConfig::from_connection_string("iggy://user:p%40ss%3Aw@h:1").unwrap();
        assert_eq!(
            config.credentials,
            Credentials::UsernamePassword {
                username: "user".into(),
                password: "p@ss:w".into()
            }
        );
        let config = ClientConfig::from_connection_string("iggy://h:1").unwrap();
        assert_eq!(config.credentials, Credentials::None);
        let config =
            ClientConfig::from_connection_string("iggy+tls://u:p@h:1?tls_domain=example.com")
                .unwrap();
        assert!(matches!(
            config.transport,
            TransportKind::TcpTls(TlsOptions { domain: Some(ref d), validate_certificate: true, .. }) if d == "example.com"
        ));
    }

    #[test]
    fn the_protocol_generation_is_an_option() {
        let config = ClientConfig::from_connection_string("iggy://u:p@h:1").unwrap();
        assert_eq!(config.protocol, Protocol::V08);
        for (text, protocol) in [
            ("0.9", Protocol::V09),
            ("v09", Protocol::V09),
            ("0.8", Protocol::V08),
        ] {
            let config = ClientConfig::from_connection_string(&format!(
                "iggy+tls://u:p@h:1?protocol={text}"
            ))
            .unwrap();
            assert_eq!(config.protocol, protocol);
        }
        assert!(ClientConfig::from_connection_string("iggy://u:p@h:1?protocol=1.0").is_err());
        assert_eq!("0.9".parse::<Protocol>(), Ok(Protocol::V09));
        assert_eq!(Protocol::V09.to_string(), "0.9");
    }

    #[test]
    fn quic_strings_use_upstream_defaults_and_options() {
        let config =
            ClientConfig::from_connection_string("iggy+quic://iggy:iggy@localhost").unwrap();
        assert_eq!(config.address, "localhost:8080");
        assert_eq!(
            config.transport,
            TransportKind::Quic(QuicOptions::default())
        );
        let defaults = QuicOptions::default();
        assert_eq!(defaults.server_name, "localhost");
        assert!(!defaults.validate_certificate);
        assert_eq!(defaults.response_buffer_size, 10_000_000);
        assert_eq!(defaults.keep_alive_interval, Some(Duration::from_secs(5)));
        assert_eq!(defaults.max_idle_timeout, Some(Duration::from_secs(10)));

        let config = ClientConfig::from_connection_string(
            "iggy+quic://u:p@10.0.0.1:9000?server_name=broker&validate_certificate=true&tls_ca_file=/ca.pem&response_buffer_size=50000000&keep_alive_interval=0&max_idle_timeout=30000&client_address=0.0.0.0:0&reconnection_max_retries=4",
        )
        .unwrap();
        assert_eq!(config.address, "10.0.0.1:9000");
        assert_eq!(config.reconnect.max_attempts, Some(4));
        let TransportKind::Quic(options) = config.transport else {
            panic!("not QUIC");
        };
        assert_eq!(options.server_name, "broker");
        assert!(options.validate_certificate);
        assert_eq!(options.ca_file.as_deref(), Some("/ca.pem"));
        assert_eq!(options.response_buffer_size, 50_000_000);
        assert_eq!(options.keep_alive_interval, None);
        assert_eq!(options.max_idle_timeout, Some(Duration::from_secs(30)));
        assert_eq!(options.client_address.as_deref(), Some("0.0.0.0:0"));
    }

    #[test]
    fn tls_strings_validate_by_default() {
        let config =
            ClientConfig::from_connection_string("iggy+tls://u:p@h:1?tls_ca_file=/ca.pem").unwrap();
        assert_eq!(
            config.transport,
            TransportKind::TcpTls(TlsOptions {
                domain: None,
                ca_file: Some("/ca.pem".into()),
                validate_certificate: true,
            })
        );
        let config = ClientConfig::from_connection_string(
            "iggy://u:p@h:1?tls=true&tls_validate_certificate=false",
        )
        .unwrap();
        assert!(matches!(
            config.transport,
            TransportKind::TcpTls(TlsOptions {
                validate_certificate: false,
                ..
            })
        ));
    }

    #[test]
    fn rejects_malformed_strings() {
        for text in [
            "127.0.0.1:8090",
            "http://u:p@h:1",
            "iggy://u:p@",
            "iggy://u:p@h:notaport",
            "iggy://:p@h:1",
            "iggy://u:p@h:1?bogus=1",
            "iggy://u:p@h:1?request_timeout=soon",
            "iggy://u:p@h:1?tls_domain=x",
            "iggy://u:%zz@h:1",
            "iggy://u:p@h:1?server_name=x",
            "iggy+quic://u:p@h:1?tls=true",
            "iggy+quic://u:p@h:1?tls_domain=x",
            "iggy+quic://u:p@h:1?response_buffer_size=lots",
            "iggy+tls://u:p@h:1?validate_certificate=false",
            "iggy+udp://u:p@h:1",
        ] {
            assert!(
                matches!(
                    ClientConfig::from_connection_string(text),
                    Err(Error::InvalidConnectionString(_))
                ),
                "{text} should be rejected"
            );
        }
    }

    #[test]
    fn backoff_is_exponential_and_bounded() {
        let policy = ReconnectPolicy {
            enabled: true,
            max_attempts: Some(5),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(700),
        };
        let waits: Vec<_> = (1..=6).map(|a| policy.backoff(a).as_millis()).collect();
        assert_eq!(waits, [0, 100, 200, 400, 700, 700]);
        assert!(policy.allows(5));
        assert!(!policy.allows(6));
        assert_eq!(policy.backoff(1000), Duration::from_millis(700));
        let unlimited = ReconnectPolicy {
            max_attempts: None,
            ..policy.clone()
        };
        assert!(unlimited.allows(1_000_000));
        let disabled = ReconnectPolicy {
            enabled: false,
            ..policy
        };
        assert!(disabled.allows(1));
        assert!(!disabled.allows(2));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15"), Some(Duration::from_millis(15)));
        assert_eq!(parse_duration("3m"), Some(Duration::from_secs(180)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
    }
}
