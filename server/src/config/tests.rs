//! Loading: the embedded default, files, variables, upstream keys, errors.

use super::units::ByteSize;
use super::*;
use crate::storage::AckMode;
use std::path::PathBuf;

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

#[test]
fn the_encryption_key_is_read_but_never_shown() {
    let key = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=";
    let env = [
        ("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true".to_string()),
        ("IGGY_SYSTEM_ENCRYPTION_KEY", key.to_string()),
    ];
    let loaded = Config::load(None, env.iter().map(|(k, v)| (k.to_string(), v.clone()))).unwrap();
    assert!(
        loaded
            .config
            .system
            .encryption
            .master_key()
            .unwrap()
            .is_some()
    );
    assert_eq!(loaded.config.system.encryption.key.0, key);
    let shown = [
        loaded.resolved.to_string(),
        format!("{:?}", loaded.config),
        format!("{:#?}", loaded.config),
    ];
    for text in shown {
        assert!(!text.contains(key), "{text}");
        assert!(text.contains("(redacted)"));
    }
    // Off by default; a key without `enabled` changes nothing.
    let config = load(None, &[("IGGY_SYSTEM_ENCRYPTION_KEY", key)]).unwrap();
    assert!(config.system.encryption.master_key().unwrap().is_none());
    let error = load(
        Some("[system.encryption]\nenabled = true\nkey = \"dG9vIHNob3J0\"\n"),
        &[],
    )
    .unwrap_err();
    assert!(
        error.0.contains("32 bytes") && !error.0.contains("dG9vIHNob3J0"),
        "{error}"
    );
}

#[test]
fn telemetry_takes_upstream_keys_and_refuses_an_unknown_transport() {
    let config = load(
        Some("[telemetry]\nenabled = true\nservice_name = \"svc\"\n[telemetry.traces]\ntransport = \"http\"\n"),
        &[("IGGY_TELEMETRY_LOGS_ENDPOINT", "http://collector:4317")],
    )
    .unwrap();
    assert!(config.telemetry.enabled);
    assert_eq!(config.telemetry.service_name, "svc");
    assert_eq!(config.telemetry.traces.transport, OtlpTransport::Http);
    assert_eq!(config.telemetry.logs.transport, OtlpTransport::Grpc);
    assert_eq!(config.telemetry.logs.endpoint, "http://collector:4317");
    let error = load(None, &[("IGGY_TELEMETRY_LOGS_TRANSPORT", "udp")]).unwrap_err();
    assert!(error.0.contains("telemetry.logs.transport"), "{error}");
    // TLS to the collector would silently export nothing: refused.
    let error = load(
        None,
        &[
            ("IGGY_TELEMETRY_ENABLED", "true"),
            (
                "IGGY_TELEMETRY_TRACES_ENDPOINT",
                "https://collector:4318/v1/traces",
            ),
        ],
    )
    .unwrap_err();
    assert!(error.0.contains("telemetry.traces.endpoint"), "{error}");
}

#[test]
fn the_http_api_keys_load_and_are_checked() {
    let config = load(None, &[]).unwrap();
    assert_eq!(config.http.max_request_size.0, 2_000_000);
    assert_eq!(config.http.jwt.algorithm, "HS256");
    assert!(config.http.cors.enabled && !config.http.tls.enabled);
    let config = load(
        Some("[http.jwt]\nalgorithm = \"HS512\"\nencoding_secret = \"s3cr3t\"\n[http.cors]\nallowed_origins = [\"https://ui.example\"]\n"),
        &[("IGGY_HTTP_TLS_ENABLED", "true")],
    )
    .unwrap();
    assert_eq!(config.http.jwt.encoding_secret.0, "s3cr3t");
    assert_eq!(config.http.cors.allowed_origins, ["https://ui.example"]);
    assert!(config.http.tls.enabled);
    let error = load(None, &[("IGGY_HTTP_JWT_ALGORITHM", "ES256")]).unwrap_err();
    assert!(error.0.contains("http.jwt.algorithm"), "{error:?}");
    let error = load(
        None,
        &[
            ("IGGY_HTTP_MAX_REQUEST_SIZE", "1 GB"),
            ("IGGY_LIMITS_MAX_REQUEST_BYTES_IN_FLIGHT", "512 MiB"),
        ],
    )
    .unwrap_err();
    assert!(error.0.contains("http.max_request_size"), "{error:?}");
}

