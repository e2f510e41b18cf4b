//! `ClientConfig::from_connection_string` and the option parsers it uses.

use super::*;

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
            "iggy+ws" => {
                config.transport = TransportKind::WebSocket(WebSocketOptions::default());
                default_port = 8092;
            }
            "iggy+http" => {
                config.transport = TransportKind::Http(HttpOptions::default());
                default_port = 3000;
            }
            other => {
                return Err(invalid(&format!(
                    "unsupported scheme '{other}' (expected iggy, iggy+tcp, iggy+tls, iggy+quic, \
                     iggy+ws or iggy+http)"
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
        let mut pairs: Vec<(&str, &str)> = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|pair| !pair.is_empty())
            .map(|pair| pair.split_once('=').unwrap_or((pair, "true")))
            .collect();
        // `tls` first: upstream reads the options in any order, so `tls_domain=..&tls=true` must
        // not fail for naming the TLS settings before enabling TLS.
        pairs.sort_by_key(|(key, _)| *key != "tls");
        for (key, value) in pairs {
            config.apply_option(key, value)?;
        }
        Ok(config)
    }

    fn apply_option(&mut self, key: &str, value: &str) -> Result<()> {
        let invalid =
            || Error::InvalidConnectionString(format!("invalid value for {key}: {value}"));
        match key {
            "tls" => match (parse_bool(value).ok_or_else(invalid)?, &mut self.transport) {
                (_, TransportKind::Quic(_)) => {
                    return Err(Error::InvalidConnectionString(
                        "tls applies to TCP; QUIC is always encrypted".to_owned(),
                    ));
                }
                (true, TransportKind::Tcp) => {
                    self.transport = TransportKind::TcpTls(TlsOptions::default())
                }
                (enabled, TransportKind::WebSocket(options)) => {
                    options.tls = enabled.then(WebSocketOptions::default_tls)
                }
                (enabled, TransportKind::Http(options)) => {
                    options.tls = enabled.then(TlsOptions::default)
                }
                (true, _) => {}
                (false, _) => self.transport = TransportKind::Tcp,
            },
            "tls_domain" | "tls_validate_certificate" => {
                let options = match &mut self.transport {
                    TransportKind::TcpTls(options) => options,
                    TransportKind::WebSocket(WebSocketOptions {
                        tls: Some(options), ..
                    })
                    | TransportKind::Http(HttpOptions { tls: Some(options) }) => options,
                    _ => {
                        return Err(Error::InvalidConnectionString(format!(
                            "{key} needs tls=true (or iggy+tls://)"
                        )));
                    }
                };
                match key {
                    "tls_domain" => options.domain = Some(value.to_owned()),
                    _ => options.validate_certificate = parse_bool(value).ok_or_else(invalid)?,
                }
            }
            "tls_ca_file" => match &mut self.transport {
                TransportKind::TcpTls(options) => options.ca_file = Some(value.to_owned()),
                TransportKind::Quic(options) => options.ca_file = Some(value.to_owned()),
                TransportKind::WebSocket(WebSocketOptions {
                    tls: Some(options), ..
                })
                | TransportKind::Http(HttpOptions { tls: Some(options) }) => {
                    options.ca_file = Some(value.to_owned())
                }
                TransportKind::Tcp | TransportKind::WebSocket(_) | TransportKind::Http(_) => {
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
            "max_message_size"
            | "max_frame_size"
            | "read_buffer_size"
            | "write_buffer_size"
            | "max_write_buffer_size"
            | "accept_unmasked_frames" => {
                let TransportKind::WebSocket(options) = &mut self.transport else {
                    return Err(Error::InvalidConnectionString(format!(
                        "{key} is a WebSocket option (use iggy+ws://)"
                    )));
                };
                if key == "accept_unmasked_frames" {
                    // See WebSocketOptions: checked, without effect.
                    parse_bool(value).ok_or_else(invalid)?;
                    return Ok(());
                }
                let size: usize = value.parse().map_err(|_| invalid())?;
                match key {
                    "max_message_size" => options.max_message_size = size,
                    "max_frame_size" => options.max_frame_size = size,
                    "read_buffer_size" => options.read_buffer_size = Some(size),
                    "write_buffer_size" => options.write_buffer_size = Some(size),
                    _ => {}
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

pub(super) fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Parses `250ms`, `5s`, `2m`, `1h 30m`, `1500us` (humantime's grammar, through
/// `rill_core::units`) or a bare number of milliseconds.
pub fn parse_duration(value: &str) -> Option<Duration> {
    rill_core::units::parse_duration_or(value, Duration::from_millis(1)).ok()
}

/// Decodes `%XX` escapes so passwords may contain `@`, `:` or `/`.
pub(super) fn percent_decode(text: &str) -> Result<String> {
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
