//! Login (password or personal access token) and logout.
//!
//! Failed logins are throttled (`[limits.login]`): each attempt first waits out the delay its
//! address's and username's recent failures earn, a connection is closed after
//! `max_failures_per_connection` failures, and every failure is a WARN line. An unknown
//! username costs a password check like a known one, so timing does not reveal which users
//! exist.

use super::response::{HandlerResult, Response};
use crate::auth::{PASSWORD_LENGTH, USERNAME_LENGTH, dummy_password_hash, verify_password};
use crate::metadata::{Metadata, User};
use crate::session::Session;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::primitives::UserStatus;
use rill_core::requests::{LoginUser, LoginWithPersonalAccessToken};
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
    throttle(shard, session, Some(username)).await;
    let user = shard.metadata(|metadata| {
        metadata
            .users
            .values()
            .find(|user| user.username == username)
            .cloned()
    })?;
    // Argon2 takes tens of milliseconds of CPU: keep it off the shard's event loop.
    let hash = user.as_ref().map(|user| user.password_hash.clone());
    let verified = shard
        .shared
        .password_checks
        .run(move || {
            let hash: &str = match &hash {
                Some(hash) => hash,
                None => dummy_password_hash(),
            };
            verify_password(&password, hash)
        })
        .await?;
    let Some(user) = user.filter(|_| verified) else {
        return Err(failed(
            shard,
            session,
            Some(username),
            ErrorCode::InvalidCredentials,
        ));
    };
    let checked = user.clone();
    complete(shard, session, &user, Some(username), move |metadata| {
        metadata.users.get(&checked.id).is_some_and(|now| {
            now.created_at == checked.created_at && now.password_hash == checked.password_hash
        })
    })
}

pub async fn login_with_token(
    shard: &Shard,
    session: &mut Session,
    request: LoginWithPersonalAccessToken,
) -> HandlerResult {
    throttle(shard, session, None).await;
    let token_hash = crate::auth::token_hash(request.token.as_str());
    let now = crate::time::now_micros();
    let found = shard.metadata(|metadata| {
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
    })?;
    let user = match found {
        Ok(user) => user,
        Err(code) => return Err(failed(shard, session, None, code)),
    };
    let user_id = user.id;
    complete(shard, session, &user, None, move |metadata| {
        metadata
            .tokens
            .get(&token_hash)
            .is_some_and(|token| token.user_id == user_id)
    })
}

pub fn logout(shard: &Shard, session: &mut Session) -> HandlerResult {
    session.log_out();
    shard.shared.clients.set_user(session.client_id, None);
    Ok(Response::Empty)
}

/// Waits out the delay that recent failures from this address (and for this username) earn.
async fn throttle(shard: &Shard, session: &Session, username: Option<&str>) {
    let delay = shard
        .shared
        .admission
        .login_delay(session.address.ip(), username);
    if !delay.is_zero() {
        compio::time::sleep(delay).await;
    }
}

/// Records a failed login and returns its status; the connection closes after too many.
fn failed(
    shard: &Shard,
    session: &mut Session,
    username: Option<&str>,
    code: ErrorCode,
) -> ErrorCode {
    let admission = &shard.shared.admission;
    admission.login_failed(session.address.ip(), username);
    session.login_failures += 1;
    let limit = admission.limits().login.max_failures_per_connection;
    tracing::warn!(
        client_id = session.client_id,
        address = %session.address,
        username = username.unwrap_or("(token)"),
        failures = session.login_failures,
        %code,
        "login failed"
    );
    if session.login_failures >= limit {
        tracing::warn!(
            client_id = session.client_id,
            address = %session.address,
            limit = "limits.login.max_failures_per_connection",
            "closing connection after repeated failed logins"
        );
        session.close_requested = true;
    }
    code
}

/// Logs the session in as `user`, checked: active, under its session cap, and still the user
/// it was when its credentials were verified (`unchanged`). The session is registered before
/// that last check, so a control-lane change racing the login either sees the registration
/// (and revokes it) or is seen by the check.
fn complete(
    shard: &Shard,
    session: &mut Session,
    user: &User,
    username: Option<&str>,
    unchanged: impl FnOnce(&Metadata) -> bool,
) -> HandlerResult {
    if user.status == UserStatus::Inactive {
        return Err(ErrorCode::UserInactive);
    }
    let clients = &shard.shared.clients;
    let admission = &shard.shared.admission;
    // This session may already be logged in as the user (and counted), or revoked a moment
    // ago (and no longer counted).
    let others = clients
        .sessions_of(user.id)
        .saturating_sub(usize::from(session.user_id == Some(user.id)));
    if others >= admission.limits().max_sessions_per_user {
        tracing::warn!(
            client_id = session.client_id,
            user_id = user.id,
            sessions = others,
            limit = "limits.max_sessions_per_user",
            "login refused: the user has too many sessions"
        );
        return Err(ErrorCode::Unauthorized);
    }
    session.log_in(user.id);
    clients.set_user(session.client_id, Some(user.id));
    let still = shard.metadata(|metadata| {
        unchanged(metadata)
            && metadata
                .users
                .get(&user.id)
                .is_some_and(|now| now.status == UserStatus::Active)
    })?;
    if !still {
        session.log_out();
        clients.set_user(session.client_id, None);
        return Err(ErrorCode::InvalidCredentials);
    }
    admission.login_succeeded(session.address.ip(), username);
    Ok(Response::encoded(&IdentityInfo { user_id: user.id }))
}
