//! The HTTP REST API as a transport (upstream 0.8's routes, JSON, JWT), over HTTP/1.1 or HTTPS.
//!
//! The client above the transports speaks binary frames; this connection turns each 0.8 frame
//! back into its request, makes the HTTP call that stands for it (`route`), and turns the JSON
//! answer into the payload the binary command would have had (`answer`). So every command of
//! the SDK, the CLI and iggy-bench works over HTTP without a second client. The access token a
//! login answers is kept by the connection and sent with every call (the API is stateless);
//! a logout drops it. What HTTP cannot do (GetMe, joining groups, a group consumer's polls and
//! offsets, as upstream's API) is answered FeatureUnavailable.

mod answer;
mod route;

use super::tls::{client_crypto, server_name};
use super::{BoxFuture, Connection, Connector, OutgoingFrame, RawResponse};
use crate::config::{Protocol, TlsOptions};
use crate::error::Result;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use rill_core::ErrorCode;
use rill_core::frame::REQUEST_HEADER_SIZE;
use rill_core::requests::Request;
use route::{Answer, Call};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;

/// HTTP or HTTPS to the API's address.
#[derive(Clone)]
pub struct HttpConnector {
    tls: Option<(tokio_rustls::TlsConnector, Option<String>)>,
}

impl std::fmt::Debug for HttpConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConnector")
            .field("https", &self.tls.is_some())
            .finish()
    }
}

impl HttpConnector {
    /// Plain HTTP, or HTTPS with `tls` (its CA file is read now).
    pub fn new(tls: Option<&TlsOptions>, address: &str) -> Result<HttpConnector> {
        let tls = match tls {
            None => None,
            Some(options) => {
                let mut crypto = client_crypto(
                    options.validate_certificate,
                    options.ca_file.as_deref(),
                    rustls::DEFAULT_VERSIONS,
                )?;
                crypto.alpn_protocols = vec![b"http/1.1".to_vec()];
                server_name(options.domain.as_deref(), address, "--http-tls-domain")?;
                Some((
                    tokio_rustls::TlsConnector::from(Arc::new(crypto)),
                    options.domain.clone(),
                ))
            }
        };
        Ok(HttpConnector { tls })
    }
}

impl Connector for HttpConnector {
    fn connect<'a>(&'a self, address: &'a str) -> BoxFuture<'a, io::Result<Box<dyn Connection>>> {
        Box::pin(async move {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            let peer = stream.peer_addr().ok();
            let local = stream.local_addr().ok();
            let sender = match &self.tls {
                None => handshake(stream).await?,
                Some((connector, domain)) => {
                    let name = server_name(domain.as_deref(), address, "--http-tls-domain")
                        .map_err(super::PermanentFailure::into_io)?;
                    handshake(connector.connect(name, stream).await?).await?
                }
            };
            Ok(Box::new(HttpConnection {
                sender,
                host: address.to_owned(),
                token: None,
                peer,
                local,
            }) as Box<dyn Connection>)
        })
    }

    fn timeout_message(&self, address: &str, after: std::time::Duration) -> String {
        format!(
            "connecting to the HTTP API at {address} did not complete within {after:?} (is the \
             server's [http] endpoint enabled on that address?)"
        )
    }
}

async fn handshake<S>(stream: S) -> io::Result<SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "HTTP connection ended");
        }
    });
    Ok(sender)
}

/// One keep-alive HTTP connection and the access token of its login.
pub struct HttpConnection {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    token: Option<String>,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
}

impl HttpConnection {
    async fn call(&mut self, call: Call) -> io::Result<RawResponse> {
        let mut request = hyper::Request::builder()
            .method(call.method)
            .uri(&call.target)
            .header(hyper::header::HOST, &self.host);
        if let Some(token) = &self.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = match &call.body {
            Some(body) => {
                request = request.header(hyper::header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(body).map_err(io::Error::other)?)
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(body)).map_err(io::Error::other)?;
        self.sender.ready().await.map_err(io::Error::other)?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(io::Error::other)?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(io::Error::other)?
            .to_bytes();
        if !status.is_success() {
            return Ok(RawResponse {
                status: refusal(status, &body, call.not_found).map_or(0, ErrorCode::code),
                payload: Bytes::new(),
            });
        }
        let payload = answer::payload(call.answer, &body)
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.0))?;
        match call.answer {
            Answer::Identity => {
                let value: serde_json::Value = serde_json::from_slice(&body)
                    .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
                self.token = value["access_token"]["token"].as_str().map(str::to_owned);
            }
            Answer::Logout => self.token = None,
            _ => {}
        }
        Ok(RawResponse {
            status: 0,
            payload: Bytes::from(payload),
        })
    }
}

