//! A raw QUIC client (quinn), for misbehaving on purpose. It trusts the self-signed certificate
//! the server wrote at start, so the file is checked too.

use rill_integration::TestServer;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::sync::Arc;

pub async fn connect(server: &TestServer) -> (quinn::Endpoint, quinn::Connection) {
    let certificate = server
        .data_path()
        .join("certs")
        .join("quic-self-signed.pem");
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_file_iter(&certificate).expect("the generated certificate") {
        roots
            .add(der.expect("a PEM certificate"))
            .expect("a usable certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let connection = endpoint
        .connect(server.quic_address(), "localhost")
        .unwrap()
        .await
        .expect("QUIC handshake validating the generated certificate");
    (endpoint, connection)
}

/// One request on a new stream: the frame, FIN, then the whole response.
pub async fn request(connection: &quinn::Connection, frame: &[u8]) -> Vec<u8> {
    let (mut send, mut recv) = connection.open_bi().await.expect("open stream");
    send.write_all(frame).await.expect("write frame");
    send.finish().expect("finish");
    recv.read_to_end(1 << 20).await.expect("read response")
}

pub fn frame(code: u32, payload: &[u8]) -> Vec<u8> {
    let mut frame = ((payload.len() + 4) as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&code.to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

pub fn status(response: &[u8]) -> u32 {
    u32::from_le_bytes(response[..4].try_into().expect("a response header"))
}
