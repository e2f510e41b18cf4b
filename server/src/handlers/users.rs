//! User reads (GetUser, GetUsers, GetPersonalAccessTokens) and password changes.

use super::access::check;
use super::response::{HandlerResult, Response};
use crate::auth::{PASSWORD_LENGTH, hash_password, verify_password};
use crate::permissions::{Action, ROOT_USER_ID};
use crate::session::Session;
use crate::shard::Shard;
use crate::shard::message::ControlCommand;
use rill_core::ErrorCode;
use rill_core::requests::{ChangePassword, GetUser};
use rill_core::responses::PersonalAccessTokenInfo;

pub fn get_user(shard: &Shard, user_id: u32, request: GetUser) -> HandlerResult {
    shard.metadata(|metadata| {
        let Some(user) = metadata.user(&request.user_id) else {
            // Only those who may read users learn that one does not exist.
            check(metadata, user_id, Action::ReadUsers)?;
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

/// ChangePassword. The current password is checked and the new one hashed here, on the
/// caller's shard and its bounded pool of password checks, so a storm of wrong guesses never
/// holds up shard 0's control lane; the lane then stores the new hash only if the user's hash
/// is still the one verified, and ends the user's other sessions.
pub async fn change_password(
    shard: &Shard,
    session: &Session,
    user_id: u32,
    request: ChangePassword,
) -> HandlerResult {
    let current = request.current_password.0;
    let new = request.new_password.0;
    if !PASSWORD_LENGTH.contains(&current.len()) || !PASSWORD_LENGTH.contains(&new.len()) {
        return Err(ErrorCode::InvalidPassword);
    }
    let (target, stored) = shard.metadata(|metadata| {
        let target = metadata
            .user(&request.user_id)
            .ok_or(ErrorCode::ResourceNotFound)?;
        if target.id != user_id {
            check(metadata, user_id, Action::ManageUsers)?;
        }
        if target.id == ROOT_USER_ID && user_id != ROOT_USER_ID {
            return Err(ErrorCode::Unauthorized);
        }
        Ok((target.id, target.password_hash.clone()))
    })??;
    let verified_hash = stored.clone();
    let new_hash = shard
        .shared
        .password_checks
        .run(move || {
            if verify_password(&current, &stored) {
                hash_password(&new)
            } else {
                Err(ErrorCode::InvalidCredentials)
            }
        })
        .await??;
    let command = ControlCommand::SetPassword {
        user_id: target,
        verified_hash,
        new_hash,
    };
    shard.control(command, session).await?;
    Ok(Response::Empty)
}
