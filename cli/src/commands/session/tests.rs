use super::*;
use clap::Parser;

fn config_for(args: &[&str]) -> Result<ClientConfig, CliError> {
    config_with_context(args, ContextConfig::default())
}

fn config_with_context(args: &[&str], context: ContextConfig) -> Result<ClientConfig, CliError> {
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
fn websocket_flags_make_a_websocket_config() {
    let config = config_for(&["--transport", "ws", "stream", "list"]).unwrap();
    assert_eq!(config.address, "127.0.0.1:8092");
    assert_eq!(
        config.transport,
        TransportKind::WebSocket(WebSocketOptions::default())
    );
    let config = config_for(&[
        "--transport",
        "ws",
        "--websocket-server-address",
        "10.0.0.3:9092",
        "--websocket-reconnection-max-retries",
        "2",
        "--websocket-reconnection-interval",
        "300ms",
        "--websocket-tls-enabled",
        "--websocket-tls-domain",
        "broker",
        "--websocket-tls-ca-file",
        "/ca.pem",
        "--websocket-tls-validate-certificate",
        "stream",
        "list",
    ])
    .unwrap();
    assert_eq!(config.address, "10.0.0.3:9092");
    assert_eq!(config.reconnect.max_attempts, Some(3));
    assert_eq!(config.reconnect.initial_backoff, Duration::from_millis(300));
    let TransportKind::WebSocket(options) = config.transport else {
        panic!("not WebSocket");
    };
    assert_eq!(
        options.tls,
        Some(TlsOptions {
            domain: Some("broker".into()),
            ca_file: Some("/ca.pem".into()),
            validate_certificate: true,
        })
    );
}

#[test]
fn http_takes_the_api_url() {
    let config = config_for(&[
        "--transport",
        "http",
        "--http-api-url",
        "http://127.0.0.1:3001/",
        "stream",
        "list",
    ])
    .unwrap();
    assert_eq!(config.address, "127.0.0.1:3001");
    assert_eq!(
        config.transport,
        TransportKind::Http(HttpOptions { tls: None })
    );
    let config = config_for(&["--transport", "http", "stream", "list"]).unwrap();
    assert_eq!(config.address, "localhost:3000", "upstream's default URL");
    let config = config_for(&[
        "--transport",
        "http",
        "--http-api-url",
        "https://broker.example",
        "stream",
        "list",
    ])
    .unwrap();
    assert_eq!(config.address, "broker.example:443");
    assert!(matches!(
        config.transport,
        TransportKind::Http(HttpOptions { tls: Some(_) })
    ));
}

#[test]
fn unsupported_transports_and_stray_tls_flags_are_usage_errors() {
    for args in [
        &["--transport", "carrier-pigeon", "stream", "list"][..],
        &[
            "--transport",
            "http",
            "--http-api-url",
            "ftp://x:1",
            "stream",
            "list",
        ][..],
        &[
            "--transport",
            "ws",
            "--websocket-tls-domain",
            "localhost",
            "stream",
            "list",
        ][..],
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
