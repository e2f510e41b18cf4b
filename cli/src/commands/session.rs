//! Settings (flags, context, environment), the client they make, and logging in: with
//! credentials, a stored session token, or a prompt; `iggy login` and `iggy logout`.

use super::values::{milliseconds, parse_interval};
use crate::args::*;
use crate::context::{ContextConfig, Home, SESSION_TOKEN_NAME};
use crate::error::CliError;
use crate::output::Printer;
use crate::util::*;
use rill_sdk::Client;
use rill_sdk::config::{
    ClientConfig, DEFAULT_QUIC_ADDRESS, DEFAULT_TCP_ADDRESS, DEFAULT_WEBSOCKET_ADDRESS,
    HttpOptions, Protocol, QuicOptions, ReconnectPolicy, TlsOptions, TransportKind,
    WebSocketOptions,
};
use rill_sdk::types::*;
use std::io::IsTerminal;
use std::time::Duration;

/// Default login session length, as the official CLI (15 minutes).
pub(super) const DEFAULT_SESSION_EXPIRY_MICROS: u64 = 15 * 60 * 1_000_000;

/// Settings after merging the command line over the active context.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) address: String,
    pub(super) transport: TransportKind,
    pub(super) protocol: Protocol,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
    pub(super) token: Option<String>,
    pub(super) token_name: Option<String>,
    pub(super) reconnect_retries: u32,
    pub(super) reconnect_interval: Duration,
}

pub(super) fn quic_options(global: &GlobalArgs) -> Result<QuicOptions, CliError> {
    let defaults = QuicOptions::default();
    let response_buffer_size = match global.quic_response_buffer_size {
        Some(size) => usize::try_from(size).map_err(|_| {
            CliError::usage(format!("--quic-response-buffer-size {size} is too large"))
        })?,
        None => defaults.response_buffer_size,
    };
    let datagram_send_buffer_size = match global.quic_datagram_send_buffer_size {
        Some(size) => usize::try_from(size).map_err(|_| {
            CliError::usage(format!(
                "--quic-datagram-send-buffer-size {size} is too large"
            ))
        })?,
        None => defaults.datagram_send_buffer_size,
    };
    if global.quic_ca_file.is_some() && !global.quic_validate_certificate {
        return Err(CliError::usage(
            "--quic-ca-file needs --quic-validate-certificate",
        ));
    }
    Ok(QuicOptions {
        server_name: global
            .quic_server_name
            .clone()
            .unwrap_or(defaults.server_name),
        client_address: global.quic_client_address.clone(),
        validate_certificate: global.quic_validate_certificate,
        ca_file: global.quic_ca_file.clone(),
        response_buffer_size,
        keep_alive_interval: global
            .quic_keep_alive_interval
            .map_or(defaults.keep_alive_interval, milliseconds),
        max_idle_timeout: global
            .quic_max_idle_timeout
            .map_or(defaults.max_idle_timeout, milliseconds),
        max_concurrent_bidi_streams: global
            .quic_max_concurrent_bidi_streams
            .unwrap_or(defaults.max_concurrent_bidi_streams),
        datagram_send_buffer_size,
        initial_mtu: global.quic_initial_mtu.unwrap_or(defaults.initial_mtu),
        send_window: global.quic_send_window.unwrap_or(defaults.send_window),
        receive_window: global
            .quic_receive_window
            .unwrap_or(defaults.receive_window),
    })
}

pub(super) fn websocket_options(global: &GlobalArgs) -> Result<WebSocketOptions, CliError> {
    let tls = if global.websocket_tls_enabled {
        let defaults = WebSocketOptions::default_tls();
        Some(TlsOptions {
            domain: global.websocket_tls_domain.clone(),
            ca_file: global.websocket_tls_ca_file.clone(),
            validate_certificate: global
                .websocket_tls_validate_certificate
                .unwrap_or(defaults.validate_certificate),
        })
    } else if global.websocket_tls_domain.is_some()
        || global.websocket_tls_ca_file.is_some()
        || global.websocket_tls_validate_certificate.is_some()
    {
        return Err(CliError::usage(
            "--websocket-tls-domain, --websocket-tls-ca-file and \
             --websocket-tls-validate-certificate need --websocket-tls-enabled",
        ));
    } else {
        None
    };
    Ok(WebSocketOptions {
        tls,
        ..WebSocketOptions::default()
    })
}

