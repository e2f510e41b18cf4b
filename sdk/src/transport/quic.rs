//! QUIC (protocol.md 1.6): one QUIC connection is one session; every request opens a new
//! bidirectional stream, writes the TCP request frame, finishes its send side and reads the TCP
//! response frame to the end of the stream. No ALPN. 0.9 frames travel the same way, one per
//! stream (protocol-0.9.md 1.3).

use super::tls::{Hints, certificate_failure, client_crypto};
use super::{BoxFuture, Connection, Connector, OutgoingFrame, PermanentFailure, RawResponse};
use crate::config::{Protocol, QuicOptions};
use crate::error::{Error, Result};
use bytes::Bytes;
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{ConnectionError, IdleTimeout, ReadToEndError, VarInt};
use rill_core::ErrorCode;
use rill_core::frame::{RESPONSE_HEADER_SIZE, ResponseHeader};
use rill_core::v09;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

const QUIC_HINTS: Hints = Hints {
    disable: "validate_certificate=false",
    ca_file: "tls_ca_file",
    name: "server_name",
};

/// Opens QUIC connections, each from its own UDP socket (so each has its own client id).
#[derive(Clone)]
pub struct QuicConnector {
    config: quinn::ClientConfig,
    server_name: String,
    client_address: Option<SocketAddr>,
    response_limit: usize,
}

impl std::fmt::Debug for QuicConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConnector")
            .field("server_name", &self.server_name)
            .field("client_address", &self.client_address)
            .field("response_limit", &self.response_limit)
            .finish_non_exhaustive()
    }
}

impl QuicConnector {
    /// Checks every option now (CA file, server name, transport limits), so that bad settings
    /// fail before the first connection attempt.
    pub fn new(options: &QuicOptions) -> Result<Self> {
        let invalid = |what: &str, value: &dyn std::fmt::Debug| {
            Error::invalid(format!("QUIC option {what} = {value:?} is out of range"))
        };
        super::tls::server_name(Some(&options.server_name), "", QUIC_HINTS.name)?;
        let client_address = options
            .client_address
            .as_deref()
            .map(|text| {
                text.parse::<SocketAddr>().map_err(|_| {
                    Error::invalid(format!(
                        "QUIC client_address '{text}' is not an IP:port socket address"
                    ))
                })
            })
            .transpose()?;
        if options.response_buffer_size < RESPONSE_HEADER_SIZE {
            return Err(invalid(
                "response_buffer_size",
                &options.response_buffer_size,
            ));
        }
        let crypto = client_crypto(
            options.validate_certificate,
            options.ca_file.as_deref(),
            &[&rustls::version::TLS13],
        )?;
        let crypto = QuicClientConfig::try_from(crypto)
            .map_err(|error| Error::invalid(format!("QUIC TLS configuration: {error}")))?;
        let mut transport = quinn::TransportConfig::default();
        transport
            .initial_mtu(options.initial_mtu)
            .send_window(options.send_window)
            .receive_window(
                VarInt::from_u64(options.receive_window)
                    .map_err(|_| invalid("receive_window", &options.receive_window))?,
            )
            .datagram_send_buffer_size(options.datagram_send_buffer_size)
            .max_concurrent_bidi_streams(
                VarInt::from_u64(options.max_concurrent_bidi_streams).map_err(|_| {
                    invalid(
                        "max_concurrent_bidi_streams",
                        &options.max_concurrent_bidi_streams,
                    )
                })?,
            )
            .keep_alive_interval(options.keep_alive_interval.filter(|d| !d.is_zero()));
        let idle = match options.max_idle_timeout.filter(|d| !d.is_zero()) {
            Some(timeout) => Some(
                IdleTimeout::try_from(timeout)
                    .map_err(|_| invalid("max_idle_timeout", &options.max_idle_timeout))?,
            ),
            None => None,
        };
        transport.max_idle_timeout(idle);
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport));
        Ok(QuicConnector {
            config,
            server_name: options.server_name.clone(),
            client_address,
            response_limit: options.response_buffer_size,
        })
    }

    /// The local address to bind for `server`: the configured one, else the address the
    /// kernel would route from (so `local_address` names the address the server sees, which
    /// is what it derives the client id from), else the unspecified address.
    fn bind_address(&self, server: SocketAddr) -> SocketAddr {
        if let Some(address) = self.client_address {
            return address;
        }
        let unspecified: IpAddr = if server.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        let routed = UdpSocket::bind((unspecified, 0))
            .and_then(|probe| {
                probe.connect(server)?;
                probe.local_addr()
            })
            .map(|local| local.ip())
            .unwrap_or(unspecified);
        SocketAddr::new(routed, 0)
    }
}

