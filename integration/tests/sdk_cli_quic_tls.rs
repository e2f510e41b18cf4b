//! rill's own clients over the secure transports of the real server: the SDK (login, stream,
//! topic, send, poll) over TLS-on-TCP and QUIC, certificate validation against the server's
//! default self-signed certificate and against given certificate files, the `iggy` CLI
//! (`stream create`/`stream list`) and a short `iggy-bench` run over both.
//!
//! The CLI and bench binaries are built from this workspace once per test process (as the
//! server binary is), or taken from `RILL_CLI_BIN` / `RILL_BENCH_BIN`.

use bytes::Bytes;
use rill_integration::binary::{target_dir, workspace_root};
use rill_integration::server::{ROOT_PASSWORD, ROOT_USERNAME};
use rill_integration::{ServerOptions, TestServer};
use rill_sdk::types::{Consumer, ErrorCode, Partitioning, PollingStrategy, Transport};
use rill_sdk::{
    Client, ClientConfig, Credentials, Error, Message, QuicOptions, ReconnectPolicy, SendMessage,
    TlsOptions, TopicOptions, TransportKind,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A server with TLS on its TCP port (the default self-signed certificate) and QUIC on the
/// returned address.
fn start_tls_and_quic(extra: &[(&str, &str)]) -> (TestServer, SocketAddr) {
    let mut options = ServerOptions::new()
        .env("IGGY_TCP_TLS_ENABLED", "true")
        .env("IGGY_QUIC_ENABLED", "true");
    for (key, value) in extra {
        options = options.env(key, value);
    }
    let server = TestServer::start(options);
    let quic_address = server.quic_address();
    (server, quic_address)
}

/// A certificate for localhost and 127.0.0.1 with its key, as PEM files.
struct CertificateFiles {
    _dir: tempfile::TempDir,
    cert: String,
    key: String,
}

fn certificate_files() -> CertificateFiles {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("server-cert.pem");
    let key = dir.path().join("server-key.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    CertificateFiles {
        cert: cert.to_str().unwrap().to_owned(),
        key: key.to_str().unwrap().to_owned(),
        _dir: dir,
    }
}

fn client(address: &str, transport: TransportKind) -> Client {
    Client::new(ClientConfig {
        address: address.to_owned(),
        transport,
        credentials: Credentials::UsernamePassword {
            username: ROOT_USERNAME.to_owned(),
            password: ROOT_PASSWORD.to_owned(),
        },
        heartbeat_interval: None,
        reconnect: ReconnectPolicy {
            max_attempts: Some(5),
            ..ReconnectPolicy::default()
        },
        ..ClientConfig::default()
    })
    .unwrap()
}

fn tls(validate: bool, ca_file: Option<&str>) -> TransportKind {
    TransportKind::TcpTls(TlsOptions {
        domain: None,
        ca_file: ca_file.map(str::to_owned),
        validate_certificate: validate,
    })
}

/// Logs in, creates a stream and topic, sends messages (one of them larger than a TLS record
/// and a QUIC packet), polls them back and checks them; returns what GetMe says.
async fn round_trip(client: &Client, stream: &str) -> rill_sdk::types::ClientDetails {
    client.connect().await.unwrap();
    client.create_stream(stream).await.unwrap();
    client
        .create_topic(stream, "t", 1, TopicOptions::default())
        .await
        .unwrap();
    let payloads: Vec<Bytes> = (0..20u32)
        .map(|i| {
            let size = if i == 7 { 200_000 } else { 10 + i as usize };
            Bytes::from(vec![b'a' + (i % 26) as u8; size])
        })
        .collect();
    let outgoing: Vec<_> = payloads
        .iter()
        .enumerate()
        .map(|(i, payload)| {
            SendMessage::new(payload.clone())
                .with_id(1 + i as u128)
                .into_outgoing()
                .unwrap()
        })
        .collect();
    client
        .send_messages(stream, "t", Partitioning::PartitionId(0), &outgoing)
        .await
        .unwrap();
    let polled = client
        .poll_messages(
            stream,
            "t",
            Some(0),
            &Consumer::new(1),
            PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .unwrap();
    let messages: Vec<Message> = Message::from_polled(&polled).collect();
    assert_eq!(messages.len(), payloads.len());
    for (i, (message, payload)) in messages.iter().zip(&payloads).enumerate() {
        assert_eq!(message.offset(), i as u64);
        assert_eq!(message.id(), 1 + i as u128);
        assert_eq!(&message.payload()[..], &payload[..]);
        assert!(message.checksum_is_valid());
    }
    client.get_me().await.unwrap()
}

#[tokio::test]
async fn sdk_over_tls_without_validation_and_over_quic() {
    let (server, quic_address) = start_tls_and_quic(&[]);

    let over_tls = client(&server.tcp_address(), tls(false, None));
    let me = round_trip(&over_tls, "over-tls").await;
    assert_eq!(me.transport, Transport::Tcp);

    let over_quic = client(
        &quic_address.to_string(),
        TransportKind::Quic(QuicOptions::default()),
    );
    let me = round_trip(&over_quic, "over-quic").await;
    assert_eq!(me.transport, Transport::Quic);
    // The server names the session by the client's UDP address.
    let local = over_quic.local_address().await.unwrap();
    assert_eq!(me.address, local.to_string());
    // Both sessions see each other's streams: one broker behind both transports.
    assert_eq!(over_quic.get_streams().await.unwrap().len(), 2);
    over_quic.shutdown().await;
    over_tls.shutdown().await;
}

#[tokio::test]
async fn validation_rejects_the_default_self_signed_certificate_clearly() {
    let (server, quic_address) = start_tls_and_quic(&[]);
    let address = server.tcp_address();
    let error = client(&address, tls(true, None))
        .connect()
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::Tls { .. }), "{error:?}");
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate);
    assert!(
        text.contains(&format!("TLS certificate of {address} is not trusted"))
            && text.contains("UnknownIssuer")
            && text.contains("tls_ca_file"),
        "{text}"
    );

    let error = client(
        &quic_address.to_string(),
        TransportKind::Quic(QuicOptions {
            validate_certificate: true,
            ..QuicOptions::default()
        }),
    )
    .connect()
    .await
    .unwrap_err();
    let text = error.to_string();
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate, "{text}");
    assert!(
        text.contains("QUIC TLS certificate") && text.contains("UnknownIssuer"),
        "{text}"
    );
}

