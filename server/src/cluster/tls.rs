//! `[cluster.tls]`: TLS 1.3 on the replica connections, set up before the authentication of
//! `wire` runs inside it. The acceptor shows its certificate; the dialer checks it against
//! `ca_file` for the roster's `ip` of the peer it dialed, or, with `self_signed`, accepts any
//! certificate (each node then generates its own at start). Peers are proven by the shared
//! secret either way, which is why the configuration requires `[cluster.auth]` with TLS.

use crate::config::ClusterTlsConfig;
use crate::tls::{load_or_generate, provider};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The ALPN protocol of replica connections, as upstream's.
const ALPN: &[u8] = b"iggy-replica";

/// Both sides of replica TLS for this node.
#[derive(Clone)]
pub struct ReplicaTls {
    connector: tokio_rustls::TlsConnector,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl ReplicaTls {
    /// Reads (or generates) the certificate and builds both configurations. A generated
    /// certificate is written under `cert_dir` as `replica-self-signed.pem`.
    pub fn new(config: &ClusterTlsConfig, cert_dir: &Path) -> Result<ReplicaTls, String> {
        let certificate =
            load_or_generate(&config.certificate(), "cluster.tls", cert_dir, "replica")?;
        let tls13 = |error: rustls::Error| format!("cluster.tls: {error}");
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls13)?
            .with_no_client_auth()
            .with_single_cert(certificate.chain, certificate.key)
            .map_err(|error| format!("cluster.tls: the certificate and key do not fit: {error}"))?;
        server.alpn_protocols = vec![ALPN.to_vec()];
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(tls13)?;
        let mut client = if config.self_signed {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider())))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(trust_anchors(&config.ca_file)?)
                .with_no_client_auth()
        };
        client.alpn_protocols = vec![ALPN.to_vec()];
        Ok(ReplicaTls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
        })
    }

    /// TLS over a connection this node dialed to `address` (`host:port` from the roster; the
    /// certificate must be valid for `host`).
    pub async fn dial(&self, stream: TcpStream, address: &str) -> io::Result<ReplicaStream> {
        let host = address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|error| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("replica address {address}: {error}"),
            )
        })?;
        let stream = self.connector.connect(name, stream).await?;
        Ok(ReplicaStream::Tls(Box::new(stream.into())))
    }

    /// TLS over a connection a peer dialed.
    pub async fn accept(&self, stream: TcpStream) -> io::Result<ReplicaStream> {
        let stream = self.acceptor.accept(stream).await?;
        Ok(ReplicaStream::Tls(Box::new(stream.into())))
    }
}

fn trust_anchors(ca_file: &Path) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(ca_file)
        .map_err(|error| format!("cluster.tls.ca_file {}: {error}", ca_file.display()))?;
    for certificate in certificates {
        let certificate = certificate
            .map_err(|error| format!("cluster.tls.ca_file {}: {error}", ca_file.display()))?;
        roots
            .add(certificate)
            .map_err(|error| format!("cluster.tls.ca_file {}: {error}", ca_file.display()))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "cluster.tls.ca_file {} holds no PEM certificate",
            ca_file.display()
        ));
    }
    Ok(roots)
}

/// A replica connection: plain TCP, or TLS over it.
pub enum ReplicaStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

impl AsyncRead for ReplicaStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReplicaStream::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            ReplicaStream::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ReplicaStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ReplicaStream::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            ReplicaStream::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReplicaStream::Plain(stream) => Pin::new(stream).poll_flush(cx),
            ReplicaStream::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReplicaStream::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            ReplicaStream::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

/// `self_signed` mode: any certificate is accepted, the handshake must still be signed with
/// its key. (The SDK has its own copy for clients: the server does not depend on the SDK.)
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General(
            "replica connections are TLS 1.3 only".into(),
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A CA, and a certificate it signed for `names`, written as PEM files in `dir`.
    fn signed(dir: &Path, tag: &str, names: &[&str]) -> ClusterTlsConfig {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let path = |name: &str| dir.join(format!("{tag}-{name}.pem"));
        std::fs::write(path("ca"), ca_cert.pem()).unwrap();
        std::fs::write(path("cert"), cert.pem()).unwrap();
        std::fs::write(path("key"), key.serialize_pem()).unwrap();
        ClusterTlsConfig {
            enabled: true,
            self_signed: false,
            cert_file: path("cert"),
            key_file: path("key"),
            ca_file: path("ca"),
        }
    }

    /// Dials `server` through `client` as `host`, and has one byte echoed.
    async fn echo(server: &ReplicaTls, client: &ReplicaTls, host: &str) -> io::Result<u8> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let acceptor = server.clone();
        let serving = tokio::spawn(async move {
            let (stream, _) = listener.accept().await?;
            let mut stream = acceptor.accept(stream).await?;
            let byte = stream.read_u8().await?;
            stream.write_u8(byte + 1).await?;
            stream.flush().await
        });
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        let mut stream = client.dial(stream, &format!("{host}:{port}")).await?;
        stream.write_u8(7).await?;
        stream.flush().await?;
        let answer = stream.read_u8().await;
        let _ = serving.await;
        answer
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn peers_are_checked_against_the_ca_for_the_address_dialed() {
        let dir = tempfile::tempdir().unwrap();
        let node = ReplicaTls::new(&signed(dir.path(), "a", &["127.0.0.1"]), dir.path()).unwrap();
        let stranger =
            ReplicaTls::new(&signed(dir.path(), "b", &["127.0.0.1"]), dir.path()).unwrap();
        runtime().block_on(async {
            assert_eq!(echo(&node, &node, "127.0.0.1").await.unwrap(), 8);
            // Another CA's certificate, or one not valid for the name dialed: refused.
            assert!(echo(&stranger, &node, "127.0.0.1").await.is_err());
            assert!(echo(&node, &node, "localhost").await.is_err());
        });
    }

    #[test]
    fn self_signed_nodes_encrypt_without_checking_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let config = ClusterTlsConfig {
            enabled: true,
            self_signed: true,
            ..ClusterTlsConfig::default()
        };
        let a = ReplicaTls::new(&config, dir.path()).unwrap();
        let b = ReplicaTls::new(&config, &dir.path().join("b")).unwrap();
        assert!(dir.path().join("replica-self-signed.pem").exists());
        runtime().block_on(async {
            assert_eq!(echo(&a, &b, "127.0.0.1").await.unwrap(), 8);
            // A plaintext dialer gets no TLS session and no answer.
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let acceptor = a.clone();
            let accepting = tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                acceptor.accept(stream).await.map(|_| ())
            });
            let mut plain = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            plain.write_all(&[0u8; 64]).await.unwrap();
            assert!(accepting.await.unwrap().is_err());
        });
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = signed(dir.path(), "a", &["127.0.0.1"]);
        config.ca_file = dir.path().join("missing.pem");
        let error = ReplicaTls::new(&config, dir.path()).err().unwrap();
        assert!(error.contains("cluster.tls.ca_file"), "{error}");
        std::fs::write(dir.path().join("empty.pem"), "").unwrap();
        config.ca_file = dir.path().join("empty.pem");
        let error = ReplicaTls::new(&config, dir.path()).err().unwrap();
        assert!(error.contains("no PEM certificate"), "{error}");
    }
}
