//! TLS over TCP (protocol.md 1.5): the same port and framing as plain TCP, inside a rustls
//! session. The rustls helpers here (roots, the accept-any verifier, what a certificate error
//! means for the user) are shared with QUIC.

use super::{
    BoxFuture, Connection, Connector, OutgoingFrame, PermanentFailure, READ_BUFFER_BYTES,
    RawResponse, read_response, write_frame,
};
use crate::config::TlsOptions;
use crate::error::{Error, Result};
use rill_core::ErrorCode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The one crypto provider of this crate.
pub(crate) fn ring_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds a rustls client configuration. With validation, the roots are the certificates of
/// `ca_file` when given (as upstream's SDK: the web PKI roots are then not used), else the web
/// PKI roots; without it any certificate is accepted (the handshake signature is still checked,
/// so the server must hold the certificate's key).
pub(crate) fn client_crypto(
    validate_certificate: bool,
    ca_file: Option<&str>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<rustls::ClientConfig> {
    let provider = ring_provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|error| Error::invalid(format!("TLS configuration: {error}")))?;
    if !validate_certificate {
        if let Some(path) = ca_file {
            // Reading it anyway catches a typo even in a setup that does not use it yet.
            load_ca_file(path)?;
        }
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth());
    }
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            for certificate in load_ca_file(path)? {
                roots.add(certificate).map_err(|error| Error::Tls {
                    code: ErrorCode::InvalidTlsCertificate,
                    message: format!(
                        "the TLS CA file '{path}' holds a certificate that cannot be used as a \
                         trust anchor ({error})"
                    ),
                })?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

/// The certificates of a PEM file; an unreadable file or one without certificates is an error.
fn load_ca_file(path: &str) -> Result<Vec<CertificateDer<'static>>> {
    let content = std::fs::read(path).map_err(|error| Error::Tls {
        code: ErrorCode::InvalidTlsCertificatePath,
        message: format!(
            "cannot read the TLS CA file '{path}': {error} (pass an existing PEM file with the \
             CA or server certificate)"
        ),
    })?;
    let certificates = CertificateDer::pem_slice_iter(&content)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|error| Error::Tls {
            code: ErrorCode::InvalidTlsCertificate,
            message: format!("the TLS CA file '{path}' is not valid PEM: {error}"),
        })?;
    if certificates.is_empty() {
        return Err(Error::Tls {
            code: ErrorCode::InvalidTlsCertificate,
            message: format!(
                "the TLS CA file '{path}' holds no certificate (expected PEM blocks \
                 '-----BEGIN CERTIFICATE-----')"
            ),
        });
    }
    Ok(certificates)
}

/// The host part of `host:port`, `[v6]:port` or a bare host.
pub(crate) fn host_of(address: &str) -> &str {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(host, _)| host);
    }
    match address.rsplit_once(':') {
        // More than one colon without brackets: a bare IPv6 address.
        Some((host, _)) if !host.contains(':') => host,
        _ => address,
    }
}

/// The name to verify the certificate against: `domain` when set, else the address's host (an
/// IP address is allowed).
pub(crate) fn server_name(
    domain: Option<&str>,
    address: &str,
    option: &str,
) -> std::result::Result<ServerName<'static>, PermanentFailure> {
    let name = domain.filter(|d| !d.is_empty()).unwrap_or(host_of(address));
    ServerName::try_from(name.to_owned()).map_err(|_| PermanentFailure {
        code: ErrorCode::InvalidTlsDomain,
        message: format!(
            "'{name}' is not a valid TLS server name (a DNS name or an IP address): set {option}"
        ),
    })
}

/// Which settings a certificate message points the user to.
pub(crate) struct Hints {
    /// How the user disables validation.
    pub disable: &'static str,
    /// The CA file option.
    pub ca_file: &'static str,
    /// The option that sets the verified name.
    pub name: &'static str,
}

pub(crate) const TCP_HINTS: Hints = Hints {
    disable: "tls_validate_certificate=false",
    ca_file: "tls_ca_file",
    name: "tls_domain",
};

/// A rejected certificate, in words: what is wrong, and what to change. `detail` is rustls's
/// own description (kept in the message: it names the names the certificate is valid for).
pub(crate) fn certificate_failure(
    what: &str,
    address: &str,
    name: &str,
    detail: &str,
    hints: &Hints,
) -> PermanentFailure {
    let message = if detail.contains("UnknownIssuer") {
        format!(
            "{what} certificate of {address} is not trusted (UnknownIssuer: it is self-signed or \
             signed by an unknown CA): pass a CA file with {} or disable validation ({})",
            hints.ca_file, hints.disable
        )
    } else if detail.contains("not valid for name") || detail.contains("NotValidForName") {
        format!(
            "{what} certificate of {address} does not cover the name '{name}' ({detail}): set \
             {} to a name the certificate is valid for, or disable validation ({})",
            hints.name, hints.disable
        )
    } else if detail.contains("expired") || detail.contains("Expired") {
        format!(
            "{what} certificate of {address} has expired ({detail}): renew the server's \
             certificate or disable validation ({})",
            hints.disable
        )
    } else if detail.contains("not valid yet") || detail.contains("NotValidYet") {
        format!(
            "{what} certificate of {address} is not valid yet ({detail}): check the clocks or \
             disable validation ({})",
            hints.disable
        )
    } else {
        format!(
            "{what} certificate of {address} was rejected ({detail}): check the server's \
             certificate, pass a CA file with {} or disable validation ({})",
            hints.ca_file, hints.disable
        )
    };
    PermanentFailure {
        code: ErrorCode::InvalidTlsCertificate,
        message,
    }
}

