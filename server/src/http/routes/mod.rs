//! The route table: which method and path run which command, who may call it, and what the
//! answer looks like. Public routes (`/`, `/ping`, `/metrics`, the logins, the refresh) need no
//! token; every other route needs `Authorization: Bearer <access token>` from a login.

mod call;
mod messages;
mod streams;
mod system;
mod users;

pub use call::{Call, authenticate, decoded, either, id, listed, not_found, user_behind};

use super::bodies::decode;
use super::reply::Reply;
use super::state::Api;
use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::{Method, StatusCode};
use rill_core::ErrorCode;
use std::net::SocketAddr;

pub async fn route(api: &Api, parts: &Parts, body: Bytes, peer: SocketAddr) -> Reply {
    let segments: Vec<String> = parts
        .uri
        .path()
        .split('/')
        .filter(|segment| !segment.is_empty())
        .map(decode)
        .collect();
    let path: Vec<&str> = segments.iter().map(String::as_str).collect();
    // HEAD is GET without the body (the body is dropped when the response is written).
    let method = match parts.method {
        Method::HEAD => Method::GET,
        ref method => method.clone(),
    };
    let read = method == Method::GET;
    match path.as_slice() {
        [] if read => {
            return Reply::text(StatusCode::OK, "text/plain; charset=utf-8", "Iggy API");
        }
        ["ping"] if read => {
            return Reply::text(StatusCode::OK, "text/plain; charset=utf-8", "pong");
        }
        ["metrics"] if read => return system::metrics(api),
        ["stats"] if read => return system::stats(api, parts, peer).await,
        ["users", "login"] if method == Method::POST => {
            return either(users::login(api, &body, peer).await);
        }
        ["users", "refresh-token"] if method == Method::POST => {
            return either(users::refresh(api, &body));
        }
        ["personal-access-tokens", "login"] if method == Method::POST => {
            return either(users::login_with_token(api, &body, peer).await);
        }
        _ => {}
    }
    if matches!(path.as_slice(), [] | ["ping" | "metrics" | "stats"]) {
        return Reply::error_status(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::InvalidCommand,
            "only GET and HEAD",
        );
    }
    if !is_known(&path) {
        return Reply::error_status(
            StatusCode::NOT_FOUND,
            ErrorCode::ResourceNotFound,
            "no such route",
        );
    }
    let (user_id, claims) = match authenticate(api, parts) {
        Ok(user) => user,
        Err(reply) => return reply,
    };
    let call = Call {
        api,
        user_id,
        claims,
        peer,
        parts,
        body,
    };
    match (&method, path.as_slice()) {
        (&Method::GET, ["cluster", "metadata"]) => either(system::cluster(&call).await),
        (&Method::GET, ["clients"]) => either(system::clients(&call).await),
        (&Method::GET, ["clients", id]) => either(system::client(&call, id).await),
        (&Method::POST, ["snapshot"]) => either(system::snapshot(&call).await),
        (&Method::GET, ["options", scope]) => either(system::options(scope)),
        (&Method::GET, ["users"]) => either(users::list(&call).await),
        (&Method::POST, ["users"]) => either(users::create(&call).await),
        (&Method::DELETE, ["users", "logout"]) => users::logout(&call),
        (&Method::GET, ["users", id]) => either(users::get(&call, id).await),
        (&Method::PUT, ["users", id]) => either(users::update(&call, id).await),
        (&Method::DELETE, ["users", id]) => either(users::delete(&call, id).await),
        (&Method::PUT, ["users", id, "permissions"]) => either(users::permissions(&call, id).await),
        (&Method::PUT, ["users", id, "password"]) => either(users::password(&call, id).await),
        (&Method::GET, ["personal-access-tokens"]) => either(users::tokens(&call).await),
        (&Method::POST, ["personal-access-tokens"]) => either(users::create_token(&call).await),
        (&Method::DELETE, ["personal-access-tokens", name]) => {
            either(users::delete_token(&call, name).await)
        }
        (_, ["streams", ..]) => streams::route(&call, &method, &path[1..]).await,
        _ => Reply::error_status(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::InvalidCommand,
            "method not allowed on this route",
        ),
    }
}

/// Whether the path is one the API has (with any method): unknown paths are 404, known ones
/// with another method 405.
fn is_known(path: &[&str]) -> bool {
    match path {
        ["cluster", "metadata"] | ["clients"] | ["clients", _] | ["snapshot"] | ["users"] => true,
        ["options", _] => true,
        ["users", _] | ["users", _, "permissions" | "password"] => true,
        ["personal-access-tokens"] | ["personal-access-tokens", _] => true,
        ["streams", rest @ ..] => streams::is_known(rest),
        _ => false,
    }
}
