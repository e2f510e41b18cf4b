//! TLS over TCP and QUIC against in-process servers that answer canned frames (no broker
//! needed): round trips, one QUIC stream per request, certificate validation and its messages,
//! CA files, the QUIC response limit and the QUIC handshake timeout.

use rill_sdk::transport::{Connection, OutgoingFrame, connector_for};
use rill_sdk::types::ErrorCode;
use rill_sdk::{
    Client, ClientConfig, Error, QuicOptions, ReconnectPolicy, TlsOptions, TransportKind,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A self-signed certificate for "localhost" only (as the broker generates by default) and
/// its PEM written to a file usable as a CA file.
struct SelfSigned {
    certificate: CertificateDer<'static>,
    key: Vec<u8>,
    _dir: tempfile::TempDir,
    pem_path: String,
}

fn self_signed() -> SelfSigned {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("server.pem");
    std::fs::write(&pem_path, generated.cert.pem()).unwrap();
    SelfSigned {
        certificate: generated.cert.der().clone(),
        key: generated.signing_key.serialize_der(),
        pem_path: pem_path.to_str().unwrap().to_owned(),
        _dir: dir,
    }
}

fn server_crypto(
    cert: &SelfSigned,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> rustls::ServerConfig {
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.certificate.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key.clone())),
        )
        .unwrap()
}

/// The canned answer to a request frame: `payload_size` bytes of `0xAB` after an OK header.
fn answer(payload_size: usize) -> Vec<u8> {
    let mut response = Vec::with_capacity(8 + payload_size);
    response.extend_from_slice(&0u32.to_le_bytes());
    response.extend_from_slice(&(payload_size as u32).to_le_bytes());
    response.resize(8 + payload_size, 0xAB);
    response
}

/// The payload size the fake servers answer with: the request's first payload byte × 1000
/// (Ping has no payload: 0).
fn requested_size(payload: &[u8]) -> usize {
    payload.first().map_or(0, |&b| b as usize * 1000)
}

/// A TLS-over-TCP server answering every frame; counts accepted TCP connections.
async fn tls_server(cert: &SelfSigned) -> (String, Arc<AtomicUsize>) {
    let acceptor =
        tokio_rustls::TlsAcceptor::from(Arc::new(server_crypto(cert, rustls::DEFAULT_VERSIONS)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(socket).await else {
                    return;
                };
                loop {
                    let mut header = [0u8; 8];
                    if stream.read_exact(&mut header).await.is_err() {
                        return;
                    }
                    let length = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
                    let mut payload = vec![0u8; length - 4];
                    if stream.read_exact(&mut payload).await.is_err() {
                        return;
                    }
                    let response = answer(requested_size(&payload));
                    if stream.write_all(&response).await.is_err() || stream.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (address, accepted)
}

/// Counters of the QUIC fake server.
#[derive(Default)]
struct QuicCounts {
    connections: AtomicUsize,
    streams: AtomicUsize,
}

/// A QUIC server that reads each stream to its end (so the client must finish its side),
/// answers with one frame and finishes.
async fn quic_server(cert: &SelfSigned) -> (String, Arc<QuicCounts>) {
    let crypto = server_crypto(cert, &[&rustls::version::TLS13]);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(crypto).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let address = endpoint.local_addr().unwrap().to_string();
    let counts = Arc::new(QuicCounts::default());
    let shared = counts.clone();
    tokio::spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            let counts = shared.clone();
            tokio::spawn(async move {
                let Ok(connection) = incoming.await else {
                    return;
                };
                counts.connections.fetch_add(1, Ordering::SeqCst);
                while let Ok((mut send, mut receive)) = connection.accept_bi().await {
                    counts.streams.fetch_add(1, Ordering::SeqCst);
                    let Ok(request) = receive.read_to_end(1 << 20).await else {
                        return;
                    };
                    let length = u32::from_le_bytes(request[..4].try_into().unwrap()) as usize;
                    assert_eq!(request.len(), 4 + length, "exactly one frame per stream");
                    let response = answer(requested_size(&request[8..]));
                    if send.write_all(&response).await.is_err() {
                        return;
                    }
                    let _ = send.finish();
                }
            });
        }
        // Keeps the endpoint alive as long as the task runs.
        drop(endpoint);
    });
    (address, counts)
}

fn config(address: &str, transport: TransportKind) -> ClientConfig {
    ClientConfig {
        address: address.to_owned(),
        transport,
        heartbeat_interval: None,
        connect_timeout: Duration::from_secs(5),
        reconnect: ReconnectPolicy {
            enabled: true,
            max_attempts: Some(3),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(10),
        },
        ..ClientConfig::default()
    }
}