/// The address and transport of `--http-api-url`: `http://host:port` (port 80 by default), or
/// `https://host:port` (443), validated against the system's roots with the URL's host as name.
fn http_endpoint(url: &str) -> Result<(String, TransportKind), CliError> {
    let invalid = || {
        CliError::usage(format!(
            "--http-api-url {url:?}: expected http://host:port or https://host:port"
        ))
    };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        return Err(invalid());
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(invalid());
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.ends_with(':') && port.parse::<u16>().is_ok());
    let address = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let tls = tls.then_some(TlsOptions {
        domain: None,
        ca_file: None,
        validate_certificate: true,
    });
    Ok((address, TransportKind::Http(HttpOptions { tls })))
}

pub(super) fn settings(global: &GlobalArgs, context: ContextConfig) -> Result<Settings, CliError> {
    let transport = global
        .transport
        .clone()
        .or(context.transport)
        .unwrap_or_else(|| "tcp".to_owned());
    if global
        .encryption_key
        .as_deref()
        .is_some_and(|key| !key.is_empty())
    {
        return Err(CliError::usage(
            "client-side payload encryption (--encryption-key) is not supported yet",
        ));
    }
    let (address, transport, reconnect_retries, reconnect_interval) = match transport.as_str() {
        "tcp" => {
            let tls = global.tcp_tls_enabled || context.tcp_tls_enabled.unwrap_or(false);
            let transport = if tls {
                TransportKind::TcpTls(TlsOptions {
                    domain: global.tcp_tls_domain.clone(),
                    ca_file: global.tcp_tls_ca_file.clone(),
                    validate_certificate: global.tcp_tls_validate_certificate.unwrap_or(true),
                })
            } else {
                if global.tcp_tls_domain.is_some()
                    || global.tcp_tls_ca_file.is_some()
                    || global.tcp_tls_validate_certificate.is_some()
                {
                    return Err(CliError::usage(
                        "--tcp-tls-domain, --tcp-tls-ca-file and --tcp-tls-validate-certificate \
                         need --tcp-tls-enabled",
                    ));
                }
                TransportKind::Tcp
            };
            let address = global
                .tcp_server_address
                .clone()
                .or(context.tcp_server_address)
                .unwrap_or_else(|| DEFAULT_TCP_ADDRESS.to_owned());
            let interval = parse_interval(
                "tcp-reconnection-interval",
                global.tcp_reconnection_interval.as_ref(),
            )?;
            let retries = global.tcp_reconnection_max_retries.unwrap_or(3);
            (address, transport, retries, interval)
        }
        "quic" => {
            let address = global
                .quic_server_address
                .clone()
                .or(context.quic_server_address)
                .unwrap_or_else(|| DEFAULT_QUIC_ADDRESS.to_owned());
            let interval = parse_interval(
                "quic-reconnection-interval",
                global.quic_reconnection_interval.as_ref(),
            )?;
            let retries = global.quic_reconnection_max_retries.unwrap_or(3);
            (
                address,
                TransportKind::Quic(quic_options(global)?),
                retries,
                interval,
            )
        }
        "ws" | "websocket" => {
            let address = global
                .websocket_server_address
                .clone()
                .unwrap_or_else(|| DEFAULT_WEBSOCKET_ADDRESS.to_owned());
            let interval = parse_interval(
                "websocket-reconnection-interval",
                global.websocket_reconnection_interval.as_ref(),
            )?;
            let retries = global.websocket_reconnection_max_retries.unwrap_or(3);
            (
                address,
                TransportKind::WebSocket(websocket_options(global)?),
                retries,
                interval,
            )
        }
        "http" => {
            let url = global
                .http_api_url
                .clone()
                .or(context.http_api_url)
                .unwrap_or_else(|| "http://localhost:3000".to_owned());
            let (address, transport) = http_endpoint(&url)?;
            // Upstream's --http-retries counts retries of one request; here it bounds the
            // reconnection attempts, as the other transports' retry flags do.
            let retries = global.http_retries.unwrap_or(3);
            (address, transport, retries, Duration::from_millis(500))
        }
        other => {
            return Err(CliError::usage(format!(
                "transport '{other}' is not supported by this CLI (use tcp, quic, ws or http)"
            )));
        }
    };
    Ok(Settings {
        address,
        transport,
        protocol: global.protocol.unwrap_or_default(),
        username: global.username.clone().or(context.username),
        password: global.password.clone().or(context.password),
        token: global.token.clone().or(context.token),
        token_name: global.token_name.clone().or(context.token_name),
        reconnect_retries,
        reconnect_interval,
    })
}

