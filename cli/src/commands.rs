//! Every command: resolve settings and credentials, connect, run, print.

use crate::args::*;
use crate::context::{
    ContextConfig, DEFAULT_CONTEXT, Home, SESSION_TOKEN_NAME, validate_context_name,
};
use crate::error::CliError;
use crate::output::{Printer, table};
use crate::util::*;
use bytes::Bytes;
use rill_core::message::{MessageIter, OutgoingMessage};
use rill_sdk::config::{
    ClientConfig, DEFAULT_QUIC_ADDRESS, DEFAULT_TCP_ADDRESS, QuicOptions, ReconnectPolicy,
    TlsOptions, TransportKind,
};
use rill_sdk::message::random_message_id;
use rill_sdk::types::*;
use rill_sdk::{
    Client, Header, HeaderValue, Message, SendMessage, SnapshotCompression, SnapshotType,
    TopicOptions, parse_identifier,
};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

/// Largest number of messages sent in one SendMessages when reading standard input.
const SEND_BATCH_MESSAGES: usize = 1000;
/// Default login session length, as the official CLI (15 minutes).
const DEFAULT_SESSION_EXPIRY_MICROS: u64 = 15 * 60 * 1_000_000;

fn id(text: &str) -> Result<Identifier, CliError> {
    parse_identifier(text).map_err(CliError::from)
}

/// Settings after merging the command line over the active context.
#[derive(Debug)]
struct Settings {
    address: String,
    transport: TransportKind,
    username: Option<String>,
    password: Option<String>,
    token: Option<String>,
    token_name: Option<String>,
    reconnect_retries: u32,
    reconnect_interval: Duration,
}

fn parse_interval(flag: &str, value: Option<&String>) -> Result<Duration, CliError> {
    let value = value.map_or("1s", |v| v.as_str());
    humantime::parse_duration(value.trim_matches('"'))
        .map_err(|e| CliError::usage(format!("invalid --{flag}: {e}")))
}

/// Upstream's QUIC durations are milliseconds; 0 disables.
fn milliseconds(value: u64) -> Option<Duration> {
    (value > 0).then(|| Duration::from_millis(value))
}

fn quic_options(global: &GlobalArgs) -> Result<QuicOptions, CliError> {
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

fn settings(global: &GlobalArgs, context: ContextConfig) -> Result<Settings, CliError> {
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
        other => {
            return Err(CliError::usage(format!(
                "transport '{other}' is not supported by this CLI (use tcp or quic)"
            )));
        }
    };
    Ok(Settings {
        address,
        transport,
        username: global.username.clone().or(context.username),
        password: global.password.clone().or(context.password),
        token: global.token.clone().or(context.token),
        token_name: global.token_name.clone().or(context.token_name),
        reconnect_retries,
        reconnect_interval,
    })
}

fn client_config(settings: &Settings) -> ClientConfig {
    ClientConfig {
        address: settings.address.clone(),
        transport: settings.transport.clone(),
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

fn client_for(settings: &Settings) -> Result<Client, CliError> {
    Ok(Client::new(client_config(settings))?)
}

fn read_secret(prompt: &str) -> Result<String, CliError> {
    if std::io::stdin().is_terminal() {
        rpassword::prompt_password(prompt).map_err(CliError::from)
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Ok(line.trim_end_matches(['\n', '\r']).to_owned())
    }
}

enum Login {
    UsernamePassword(String, String),
    Token(String),
    Session(String),
}

fn resolve_login(settings: &Settings, home: &Home, use_session: bool) -> Result<Login, CliError> {
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
fn login_error(error: rill_sdk::Error, context: String) -> CliError {
    if error.server_code().is_some() {
        CliError::from(error).context(context)
    } else {
        CliError::from(error)
    }
}

async fn login(
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

pub async fn run(global: GlobalArgs, command: Command) -> Result<(), CliError> {
    let printer = Printer {
        quiet: global.quiet,
        json: global.json,
    };
    let home = Home::locate();
    if let Command::Context(action) = command {
        return run_context(&printer, &home, action);
    }
    let settings = settings(&global, home.active_context()?)?;
    if let Some(path) = &global.debug
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(file, "command: {command:?}\nserver: {}", settings.address);
    }
    let client = client_for(&settings)?;
    let needs_login = !matches!(command, Command::Ping(_));
    let is_login_command = matches!(command, Command::Login(_));
    if is_login_command && home.session_token(&settings.address).is_some() {
        printer.info(format!(
            "Already logged into Iggy server {}",
            settings.address
        ));
        return Ok(());
    }
    if matches!(command, Command::Logout) && home.session_token(&settings.address).is_none() {
        printer.info(format!("Not logged into Iggy server {}", settings.address));
        return Ok(());
    }
    if needs_login {
        let credentials = resolve_login(&settings, &home, !is_login_command)?;
        login(&client, &credentials, &settings, &home).await?;
    }
    let result = execute(&printer, &client, &settings, &home, command).await;
    client.shutdown().await;
    result
}

fn run_context(printer: &Printer, home: &Home, action: ContextAction) -> Result<(), CliError> {
    match action {
        ContextAction::List(list) => {
            let active = home.active_context_name();
            let contexts = home.contexts()?;
            let rows = contexts
                .keys()
                .map(|name| {
                    vec![
                        if *name == active {
                            "*".to_owned()
                        } else {
                            String::new()
                        },
                        name.clone(),
                    ]
                })
                .collect();
            let json = json!(
                contexts
                    .keys()
                    .map(|name| json!({"name": name, "active": *name == active}))
                    .collect::<Vec<_>>()
            );
            printer.rows(list.list_mode, &["Active", "Name"], rows, json);
        }
        ContextAction::Use { context_name } => {
            if !home.contexts()?.contains_key(&context_name) {
                return Err(CliError::not_found(format!(
                    "context '{context_name}' does not exist"
                )));
            }
            home.set_active_context(&context_name)?;
            printer.info(format!("active context set to '{context_name}'"));
        }
        ContextAction::Create(create) => {
            let name = create.context_name;
            validate_context_name(&name)?;
            if name == DEFAULT_CONTEXT {
                return Err(CliError::usage(format!(
                    "cannot create a context named '{DEFAULT_CONTEXT}' - it is reserved"
                )));
            }
            let mut contexts = home.contexts()?;
            if contexts.contains_key(&name) {
                return Err(CliError::usage(format!("context '{name}' already exists")));
            }
            contexts.insert(
                name.clone(),
                ContextConfig {
                    username: create.username,
                    password: create.password,
                    token: create.token,
                    token_name: create.token_name,
                    transport: create.transport,
                    tcp_server_address: create.tcp_server_address,
                    tcp_tls_enabled: create.tcp_tls_enabled,
                    quic_server_address: create.quic_server_address,
                    http_api_url: create.http_api_url,
                    extra: Default::default(),
                },
            );
            home.save_contexts(&contexts)?;
            printer.info(format!("context '{name}' created successfully"));
        }
        ContextAction::Delete { context_name } => {
            if context_name == DEFAULT_CONTEXT {
                return Err(CliError::usage(format!(
                    "cannot delete the '{DEFAULT_CONTEXT}' context"
                )));
            }
            let mut contexts = home.contexts()?;
            if contexts.remove(&context_name).is_none() {
                return Err(CliError::not_found(format!(
                    "context '{context_name}' not found"
                )));
            }
            home.save_contexts(&contexts)?;
            if home.active_context_name() == context_name {
                home.set_active_context(DEFAULT_CONTEXT)?;
            }
            printer.info(format!("context '{context_name}' deleted successfully"));
        }
    }
    Ok(())
}

// ---- JSON views of responses ------------------------------------------------------------

fn stream_json(stream: &StreamInfo) -> Value {
    json!({"id": stream.id, "name": stream.name.as_str(), "created_at": stream.created_at,
        "size_bytes": stream.size_bytes, "messages_count": stream.messages_count, "topics_count": stream.topics_count})
}

fn topic_json(topic: &TopicInfo) -> Value {
    json!({"id": topic.id, "name": topic.name.as_str(), "created_at": topic.created_at,
        "partitions_count": topic.partitions_count, "message_expiry": topic.message_expiry,
        "compression_algorithm": compression_name(topic.compression_algorithm),
        "max_topic_size": topic.max_topic_size, "replication_factor": topic.replication_factor,
        "size_bytes": topic.size_bytes, "messages_count": topic.messages_count})
}

fn partition_json(partition: &PartitionInfo) -> Value {
    json!({"id": partition.id, "created_at": partition.created_at, "segments_count": partition.segments_count,
        "current_offset": partition.current_offset, "size_bytes": partition.size_bytes, "messages_count": partition.messages_count})
}

fn group_json(group: &ConsumerGroupInfo) -> Value {
    json!({"id": group.id, "name": group.name.as_str(), "partitions_count": group.partitions_count, "members_count": group.members_count})
}

fn user_json(user: &UserInfo) -> Value {
    json!({"id": user.id, "username": user.username.as_str(), "created_at": user.created_at, "status": status_name(user.status)})
}

fn client_json(client: &ClientInfo) -> Value {
    json!({"client_id": client.client_id, "user_id": user_id_value(client.user_id), "transport": transport_name(client.transport),
        "address": client.address, "consumer_groups_count": client.consumer_groups_count})
}

fn permissions_json(permissions: &Option<Permissions>) -> Value {
    let Some(permissions) = permissions else {
        return Value::Null;
    };
    let g = &permissions.global;
    json!({
        "global": {"manage_servers": g.manage_servers, "read_servers": g.read_servers, "manage_users": g.manage_users,
            "read_users": g.read_users, "manage_streams": g.manage_streams, "read_streams": g.read_streams,
            "manage_topics": g.manage_topics, "read_topics": g.read_topics, "poll_messages": g.poll_messages,
            "send_messages": g.send_messages},
        "streams": permissions.streams.iter().map(|s| json!({"stream_id": s.stream_id, "manage_stream": s.manage_stream,
            "read_stream": s.read_stream, "manage_topics": s.manage_topics, "read_topics": s.read_topics,
            "poll_messages": s.poll_messages, "send_messages": s.send_messages,
            "topics": s.topics.iter().map(|t| json!({"topic_id": t.topic_id, "manage_topic": t.manage_topic,
                "read_topic": t.read_topic, "poll_messages": t.poll_messages, "send_messages": t.send_messages})).collect::<Vec<_>>()
        })).collect::<Vec<_>>()
    })
}

fn compression_name(algorithm: CompressionAlgorithm) -> &'static str {
    match algorithm {
        CompressionAlgorithm::None => "none",
        CompressionAlgorithm::Gzip => "gzip",
    }
}

fn status_name(status: UserStatus) -> &'static str {
    match status {
        UserStatus::Active => "active",
        UserStatus::Inactive => "inactive",
    }
}

fn transport_name(transport: Transport) -> &'static str {
    match transport {
        Transport::Tcp => "TCP",
        Transport::Quic => "QUIC",
        Transport::Http => "HTTP",
        Transport::WebSocket => "WebSocket",
    }
}