/// A request frame whose payload asks the fake server for `kilobytes` × 1000 bytes.
async fn ask(connection: &mut Box<dyn Connection>, kilobytes: u8) -> std::io::Result<usize> {
    // length = code (4) + payload (1); code 1 (Ping) is irrelevant to the fake servers.
    let head = [5, 0, 0, 0, 1, 0, 0, 0];
    let response = connection
        .round_trip(OutgoingFrame {
            head: &head,
            body: &[kilobytes],
            protocol: rill_sdk::Protocol::V08,
        })
        .await?;
    assert_eq!(response.status, 0);
    assert!(response.payload.iter().all(|&b| b == 0xAB));
    Ok(response.payload.len())
}

fn tls(validate: bool, ca_file: Option<&str>, domain: Option<&str>) -> TransportKind {
    TransportKind::TcpTls(TlsOptions {
        domain: domain.map(str::to_owned),
        ca_file: ca_file.map(str::to_owned),
        validate_certificate: validate,
    })
}

#[tokio::test]
async fn tls_round_trips_without_validation() {
    let cert = self_signed();
    let (address, _) = tls_server(&cert).await;
    let config = config(&address, tls(false, None, None));
    let mut connection = connector_for(&config)
        .unwrap()
        .connect(&address)
        .await
        .unwrap();
    assert_eq!(ask(&mut connection, 0).await.unwrap(), 0);
    // Larger than a TLS record and the read buffer: arrives in many pieces.
    assert_eq!(ask(&mut connection, 200).await.unwrap(), 200_000);
    assert_eq!(ask(&mut connection, 1).await.unwrap(), 1000);

    let client = Client::new(config).unwrap();
    client.ping().await.unwrap();
    client.ping().await.unwrap();
}

#[tokio::test]
async fn tls_validation_rejects_a_self_signed_certificate_at_once_and_clearly() {
    let cert = self_signed();
    let (address, accepted) = tls_server(&cert).await;
    let client = Client::new(config(&address, tls(true, None, Some("localhost")))).unwrap();
    let error = client.ping().await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::Tls { .. }), "{error:?}");
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate);
    assert!(
        text.contains(&format!("TLS certificate of {address} is not trusted"))
            && text.contains("UnknownIssuer")
            && text.contains("tls_ca_file")
            && text.contains("tls_validate_certificate=false"),
        "{text}"
    );
    // Not retried: one connection only, although three attempts are allowed.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn tls_with_the_certificate_as_ca_file_validates_the_name() {
    let cert = self_signed();
    let (address, _) = tls_server(&cert).await;
    let trusted = Client::new(config(
        &address,
        tls(true, Some(&cert.pem_path), Some("localhost")),
    ))
    .unwrap();
    trusted.ping().await.unwrap();

    // Without a domain the name checked is the address's host, 127.0.0.1, which this
    // certificate does not cover.
    let wrong_name = Client::new(config(&address, tls(true, Some(&cert.pem_path), None))).unwrap();
    let text = wrong_name.ping().await.unwrap_err().to_string();
    assert!(
        text.contains("does not cover the name '127.0.0.1'")
            && text.contains("localhost")
            && text.contains("tls_domain"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_or_invalid_ca_file_fails_when_the_client_is_built() {
    let error = Client::new(config(
        "127.0.0.1:1",
        tls(true, Some("/nonexistent/ca.pem"), None),
    ))
    .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificatePath);
    assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\n!!!\n").unwrap();
    let error = Client::new(config("127.0.0.1:1", tls(true, garbage.to_str(), None))).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate);
    assert!(error.to_string().contains("garbage.pem"), "{error}");
}

#[tokio::test]
async fn tls_against_a_plain_tcp_server_says_so() {
    // A plain server that reads and answers nothing sensible: closes after the ClientHello.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = [0u8; 64];
            let _ = socket.read(&mut buffer).await;
            let _ = socket.write_all(&[9; 16]).await;
        }
    });
    let mut options = config(&address, tls(false, None, None));
    options.reconnect.max_attempts = Some(1);
    let text = Client::new(options)
        .unwrap()
        .ping()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("TLS handshake with") && text.contains("TLS enabled"),
        "{text}"
    );
}

#[tokio::test]
async fn plain_tcp_against_a_tls_server_suggests_tls() {
    let cert = self_signed();
    let (address, _) = tls_server(&cert).await;
    let mut options = config(&address, TransportKind::Tcp);
    options.reconnect.max_attempts = Some(1);
    let text = Client::new(options)
        .unwrap()
        .ping()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("closed the connection before answering") && text.contains("iggy+tls://"),
        "{text}"
    );
}

fn quic(options: QuicOptions) -> TransportKind {
    TransportKind::Quic(options)
}