pub(super) fn client_config(settings: &Settings) -> ClientConfig {
    ClientConfig {
        address: settings.address.clone(),
        transport: settings.transport.clone(),
        protocol: settings.protocol,
        heartbeat_interval: None,
        reconnect: ReconnectPolicy {
            enabled: true,
            max_attempts: Some(settings.reconnect_retries + 1),
            initial_backoff: settings.reconnect_interval,
            max_backoff: settings.reconnect_interval,
        },
        ..ClientConfig::default()
    }
}

pub(super) fn client_for(settings: &Settings) -> Result<Client, CliError> {
    Ok(Client::new(client_config(settings))?)
}

pub(super) fn read_secret(prompt: &str) -> Result<String, CliError> {
    if std::io::stdin().is_terminal() {
        rpassword::prompt_password(prompt).map_err(CliError::from)
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Ok(line.trim_end_matches(['\n', '\r']).to_owned())
    }
}

pub(super) enum Login {
    UsernamePassword(String, String),
    Token(String),
    Session(String),
}

pub(super) fn resolve_login(
    settings: &Settings,
    home: &Home,
    use_session: bool,
) -> Result<Login, CliError> {
    if use_session && let Some(token) = home.session_token(&settings.address) {
        return Ok(Login::Session(token));
    }
    if let Some(name) = &settings.token_name {
        return Ok(Login::Token(home.stored_token(&settings.address, name)?));
    }
    if let Some(token) = &settings.token {
        return Ok(Login::Token(token.clone()));
    }
    if let Some(username) = &settings.username {
        let password = match &settings.password {
            Some(password) => password.clone(),
            None => read_secret("Password: ")?,
        };
        return Ok(Login::UsernamePassword(username.clone(), password));
    }
    if let (Ok(username), Ok(password)) = (
        std::env::var("IGGY_USERNAME"),
        std::env::var("IGGY_PASSWORD"),
    ) {
        return Ok(Login::UsernamePassword(username, password));
    }
    Err(CliError::auth(
        "missing iggy server credentials: use -u/--username (and -p/--password), -t/--token, \
         -n/--token-name, `iggy login`, or IGGY_USERNAME and IGGY_PASSWORD",
    ))
}

/// The login context only for what the server said: a connection or certificate failure is
/// not a login problem and reads better on its own.
pub(super) fn login_error(error: rill_sdk::Error, context: String) -> CliError {
    if error.server_code().is_some() {
        CliError::from(error).context(context)
    } else {
        CliError::from(error)
    }
}

pub(super) async fn login(
    client: &Client,
    login: &Login,
    settings: &Settings,
    home: &Home,
) -> Result<(), CliError> {
    match login {
        Login::UsernamePassword(username, password) => {
            client.login_user(username, password).await.map_err(|e| {
                login_error(
                    e,
                    format!("Problem with server login for username: {username}"),
                )
            })?;
        }
        Login::Token(token) => {
            client
                .login_with_personal_access_token(token)
                .await
                .map_err(|e| login_error(e, "Problem with server login with token".into()))?;
        }
        Login::Session(token) => {
            if let Err(error) = client.login_with_personal_access_token(token).await {
                if matches!(
                    error.server_code(),
                    Some(
                        ErrorCode::Unauthenticated
                            | ErrorCode::ResourceNotFound
                            | ErrorCode::PersonalAccessTokenExpired
                    )
                ) {
                    home.delete_session(&settings.address);
                    return Err(CliError::auth(format!(
                        "Login session expired for Iggy server: {}, please login again or use other authentication method",
                        settings.address
                    )));
                }
                return Err(error.into());
            }
        }
    }
    Ok(())
}

pub(super) async fn login_command(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
    args: LoginArgs,
) -> Result<(), CliError> {
    let expiry = parse_expiry(&args.expiry, DEFAULT_SESSION_EXPIRY_MICROS)?;
    let tokens = client.get_personal_access_tokens().await?;
    if tokens.iter().any(|t| t.name.as_str() == SESSION_TOKEN_NAME) {
        client
            .delete_personal_access_token(SESSION_TOKEN_NAME)
            .await?;
    }
    let token = client
        .create_personal_access_token(SESSION_TOKEN_NAME, expiry)
        .await?;
    home.store_session(&settings.address, token.token.as_str())?;
    printer.info(format!(
        "Successfully logged into Iggy server {}",
        settings.address
    ));
    Ok(())
}

pub(super) async fn logout_command(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
) -> Result<(), CliError> {
    client
        .delete_personal_access_token(SESSION_TOKEN_NAME)
        .await?;
    home.delete_session(&settings.address);
    printer.info(format!(
        "Successfully logged out from Iggy server {}",
        settings.address
    ));
    Ok(())
}

#[cfg(test)]
mod tests;