fn user_id_value(user_id: u32) -> Value {
    if user_id == u32::MAX {
        Value::Null
    } else {
        json!(user_id)
    }
}

fn user_id_text(user_id: u32) -> String {
    if user_id == u32::MAX {
        "-".to_owned()
    } else {
        user_id.to_string()
    }
}

fn parse_compression(text: &str) -> Result<CompressionAlgorithm, CliError> {
    match text.to_ascii_lowercase().as_str() {
        "none" => Ok(CompressionAlgorithm::None),
        "gzip" => Ok(CompressionAlgorithm::Gzip),
        other => Err(CliError::usage(format!(
            "unknown compression algorithm '{other}' (none or gzip)"
        ))),
    }
}

fn user_status(status: UserStatusArg) -> UserStatus {
    match status {
        UserStatusArg::Active => UserStatus::Active,
        UserStatusArg::Inactive => UserStatus::Inactive,
    }
}

fn topic_options(
    compression: &str,
    expiry: &[String],
    max_size: &str,
    replication: u8,
) -> Result<TopicOptions, CliError> {
    Ok(TopicOptions {
        compression_algorithm: parse_compression(compression)?,
        message_expiry: parse_expiry(expiry, 0)?,
        max_topic_size: parse_size(max_size)?,
        replication_factor: replication,
    })
}

fn stream_rows(streams: &[StreamInfo]) -> Vec<Vec<String>> {
    streams
        .iter()
        .map(|s| {
            vec![
                s.id.to_string(),
                format_timestamp(s.created_at),
                s.name.to_string(),
                format_size(s.size_bytes),
                s.messages_count.to_string(),
                s.topics_count.to_string(),
            ]
        })
        .collect()
}

fn topic_rows(topics: &[TopicInfo]) -> Vec<Vec<String>> {
    topics
        .iter()
        .map(|t| {
            vec![
                t.id.to_string(),
                format_timestamp(t.created_at),
                t.name.to_string(),
                format_size(t.size_bytes),
                format_size(t.max_topic_size),
                format_expiry(t.message_expiry),
                t.messages_count.to_string(),
                t.partitions_count.to_string(),
                t.replication_factor.to_string(),
            ]
        })
        .collect()
}

const TOPIC_HEADER: [&str; 9] = [
    "ID",
    "Created",
    "Name",
    "Size (B)",
    "Max Topic Size",
    "Message Expiry (s)",
    "Messages",
    "Partitions",
    "Replication",
];