#[tokio::test]
async fn quic_round_trips_one_stream_per_request() {
    let cert = self_signed();
    let (address, counts) = quic_server(&cert).await;
    let config = config(&address, quic(QuicOptions::default()));
    let mut connection = connector_for(&config)
        .unwrap()
        .connect(&address)
        .await
        .unwrap();
    assert_eq!(ask(&mut connection, 0).await.unwrap(), 0);
    assert_eq!(ask(&mut connection, 5).await.unwrap(), 5000);
    assert_eq!(ask(&mut connection, 250).await.unwrap(), 250_000);
    assert_eq!(counts.connections.load(Ordering::SeqCst), 1);
    assert_eq!(counts.streams.load(Ordering::SeqCst), 3);
    let local = connection.local_address().unwrap();
    assert!(local.ip().is_loopback() && local.port() != 0, "{local}");
    drop(connection);

    let client = Client::new(config).unwrap();
    for _ in 0..4 {
        client.ping().await.unwrap();
    }
    assert_eq!(counts.connections.load(Ordering::SeqCst), 2);
    assert_eq!(counts.streams.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn quic_rejects_responses_above_the_limit() {
    let cert = self_signed();
    let (address, _) = quic_server(&cert).await;
    let config = config(
        &address,
        quic(QuicOptions {
            response_buffer_size: 10_000,
            ..QuicOptions::default()
        }),
    );
    let mut connection = connector_for(&config)
        .unwrap()
        .connect(&address)
        .await
        .unwrap();
    // 8-byte header + 9 000 bytes fits; 8 + 10 000 does not.
    assert_eq!(ask(&mut connection, 9).await.unwrap(), 9000);
    let error = ask(&mut connection, 10).await.unwrap_err();
    assert!(
        error.to_string().contains("10000-byte response buffer")
            && error.to_string().contains("response_buffer_size"),
        "{error}"
    );
    // The session survives a rejected stream.
    assert_eq!(ask(&mut connection, 1).await.unwrap(), 1000);
}

#[tokio::test]
async fn quic_validation_rejects_a_self_signed_certificate_and_accepts_its_ca_file() {
    let cert = self_signed();
    let (address, counts) = quic_server(&cert).await;
    let untrusted = Client::new(config(
        &address,
        quic(QuicOptions {
            validate_certificate: true,
            ..QuicOptions::default()
        }),
    ))
    .unwrap();
    let error = untrusted.ping().await.unwrap_err();
    let text = error.to_string();
    assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate, "{text}");
    assert!(
        text.contains(&format!("QUIC TLS certificate of {address} is not trusted"))
            && text.contains("UnknownIssuer")
            && text.contains("validate_certificate=false"),
        "{text}"
    );
    assert_eq!(counts.connections.load(Ordering::SeqCst), 0);

    let trusted = Client::new(config(
        &address,
        quic(QuicOptions {
            validate_certificate: true,
            ca_file: Some(cert.pem_path.clone()),
            ..QuicOptions::default()
        }),
    ))
    .unwrap();
    trusted.ping().await.unwrap();

    let wrong_name = Client::new(config(
        &address,
        quic(QuicOptions {
            validate_certificate: true,
            ca_file: Some(cert.pem_path.clone()),
            server_name: "example.com".into(),
            ..QuicOptions::default()
        }),
    ))
    .unwrap();
    let text = wrong_name.ping().await.unwrap_err().to_string();
    assert!(
        text.contains("does not cover the name 'example.com'") && text.contains("server_name"),
        "{text}"
    );
}

#[tokio::test]
async fn a_silent_udp_port_gives_a_quic_handshake_timeout() {
    // Bound but never read: QUIC Initial packets vanish as with a server without QUIC.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let mut options = config(&address, quic(QuicOptions::default()));
    options.connect_timeout = Duration::from_millis(300);
    options.reconnect.max_attempts = Some(2);
    let started = Instant::now();
    let error = Client::new(options).unwrap().ping().await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, Error::Unreachable { attempts: 2, .. }),
        "{error:?}"
    );
    assert!(
        text.contains(&format!(
            "the QUIC handshake with {address} did not complete"
        )) && text.contains("UDP"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn connection_strings_select_the_transports() {
    let cert = self_signed();
    let (quic_address, counts) = quic_server(&cert).await;
    let client = Client::from_connection_string(&format!(
        "iggy+quic://{quic_address}?heartbeat_interval=none&response_buffer_size=20000"
    ))
    .unwrap();
    client.ping().await.unwrap();
    assert_eq!(counts.streams.load(Ordering::SeqCst), 1);

    let (tls_address, _) = tls_server(&cert).await;
    let client = Client::from_connection_string(&format!(
        "iggy+tls://{tls_address}?heartbeat_interval=none&tls_domain=localhost&tls_ca_file={}",
        cert.pem_path
    ))
    .unwrap();
    client.ping().await.unwrap();
}