#[tokio::test]
async fn validation_accepts_the_servers_certificate_files_as_ca() {
    let files = certificate_files();
    let (server, quic_address) = start_tls_and_quic(&[
        ("IGGY_TCP_TLS_SELF_SIGNED", "false"),
        ("IGGY_TCP_TLS_CERT_FILE", &files.cert),
        ("IGGY_TCP_TLS_KEY_FILE", &files.key),
        ("IGGY_QUIC_CERTIFICATE_SELF_SIGNED", "false"),
        ("IGGY_QUIC_CERTIFICATE_CERT_FILE", &files.cert),
        ("IGGY_QUIC_CERTIFICATE_KEY_FILE", &files.key),
    ]);
    // No domain: the name checked is 127.0.0.1, which the certificate covers.
    let over_tls = client(&server.tcp_address(), tls(true, Some(&files.cert)));
    round_trip(&over_tls, "validated-tls").await;

    let over_quic = client(
        &quic_address.to_string(),
        TransportKind::Quic(QuicOptions {
            validate_certificate: true,
            ca_file: Some(files.cert.clone()),
            ..QuicOptions::default()
        }),
    );
    round_trip(&over_quic, "validated-quic").await;

    // Trusted, but for other names only.
    let wrong_name = client(
        &server.tcp_address(),
        TransportKind::TcpTls(TlsOptions {
            domain: Some("example.com".into()),
            ca_file: Some(files.cert.clone()),
            validate_certificate: true,
        }),
    );
    let text = wrong_name.connect().await.unwrap_err().to_string();
    assert!(
        text.contains("does not cover the name 'example.com'"),
        "{text}"
    );
}

