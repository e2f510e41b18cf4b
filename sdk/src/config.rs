//! Client configuration: the builder's options and the connection string that sets them.
//!
//! A connection string looks like
//! `iggy://user:password@host:port?option=value&...` (also `iggy+tcp://`, and `iggy+tls://` for
//! TLS over TCP). A user part without a colon (`iggy://TOKEN@host:port`) is a personal access
//! token. Options: `tls` (bool), `tls_domain`, `tls_ca_file`, `request_timeout`,
//! `connect_timeout`, `heartbeat_interval` (`0`/`none` disables), `reconnection_retries` (a
//! number or `unlimited`), `reconnection_interval` (initial backoff), `reconnection_max_interval`,
//! `reconnection` (bool), `nodelay` (bool). Durations accept `ms`, `s`, `m`, `h` suffixes
//! (`250ms`, `5s`); a bare number is milliseconds.

use crate::error::{Error, Result};
use std::fmt;
use std::time::Duration;

/// The SDK's default server address (protocol.md 9).
pub const DEFAULT_TCP_ADDRESS: &str = "127.0.0.1:8090";
/// Default root credentials of a development server.
pub const DEFAULT_USERNAME: &str = "iggy";
/// Default root credentials of a development server.
pub const DEFAULT_PASSWORD: &str = "iggy";

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
}

/// TLS options (used once TLS is supported; see [`crate::Error::TlsNotSupported`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsOptions {
    /// Server name for SNI and certificate validation; defaults to the address's host.
    pub domain: Option<String>,
    /// A CA certificate file to trust instead of the system roots.
    pub ca_file: Option<String>,
    /// Whether to validate the server certificate (default true).
    pub validate_certificate: bool,
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
        match scheme {
            "iggy" | "iggy+tcp" => {}
            "iggy+tls" | "iggy+tcps" => {
                config.transport = TransportKind::TcpTls(TlsOptions {
                    validate_certificate: true,
                    ..TlsOptions::default()
                })
            }
            other => return Err(invalid(&format!("unsupported scheme '{other}'"))),
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
            format!("{host}:8090")
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
            "tls" => {
                if parse_bool(value).ok_or_else(invalid)? {
                    if self.transport == TransportKind::Tcp {
                        self.transport = TransportKind::TcpTls(TlsOptions {
                            validate_certificate: true,
                            ..TlsOptions::default()
                        });
                    }
                } else {
                    self.transport = TransportKind::Tcp;
                }
            }
            "tls_domain" | "tls_ca_file" | "tls_validate_certificate" => {
                let TransportKind::TcpTls(options) = &mut self.transport else {
                    return Err(Error::InvalidConnectionString(format!(
                        "{key} needs tls=true"
                    )));
                };
                match key {
                    "tls_domain" => options.domain = Some(value.to_owned()),
                    "tls_ca_file" => options.ca_file = Some(value.to_owned()),
                    _ => options.validate_certificate = parse_bool(value).ok_or_else(invalid)?,
                }
            }
            "nodelay" => self.nodelay = parse_bool(value).ok_or_else(invalid)?,
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
            "reconnection_retries" => {
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
