//! Login and logout.

use super::response::{HandlerResult, Response};
use crate::auth::{PASSWORD_LENGTH, USERNAME_LENGTH, verify_password};
use crate::session::Session;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::primitives::UserStatus;
use rill_core::requests::LoginUser;
use rill_core::responses::IdentityInfo;

pub async fn login(shard: &Shard, session: &mut Session, request: LoginUser) -> HandlerResult {
    let username = request.username.as_str();
    if !USERNAME_LENGTH.contains(&username.len()) {
        return Err(ErrorCode::InvalidUsername);
    }
    let password = request.password.0;
    if !PASSWORD_LENGTH.contains(&password.len()) {
        return Err(ErrorCode::InvalidPassword);
    }
    let user = shard
        .metadata(|metadata| {
            metadata
                .users
                .values()
                .find(|user| user.username == username)
                .cloned()
        })?
        .ok_or(ErrorCode::InvalidCredentials)?;
    // Argon2 takes tens of milliseconds of CPU: keep it off the shard's event loop.
    let hash = user.password_hash.clone();
    let verified = shard
        .shared
        .password_checks
        .run(move || verify_password(&password, &hash))
        .await?;
    if !verified {
        return Err(ErrorCode::InvalidCredentials);
    }
    if user.status == UserStatus::Inactive {
        return Err(ErrorCode::UserInactive);
    }
    session.user_id = Some(user.id);
    shard
        .shared
        .clients
        .set_user(session.client_id, Some(user.id));
    Ok(Response::encoded(&IdentityInfo { user_id: user.id }))
}

pub fn logout(shard: &Shard, session: &mut Session) -> HandlerResult {
    session.user_id = None;
    shard.shared.clients.set_user(session.client_id, None);
    Ok(Response::Empty)
}

use super::access::check;
use crate::permissions::Action;
use rill_core::requests::{GetUser, LoginWithPersonalAccessToken};
use rill_core::responses::PersonalAccessTokenInfo;

pub fn get_user(shard: &Shard, user_id: u32, request: GetUser) -> HandlerResult {
    shard.metadata(|metadata| {
        let Some(user) = metadata.user(&request.user_id) else {
            return Ok(Response::Empty);
        };
        if user.id != user_id {
            check(metadata, user_id, Action::ReadUsers)?;
        }
        Ok(Response::encoded(&crate::views::user_details(user)))
    })?
}

pub fn get_users(shard: &Shard, user_id: u32) -> HandlerResult {
    shard.metadata(|metadata| {
        check(metadata, user_id, Action::ReadUsers)?;
        let users: Vec<_> = metadata
            .users
            .values()
            .map(|user| crate::views::user_details(user).user)
            .collect();
        Ok(Response::encoded(&users))
    })?
}

pub fn login_with_token(
    shard: &Shard,
    session: &mut Session,
    request: LoginWithPersonalAccessToken,
) -> HandlerResult {
    let token_hash = crate::auth::token_hash(request.token.as_str());
    let now = crate::time::now_micros();
    let user = shard.metadata(|metadata| {
        let token = metadata
            .tokens
            .get(&token_hash)
            .ok_or(ErrorCode::ResourceNotFound)?;
        if token.expiry_at.is_some_and(|expiry| expiry <= now) {
            return Err(ErrorCode::PersonalAccessTokenExpired);
        }
        metadata
            .users
            .get(&token.user_id)
            .cloned()
            .ok_or(ErrorCode::ResourceNotFound)
    })??;
    if user.status == UserStatus::Inactive {
        return Err(ErrorCode::UserInactive);
    }
    session.user_id = Some(user.id);
    shard
        .shared
        .clients
        .set_user(session.client_id, Some(user.id));
    Ok(Response::encoded(&IdentityInfo { user_id: user.id }))
}

pub fn get_tokens(shard: &Shard, user_id: u32) -> HandlerResult {
    shard.metadata(|metadata| {
        let mut tokens: Vec<_> = metadata
            .tokens
            .values()
            .filter(|token| token.user_id == user_id)
            .map(|token| PersonalAccessTokenInfo {
                name: rill_core::primitives::Name::new(token.name.clone())
                    .expect("validated on creation"),
                expiry_at: token.expiry_at.unwrap_or(0),
            })
            .collect();
        tokens.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Response::encoded(&tokens))
    })?
}
