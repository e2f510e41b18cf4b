use super::*;

#[test]
fn parses_the_documented_form() {
    let config = ClientConfig::from_connection_string("iggy://iggy:secret@10.0.0.7:9000").unwrap();
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
        ClientConfig::from_connection_string("iggy+tls://u:p@h:1?tls_domain=example.com").unwrap();
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
        let config =
            ClientConfig::from_connection_string(&format!("iggy+tls://u:p@h:1?protocol={text}"))
                .unwrap();
        assert_eq!(config.protocol, protocol);
    }
    assert!(ClientConfig::from_connection_string("iggy://u:p@h:1?protocol=1.0").is_err());
    assert_eq!("0.9".parse::<Protocol>(), Ok(Protocol::V09));
    assert_eq!(Protocol::V09.to_string(), "0.9");
}

#[test]
fn quic_strings_use_upstream_defaults_and_options() {
    let config = ClientConfig::from_connection_string("iggy+quic://iggy:iggy@localhost").unwrap();
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

#[test]
fn websocket_strings_take_upstreams_options() {
    let config = ClientConfig::from_connection_string("iggy+ws://u:p@h:1").unwrap();
    assert_eq!(config.address, "h:1");
    assert_eq!(
        config.transport,
        TransportKind::WebSocket(WebSocketOptions::default())
    );
    let config = ClientConfig::from_connection_string("iggy+ws://u:p@h").unwrap();
    assert_eq!(config.address, "h:8092");

    // TLS settings before `tls=true` are fine, as upstream reads options in any order.
    let config = ClientConfig::from_connection_string(
        "iggy+ws://u:p@h:1?tls_domain=localhost&tls_ca_file=/ca.pem&tls=true&max_message_size=1000&accept_unmasked_frames=false&protocol=0.9",
    )
    .unwrap();
    assert_eq!(config.protocol, Protocol::V09);
    let TransportKind::WebSocket(options) = config.transport else {
        panic!("not WebSocket");
    };
    assert_eq!(options.max_message_size, 1000);
    assert_eq!(
        options.tls,
        Some(TlsOptions {
            domain: Some("localhost".into()),
            ca_file: Some("/ca.pem".into()),
            validate_certificate: false,
        })
    );
    let config = ClientConfig::from_connection_string(
        "iggy+ws://u:p@h:1?tls=true&tls_validate_certificate=true",
    )
    .unwrap();
    assert!(matches!(
        config.transport,
        TransportKind::WebSocket(WebSocketOptions {
            tls: Some(TlsOptions {
                validate_certificate: true,
                ..
            }),
            ..
        })
    ));

    for text in [
        "iggy+ws://u:p@h:1?tls_domain=x",
        "iggy+ws://u:p@h:1?server_name=x",
        "iggy+ws://u:p@h:1?max_frame_size=big",
        "iggy://u:p@h:1?max_message_size=1",
    ] {
        assert!(
            ClientConfig::from_connection_string(text).is_err(),
            "{text}"
        );
    }
}
