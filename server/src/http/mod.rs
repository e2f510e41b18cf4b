//! The HTTP API: upstream Iggy 0.8's REST routes with JWT bearer tokens (`routes.rs`), and the
//! operators' `/metrics`, `/ping` and `/stats` (`operators.rs`), on `http.address`, optionally
//! over TLS (`[http.tls]`).
//!
//! Why a thread of its own with a small tokio runtime rather than a task on every shard: JSON
//! in and out, token checks and scrapes are work no shard should stall its partitions for, and
//! hyper needs tokio. A command itself runs on a shard (`bridge.rs`): handed over as a task with a
//! session of its own, it is decoded, permission-checked, routed to its partition and recorded
//! exactly as a binary client's request, so both paths share one set of handlers. The API is
//! stateless as upstream's: every request carries its token, and no client is registered.
//!
//! Limits, each answered with upstream's error body: `max_connections` (503), the request head
//! within `request_head_timeout` (the connection is dropped), the body within
//! `request_body_timeout` (408) and at most `max_request_size` (413, refused from its
//! Content-Length before it is read).

mod bodies;
pub mod bridge;

pub use bodies::parse_everything;
pub use bridge::{ShardTask, serve_tasks, task_channels};
mod cors;
mod jwt;
mod operators;
mod reply;
mod routes;
mod state;
mod views;

use crate::shard::SharedState;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use reply::Reply;
use state::Api;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Binds `http.address` and serves it on a new thread, running commands on the shards through
/// `shards` (see [`task_channels`]). Returns the bound address.
pub fn start(
    shared: Arc<SharedState>,
    shards: Vec<flume::Sender<ShardTask>>,
) -> Result<SocketAddr, String> {
    let config = &shared.config.http;
    let address = config.address;
    let tls = match config.tls.enabled {
        true => Some(tls_acceptor(&shared)?),
        false => None,
    };
    let tokens = jwt::Tokens::open(&config.jwt, &shared.config.system.path.join("state"))?;
    let listener = std::net::TcpListener::bind(address)
        .map_err(|error| format!("cannot listen for HTTP on {address}: {error}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|error| error.to_string())?;
    let bound = listener.local_addr().map_err(|error| error.to_string())?;
    let _ = shared.http_address.set(bound);
    let api = Arc::new(Api {
        operators: Arc::new(operators::Endpoint::new(shared.clone())),
        bridge: bridge::Bridge::new(shards),
        tokens,
        shared,
    });
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::error!(%error, "cannot start the HTTP runtime");
                    return;
                }
            };
            runtime.block_on(accept_loop(api, listener, tls));
        })
        .map_err(|error| format!("cannot start the HTTP thread: {error}"))?;
    Ok(bound)
}

fn tls_acceptor(shared: &SharedState) -> Result<tokio_rustls::TlsAcceptor, String> {
    let config = &shared.config;
    let certificate = crate::tls::load_or_generate(
        &config.http.tls.certificate(),
        "http.tls",
        &config.system.path.join("certs"),
        "http",
    )?;
    if let Some(path) = &certificate.generated_at {
        tracing::info!(path = %path.display(), "HTTPS uses a self-signed certificate for localhost generated at start");
    }
    let mut server = rustls::ServerConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("http.tls: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certificate.chain, certificate.key)
        .map_err(|error| format!("http.tls: the certificate and key do not fit: {error}"))?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(server)))
}

async fn accept_loop(
    api: Arc<Api>,
    listener: std::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(%error, "cannot serve HTTP");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(api.shared.config.http.max_connections));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(%error, "HTTP accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = "http.max_connections", "HTTP connection refused");
            tokio::spawn(refuse_busy(stream));
            continue;
        };
        let api = api.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let head_timeout = api.shared.config.http.request_head_timeout.0;
            match tls {
                None => serve_connection(api, TokioIo::new(stream), peer).await,
                Some(tls) => match tokio::time::timeout(head_timeout, tls.accept(stream)).await {
                    Ok(Ok(stream)) => serve_connection(api, TokioIo::new(stream), peer).await,
                    Ok(Err(error)) => tracing::debug!(%peer, %error, "HTTPS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "HTTPS handshake timed out"),
                },
            }
        });
    }
}

/// A connection over the cap gets a 503 it can read, then is closed.
async fn refuse_busy(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = reply::error_body(rill_core::ErrorCode::Error, "too many HTTP connections");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(
        Duration::from_millis(500),
        stream.write_all(response.as_bytes()),
    )
    .await;
}

