//! The client-facing listeners prepared at boot: TLS and QUIC configurations and the QUIC socket
//! group (so a bad certificate or a taken port stops the start before any shard runs), and each
//! shard's WebSocket listener.

use crate::config::Config;
use crate::shard::SharedState;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What the front-ends need before the shards start: TLS and QUIC configurations (so a bad
/// certificate stops the start), and the QUIC socket group, one socket per shard.
pub(super) struct Frontends {
    pub(super) tls: Option<Arc<rustls::ServerConfig>>,
    pub(super) quic_config: Option<compio_quic::ServerConfig>,
    pub(super) quic_sockets: Vec<std::net::UdpSocket>,
    pub(super) quic_address: Option<SocketAddr>,
    pub(super) websocket_tls: Option<Arc<rustls::ServerConfig>>,
}

impl Frontends {
    pub(super) fn prepare(config: &Config, shard_count: usize) -> Result<Frontends, String> {
        let cert_dir = config.system.path.join("certs");
        let mut frontends = Frontends {
            tls: None,
            quic_config: None,
            quic_sockets: Vec::new(),
            quic_address: None,
            websocket_tls: None,
        };
        if config.tcp.enabled {
            crate::frontend::ports::refuse_taken_tcp_port(config.tcp.address)?;
        }
        if config.tcp.enabled && config.tcp.tls.enabled {
            let certificate = crate::tls::load_or_generate(
                &config.tcp.tls.certificate(),
                "tcp.tls",
                &cert_dir,
                "tcp",
            )?;
            log_certificate("TCP", &certificate);
            frontends.tls = Some(crate::tls::tcp_server_config(&certificate)?);
        }
        if config.websocket.enabled {
            crate::frontend::ports::refuse_taken_tcp_port(config.websocket.address)?;
            if config.websocket.tls.enabled {
                let certificate = crate::tls::load_or_generate(
                    &config.websocket.tls.certificate(),
                    "websocket.tls",
                    &cert_dir,
                    "websocket",
                )?;
                log_certificate("WebSocket", &certificate);
                frontends.websocket_tls = Some(crate::tls::tcp_server_config(&certificate)?);
            }
        }
        if config.quic.enabled {
            let quic = &config.quic;
            let certificate = crate::tls::load_or_generate(
                &quic.certificate,
                "quic.certificate",
                &cert_dir,
                "quic",
            )?;
            log_certificate("QUIC", &certificate);
            frontends.quic_config = Some(crate::tls::quic_server_config(&certificate, quic)?);
            let sockets =
                crate::frontend::quic::bind_group(quic.address, shard_count, quic.socket_options())
                    .map_err(|error| {
                        format!("cannot listen on {} (QUIC, UDP): {error}", quic.address)
                    })?;
            frontends.quic_address =
                Some(sockets[0].local_addr().map_err(|error| error.to_string())?);
            frontends.quic_sockets = sockets;
        }
        Ok(frontends)
    }
}

fn log_certificate(transport: &str, certificate: &crate::tls::Certificate) {
    match &certificate.generated_at {
        Some(path) => tracing::info!(
            transport,
            path = %path.display(),
            "using a self-signed certificate for localhost generated at start; clients must skip validation or trust this file"
        ),
        None => tracing::info!(
            transport,
            certificates = certificate.chain.len(),
            "TLS certificate loaded"
        ),
    }
}

/// Binds this shard's WebSocket listener: shard 0 first (resolving port 0), then the others on
/// the address it bound (one SO_REUSEPORT group, as TCP).
pub(super) async fn bind_websocket(
    id: u16,
    shared: &SharedState,
) -> Result<compio::net::TcpListener, String> {
    let address = if id == 0 {
        shared.config.websocket.address
    } else {
        loop {
            if let Some(address) = shared.websocket_address.get() {
                break *address;
            }
            compio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let listener = crate::frontend::tcp::bind(address, &shared.config.tcp.socket)
        .await
        .map_err(|error| format!("cannot listen on {address} (WebSocket): {error}"))?;
    if id == 0 {
        let bound = listener.local_addr().map_err(|error| error.to_string())?;
        let _ = shared.websocket_address.set(bound);
    }
    Ok(listener)
}
