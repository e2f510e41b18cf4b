//! TLS material for the TCP (`[tcp.tls]`) and QUIC (`[quic.certificate]`) front-ends:
//! certificates read from PEM files or generated at start, and the rustls configurations.
//!
//! Every configuration names its crypto provider (ring) explicitly. rustls can also pick a
//! process-wide default, but that default is ambiguous when another crate in the same build
//! enables aws-lc-rs (the official SDK used by our tests does), and an ambiguous default panics.

use crate::config::{CertificateConfig, QuicConfig};
use compio_quic::crypto::rustls::QuicServerConfig;
use compio_quic::{IdleTimeout, TransportConfig, VarInt};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Names the generated certificate is valid for: what clients on the same host dial.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A certificate chain and its private key.
pub struct Certificate {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// Where the generated certificate was written (for clients to trust), if generated.
    pub generated_at: Option<PathBuf>,
}

impl std::fmt::Debug for Certificate {
    // The private key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("chain_len", &self.chain.len())
            .field("generated_at", &self.generated_at)
            .finish_non_exhaustive()
    }
}

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Reads the configured PEM files, or generates a self-signed certificate when none are given.
/// A generated certificate (not its key) is written to `<cert_dir>/<name>-self-signed.pem` so
/// that clients can be told to trust it. `section` names the config section in errors.
pub fn load_or_generate(
    config: &CertificateConfig,
    section: &str,
    cert_dir: &Path,
    name: &str,
) -> Result<Certificate, String> {
    if config.has_files() {
        return load_pem(&config.cert_file, &config.key_file)
            .map_err(|error| format!("{section}: {error}"));
    }
    if !config.self_signed {
        return Err(format!(
            "{section}: no certificate: set cert_file and key_file, or self_signed = true"
        ));
    }
    let generated = rcgen::generate_simple_self_signed(
        SELF_SIGNED_NAMES
            .iter()
            .map(|name| name.to_string())
            .collect::<Vec<_>>(),
    )
    .map_err(|error| format!("{section}: cannot generate a self-signed certificate: {error}"))?;
    let key = PrivateKeyDer::try_from(generated.signing_key.serialize_der())
        .map_err(|error| format!("{section}: generated key: {error}"))?;
    let path = cert_dir.join(format!("{name}-self-signed.pem"));
    let written = std::fs::create_dir_all(cert_dir)
        .and_then(|()| std::fs::write(&path, generated.cert.pem()));
    let generated_at = match written {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot write the generated certificate");
            None
        }
    };
    Ok(Certificate {
        chain: vec![generated.cert.der().clone()],
        key,
        generated_at,
    })
}