/// The binary status of a refusal: the code of upstream's error body, else what the HTTP status
/// means. A lookup's 404 is `not_found` (None: an empty answer, as "nothing stored").
fn refusal(
    status: hyper::StatusCode,
    body: &[u8],
    not_found: Option<ErrorCode>,
) -> Option<ErrorCode> {
    let reported = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .filter(|value| value["code"] != "not_found")
        .and_then(|value| value["id"].as_u64())
        .and_then(|id| u32::try_from(id).ok())
        .and_then(ErrorCode::from_code);
    if let Some(code) = reported {
        return if status == hyper::StatusCode::NOT_FOUND && not_found.is_none() {
            None
        } else {
            Some(code)
        };
    }
    Some(match status.as_u16() {
        401 => ErrorCode::Unauthenticated,
        403 => ErrorCode::Unauthorized,
        404 => return not_found,
        413 => ErrorCode::InvalidFormat,
        _ => ErrorCode::Error,
    })
}

impl Connection for HttpConnection {
    fn round_trip<'a>(
        &'a mut self,
        frame: OutgoingFrame<'a>,
    ) -> BoxFuture<'a, io::Result<RawResponse>> {
        Box::pin(async move {
            if frame.protocol != Protocol::V08 || frame.head.len() < REQUEST_HEADER_SIZE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the HTTP API carries upstream 0.8's commands: use protocol 0.8 with HTTP",
                ));
            }
            let code = u32::from_le_bytes(frame.head[4..8].try_into().expect("4 bytes"));
            let mut payload = BytesMut::with_capacity(frame.len() - REQUEST_HEADER_SIZE);
            payload.extend_from_slice(&frame.head[REQUEST_HEADER_SIZE..]);
            payload.extend_from_slice(frame.body);
            let request = match Request::decode(code, payload) {
                Ok(request) => request,
                Err(error) => {
                    return Ok(RawResponse {
                        status: error.code.code(),
                        payload: Bytes::new(),
                    });
                }
            };
            match route::call(&request) {
                Ok(call) => self.call(call).await,
                Err(code) => Ok(RawResponse {
                    status: code.code(),
                    payload: Bytes::new(),
                }),
            }
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
    use hyper::StatusCode;

    #[test]
    fn refusals_keep_the_servers_code_and_lookups_find_nothing() {
        let body =
            br#"{"id":1012,"code":"stream_name_already_exists","reason":"x","field":"name"}"#;
        assert_eq!(
            refusal(
                StatusCode::BAD_REQUEST,
                body,
                Some(ErrorCode::ResourceNotFound)
            ),
            Some(ErrorCode::StreamNameAlreadyExists)
        );
        let generic =
            br#"{"id":404,"code":"not_found","reason":"Resource not found","field":null}"#;
        assert_eq!(refusal(StatusCode::NOT_FOUND, generic, None), None);
        assert_eq!(
            refusal(
                StatusCode::NOT_FOUND,
                generic,
                Some(ErrorCode::ResourceNotFound)
            ),
            Some(ErrorCode::ResourceNotFound)
        );
        let specific = br#"{"id":1009,"code":"stream_id_not_found","reason":"x","field":null}"#;
        assert_eq!(refusal(StatusCode::NOT_FOUND, specific, None), None);
        assert_eq!(
            refusal(StatusCode::UNAUTHORIZED, b"", None),
            Some(ErrorCode::Unauthenticated)
        );
        assert_eq!(
            refusal(StatusCode::FORBIDDEN, b"", None),
            Some(ErrorCode::Unauthorized)
        );
        assert_eq!(
            refusal(StatusCode::BAD_GATEWAY, b"<html>", None),
            Some(ErrorCode::Error)
        );
    }

    #[test]
    fn names_in_paths_are_percent_encoded() {
        let request = Request::GetStream(rill_core::requests::GetStream {
            stream_id: rill_core::primitives::Identifier::named("a b/c").unwrap(),
        });
        assert_eq!(route::call(&request).unwrap().target, "/streams/a%20b%2Fc");
        let request = Request::GetMe(rill_core::requests::GetMe {});
        assert_eq!(route::call(&request), Err(ErrorCode::FeatureUnavailable));
    }
}