/// The certificate the server generated at start and wrote next to its data (not its key).
fn generated_certificate(server: &TestServer, file: &str) -> String {
    let path = server.data_path().join("certs").join(file);
    assert!(path.is_file(), "{} does not exist", path.display());
    path.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn validation_accepts_the_generated_certificate_as_ca_file() {
    let (server, quic_address) = start_tls_and_quic(&[]);
    let tcp_certificate = generated_certificate(&server, "tcp-self-signed.pem");
    let over_tls = client(&server.tcp_address(), tls(true, Some(&tcp_certificate)));
    round_trip(&over_tls, "generated-tls").await;
    let over_quic = client(
        &quic_address.to_string(),
        TransportKind::Quic(QuicOptions {
            validate_certificate: true,
            ca_file: Some(generated_certificate(&server, "quic-self-signed.pem")),
            ..QuicOptions::default()
        }),
    );
    round_trip(&over_quic, "generated-quic").await;
}

/// Builds `bin` of `package` once per test process (unless `env` names a binary).
fn workspace_binary(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    env: &str,
    package: &str,
    bin: &str,
) -> PathBuf {
    cell.get_or_init(|| {
        if let Some(path) = std::env::var_os(env) {
            return Ok(PathBuf::from(path));
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args(["build", "-p", package, "--bin", bin])
            .current_dir(workspace_root())
            .output()
            .map_err(|error| format!("cannot run cargo: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "`cargo build -p {package} --bin {bin}` failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(target_dir().join("debug").join(bin))
    })
    .clone()
    .unwrap_or_else(|error| panic!("{error}"))
}

fn cli_binary() -> PathBuf {
    static CELL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    workspace_binary(&CELL, "RILL_CLI_BIN", "rill-cli", "iggy")
}

fn bench_binary() -> PathBuf {
    static CELL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    workspace_binary(&CELL, "RILL_BENCH_BIN", "rill-bench", "iggy-bench")
}

/// Runs a binary with an empty IGGY_HOME and no inherited IGGY_* credentials.
fn run(binary: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IGGY_") {
            command.env_remove(key);
        }
    }
    command
        .env("IGGY_HOME", home)
        .current_dir(home)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", binary.display()))
}

fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn cli_over_quic_and_tls() {
    let binary = cli_binary();
    let (server, quic_address) = start_tls_and_quic(&[]);
    let home = tempfile::tempdir().unwrap();
    let quic = quic_address.to_string();
    let tcp = server.tcp_address();
    let over_quic = |command: &[&str]| {
        let mut args = vec![
            "--transport",
            "quic",
            "--quic-server-address",
            &quic,
            "-u",
            ROOT_USERNAME,
            "-p",
            ROOT_PASSWORD,
        ];
        args.extend_from_slice(command);
        run(&binary, home.path(), &args)
    };
    let over_tls = |extra: &[&str], command: &[&str]| {
        let mut args = vec![
            "--tcp-server-address",
            &tcp,
            "--tcp-tls-enabled",
            "-u",
            ROOT_USERNAME,
            "-p",
            ROOT_PASSWORD,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(command);
        run(&binary, home.path(), &args)
    };
    let no_validation = ["--tcp-tls-validate-certificate=false"];

    let created = over_quic(&["stream", "create", "made-over-quic"]);
    assert!(created.status.success(), "{}", describe(&created));
    let created = over_tls(&no_validation, &["stream", "create", "made-over-tls"]);
    assert!(created.status.success(), "{}", describe(&created));

    for listed in [
        over_quic(&["stream", "list"]),
        over_tls(&no_validation, &["stream", "list"]),
    ] {
        assert!(listed.status.success(), "{}", describe(&listed));
        let stdout = String::from_utf8_lossy(&listed.stdout);
        assert!(
            stdout.contains("made-over-quic") && stdout.contains("made-over-tls"),
            "{}",
            describe(&listed)
        );
    }

    // Validation is on by default for TCP TLS, and the server's certificate is self-signed.
    let refused = over_tls(&[], &["stream", "list"]);
    assert_eq!(refused.status.code(), Some(3), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("not trusted")
            && stderr.contains("UnknownIssuer")
            && stderr.contains("--tcp-tls-ca-file"),
        "{}",
        describe(&refused)
    );
    // ... and trusting the certificate the server wrote makes validation pass.
    let certificate = generated_certificate(&server, "tcp-self-signed.pem");
    let validated = over_tls(&["--tcp-tls-ca-file", &certificate], &["stream", "list"]);
    assert!(validated.status.success(), "{}", describe(&validated));
    let refused = over_quic(&["--quic-validate-certificate", "stream", "list"]);
    assert_eq!(refused.status.code(), Some(3), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not trusted"),
        "{}",
        describe(&refused)
    );
}

#[test]
fn bench_over_quic_and_tls() {
    let binary = bench_binary();
    let (server, quic_address) = start_tls_and_quic(&[]);
    let home = tempfile::tempdir().unwrap();
    let quic = quic_address.to_string();
    let tcp = server.tcp_address();
    let workload = ["-q", "-b", "20", "-P", "10", "-m", "200", "pp", "-p", "1"];
    for transport in [
        &["quic", "--server-address", quic.as_str()][..],
        &["tcp", "--server-address", tcp.as_str(), "--tls"][..],
    ] {
        let mut args = workload.to_vec();
        args.extend_from_slice(transport);
        let output = run(&binary, home.path(), &args);
        assert!(output.status.success(), "{args:?}: {}", describe(&output));
    }
    let mut args = workload.to_vec();
    args.extend_from_slice(&[
        "tcp",
        "--server-address",
        tcp.as_str(),
        "--tls",
        "--tls-validate-certificate",
    ]);
    let refused = run(&binary, home.path(), &args);
    assert!(!refused.status.success(), "{}", describe(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not trusted"),
        "{}",
        describe(&refused)
    );
}