impl Connector for QuicConnector {
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>> {
        Box::pin(async move {
            let server = tokio::net::lookup_host(address)
                .await?
                .next()
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("'{address}' resolves to no address"),
                    )
                })?;
            let bind = self.bind_address(server);
            let endpoint = quinn::Endpoint::client(bind).map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("cannot bind the QUIC client socket to {bind}: {error}"),
                )
            })?;
            let connecting = endpoint
                .connect_with(self.config.clone(), server, &self.server_name)
                .map_err(|error| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("cannot start a QUIC connection to {address}: {error}"),
                    )
                })?;
            let connection = connecting
                .await
                .map_err(|error| handshake_error(error, address, &self.server_name))?;
            Ok(Box::new(QuicConnection {
                connection,
                endpoint,
                response_limit: self.response_limit,
            }) as Box<dyn Connection>)
        })
    }

    fn timeout_message(&self, address: &str, after: Duration) -> String {
        format!(
            "the QUIC handshake with {address} did not complete within {after:?}: check that \
             the server listens for QUIC on that UDP port (server default 127.0.0.1:8080, \
             [quic] enabled) and that no firewall drops UDP"
        )
    }
}

fn handshake_error(error: ConnectionError, address: &str, server_name: &str) -> io::Error {
    match &error {
        ConnectionError::TransportError(transport)
            if transport.reason.contains("invalid peer certificate") =>
        {
            certificate_failure(
                "QUIC TLS",
                address,
                server_name,
                &transport.reason,
                &QUIC_HINTS,
            )
            .into_io()
        }
        _ if transport_is_crypto(&error) => PermanentFailure {
            code: ErrorCode::QuicError,
            message: format!(
                "the QUIC TLS handshake with {address} failed ({error}): check the server's \
                 certificate and server_name"
            ),
        }
        .into_io(),
        ConnectionError::TimedOut => io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the QUIC handshake with {address} timed out: check that the server listens for \
                 QUIC on that UDP port"
            ),
        ),
        _ => io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!("QUIC connection to {address} failed: {error}"),
        ),
    }
}

/// Whether the connection failed in the TLS layer (QUIC error codes 0x100-0x1ff).
fn transport_is_crypto(error: &ConnectionError) -> bool {
    let code = match error {
        ConnectionError::TransportError(transport) => u64::from(transport.code),
        ConnectionError::ConnectionClosed(close) => u64::from(close.error_code),
        _ => return false,
    };
    (0x100..0x200).contains(&code)
}

/// A QUIC session.
pub struct QuicConnection {
    connection: quinn::Connection,
    // Owns the UDP socket; its address is the one the server derives the client id from.
    endpoint: quinn::Endpoint,
    response_limit: usize,
}

impl std::fmt::Debug for QuicConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConnection")
            .field("peer", &self.connection.remote_address())
            .field("local", &self.endpoint.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl Drop for QuicConnection {
    fn drop(&mut self) {
        // Tells the server at once instead of leaving the session to its idle timeout.
        self.connection.close(VarInt::from_u32(0), b"");
    }
}

fn stream_error(what: &str, error: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        format!("QUIC {what}: {error}"),
    )
}