fn load_pem(cert_file: &Path, key_file: &Path) -> Result<Certificate, String> {
    let chain = CertificateDer::pem_file_iter(cert_file)
        .map_err(|error| {
            format!(
                "cannot read certificate file {}: {error}",
                cert_file.display()
            )
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("certificate file {}: {error}", cert_file.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "certificate file {} holds no PEM certificate",
            cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|error| {
        format!(
            "key file {}: no usable PEM private key (PKCS#8, PKCS#1 or SEC1): {error}",
            key_file.display()
        )
    })?;
    Ok(Certificate {
        chain,
        key,
        generated_at: None,
    })
}

/// TLS 1.2 and 1.3 for the TCP port.
pub fn tcp_server_config(certificate: &Certificate) -> Result<Arc<rustls::ServerConfig>, String> {
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("tcp.tls: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certificate.chain.clone(), certificate.key.clone_key())
        .map_err(|error| format!("tcp.tls: the certificate and key do not fit: {error}"))?;
    Ok(Arc::new(config))
}

/// TLS 1.3 (QUIC's only version), no ALPN (protocol.md 1.6), and the transport limits.
pub fn quic_server_config(
    certificate: &Certificate,
    quic: &QuicConfig,
) -> Result<compio_quic::ServerConfig, String> {
    let tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|error| format!("quic.certificate: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certificate.chain.clone(), certificate.key.clone_key())
        .map_err(|error| {
            format!("quic.certificate: the certificate and key do not fit: {error}")
        })?;
    let crypto = QuicServerConfig::try_from(tls).map_err(|error| format!("quic: {error}"))?;
    let mut config = compio_quic::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config(quic)?));
    // Each shard has its own endpoint: a client whose address changes lands on another shard,
    // which does not know the connection. Refusing migration keeps that failure explicit.
    config.migration(false);
    Ok(config)
}

fn transport_config(quic: &QuicConfig) -> Result<TransportConfig, String> {
    let varint = |key: &str, value: u64| {
        VarInt::from_u64(value).map_err(|_| format!("quic.{key} is too large"))
    };
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(quic.max_concurrent_bidi_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .stream_receive_window(varint("receive_window", quic.receive_window.0)?)
        .receive_window(varint("receive_window", quic.receive_window.0)?)
        .send_window(quic.send_window.0)
        .initial_mtu(quic.initial_mtu)
        .keep_alive_interval(Some(quic.keep_alive_interval.0).filter(|d| !d.is_zero()))
        .max_idle_timeout(Some(idle_timeout(quic.max_idle_timeout.0)?));
    Ok(transport)
}

fn idle_timeout(duration: Duration) -> Result<IdleTimeout, String> {
    IdleTimeout::try_from(duration).map_err(|_| "quic.max_idle_timeout is too large".to_string())
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;

    fn generated() -> (tempfile::TempDir, Certificate) {
        let dir = tempfile::tempdir().unwrap();
        let config = CertificateConfig {
            self_signed: true,
            cert_file: PathBuf::new(),
            key_file: PathBuf::new(),
        };
        let certificate = load_or_generate(&config, "tcp.tls", dir.path(), "tcp").unwrap();
        (dir, certificate)
    }

    #[test]
    fn a_generated_certificate_is_written_and_loads_back_with_its_key() {
        let (dir, certificate) = generated();
        let path = certificate.generated_at.clone().unwrap();
        assert!(path.starts_with(dir.path()));
        let reread: Vec<_> = CertificateDer::pem_file_iter(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(reread, certificate.chain);
        // The chain and key must belong together, or rustls refuses them.
        tcp_server_config(&certificate).unwrap();
    }

    #[test]
    fn pem_files_load_and_bad_files_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let generated =
            rcgen::generate_simple_self_signed(vec!["example.test".to_string()]).unwrap();
        let cert_path = dir.path().join("cert.pem");
        let key_path = dir.path().join("key.pem");
        std::fs::write(&cert_path, generated.cert.pem()).unwrap();
        std::fs::write(&key_path, generated.signing_key.serialize_pem()).unwrap();
        let files = CertificateConfig {
            self_signed: false,
            cert_file: cert_path.clone(),
            key_file: key_path,
        };
        let loaded = load_or_generate(&files, "tcp.tls", dir.path(), "tcp").unwrap();
        assert_eq!(loaded.chain, vec![generated.cert.der().clone()]);
        assert!(loaded.generated_at.is_none());
        tcp_server_config(&loaded).unwrap();

        let missing = CertificateConfig {
            cert_file: dir.path().join("nope.pem"),
            ..files.clone()
        };
        let error = load_or_generate(&missing, "tcp.tls", dir.path(), "tcp").unwrap_err();
        assert!(
            error.contains("tcp.tls") && error.contains("nope.pem"),
            "{error}"
        );

        let not_a_key = CertificateConfig {
            key_file: cert_path,
            ..files
        };
        let error =
            load_or_generate(&not_a_key, "quic.certificate", dir.path(), "quic").unwrap_err();
        assert!(
            error.contains("quic.certificate") && error.contains("private key"),
            "{error}"
        );
    }

    #[test]
    fn quic_config_builds_from_the_defaults() {
        let (_dir, certificate) = generated();
        let config = crate::config::Config::load(None, Vec::new())
            .unwrap()
            .config;
        quic_server_config(&certificate, &config.quic).unwrap();
    }
}
