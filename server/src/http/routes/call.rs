//! Who is calling and how a route runs commands: the bearer token checked, the command run on a
//! shard as that user, its answer decoded.

use super::super::bodies;
use super::super::bridge::Bridge;
use super::super::jwt;
use super::super::reply::Reply;
use super::super::state::Api;
use crate::handlers::Response;
use bytes::Bytes;
use hyper::StatusCode;
use hyper::http::request::Parts;
use rill_core::{Decode, ErrorCode, Request};
use std::net::SocketAddr;

/// One authenticated request's context: who, from where, and how to run commands.
pub struct Call<'a> {
    pub api: &'a Api,
    pub user_id: u32,
    pub claims: jwt::Claims,
    pub peer: SocketAddr,
    pub parts: &'a Parts,
    pub body: Bytes,
}

impl Call<'_> {
    fn bridge(&self) -> &Bridge {
        &self.api.bridge
    }

    /// Runs a command as this request's user.
    pub async fn run(&self, request: impl Into<Request>) -> Result<Response, Reply> {
        self.bridge()
            .run(Some(self.user_id), self.peer, request.into())
            .await
            .map_err(Reply::error)
    }

    /// Sends a metadata change to the control lane as this request's user (see
    /// [`Bridge::control`]); its payload.
    pub async fn control(
        &self,
        command: crate::shard::message::ControlCommand,
    ) -> Result<Vec<u8>, Reply> {
        self.bridge()
            .control(self.user_id, self.peer, command)
            .await
            .map_err(Reply::error)
    }

    /// Runs a command and decodes its payload as `T`.
    pub async fn fetch<T: Decode>(&self, request: impl Into<Request>) -> Result<T, Reply> {
        decoded(self.run(request).await?)
    }

    /// Runs a command that answers nothing; `status` on success.
    pub async fn act(&self, request: impl Into<Request>, status: StatusCode) -> Reply {
        match self.run(request).await {
            Ok(_) => Reply::empty(status),
            Err(reply) => reply,
        }
    }

    pub fn query(&self) -> Vec<(String, String)> {
        bodies::query(&self.parts.uri)
    }
}

/// A command's payload decoded as `T`; an empty payload is "not found".
pub fn decoded<T: Decode>(response: Response) -> Result<T, Reply> {
    match response {
        Response::Bytes(bytes) => T::from_bytes(&bytes).map_err(|error| {
            tracing::error!(%error, "HTTP: cannot decode a handler's own response");
            Reply::error_status(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::CannotDeserializeResource,
                "cannot decode the response",
            )
        }),
        _ => Err(not_found()),
    }
}

/// A command's payload decoded as a list of records; an empty payload is an empty list.
pub fn listed<T: Decode>(response: Response) -> Result<Vec<T>, Reply> {
    match response {
        Response::Bytes(_) => decoded(response),
        _ => Ok(Vec::new()),
    }
}

/// Upstream's generic 404 for a lookup that found nothing.
pub fn not_found() -> Reply {
    Reply {
        status: StatusCode::NOT_FOUND,
        content_type: "application/json",
        body: Bytes::from_static(
            br#"{"id":404,"code":"not_found","reason":"Resource not found","field":null}"#,
        ),
        headers: Vec::new(),
    }
}

/// Shorthand for a route's result: the reply either way.
pub fn either(result: Result<Reply, Reply>) -> Reply {
    result.unwrap_or_else(|reply| reply)
}

/// The user a request acts as: its bearer token, checked, whose user still exists, is active
/// and is the user the token was issued to (not a new user given a deleted one's id).
pub fn authenticate(api: &Api, parts: &Parts) -> Result<(u32, jwt::Claims), Reply> {
    let unauthenticated = || Reply::empty(StatusCode::UNAUTHORIZED);
    let token = parts
        .headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(unauthenticated)?;
    let claims = api.tokens.verify(token).map_err(|_| unauthenticated())?;
    let user_id = user_behind(api, &claims).ok_or_else(unauthenticated)?;
    Ok((user_id, claims))
}

/// The token's user, if it still exists, is active and was created when the token says.
pub fn user_behind(api: &Api, claims: &jwt::Claims) -> Option<u32> {
    let metadata: left_right::ReadHandle<crate::metadata::Metadata> = api.shared.metadata.handle();
    let guard = metadata.enter()?;
    let user = guard.users.get(&claims.sub)?;
    (user.status == rill_core::primitives::UserStatus::Active && user.created_at == claims.uca)
        .then_some(user.id)
}

/// A path identifier, or the 400 it earns.
pub fn id(text: &str) -> Result<rill_core::primitives::Identifier, Reply> {
    bodies::identifier(text)
}
