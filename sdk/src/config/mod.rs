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
//! WebSocket (`iggy+ws://`, port 8092; the names of upstream's SDK 0.10.0): `tls` (bool: wss),
//! `tls_domain`, `tls_ca_file` (PEM), `tls_validate_certificate` (bool, default false as
//! upstream's WebSocket client), `max_message_size` and `max_frame_size` (bytes, limits on one
//! response), `read_buffer_size`, `write_buffer_size`; `max_write_buffer_size` and
//! `accept_unmasked_frames` are accepted and have no effect (see [`WebSocketOptions`]).
//!
//! HTTP (`iggy+http://`, port 3000): the server's REST API, every command turned into its HTTP
//! call (see `transport::http`); `tls` (bool: HTTPS), `tls_domain`, `tls_ca_file`,
//! `tls_validate_certificate` (default true). It carries upstream 0.8's commands, so
//! `protocol=0.9` does not apply, and what the REST API has no call for (GetMe, joining a
//! consumer group) is refused with FeatureUnavailable, as upstream's HTTP client refuses it.
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
/// The default WebSocket server address.
pub const DEFAULT_WEBSOCKET_ADDRESS: &str = "127.0.0.1:8092";
/// The default address of the HTTP API.
pub const DEFAULT_HTTP_ADDRESS: &str = "127.0.0.1:3000";
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
    /// WebSocket (RFC 6455), with TLS (wss) when [`WebSocketOptions::tls`] is set: one binary
    /// message per request frame and per reply.
    WebSocket(WebSocketOptions),
    /// The HTTP REST API (HTTPS when [`HttpOptions::tls`] is set): each command as its HTTP
    /// call, the JSON answer as the command's payload.
    Http(HttpOptions),
}

/// HTTP API options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpOptions {
    /// HTTPS to the server's HTTP API (the server needs `[http.tls]`).
    pub tls: Option<TlsOptions>,
}

/// WebSocket options. The upstream SDK's `max_write_buffer_size` and `accept_unmasked_frames`
/// have no counterpart: a client writes one message and waits for its reply, so its write
/// buffer never holds more than that message, and it is the server that must not mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSocketOptions {
    /// wss: TLS to the server's WebSocket port (the server needs `[websocket.tls]`).
    pub tls: Option<TlsOptions>,
    /// The largest reply (one message) accepted, in bytes; default 1 GiB as over TCP (upstream
    /// uses tungstenite's 64 MiB, which a large poll exceeds).
    pub max_message_size: usize,
    /// The largest single frame accepted, in bytes (default 1 GiB: the server fragments large
    /// replies itself, at its `websocket.write_buffer_size`).
    pub max_frame_size: usize,
    /// Bytes read from the socket at a time (tungstenite's default when `None`).
    pub read_buffer_size: Option<usize>,
    /// Bytes gathered before a write reaches the socket (tungstenite's default when `None`).
    pub write_buffer_size: Option<usize>,
}

impl WebSocketOptions {
    /// TLS settings of `tls=true` without further options: no certificate validation, as
    /// upstream's WebSocket client (servers use a self-signed certificate by default).
    pub fn default_tls() -> TlsOptions {
        TlsOptions {
            validate_certificate: false,
            ..TlsOptions::default()
        }
    }
}

impl Default for WebSocketOptions {
    fn default() -> Self {
        WebSocketOptions {
            tls: None,
            max_message_size: 1 << 30,
            max_frame_size: 1 << 30,
            read_buffer_size: None,
            write_buffer_size: None,
        }
    }
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

mod connection_string;
pub use connection_string::parse_duration;

#[cfg(test)]
mod tests;