async fn execute(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
    command: Command,
) -> Result<(), CliError> {
    match command {
        Command::Stream(action) => stream_command(printer, client, action).await,
        Command::Topic(action) => topic_command(printer, client, action).await,
        Command::Partition(action) => match action {
            PartitionAction::Create {
                stream_id,
                topic_id,
                partitions_count,
            } => {
                printer.info(format!("Executing create {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
                client
                    .create_partitions(id(&stream_id)?, id(&topic_id)?, partitions_count)
                    .await?;
                printer.info(format!("Created {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
                Ok(())
            }
            PartitionAction::Delete {
                stream_id,
                topic_id,
                partitions_count,
            } => {
                printer.info(format!("Executing delete {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
                client
                    .delete_partitions(id(&stream_id)?, id(&topic_id)?, partitions_count)
                    .await?;
                printer.info(format!("Deleted {partitions_count} partitions for topic with ID: {topic_id} and stream with ID: {stream_id}"));
                Ok(())
            }
        },
        Command::Segment(SegmentAction::Delete {
            stream_id,
            topic_id,
            partition_id,
            segments_count,
        }) => {
            printer.info(format!("Executing delete {segments_count} segments for topic with ID: {topic_id}, stream with ID: {stream_id} and partition with ID: {partition_id}"));
            client
                .delete_segments(
                    id(&stream_id)?,
                    id(&topic_id)?,
                    partition_id,
                    segments_count,
                )
                .await?;
            printer.info(format!("Deleted {segments_count} segments for topic with ID: {topic_id}, stream with ID: {stream_id} and partition with ID: {partition_id}"));
            Ok(())
        }
        Command::Ping(args) => {
            printer.info("Executing ping command");
            let mut times = Vec::new();
            for sequence in 0..args.count.max(1) {
                let start = Instant::now();
                client.ping().await?;
                let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
                times.push(elapsed_ms);
                printer.info(format!(
                    "Ping sequence id: {sequence} time: {elapsed_ms:.2} ms"
                ));
                if sequence + 1 < args.count {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = times.iter().cloned().fold(0.0, f64::max);
            let avg = times.iter().sum::<f64>() / times.len() as f64;
            printer.info(format!("\nPing statistics for {} ping commands\nmin/avg/max = {min:.3}/{avg:.3}/{max:.3} ms", times.len()));
            if printer.json {
                printer.json(
                    &json!({"count": times.len(), "min_ms": min, "avg_ms": avg, "max_ms": max}),
                );
            }
            Ok(())
        }
        Command::Me => {
            printer.info("Executing me command");
            let me = client.get_me().await?;
            let mut rows = vec![
                ("Client ID", me.client_id.to_string()),
                ("User ID", user_id_text(me.user_id)),
                ("Address", me.address.clone()),
                ("Transport", transport_name(me.transport).to_owned()),
            ];
            let groups: Vec<String> = me
                .consumer_groups
                .iter()
                .map(|g| format!("{}/{}/{}", g.stream_id, g.topic_id, g.group_id))
                .collect();
            if !groups.is_empty() {
                rows.push(("Consumer groups (stream/topic/group)", groups.join(", ")));
            }
            printer.properties(rows, json!({"client_id": me.client_id, "user_id": user_id_value(me.user_id), "address": me.address,
                "transport": transport_name(me.transport), "consumer_groups": me.consumer_groups.iter().map(|g|
                json!({"stream_id": g.stream_id, "topic_id": g.topic_id, "group_id": g.group_id})).collect::<Vec<_>>()}));
            Ok(())
        }
        Command::Stats(args) => stats_command(printer, client, args).await,
        Command::Snapshot(args) => snapshot_command(printer, client, args).await,
        Command::Pat(action) => pat_command(printer, client, settings, home, action).await,
        Command::User(action) => user_command(printer, client, action).await,
        Command::Client(action) => match action {
            ClientAction::Get { client_id } => {
                printer.info(format!("Executing get client with ID: {client_id}"));
                let Some(details) = client.get_client(client_id).await? else {
                    return Err(CliError::not_found(format!(
                        "Client with ID: {client_id} was not found"
                    )));
                };
                let groups: Vec<String> = details
                    .consumer_groups
                    .iter()
                    .map(|g| format!("{}/{}/{}", g.stream_id, g.topic_id, g.group_id))
                    .collect();
                printer.properties(
                    vec![("Client ID", details.client_id.to_string()), ("User ID", user_id_text(details.user_id)),
                        ("Address", details.address.clone()), ("Transport", transport_name(details.transport).to_owned()),
                        ("Consumer Groups Count", details.consumer_groups.len().to_string()), ("Consumer Groups", groups.join(", "))],
                    json!({"client_id": details.client_id, "user_id": user_id_value(details.user_id), "address": details.address,
                        "transport": transport_name(details.transport), "consumer_groups": details.consumer_groups.iter().map(|g|
                        json!({"stream_id": g.stream_id, "topic_id": g.topic_id, "group_id": g.group_id})).collect::<Vec<_>>()}),
                );
                Ok(())
            }
            ClientAction::List(list) => {
                printer.info(
                    format!("Executing list clients in {:?} mode", list.list_mode).to_lowercase(),
                );
                let clients = client.get_clients().await?;
                let rows = clients
                    .iter()
                    .map(|c| {
                        vec![
                            c.client_id.to_string(),
                            user_id_text(c.user_id),
                            c.address.clone(),
                            transport_name(c.transport).to_owned(),
                            c.consumer_groups_count.to_string(),
                        ]
                    })
                    .collect();
                printer.rows(
                    list.list_mode,
                    &[
                        "Client ID",
                        "User ID",
                        "Address",
                        "Transport",
                        "Consumer Groups",
                    ],
                    rows,
                    json!(clients.iter().map(client_json).collect::<Vec<_>>()),
                );
                Ok(())
            }
        },
        Command::Cluster(ClusterAction::Metadata(list)) => {
            printer.info("Executing get cluster metadata");
            let metadata = client.get_cluster_metadata().await?;
            let role = |role: u8| if role == 0 { "leader" } else { "follower" };
            let status = |status: u8| {
                [
                    "healthy",
                    "starting",
                    "stopping",
                    "unreachable",
                    "maintenance",
                ]
                .get(status as usize)
                .copied()
                .unwrap_or("unknown")
            };
            let rows = metadata
                .nodes
                .iter()
                .map(|n| {
                    vec![
                        n.name.clone(),
                        n.ip.clone(),
                        n.tcp_port.to_string(),
                        n.quic_port.to_string(),
                        n.http_port.to_string(),
                        n.websocket_port.to_string(),
                        role(n.role).to_owned(),
                        status(n.status).to_owned(),
                    ]
                })
                .collect();
            printer.info(format!("Cluster name: {}", metadata.name));
            printer.rows(list.list_mode, &["Name", "IP", "TCP", "QUIC", "HTTP", "WebSocket", "Role", "Status"], rows,
                json!({"name": metadata.name, "nodes": metadata.nodes.iter().map(|n| json!({"name": n.name, "ip": n.ip, "tcp_port": n.tcp_port,
                    "quic_port": n.quic_port, "http_port": n.http_port, "websocket_port": n.websocket_port, "role": role(n.role),
                    "status": status(n.status)})).collect::<Vec<_>>()}));
            Ok(())
        }
        Command::ConsumerGroup(action) => group_command(printer, client, action).await,
        Command::ConsumerOffset(action) => offset_command(printer, client, action).await,
        Command::Message(action) => match action {
            MessageAction::Send(args) => send_command(printer, client, args).await,
            MessageAction::Poll(args) => poll_command(printer, client, args).await,
            MessageAction::Flush {
                fsync,
                stream_id,
                topic_id,
                partition_id,
            } => {
                printer.info(format!("Executing flush messages for partition with ID: {partition_id} in topic with ID: {topic_id} and stream with ID: {stream_id}"));
                client
                    .flush_unsaved_buffer(id(&stream_id)?, id(&topic_id)?, partition_id, fsync)
                    .await?;
                printer.info(format!("Flushed messages from partition with ID: {partition_id}, topic with ID: {topic_id} and stream with ID: {stream_id} (fsync: {fsync})"));
                Ok(())
            }
        },
        Command::Login(args) => {
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
        Command::Logout => {
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
        Command::Context(_) | Command::Completion(_) => unreachable!("handled before connecting"),
    }
}

async fn stream_command(
    printer: &Printer,
    client: &Client,
    action: StreamAction,
) -> Result<(), CliError> {
    match action {
        StreamAction::Create { name, .. } => {
            printer.info(format!(
                "Executing create stream with name: {name} and ID auto incremented"
            ));
            let stream = client.create_stream(&name).await?;
            printer.info(format!(
                "Stream with name: {name} and ID: {} created",
                stream.stream.id
            ));
            if printer.json {
                printer.json(&stream_json(&stream.stream));
            }
        }
        StreamAction::Delete { stream_id } => {
            printer.info(format!("Executing delete stream with ID: {stream_id}"));
            client.delete_stream(id(&stream_id)?).await?;
            printer.info(format!("Stream with ID: {stream_id} deleted"));
        }
        StreamAction::Update { stream_id, name } => {
            printer.info(format!(
                "Executing update stream with ID: {stream_id} and name: {name}"
            ));
            client.update_stream(id(&stream_id)?, &name).await?;
            printer.info(format!("Stream with ID: {stream_id} updated name: {name}"));
        }
        StreamAction::Get { stream_id } => {
            printer.info(format!("Executing get stream with ID: {stream_id}"));
            let Some(details) = client.get_stream(id(&stream_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "Stream with ID: {stream_id} was not found"
                )));
            };
            let s = &details.stream;
            let mut json = stream_json(s);
            json["topics"] = json!(details.topics.iter().map(topic_json).collect::<Vec<_>>());
            printer.properties(
                vec![
                    ("Stream ID", s.id.to_string()),
                    ("Created", format_timestamp(s.created_at)),
                    ("Stream name", s.name.to_string()),
                    ("Stream size", format_size(s.size_bytes)),
                    ("Stream message count", s.messages_count.to_string()),
                    ("Stream topics count", s.topics_count.to_string()),
                ],
                json,
            );
        }
        StreamAction::List(list) => {
            printer.info(
                format!("Executing list streams in {:?} mode", list.list_mode).to_lowercase(),
            );
            let streams = client.get_streams().await?;
            if streams.is_empty() && printer.mode(list.list_mode) != ListMode::Json {
                printer.info("No streams found!");
                return Ok(());
            }
            printer.rows(
                list.list_mode,
                &["ID", "Created", "Name", "Size (B)", "Messages", "Topics"],
                stream_rows(&streams),
                json!(streams.iter().map(stream_json).collect::<Vec<_>>()),
            );
        }
        StreamAction::Purge { stream_id } => {
            printer.info(format!("Executing purge stream with ID: {stream_id}"));
            client.purge_stream(id(&stream_id)?).await?;
            printer.info(format!("Stream with ID: {stream_id} purged"));
        }
    }
    Ok(())
}

async fn topic_command(
    printer: &Printer,
    client: &Client,
    action: TopicAction,
) -> Result<(), CliError> {
    match action {
        TopicAction::Create {
            max_topic_size,
            replication_factor,
            stream_id,
            name,
            partitions_count,
            compression_algorithm,
            message_expiry,
            ..
        } => {
            let options = topic_options(
                &compression_algorithm,
                &message_expiry,
                &max_topic_size,
                replication_factor,
            )?;
            printer.info(format!("Executing create topic with name: {name}, partitions count: {partitions_count}, compression algorithm: {compression_algorithm}, message expiry: {}, max topic size: {max_topic_size}, replication factor: {replication_factor} in stream with ID: {stream_id}", message_expiry.join(" ")));
            let topic = client
                .create_topic(id(&stream_id)?, &name, partitions_count, options)
                .await?;
            printer.info(format!("Topic with name: {name}, ID: {}, partitions count: {partitions_count} created in stream with ID: {stream_id}", topic.topic.id));
            if printer.json {
                printer.json(&topic_json(&topic.topic));
            }
        }
        TopicAction::Delete {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing delete topic with ID: {topic_id} in stream with ID: {stream_id}"
            ));
            client.delete_topic(id(&stream_id)?, id(&topic_id)?).await?;
            printer.info(format!(
                "Topic with ID: {topic_id} in stream with ID: {stream_id} deleted"
            ));
        }
        TopicAction::Update {
            max_topic_size,
            replication_factor,
            stream_id,
            topic_id,
            name,
            compression_algorithm,
            message_expiry,
        } => {
            let options = topic_options(
                &compression_algorithm,
                &message_expiry,
                &max_topic_size,
                replication_factor,
            )?;
            printer.info(format!("Executing update topic with ID: {topic_id}, name: {name} in stream with ID: {stream_id}"));
            client
                .update_topic(id(&stream_id)?, id(&topic_id)?, &name, options)
                .await?;
            printer.info(format!(
                "Topic with ID: {topic_id} updated name: {name} in stream with ID: {stream_id}"
            ));
        }
        TopicAction::Get {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing get topic with ID: {topic_id} from stream with ID: {stream_id}"
            ));
            let Some(details) = client.get_topic(id(&stream_id)?, id(&topic_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "Topic with ID: {topic_id} in stream with ID: {stream_id} was not found"
                )));
            };
            let t = &details.topic;
            let mut json = topic_json(t);
            json["partitions"] = json!(
                details
                    .partitions
                    .iter()
                    .map(partition_json)
                    .collect::<Vec<_>>()
            );
            printer.properties(
                vec![
                    ("Topic id", t.id.to_string()),
                    ("Created", format_timestamp(t.created_at)),
                    ("Topic name", t.name.to_string()),
                    ("Topic size", format_size(t.size_bytes)),
                    ("Max topic size", format_size(t.max_topic_size)),
                    ("Message expiry", format_expiry(t.message_expiry)),
                    (
                        "Compression",
                        compression_name(t.compression_algorithm).to_owned(),
                    ),
                    ("Topic message count", t.messages_count.to_string()),
                    ("Partitions count", t.partitions_count.to_string()),
                    ("Replication factor", t.replication_factor.to_string()),
                ],
                json,
            );
            if !printer.json && !printer.quiet && !details.partitions.is_empty() {
                let rows = details
                    .partitions
                    .iter()
                    .map(|p| {
                        vec![
                            p.id.to_string(),
                            format_timestamp(p.created_at),
                            p.segments_count.to_string(),
                            p.current_offset.to_string(),
                            format_size(p.size_bytes),
                            p.messages_count.to_string(),
                        ]
                    })
                    .collect();
                println!(
                    "{}",
                    table(
                        &[
                            "Partition ID",
                            "Created",
                            "Segments",
                            "Current Offset",
                            "Size",
                            "Messages"
                        ],
                        rows
                    )
                );
            }
        }
        TopicAction::List { stream_id, list } => {
            printer.info(
                format!(
                    "Executing list topics from stream with ID: {stream_id} in {:?} mode",
                    list.list_mode
                )
                .to_lowercase(),
            );
            let topics = client.get_topics(id(&stream_id)?).await?;
            if topics.is_empty() && printer.mode(list.list_mode) != ListMode::Json {
                printer.info(format!("No topics found in stream with ID: {stream_id}"));
                return Ok(());
            }
            printer.rows(
                list.list_mode,
                &TOPIC_HEADER,
                topic_rows(&topics),
                json!(topics.iter().map(topic_json).collect::<Vec<_>>()),
            );
        }
        TopicAction::Purge {
            stream_id,
            topic_id,
        } => {
            printer.info(format!(
                "Executing purge topic with ID: {topic_id} in stream with ID: {stream_id}"
            ));
            client.purge_topic(id(&stream_id)?, id(&topic_id)?).await?;
            printer.info(format!(
                "Topic with ID: {topic_id} in stream with ID: {stream_id} purged"
            ));
        }
    }
    Ok(())
}

async fn stats_command(
    printer: &Printer,
    client: &Client,
    args: StatsArgs,
) -> Result<(), CliError> {
    printer.info("Executing get stats");
    let s = client.get_stats().await?;
    let json = json!({
        "process_id": s.process_id, "cpu_usage": s.cpu_usage, "total_cpu_usage": s.total_cpu_usage,
        "memory_usage": s.memory_usage, "total_memory": s.total_memory, "available_memory": s.available_memory,
        "run_time": s.run_time, "start_time": s.start_time, "read_bytes": s.read_bytes, "written_bytes": s.written_bytes,
        "messages_size_bytes": s.messages_size_bytes, "streams_count": s.streams_count, "topics_count": s.topics_count,
        "partitions_count": s.partitions_count, "segments_count": s.segments_count, "messages_count": s.messages_count,
        "clients_count": s.clients_count, "consumer_groups_count": s.consumer_groups_count, "hostname": s.hostname,
        "os_name": s.os_name, "os_version": s.os_version, "kernel_version": s.kernel_version,
        "iggy_server_version": s.iggy_server_version, "iggy_server_semver": s.iggy_server_semver,
        "threads_count": s.threads_count, "free_disk_space": s.free_disk_space, "total_disk_space": s.total_disk_space,
    });
    let rows = vec![
        ("Iggy Server PID", s.process_id.to_string()),
        ("Iggy Server CPU Usage", format!("{:.4}%", s.cpu_usage)),
        ("Total CPU Usage", format!("{:.4}%", s.total_cpu_usage)),
        ("Iggy Server Memory Usage", format_size(s.memory_usage)),
        ("Total Memory (RAM)", format_size(s.total_memory)),
        ("Available Memory (RAM)", format_size(s.available_memory)),
        (
            "Iggy Server Run Time",
            humantime::format_duration(Duration::from_secs(s.run_time / 1_000_000)).to_string(),
        ),
        ("Start Time", format_timestamp(s.start_time)),
        ("Read Bytes", format_size(s.read_bytes)),
        ("Written Bytes", format_size(s.written_bytes)),
        ("Messages Size Bytes", format_size(s.messages_size_bytes)),
        ("Streams Count", s.streams_count.to_string()),
        ("Topics Count", s.topics_count.to_string()),
        ("Partitions Count", s.partitions_count.to_string()),
        ("Segments Count", s.segments_count.to_string()),
        ("Message Count", s.messages_count.to_string()),
        ("Clients Count", s.clients_count.to_string()),
        ("Consumer Groups Count", s.consumer_groups_count.to_string()),
        ("Threads Count", s.threads_count.to_string()),
        ("Free Disk Space", format_size(s.free_disk_space)),
        ("Total Disk Space", format_size(s.total_disk_space)),
        ("OS Name", s.os_name.clone()),
        ("OS Version", s.os_version.clone()),
        ("Kernel Version", s.kernel_version.clone()),
        ("Iggy Server Version", s.iggy_server_version.clone()),
        ("Hostname", s.hostname.clone()),
    ];
    let output = if printer.json {
        StatsOutput::Json
    } else {
        args.output
    };
    match output {
        StatsOutput::Table => printer.properties(rows, json),
        StatsOutput::List => {
            if !printer.quiet {
                for (name, value) in rows {
                    println!("{name}|{value}");
                }
            }
        }
        StatsOutput::Json => printer.json(&json),
        StatsOutput::Toml => {
            let text = toml::to_string(&json).map_err(|e| CliError::other(e.to_string()))?;
            print!("{text}");
        }
    }
    Ok(())
}

async fn snapshot_command(
    printer: &Printer,
    client: &Client,
    args: SnapshotArgs,
) -> Result<(), CliError> {
    let compression = match args.compression.as_deref().unwrap_or("deflated") {
        "stored" | "none" => SnapshotCompression::Stored,
        "deflated" => SnapshotCompression::Deflated,
        "bzip2" => SnapshotCompression::Bzip2,
        "zstd" => SnapshotCompression::Zstd,
        "lzma" => SnapshotCompression::Lzma,
        "xz" => SnapshotCompression::Xz,
        other => {
            return Err(CliError::usage(format!(
                "unknown snapshot compression '{other}'"
            )));
        }
    };
    let names = args
        .snapshot_types
        .unwrap_or_else(|| vec!["all".to_owned()]);
    let mut types = Vec::new();
    for name in &names {
        types.push(match name.as_str() {
            "filesystem_overview" => SnapshotType::FilesystemOverview,
            "process_list" => SnapshotType::ProcessList,
            "resource_usage" => SnapshotType::ResourceUsage,
            "test" => SnapshotType::Test,
            "server_logs" => SnapshotType::ServerLogs,
            "server_config" => SnapshotType::ServerConfig,
            "all" => SnapshotType::All,
            other => return Err(CliError::usage(format!("unknown snapshot type '{other}'"))),
        });
    }
    printer.info(format!(
        "Executing snapshot command with types: {}",
        names.join(", ")
    ));
    let archive = client.get_snapshot(compression, &types).await?;
    let directory = std::path::PathBuf::from(args.out_dir.unwrap_or_else(|| ".".to_owned()));
    std::fs::create_dir_all(&directory)?;
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let path = directory.join(format!("snapshot_{seconds}.zip"));
    std::fs::write(&path, &archive)?;
    printer.info(format!(
        "Snapshot file {} of size {} saved",
        path.display(),
        format_size(archive.len() as u64)
    ));
    if printer.json {
        printer.json(&json!({"path": path.display().to_string(), "size_bytes": archive.len()}));
    }
    Ok(())
}

async fn pat_command(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
    action: PatAction,
) -> Result<(), CliError> {
    match action {
        PatAction::Create {
            store_token,
            name,
            expiry,
        } => {
            let expiry_micros = parse_expiry(&expiry, u64::MAX)?;
            if store_token && expiry_micros != u64::MAX {
                return Err(CliError::usage(
                    "--store-token can only be used for tokens without expiry",
                ));
            }
            printer.info(format!(
                "Executing create personal access token with name: {name}"
            ));
            let token = client
                .create_personal_access_token(&name, expiry_micros)
                .await?;
            if store_token {
                home.store_token(&settings.address, &name, token.token.as_str())?;
                if printer.quiet {
                    println!("{name}");
                }
                printer.info(format!(
                    "Personal access token with name: {name} and {} created and stored",
                    if expiry.is_empty() {
                        "without expiry".to_owned()
                    } else {
                        format!("expiry: {}", expiry.join(" "))
                    }
                ));
            } else if printer.json {
                printer.json(&json!({"name": name, "token": token.token.as_str()}));
            } else if printer.quiet {
                println!("{}", token.token);
            } else {
                printer.info(format!(
                    "Personal access token with name: {name} and {} created",
                    if expiry.is_empty() {
                        "without expiry".to_owned()
                    } else {
                        format!("expiry: {}", expiry.join(" "))
                    }
                ));
                printer.info(format!("Token: {}", token.token));
            }
        }
        PatAction::Delete { name } => {
            printer.info(format!(
                "Executing delete personal access tokens with name: {name}"
            ));
            client.delete_personal_access_token(&name).await?;
            home.delete_stored_token(&settings.address, &name);
            printer.info(format!("Personal access token with name: {name} deleted"));
        }
        PatAction::List(list) => {
            printer.info(
                format!(
                    "Executing list personal access tokens in {:?} mode",
                    list.list_mode
                )
                .to_lowercase(),
            );
            let tokens = client.get_personal_access_tokens().await?;
            let expiry = |at: u64| {
                if at == 0 {
                    "unlimited".to_owned()
                } else {
                    format_timestamp(at)
                }
            };
            let rows = tokens
                .iter()
                .map(|t| vec![t.name.to_string(), expiry(t.expiry_at)])
                .collect();
            printer.rows(list.list_mode, &["Name", "Token Expiry Time"], rows,
                json!(tokens.iter().map(|t| json!({"name": t.name.as_str(), "expiry_at": if t.expiry_at == 0 { Value::Null } else { json!(t.expiry_at) }})).collect::<Vec<_>>()));
        }
    }
    Ok(())
}

async fn user_command(
    printer: &Printer,
    client: &Client,
    action: UserAction,
) -> Result<(), CliError> {
    match action {
        UserAction::Create {
            username,
            password,
            user_status: status,
            global_permissions,
            stream_permissions,
        } => {
            let permissions =
                parse_permissions(global_permissions.as_deref(), stream_permissions.as_deref())?;
            printer.info(format!("Executing create user with username: {username}"));
            let user = client
                .create_user(&username, &password, user_status(status), permissions)
                .await?;
            printer.info(format!(
                "User with username: {username} and ID: {} created",
                user.user.id
            ));
            if printer.json {
                printer.json(&user_json(&user.user));
            }
        }
        UserAction::Delete { user_id } => {
            printer.info(format!("Executing delete user with ID: {user_id}"));
            client.delete_user(id(&user_id)?).await?;
            printer.info(format!("User with ID: {user_id} deleted"));
        }
        UserAction::Get { user_id } => {
            printer.info(format!("Executing get user with ID: {user_id}"));
            let Some(user) = client.get_user(id(&user_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "User with ID: {user_id} was not found"
                )));
            };
            let u = &user.user;
            let mut json = user_json(u);
            json["permissions"] = permissions_json(&user.permissions);
            let mut rows = vec![
                ("User ID", u.id.to_string()),
                ("Created", format_timestamp(u.created_at)),
                ("Status", status_name(u.status).to_owned()),
                ("Username", u.username.to_string()),
            ];
            if let Some(permissions) = &user.permissions {
                let g = &permissions.global;
                for (name, value) in [
                    ("Permission: Manage Servers", g.manage_servers),
                    ("Permission: Read Servers", g.read_servers),
                    ("Permission: Manage Users", g.manage_users),
                    ("Permission: Read Users", g.read_users),
                    ("Permission: Manage Streams", g.manage_streams),
                    ("Permission: Read Streams", g.read_streams),
                    ("Permission: Manage Topics", g.manage_topics),
                    ("Permission: Read Topics", g.read_topics),
                    ("Permission: Poll Messages", g.poll_messages),
                    ("Permission: Send Messages", g.send_messages),
                ] {
                    rows.push((name, value.to_string()));
                }
                for stream in &permissions.streams {
                    rows.push(("Stream permissions", format!("stream {}: manage_stream={} read_stream={} manage_topics={} read_topics={} poll_messages={} send_messages={} topics={}",
                        stream.stream_id, stream.manage_stream, stream.read_stream, stream.manage_topics, stream.read_topics,
                        stream.poll_messages, stream.send_messages, stream.topics.len())));
                }
            }
            printer.properties(rows, json);
        }
        UserAction::List(list) => {
            printer
                .info(format!("Executing list users in {:?} mode", list.list_mode).to_lowercase());
            let users = client.get_users().await?;
            let rows = users
                .iter()
                .map(|u| {
                    vec![
                        u.id.to_string(),
                        format_timestamp(u.created_at),
                        status_name(u.status).to_owned(),
                        u.username.to_string(),
                    ]
                })
                .collect();
            printer.rows(
                list.list_mode,
                &["ID", "Created", "Status", "Username"],
                rows,
                json!(users.iter().map(user_json).collect::<Vec<_>>()),
            );
        }
        UserAction::Name { user_id, username } => {
            printer.info(format!(
                "Executing update user with ID: {user_id} with username: {username}"
            ));
            client
                .update_user(id(&user_id)?, Some(&username), None)
                .await?;
            printer.info(format!(
                "User with ID: {user_id} updated with username: {username}"
            ));
        }
        UserAction::Status { user_id, status } => {
            printer.info(format!(
                "Executing update user with ID: {user_id} with status: {}",
                status_name(user_status(status))
            ));
            client
                .update_user(id(&user_id)?, None, Some(user_status(status)))
                .await?;
            printer.info(format!(
                "User with ID: {user_id} updated with status: {}",
                status_name(user_status(status))
            ));
        }
        UserAction::Password {
            user_id,
            current_password,
            new_password,
        } => {
            let current = match current_password {
                Some(password) => password,
                None => read_secret("Current password: ")?,
            };
            let new = match new_password {
                Some(password) => password,
                None => read_secret("New password: ")?,
            };
            printer.info(format!(
                "Executing change password for user with ID: {user_id}"
            ));
            client
                .change_password(id(&user_id)?, &current, &new)
                .await?;
            printer.info(format!("Password for user with ID: {user_id} changed"));
        }
        UserAction::Permissions {
            user_id,
            global_permissions,
            stream_permissions,
        } => {
            let permissions =
                parse_permissions(global_permissions.as_deref(), stream_permissions.as_deref())?;
            printer.info(format!(
                "Executing update permissions for user with ID: {user_id}"
            ));
            client
                .update_permissions(id(&user_id)?, permissions)
                .await?;
            printer.info(format!("Permissions for user with ID: {user_id} updated"));
        }
    }
    Ok(())
}