impl Connection for QuicConnection {
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>> {
        Box::pin(async move {
            let (mut send, mut receive) = self
                .connection
                .open_bi()
                .await
                .map_err(|error| stream_error("cannot open a stream", error))?;
            send.write_all(frame.head)
                .await
                .map_err(|error| stream_error("write failed", error))?;
            if !frame.body.is_empty() {
                send.write_all(frame.body)
                    .await
                    .map_err(|error| stream_error("write failed", error))?;
            }
            send.finish()
                .map_err(|error| stream_error("cannot finish the request", error))?;
            let data =
                receive
                    .read_to_end(self.response_limit)
                    .await
                    .map_err(|error| match error {
                        ReadToEndError::TooLong => io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "QUIC response larger than the {}-byte response buffer: raise \
                             response_buffer_size (for example, poll fewer messages at once)",
                                self.response_limit
                            ),
                        ),
                        ReadToEndError::Read(error) => stream_error("read failed", error),
                    })?;
            match frame.protocol {
                Protocol::V08 => parse_response(Bytes::from(data)),
                Protocol::V09 => parse_v09_reply(Bytes::from(data)),
            }
        })
    }

    fn peer_address(&self) -> Option<SocketAddr> {
        Some(self.connection.remote_address())
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.endpoint.local_addr().ok()
    }
}

/// A whole 0.9 reply stream: one reply or eviction frame (protocol-0.9.md 1.3).
fn parse_v09_reply(data: Bytes) -> io::Result<RawResponse> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let Some(header) = data.get(..v09::header::HEADER_SIZE) else {
        return Err(invalid(format!(
            "QUIC reply of {} bytes is shorter than the 256-byte header",
            data.len()
        )));
    };
    let header = header.try_into().expect("sliced to the header size");
    let (length, status) =
        v09::client::read_reply_header(header).map_err(|error| invalid(error.to_string()))?;
    let payload = data.slice(v09::header::HEADER_SIZE..);
    if payload.len() != length {
        return Err(invalid(format!(
            "QUIC reply declares {length} body bytes but carries {}",
            payload.len()
        )));
    }
    Ok(RawResponse { status, payload })
}

/// A whole response stream: the TCP response frame, nothing more and nothing less.
fn parse_response(data: Bytes) -> io::Result<RawResponse> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let Some(header) = data.get(..RESPONSE_HEADER_SIZE) else {
        return Err(invalid(format!(
            "QUIC response of {} bytes is shorter than the {RESPONSE_HEADER_SIZE}-byte header",
            data.len()
        )));
    };
    let header = ResponseHeader::parse(header.try_into().expect("sliced to the header size"));
    if header.status != 0 {
        return Ok(RawResponse {
            status: header.status,
            payload: Bytes::new(),
        });
    }
    let payload = data.slice(RESPONSE_HEADER_SIZE..);
    if payload.len() != header.length as usize {
        return Err(invalid(format!(
            "QUIC response declares {} payload bytes but carries {}",
            header.length,
            payload.len()
        )));
    }
    Ok(RawResponse { status: 0, payload })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_whole_frames() {
        let ok = parse_response(Bytes::from_static(&[0, 0, 0, 0, 2, 0, 0, 0, 7, 8])).unwrap();
        assert_eq!((ok.status, &ok.payload[..]), (0, &[7u8, 8][..]));
        let error = parse_response(Bytes::from_static(&[40, 0, 0, 0, 0, 0, 0, 0])).unwrap();
        assert_eq!(error.status, 40);
        assert!(parse_response(Bytes::new()).is_err());
        assert!(parse_response(Bytes::from_static(&[0, 0, 0, 0, 3, 0, 0, 0, 1])).is_err());
    }

    #[test]
    fn bad_options_are_rejected_when_built() {
        let bad_address = QuicOptions {
            client_address: Some("not-an-address".into()),
            ..QuicOptions::default()
        };
        let error = QuicConnector::new(&bad_address).unwrap_err();
        assert!(error.to_string().contains("client_address"), "{error}");
        let bad_name = QuicOptions {
            server_name: "no spaces allowed".into(),
            ..QuicOptions::default()
        };
        assert_eq!(
            QuicConnector::new(&bad_name).unwrap_err().code(),
            ErrorCode::InvalidTlsDomain
        );
        let missing_ca = QuicOptions {
            validate_certificate: true,
            ca_file: Some("/nonexistent.pem".into()),
            ..QuicOptions::default()
        };
        assert_eq!(
            QuicConnector::new(&missing_ca).unwrap_err().code(),
            ErrorCode::InvalidTlsCertificatePath
        );
    }
}
