//! Cross-origin requests (`[http.cors]`, upstream's keys): the preflight answer, and the
//! headers that let a browser read an actual response.

use crate::config::HttpCorsConfig;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};

/// The `Access-Control-Allow-Origin` value for `origin`, if it is allowed.
fn allowed_origin(config: &HttpCorsConfig, origin: &str) -> Option<HeaderValue> {
    let any = config.allowed_origins.iter().any(|allowed| allowed == "*");
    if any && !config.allow_credentials {
        return Some(HeaderValue::from_static("*"));
    }
    // With credentials a browser refuses "*": the origin itself is echoed, if listed (or any).
    let listed = any
        || config
            .allowed_origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin));
    listed.then(|| HeaderValue::from_str(origin).ok()).flatten()
}

fn joined(values: &[String]) -> Option<HeaderValue> {
    let list: Vec<&str> = values
        .iter()
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .collect();
    if list.is_empty() {
        return None;
    }
    HeaderValue::from_str(&list.join(", ")).ok()
}

/// Answers an `OPTIONS` request that carries an `Origin`.
pub fn preflight<B>(config: &HttpCorsConfig, request: &Request<B>) -> Response<Full<Bytes>> {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::new()));
    let Some(allowed) = allowed_origin(config, origin) else {
        *response.status_mut() = StatusCode::FORBIDDEN;
        return response;
    };
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    if let Some(methods) = joined(&config.allowed_methods) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
    }
    if let Some(allowed_headers) = joined(&config.allowed_headers) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed_headers);
    }
    if config.allow_credentials {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    let asks_private = request
        .headers()
        .get("access-control-request-private-network")
        .is_some_and(|value| value.as_bytes() == b"true");
    if asks_private && config.allow_private_network {
        headers.insert(
            "access-control-allow-private-network",
            HeaderValue::from_static("true"),
        );
    }
    headers.insert(header::VARY, HeaderValue::from_static("origin"));
    response
}

/// Adds the CORS headers to the response of a request from `origin`.
pub fn decorate(config: &HttpCorsConfig, origin: &str, headers: &mut HeaderMap) {
    let Some(allowed) = allowed_origin(config, origin) else {
        return;
    };
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    if let Some(exposed) = joined(&config.exposed_headers) {
        headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, exposed);
    }
    if config.allow_credentials {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    headers.insert(header::VARY, HeaderValue::from_static("origin"));
}