async fn group_command(
    printer: &Printer,
    client: &Client,
    action: ConsumerGroupAction,
) -> Result<(), CliError> {
    match action {
        ConsumerGroupAction::Create {
            stream_id,
            topic_id,
            name,
            ..
        } => {
            printer.info(format!("Executing create consumer group with name: {name} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            let group = client
                .create_consumer_group(id(&stream_id)?, id(&topic_id)?, &name)
                .await?;
            printer.info(format!("Consumer group with ID: {}, name: {name} created for stream with ID: {stream_id} and topic with ID: {topic_id}", group.group.id));
            if printer.json {
                printer.json(&group_json(&group.group));
            }
        }
        ConsumerGroupAction::Delete {
            stream_id,
            topic_id,
            group_id,
        } => {
            printer.info(format!("Executing delete consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            client
                .delete_consumer_group(id(&stream_id)?, id(&topic_id)?, id(&group_id)?)
                .await?;
            printer.info(format!("Consumer group with ID: {group_id} deleted for stream with ID: {stream_id} and topic with ID: {topic_id}"));
        }
        ConsumerGroupAction::Get {
            stream_id,
            topic_id,
            group_id,
        } => {
            printer.info(format!("Executing get consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id}"));
            let Some(details) = client
                .get_consumer_group(id(&stream_id)?, id(&topic_id)?, id(&group_id)?)
                .await?
            else {
                return Err(CliError::not_found(format!(
                    "Consumer group with ID: {group_id} for stream with ID: {stream_id} and topic with ID: {topic_id} was not found"
                )));
            };
            let g = &details.group;
            let mut json = group_json(g);
            json["members"] = json!(
                details
                    .members
                    .iter()
                    .map(|m| json!({"id": m.id, "partitions": m.partitions}))
                    .collect::<Vec<_>>()
            );
            let members: Vec<String> = details
                .members
                .iter()
                .map(|m| format!("{}: {:?}", m.id, m.partitions))
                .collect();
            printer.properties(
                vec![
                    ("Consumer group ID", g.id.to_string()),
                    ("Consumer group name", g.name.to_string()),
                    ("Partitions count", g.partitions_count.to_string()),
                    ("Members count", g.members_count.to_string()),
                    ("Members (id: partitions)", members.join(", ")),
                ],
                json,
            );
        }
        ConsumerGroupAction::List {
            stream_id,
            topic_id,
            list,
        } => {
            printer.info(format!("Executing list consumer groups for stream with ID: {stream_id} and topic with ID: {topic_id} in {:?} mode", list.list_mode).to_lowercase());
            let groups = client
                .get_consumer_groups(id(&stream_id)?, id(&topic_id)?)
                .await?;
            let rows = groups
                .iter()
                .map(|g| {
                    vec![
                        g.id.to_string(),
                        g.name.to_string(),
                        g.partitions_count.to_string(),
                        g.members_count.to_string(),
                    ]
                })
                .collect();
            printer.rows(
                list.list_mode,
                &["ID", "Name", "Partitions Count", "Members Count"],
                rows,
                json!(groups.iter().map(group_json).collect::<Vec<_>>()),
            );
        }
    }
    Ok(())
}

fn consumer(kind: ConsumerKindArg, consumer_id: &str) -> Result<Consumer, CliError> {
    Ok(match kind {
        ConsumerKindArg::Consumer => Consumer::new(id(consumer_id)?),
        ConsumerKindArg::ConsumerGroup => Consumer::group(id(consumer_id)?),
    })
}

async fn offset_command(
    printer: &Printer,
    client: &Client,
    action: ConsumerOffsetAction,
) -> Result<(), CliError> {
    match action {
        ConsumerOffsetAction::Get {
            consumer_id,
            stream_id,
            topic_id,
            partition_id,
            kind,
        } => {
            printer.info(format!("Executing get consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id}"));
            let consumer = consumer(kind, &consumer_id)?;
            let Some(offset) = client
                .get_consumer_offset(
                    &consumer,
                    id(&stream_id)?,
                    id(&topic_id)?,
                    Some(partition_id),
                )
                .await?
            else {
                return Err(CliError::not_found(format!(
                    "Consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} was not found"
                )));
            };
            printer.properties(vec![("Consumer ID", consumer_id.clone()), ("Stream ID", stream_id.clone()), ("Topic ID", topic_id.clone()),
                ("Partition ID", offset.partition_id.to_string()), ("Current offset", offset.current_offset.to_string()),
                ("Stored offset", offset.stored_offset.to_string())],
                json!({"consumer_id": consumer_id, "stream_id": stream_id, "topic_id": topic_id, "partition_id": offset.partition_id,
                    "current_offset": offset.current_offset, "stored_offset": offset.stored_offset}));
        }
        ConsumerOffsetAction::Set {
            consumer_id,
            stream_id,
            topic_id,
            partition_id,
            offset,
            kind,
        } => {
            printer.info(format!("Executing set consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} to {offset}"));
            let consumer = consumer(kind, &consumer_id)?;
            client
                .store_consumer_offset(
                    &consumer,
                    id(&stream_id)?,
                    id(&topic_id)?,
                    Some(partition_id),
                    offset,
                )
                .await?;
            printer.info(format!("Consumer offset for consumer with ID: {consumer_id} for stream with ID: {stream_id} and topic with ID: {topic_id} and partition with ID: {partition_id} set to {offset}"));
        }
    }
    Ok(())
}

fn parse_headers(specs: &[String]) -> Result<Vec<Header>, CliError> {
    specs
        .iter()
        .filter(|spec| !spec.is_empty())
        .map(|spec| {
            let mut parts = spec.splitn(3, ':');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(key), Some(kind), Some(value)) => {
                    Ok(Header::new(key, HeaderValue::parse(kind, value)?))
                }
                _ => Err(CliError::usage(format!(
                    "invalid header '{spec}': expected key:kind:value"
                ))),
            }
        })
        .collect()
}

async fn send_command(printer: &Printer, client: &Client, args: SendArgs) -> Result<(), CliError> {
    let partitioning = match (&args.partition_id, &args.message_key) {
        (Some(partition), _) => Partitioning::PartitionId(*partition),
        (None, Some(key)) => Partitioning::key(key.as_bytes())
            .map_err(|_| CliError::usage("message key must be 1..=255 bytes"))?,
        (None, None) => Partitioning::Balanced,
    };
    let headers = parse_headers(&args.headers)?;
    let stream_id = id(&args.stream_id)?;
    let topic_id = id(&args.topic_id)?;
    let build = |payload: Bytes| -> Result<OutgoingMessage, CliError> {
        let mut message = SendMessage::new(payload).with_id(random_message_id());
        message.headers = headers.clone();
        Ok(message.into_outgoing()?)
    };
    printer.info(format!(
        "Executing send messages to topic with ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    let mut sent = 0usize;
    if let Some(path) = &args.input_file {
        let bytes =
            std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
        let mut messages = Vec::new();
        for view in MessageIter::new(&bytes) {
            let view = view
                .map_err(|e| CliError::usage(format!("{path} is not a file of messages: {e}")))?;
            messages.push(OutgoingMessage {
                id: view.id(),
                origin_timestamp: view.origin_timestamp(),
                payload: Bytes::copy_from_slice(view.payload()),
                user_headers: Bytes::copy_from_slice(view.user_headers()),
            });
        }
        if messages.is_empty() {
            return Err(CliError::usage(format!("{path} contains no messages")));
        }
        for chunk in messages.chunks(SEND_BATCH_MESSAGES) {
            client
                .send_messages(
                    stream_id.clone(),
                    topic_id.clone(),
                    partitioning.clone(),
                    chunk,
                )
                .await?;
            sent += chunk.len();
        }
    } else if let Some(path) = &args.payload_file {
        let bytes =
            std::fs::read(path).map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
        client
            .send_messages(
                stream_id,
                topic_id,
                partitioning,
                &[build(Bytes::from(bytes))?],
            )
            .await?;
        sent = 1;
    } else if !args.messages.is_empty() {
        let messages = args
            .messages
            .iter()
            .map(|m| build(Bytes::from(m.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        client
            .send_messages(stream_id, topic_id, partitioning, &messages)
            .await?;
        sent = messages.len();
    } else {
        let stdin = std::io::stdin();
        let mut batch = Vec::new();
        for line in stdin.lock().lines() {
            batch.push(build(Bytes::from(line?))?);
            if batch.len() == SEND_BATCH_MESSAGES {
                client
                    .send_messages(
                        stream_id.clone(),
                        topic_id.clone(),
                        partitioning.clone(),
                        &batch,
                    )
                    .await?;
                sent += batch.len();
                batch.clear();
            }
        }
        if !batch.is_empty() {
            client
                .send_messages(
                    stream_id.clone(),
                    topic_id.clone(),
                    partitioning.clone(),
                    &batch,
                )
                .await?;
            sent += batch.len();
        }
        if sent == 0 {
            return Err(CliError::usage(
                "no messages given (arguments, --input-file, --payload-file or standard input)",
            ));
        }
    }
    printer.info(format!(
        "Sent {sent} message(s) to topic with ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    if printer.json {
        printer.json(&json!({"sent": sent}));
    }
    Ok(())
}

fn payload_text(message: &Message, format: PayloadFormat) -> String {
    let payload = message.payload();
    match format {
        PayloadFormat::Text => String::from_utf8_lossy(&payload).into_owned(),
        PayloadFormat::Hex => hex(&payload),
    }
}

fn message_json(message: &Message, format: PayloadFormat) -> Value {
    let headers = message.headers().unwrap_or_default();
    json!({
        "partition_id": message.partition_id(), "offset": message.offset(), "id": message.id().to_string(),
        "timestamp": message.timestamp(), "origin_timestamp": message.origin_timestamp(), "checksum": message.checksum(),
        "length": message.payload().len(), "payload": payload_text(message, format),
        "headers": headers.iter().map(|h| json!({"key": h.key.to_string(), "kind": h.value.kind_name(), "value": h.value.to_string()})).collect::<Vec<_>>(),
    })
}

fn print_messages(printer: &Printer, messages: &[Message], args: &PollArgs, json_lines: bool) {
    if printer.json {
        if json_lines {
            for message in messages {
                println!("{}", message_json(message, args.format));
            }
        } else {
            printer.json(&json!(
                messages
                    .iter()
                    .map(|m| message_json(m, args.format))
                    .collect::<Vec<_>>()
            ));
        }
        return;
    }
    if printer.quiet {
        return;
    }
    let mut header_columns: Vec<(String, &'static str)> = Vec::new();
    if args.show_headers {
        for message in messages {
            for header in message.headers().unwrap_or_default() {
                let column = (header.key.to_string(), header.value.kind_name());
                if !header_columns.contains(&column) {
                    header_columns.push(column);
                }
            }
        }
    }
    let mut titles: Vec<String> = ["Offset", "Timestamp", "ID", "Length", "Payload"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    titles.extend(
        header_columns
            .iter()
            .map(|(key, kind)| format!("Header: {key}\n{kind}")),
    );
    let rows = messages
        .iter()
        .map(|message| {
            let mut row = vec![
                message.offset().to_string(),
                format_timestamp(message.timestamp()),
                message.id().to_string(),
                message.payload().len().to_string(),
                payload_text(message, args.format),
            ];
            if !header_columns.is_empty() {
                let headers = message.headers().unwrap_or_default();
                for (key, kind) in &header_columns {
                    row.push(
                        headers
                            .iter()
                            .find(|h| &h.key.to_string() == key && h.value.kind_name() == *kind)
                            .map(|h| h.value.to_string())
                            .unwrap_or_default(),
                    );
                }
            }
            row
        })
        .collect();
    let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
    println!("{}", table(&titles, rows));
}

async fn poll_command(printer: &Printer, client: &Client, args: PollArgs) -> Result<(), CliError> {
    let stream_id = id(&args.stream_id)?;
    let topic_id = id(&args.topic_id)?;
    let consumer = Consumer::new(id(&args.consumer)?);
    let mut strategy = if let Some(offset) = args.offset {
        PollingStrategy::offset(offset)
    } else if args.first {
        PollingStrategy::first()
    } else if args.last {
        PollingStrategy::last()
    } else {
        PollingStrategy::next()
    };
    let interval = humantime::parse_duration(&args.follow_interval)
        .map_err(|e| CliError::usage(format!("invalid --follow-interval: {e}")))?;
    printer.info(format!(
        "Executing poll messages from topic ID: {} and stream with ID: {}",
        args.topic_id, args.stream_id
    ));
    let mut output_file = match &args.output_file {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| CliError::usage(format!("cannot open {path}: {e}")))?,
        ),
        None => None,
    };
    loop {
        let start = Instant::now();
        let polled = client
            .poll_messages(
                stream_id.clone(),
                topic_id.clone(),
                Some(args.partition_id),
                &consumer,
                strategy,
                args.message_count,
                args.auto_commit,
            )
            .await
            .map_err(|e| {
                CliError::from(e).context(format!(
                    "Problem polling messages from topic with ID: {} and stream with ID: {}",
                    args.topic_id, args.stream_id
                ))
            })?;
        let messages: Vec<Message> = Message::from_polled(&polled).collect();
        if !args.follow || !messages.is_empty() {
            let size: usize = messages.iter().map(|m| m.as_bytes().len()).sum();
            printer.info(format!("Polled messages from topic with ID: {} and stream with ID: {} (from partition with ID: {})", args.topic_id, args.stream_id, polled.partition_id));
            printer.info(format!(
                "Polled {} message(s) of total size {}, it took {:.2} ms",
                messages.len(),
                format_size(size as u64),
                start.elapsed().as_secs_f64() * 1000.0
            ));
            if let Some(file) = output_file.as_mut() {
                for message in &messages {
                    file.write_all(message.as_bytes())?;
                }
                printer.info(format!(
                    "Stored {} message(s) of total size {} to {} binary file",
                    messages.len(),
                    format_size(size as u64),
                    args.output_file.as_deref().unwrap_or_default()
                ));
            } else {
                print_messages(printer, &messages, &args, args.follow);
            }
            let _ = std::io::stdout().flush();
        }
        if !args.follow {
            return Ok(());
        }
        match messages.last() {
            // Continue right after what was printed, whatever the initial strategy was.
            Some(last) => strategy = PollingStrategy::offset(last.offset() + 1),
            None => {
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config_for(args: &[&str]) -> Result<ClientConfig, CliError> {
        config_with_context(args, ContextConfig::default())
    }

    fn config_with_context(
        args: &[&str],
        context: ContextConfig,
    ) -> Result<ClientConfig, CliError> {
        let cli = Cli::try_parse_from(std::iter::once("iggy").chain(args.iter().copied()))
            .map_err(|e| CliError::usage(e.to_string()))?;
        settings(&cli.global, context).map(|settings| client_config(&settings))
    }

    #[test]
    fn plain_tcp_is_the_default() {
        let config = config_for(&["stream", "list"]).unwrap();
        assert_eq!(config.address, DEFAULT_TCP_ADDRESS);
        assert_eq!(config.transport, TransportKind::Tcp);
        assert_eq!(config.reconnect.max_attempts, Some(4));
    }

    #[test]
    fn tls_flags_map_to_tls_options() {
        let config = config_for(&[
            "--tcp-tls-enabled",
            "--tcp-server-address",
            "10.0.0.1:8090",
            "--tcp-tls-domain",
            "broker.example",
            "--tcp-tls-ca-file",
            "/etc/ca.pem",
            "stream",
            "list",
        ])
        .unwrap();
        assert_eq!(config.address, "10.0.0.1:8090");
        assert_eq!(
            config.transport,
            TransportKind::TcpTls(TlsOptions {
                domain: Some("broker.example".into()),
                ca_file: Some("/etc/ca.pem".into()),
                validate_certificate: true,
            })
        );
        let config = config_for(&[
            "--tcp-tls-enabled",
            "--tcp-tls-validate-certificate=false",
            "stream",
            "list",
        ])
        .unwrap();
        assert!(matches!(
            config.transport,
            TransportKind::TcpTls(TlsOptions {
                validate_certificate: false,
                ..
            })
        ));
        // Without a value the flag means true, and it does not swallow the subcommand.
        let config = config_for(&[
            "--tcp-tls-enabled",
            "--tcp-tls-validate-certificate",
            "stream",
            "list",
        ])
        .unwrap();
        assert!(matches!(
            config.transport,
            TransportKind::TcpTls(TlsOptions {
                validate_certificate: true,
                ..
            })
        ));
        // A context can turn TLS on.
        let context = ContextConfig {
            tcp_tls_enabled: Some(true),
            ..ContextConfig::default()
        };
        let config = config_with_context(&["stream", "list"], context).unwrap();
        assert_eq!(
            config.transport,
            TransportKind::TcpTls(TlsOptions::default())
        );
    }

    #[test]
    fn tls_options_without_tls_are_usage_errors() {
        let error = config_for(&["--tcp-tls-ca-file", "/ca.pem", "stream", "list"]).unwrap_err();
        assert_eq!(error.exit_code, crate::error::EXIT_USAGE);
        assert!(error.message.contains("--tcp-tls-enabled"), "{error}");
    }

    #[test]
    fn quic_flags_map_to_quic_options() {
        let config = config_for(&["--transport", "quic", "stream", "list"]).unwrap();
        assert_eq!(config.address, "127.0.0.1:8080");
        assert_eq!(
            config.transport,
            TransportKind::Quic(QuicOptions::default())
        );

        let config = config_for(&[
            "--transport",
            "quic",
            "--quic-server-address",
            "10.0.0.2:9000",
            "--quic-server-name",
            "broker",
            "--quic-client-address",
            "0.0.0.0:0",
            "--quic-validate-certificate",
            "--quic-ca-file",
            "/ca.pem",
            "--quic-response-buffer-size",
            "50000000",
            "--quic-keep-alive-interval",
            "0",
            "--quic-max-idle-timeout",
            "30000",
            "--quic-reconnection-max-retries",
            "1",
            "--quic-reconnection-interval",
            "250ms",
            "stream",
            "list",
        ])
        .unwrap();
        assert_eq!(config.address, "10.0.0.2:9000");
        assert_eq!(config.reconnect.max_attempts, Some(2));
        assert_eq!(config.reconnect.initial_backoff, Duration::from_millis(250));
        let TransportKind::Quic(options) = config.transport else {
            panic!("not QUIC");
        };
        assert_eq!(options.server_name, "broker");
        assert_eq!(options.client_address.as_deref(), Some("0.0.0.0:0"));
        assert!(options.validate_certificate);
        assert_eq!(options.ca_file.as_deref(), Some("/ca.pem"));
        assert_eq!(options.response_buffer_size, 50_000_000);
        assert_eq!(options.keep_alive_interval, None);
        assert_eq!(options.max_idle_timeout, Some(Duration::from_secs(30)));

        let context = ContextConfig {
            transport: Some("quic".into()),
            quic_server_address: Some("10.9.9.9:8080".into()),
            ..ContextConfig::default()
        };
        let config = config_with_context(&["stream", "list"], context).unwrap();
        assert_eq!(config.address, "10.9.9.9:8080");
        assert!(matches!(config.transport, TransportKind::Quic(_)));
    }

    #[test]
    fn unsupported_transports_and_stray_quic_flags_are_usage_errors() {
        for args in [
            &["--transport", "http", "stream", "list"][..],
            &["--transport", "ws", "stream", "list"][..],
            &[
                "--transport",
                "quic",
                "--quic-ca-file",
                "/ca.pem",
                "stream",
                "list",
            ][..],
        ] {
            let error = config_for(args).unwrap_err();
            assert_eq!(
                error.exit_code,
                crate::error::EXIT_USAGE,
                "{args:?}: {error}"
            );
        }
    }
}
