//! Users, logins and tokens: `/users/...` and `/personal-access-tokens/...`.

use super::{Call, decoded, id, listed, user_behind};
use crate::http::bodies::{self, json};
use crate::http::reply::Reply;
use crate::http::state::Api;
use crate::http::views::{self, AccessToken, Identity};
use bytes::Bytes;
use hyper::StatusCode;
use rill_core::ErrorCode;
use rill_core::primitives::{Name, ShortString};
use rill_core::requests::{self as binary, Request};
use rill_core::responses::{
    IdentityInfo, PersonalAccessTokenInfo, RawPersonalAccessToken, UserDetails, UserInfo,
};
use std::net::SocketAddr;

/// A login answered as upstream's HTTP API answers it: the user id and an access token.
fn identity(api: &Api, user_id: u32) -> Result<Reply, Reply> {
    let created_at = {
        let metadata: left_right::ReadHandle<crate::metadata::Metadata> =
            api.shared.metadata.handle();
        let guard = metadata
            .enter()
            .ok_or_else(|| Reply::error(ErrorCode::Error))?;
        guard
            .users
            .get(&user_id)
            .map(|user| user.created_at)
            .ok_or_else(|| Reply::error(ErrorCode::InvalidCredentials))?
    };
    let (token, expiry) = api.tokens.issue(user_id, created_at);
    Ok(Reply::ok(&Identity {
        user_id,
        access_token: Some(AccessToken { token, expiry }),
    }))
}

/// Runs a login command (verified, throttled and logged on a shard as a binary login is) and
/// issues a token for the user it names.
async fn log_in(api: &Api, request: Request, peer: SocketAddr) -> Result<Reply, Reply> {
    let response = api
        .bridge
        .run(None, peer, request)
        .await
        .map_err(Reply::error)?;
    let info: IdentityInfo = decoded(response)?;
    identity(api, info.user_id)
}

pub async fn login(api: &Api, body: &Bytes, peer: SocketAddr) -> Result<Reply, Reply> {
    let login: bodies::Login = json(body)?;
    let request = binary::LoginUser {
        username: bodies::name(login.username, ErrorCode::InvalidUsername)?,
        password: ShortString::new(login.password)
            .map_err(|error| bodies::bad(ErrorCode::InvalidPassword, error))?,
        version: login.version,
        context: login.context,
    };
    log_in(api, request.into(), peer).await
}

pub async fn login_with_token(api: &Api, body: &Bytes, peer: SocketAddr) -> Result<Reply, Reply> {
    let login: bodies::TokenBody = json(body)?;
    let request = binary::LoginWithPersonalAccessToken {
        token: Name::new(login.token)
            .map_err(|error| bodies::bad(ErrorCode::InvalidPersonalAccessToken, error))?,
    };
    log_in(api, request.into(), peer).await
}

/// A new token for a valid one, which is then logged out (a token refreshes once).
pub fn refresh(api: &Api, body: &Bytes) -> Result<Reply, Reply> {
    let refresh: bodies::TokenBody = json(body)?;
    let refused = || Reply::error(ErrorCode::InvalidAccessToken);
    let claims = api.tokens.verify(&refresh.token).map_err(|_| refused())?;
    let user_id = user_behind(api, &claims).ok_or_else(refused)?;
    api.tokens.revoke(&claims);
    identity(api, user_id)
}

pub fn logout(call: &Call<'_>) -> Reply {
    call.api.tokens.revoke(&call.claims);
    Reply::empty(StatusCode::NO_CONTENT)
}

pub async fn list(call: &Call<'_>) -> Result<Reply, Reply> {
    let mut users: Vec<UserInfo> = listed(call.run(binary::GetUsers {}).await?)?;
    users.sort_by_key(|user| user.id);
    Ok(Reply::ok(
        &users.iter().map(views::User::from).collect::<Vec<_>>(),
    ))
}

pub async fn get(call: &Call<'_>, user: &str) -> Result<Reply, Reply> {
    let details: UserDetails = call.fetch(binary::GetUser { user_id: id(user)? }).await?;
    Ok(Reply::ok(&views::UserWithPermissions::from(&details)))
}

pub async fn create(call: &Call<'_>) -> Result<Reply, Reply> {
    let body: bodies::CreateUser = json(&call.body)?;
    let request = binary::CreateUser {
        username: bodies::name(body.username, ErrorCode::InvalidUsername)?,
        password: ShortString::new(body.password)
            .map_err(|error| bodies::bad(ErrorCode::InvalidPassword, error))?,
        status: bodies::user_status(body.status.as_deref().unwrap_or("active"))?,
        permissions: body.permissions.map(Into::into),
    };
    let details: UserDetails = call.fetch(request).await?;
    Ok(Reply::ok(&views::UserWithPermissions::from(&details)))
}

pub async fn update(call: &Call<'_>, user: &str) -> Result<Reply, Reply> {
    let body: bodies::UpdateUser = json(&call.body)?;
    let request = binary::UpdateUser {
        user_id: id(user)?,
        username: body
            .username
            .map(|name| bodies::name(name, ErrorCode::InvalidUsername))
            .transpose()?,
        status: body
            .status
            .as_deref()
            .map(bodies::user_status)
            .transpose()?,
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

pub async fn delete(call: &Call<'_>, user: &str) -> Result<Reply, Reply> {
    Ok(call
        .act(
            binary::DeleteUser { user_id: id(user)? },
            StatusCode::NO_CONTENT,
        )
        .await)
}

pub async fn permissions(call: &Call<'_>, user: &str) -> Result<Reply, Reply> {
    let body: bodies::UpdatePermissions = json(&call.body)?;
    let request = binary::UpdatePermissions {
        user_id: id(user)?,
        permissions: body.permissions.map(Into::into),
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

pub async fn password(call: &Call<'_>, user: &str) -> Result<Reply, Reply> {
    let body: bodies::ChangePassword = json(&call.body)?;
    let password = |text: String| {
        ShortString::new(text).map_err(|error| bodies::bad(ErrorCode::InvalidPassword, error))
    };
    let request = binary::ChangePassword {
        user_id: id(user)?,
        current_password: password(body.current_password)?,
        new_password: password(body.new_password)?,
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}

pub async fn tokens(call: &Call<'_>) -> Result<Reply, Reply> {
    let mut tokens: Vec<PersonalAccessTokenInfo> =
        listed(call.run(binary::GetPersonalAccessTokens {}).await?)?;
    tokens.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    Ok(Reply::ok(
        &tokens
            .iter()
            .map(views::TokenInfo::from)
            .collect::<Vec<_>>(),
    ))
}

pub async fn create_token(call: &Call<'_>) -> Result<Reply, Reply> {
    let body: bodies::CreateToken = json(&call.body)?;
    let request = binary::CreatePersonalAccessToken {
        name: bodies::name(body.name, ErrorCode::InvalidPersonalAccessTokenName)?,
        expiry: body.expiry,
    };
    let token: RawPersonalAccessToken = call.fetch(request).await?;
    Ok(Reply::ok(
        &serde_json::json!({ "token": token.token.as_str() }),
    ))
}

pub async fn delete_token(call: &Call<'_>, name: &str) -> Result<Reply, Reply> {
    let request = binary::DeletePersonalAccessToken {
        name: bodies::name(name.to_owned(), ErrorCode::InvalidPersonalAccessTokenName)?,
    };
    Ok(call.act(request, StatusCode::NO_CONTENT).await)
}