async fn serve_connection<I>(api: Arc<Api>, io: TokioIo<I>, peer: SocketAddr)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let head_timeout = api.shared.config.http.request_head_timeout.0;
    let service = service_fn(move |request| {
        let api = api.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(&api, request, peer).await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .max_buf_size(64 * 1024)
        .serve_connection(io, service)
        .await;
    if let Err(error) = served {
        tracing::debug!(%peer, %error, "HTTP connection ended");
    }
}

/// One request, whole: CORS, the body read within its limits, the route, the reply.
async fn handle(
    api: &Api,
    request: hyper::Request<Incoming>,
    peer: SocketAddr,
) -> hyper::Response<Full<Bytes>> {
    let cors = &api.shared.config.http.cors;
    let origin = request
        .headers()
        .get(hyper::header::ORIGIN)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if cors.enabled && request.method() == hyper::Method::OPTIONS && origin.is_some() {
        return cors::preflight(cors, &request);
    }
    let (parts, body) = request.into_parts();
    // A large body takes its share of the in-flight budget binary clients share
    // (`limits.max_request_bytes_in_flight`) until its request is answered.
    let declared = declared_length(&parts);
    let within_limit = |length: &u64| *length <= api.shared.config.http.max_request_size.0;
    let _permit = match declared
        .filter(|&length| length > crate::frontend::SMALL_BODY_BYTES as u64)
        .filter(within_limit)
    {
        Some(length) => match api.shared.admission.try_reserve_body(length) {
            Some(permit) => Some(permit),
            None => {
                tracing::warn!(%peer, bytes = length, limit = "limits.max_request_bytes_in_flight", "HTTP request refused: no room for its body");
                return Reply::error_status(
                    hyper::StatusCode::SERVICE_UNAVAILABLE,
                    rill_core::ErrorCode::Error,
                    "no room for the request body now (limits.max_request_bytes_in_flight); retry later",
                )
                .into_response(false);
            }
        },
        None => None,
    };
    let reply = match read_body(api, &parts, body).await {
        Ok(body) if !body.is_empty() && !is_json(&parts) => Reply::error_status(
            hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            rill_core::ErrorCode::InvalidFormat,
            "the request body must be JSON (Content-Type: application/json)",
        ),
        Ok(body) => routes::route(api, &parts, body, peer).await,
        Err(reply) => reply,
    };
    let mut response = reply.into_response(parts.method == hyper::Method::HEAD);
    if cors.enabled
        && let Some(origin) = origin
    {
        cors::decorate(cors, &origin, response.headers_mut());
    }
    response
}

/// Whether the body may be read as JSON: declared so, or not declared at all (as `curl -d`
/// without `-H` sends it, `application/x-www-form-urlencoded` aside).
fn is_json(parts: &hyper::http::request::Parts) -> bool {
    match parts.headers.get(hyper::header::CONTENT_TYPE) {
        None => true,
        Some(value) => value.to_str().is_ok_and(|value| {
            let value = value.trim().to_ascii_lowercase();
            value.starts_with("application/json")
                || value.starts_with("application/x-www-form-urlencoded")
        }),
    }
}

/// The body length the request declares (Content-Length), if any.
fn declared_length(parts: &hyper::http::request::Parts) -> Option<u64> {
    parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
}

/// The request body, read whole within `max_request_size` and `request_body_timeout`.
async fn read_body(
    api: &Api,
    parts: &hyper::http::request::Parts,
    body: Incoming,
) -> Result<Bytes, Reply> {
    let config = &api.shared.config.http;
    let limit = usize::try_from(config.max_request_size.0).unwrap_or(usize::MAX);
    let declared = declared_length(parts);
    let too_large = || {
        Reply::error_status(
            hyper::StatusCode::PAYLOAD_TOO_LARGE,
            rill_core::ErrorCode::InvalidFormat,
            &format!("the request body is larger than http.max_request_size ({limit} bytes)"),
        )
    };
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let collected = tokio::time::timeout(
        config.request_body_timeout.0,
        Limited::new(body, limit).collect(),
    )
    .await;
    match collected {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(error)) => Err(Reply::error_status(
            hyper::StatusCode::BAD_REQUEST,
            rill_core::ErrorCode::InvalidFormat,
            &format!("cannot read the request body: {error}"),
        )),
        Err(_) => Err(Reply::error_status(
            hyper::StatusCode::REQUEST_TIMEOUT,
            rill_core::ErrorCode::Error,
            "the request body did not arrive within http.request_body_timeout",
        )),
    }
}