#[test]
fn a_cluster_roster_from_a_file_and_the_environment() {
    let file = r#"
        [cluster]
        enabled = true
        [[cluster.nodes]]
        name = "n0"
        ip = "127.0.0.1"
        replica_id = 0
        ports = { tcp = 8090, quic = 8080, http = 3000, websocket = 8092, tcp_replica = 9090 }
    "#;
    let mut config = load(
        Some(file),
        &[
            ("IGGY_CLUSTER_NODES_1_NAME", "n1"),
            ("IGGY_CLUSTER_NODES_1_IP", "127.0.0.1"),
            ("IGGY_CLUSTER_NODES_1_REPLICA_ID", "1"),
            ("IGGY_CLUSTER_NODES_1_PORTS_TCP", "8190"),
            ("IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA", "9190"),
            ("IGGY_CLUSTER_NODES_0_PORTS_TCP", "8290"),
            ("IGGY_CLUSTER_AUTH_SHARED_SECRET", "s3cret"),
            ("IGGY_CLUSTER_REPLICATION_FACTOR", "2"),
        ],
    )
    .unwrap();
    assert_eq!(config.cluster.replication_factor, 2);
    assert_eq!(
        load(None, &[]).unwrap().cluster.replication_factor,
        3,
        "the default"
    );
    let mut none = config.clone();
    none.cluster.replication_factor = 0;
    let error = none.cluster.validate(Some(0)).unwrap_err().0;
    assert!(error.contains("cluster.replication_factor"), "{error}");
    assert_eq!(config.cluster.nodes.len(), 2);
    assert_eq!(config.cluster.nodes[0].ports.tcp, 8290, "env over file");
    assert_eq!(config.cluster.nodes[1].ports.tcp_replica, 9190);
    assert_eq!(config.cluster.auth.shared_secret.0, "s3cret");
    config.join_cluster(Some(1)).unwrap();
    assert_eq!(config.tcp.address.port(), 8190, "the roster's port");
    assert_eq!(config.quic.address.port(), 8080, "no roster port: its own");
    let error = load(None, &[("IGGY_CLUSTER_NODES_X_IP", "1")])
        .unwrap_err()
        .0;
    assert!(error.contains("IGGY_CLUSTER_NODES_<index>"), "{error}");
    let mut off = load(None, &[]).unwrap();
    assert!(
        off.join_cluster(Some(0)).is_err(),
        "--replica-id without a cluster"
    );
    off.join_cluster(None).unwrap();
}

#[test]
fn read_ahead_is_auto_by_default_and_bounded() {
    let config = load(None, &[]).unwrap();
    let read_cache = config.system.read_cache;
    // A 256th of the memory, between 4 and 64 MiB: a 512 MiB container, 4 GiB, 24 GiB.
    assert_eq!(read_cache.read_ahead_bytes(512 << 20), 4 << 20);
    assert_eq!(read_cache.read_ahead_bytes(4 << 30), 16 << 20);
    assert_eq!(read_cache.read_ahead_bytes(24 << 30), 64 << 20);
    let set = load(
        Some("[system.read_cache]\nsize = \"1 GiB\"\n"),
        &[("IGGY_SYSTEM_READ_CACHE_READ_AHEAD", "0")],
    )
    .unwrap();
    assert_eq!(set.system.read_cache.read_ahead_bytes(24 << 30), 0);
    assert!(load(None, &[("IGGY_SYSTEM_READ_CACHE_READ_AHEAD", "lots")]).is_err());
}