/// Accepts any server certificate, still checking that the handshake is signed with its key.
#[derive(Debug)]
pub(crate) struct AcceptAnyCertificate(pub Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
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

/// TLS over TCP.
#[derive(Clone)]
pub struct TlsConnector {
    connector: tokio_rustls::TlsConnector,
    domain: Option<String>,
    nodelay: bool,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnector")
            .field("domain", &self.domain)
            .field("nodelay", &self.nodelay)
            .finish_non_exhaustive()
    }
}

impl TlsConnector {
    /// Reads the CA file and checks the server name for `address` now, so that bad settings
    /// fail before the first connection attempt.
    pub fn new(options: &TlsOptions, address: &str, nodelay: bool) -> Result<Self> {
        let crypto = client_crypto(
            options.validate_certificate,
            options.ca_file.as_deref(),
            rustls::DEFAULT_VERSIONS,
        )?;
        server_name(options.domain.as_deref(), address, TCP_HINTS.name)?;
        Ok(TlsConnector {
            connector: tokio_rustls::TlsConnector::from(Arc::new(crypto)),
            domain: options.domain.clone(),
            nodelay,
        })
    }
}

impl Connector for TlsConnector {
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>> {
        Box::pin(async move {
            let name = server_name(self.domain.as_deref(), address, TCP_HINTS.name)
                .map_err(PermanentFailure::into_io)?;
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(self.nodelay)?;
            let peer = stream.peer_addr().ok();
            let local = stream.local_addr().ok();
            let stream = self
                .connector
                .connect(name.clone(), stream)
                .await
                .map_err(|error| handshake_error(error, address, &name))?;
            Ok(Box::new(TlsConnection {
                stream: BufReader::with_capacity(READ_BUFFER_BYTES, stream),
                peer,
                local,
            }) as Box<dyn Connection>)
        })
    }

    fn timeout_message(&self, address: &str, after: Duration) -> String {
        format!(
            "connecting with TLS to {address} did not complete within {after:?} (is the server \
             reachable, and is TLS enabled on its TCP listener?)"
        )
    }
}

/// Certificate problems become permanent failures; anything else stays an I/O error (retried),
/// with a hint for the common case of a server that does not speak TLS.
pub(crate) fn handshake_error(error: io::Error, address: &str, name: &ServerName<'_>) -> io::Error {
    let name = name.to_str();
    match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(problem)) => {
            let detail = match problem {
                // The short names are what people search for; the context variants carry them
                // only in Debug.
                CertificateError::UnknownIssuer => "UnknownIssuer".to_owned(),
                other => other.to_string(),
            };
            certificate_failure("TLS", address, &name, &detail, &TCP_HINTS).into_io()
        }
        Some(rustls::Error::AlertReceived(alert)) => PermanentFailure {
            code: ErrorCode::CannotEstablishConnection,
            message: format!(
                "the server at {address} refused the TLS handshake (alert {alert:?}): check its \
                 TLS settings"
            ),
        }
        .into_io(),
        Some(other) => io::Error::new(
            error.kind(),
            format!(
                "TLS handshake with {address} failed: {other} (does the server have TLS \
                 enabled on this port?)"
            ),
        ),
        None => io::Error::new(
            error.kind(),
            format!(
                "TLS handshake with {address} failed: {error} (does the server have TLS enabled \
                 on this port?)"
            ),
        ),
    }
}

/// A TLS session. The buffered reader also passes writes through to the TLS stream.
pub struct TlsConnection {
    stream: BufReader<TlsStream<TcpStream>>,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
}

impl std::fmt::Debug for TlsConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnection")
            .field("peer", &self.peer)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl Connection for TlsConnection {
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>> {
        Box::pin(async move {
            write_frame(&mut self.stream, frame).await?;
            // rustls buffers records until flushed when the socket pushes back.
            self.stream.flush().await?;
            read_response(&mut self.stream, frame.protocol).await
        })
    }

    fn peer_address(&self) -> Option<SocketAddr> {
        self.peer
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.local
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_part_of_addresses() {
        assert_eq!(host_of("127.0.0.1:8090"), "127.0.0.1");
        assert_eq!(host_of("example.com:1"), "example.com");
        assert_eq!(host_of("[::1]:8090"), "::1");
        assert_eq!(host_of("localhost"), "localhost");
        assert_eq!(host_of("::1"), "::1");
    }

    #[test]
    fn server_names_accept_ips_and_reject_garbage() {
        assert!(server_name(None, "127.0.0.1:1", "tls_domain").is_ok());
        assert!(server_name(Some("localhost"), "10.0.0.1:1", "tls_domain").is_ok());
        let error = server_name(Some("bad name!"), "h:1", "tls_domain").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidTlsDomain);
        assert!(error.message.contains("tls_domain"), "{error}");
    }

    #[test]
    fn ca_file_problems_are_named() {
        let missing =
            client_crypto(true, Some("/nonexistent/ca.pem"), rustls::DEFAULT_VERSIONS).unwrap_err();
        assert_eq!(missing.code(), ErrorCode::InvalidTlsCertificatePath);
        let text = missing.to_string();
        assert!(
            text.contains("/nonexistent/ca.pem") && text.contains("cannot read"),
            "{text}"
        );

        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let error = client_crypto(true, empty.to_str(), rustls::DEFAULT_VERSIONS).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidTlsCertificate);
        assert!(
            error.to_string().contains("holds no certificate"),
            "{error}"
        );
    }
}
