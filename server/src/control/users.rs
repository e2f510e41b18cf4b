//! User changes. Issue "rest of the command set" adds the user commands; the root user is
//! created here on first start.

use super::ControlPlane;
use crate::metadata::{MetadataOp, User};
use crate::permissions::ROOT_USER_ID;
use rill_core::ErrorCode;
use rill_core::primitives::{Permissions, UserStatus};

/// How the root user is created on first start.
#[derive(Clone)]
pub struct RootCredentials {
    pub username: String,
    pub password: String,
    /// Printed once when the password was generated.
    pub generated: bool,
}

impl ControlPlane {
    /// Creates the root user (id 0) if the metadata has none. Later starts keep the stored
    /// credentials.
    pub async fn ensure_root(&mut self, credentials: &RootCredentials) -> Result<(), ErrorCode> {
        if self.metadata(|metadata| metadata.users.contains_key(&ROOT_USER_ID))? {
            return Ok(());
        }
        let password_hash = crate::auth::hash_password(&credentials.password)?;
        let user = User {
            id: ROOT_USER_ID,
            username: credentials.username.clone(),
            password_hash,
            status: UserStatus::Active,
            permissions: Some(Permissions::root()),
            created_at: crate::time::now_micros(),
        };
        self.commit(MetadataOp::CreateUser(user)).await?;
        if credentials.generated {
            println!(
                "Created root user `{}` with generated password: {}\nThe password is shown only this once.",
                credentials.username, credentials.password
            );
        }
        tracing::info!(username = %credentials.username, "root user created");
        Ok(())
    }
}

use crate::auth::{PASSWORD_LENGTH, USERNAME_LENGTH, hash_password};
use crate::metadata::lowest_free_id;
use crate::permissions::Action;
use crate::views::user_details;
use rill_core::Encode;
use rill_core::primitives::Name;
use rill_core::requests::{CreateUser, DeleteUser, UpdatePermissions, UpdateUser};

/// Most users a server holds.
const MAX_USERS: usize = 10_000;

impl ControlPlane {
    pub(super) async fn create_user(
        &mut self,
        actor: &User,
        request: CreateUser,
    ) -> Result<Vec<u8>, ErrorCode> {
        Self::require(actor, Action::ManageUsers)?;
        let username = request.username.into_string();
        if !USERNAME_LENGTH.contains(&username.len()) {
            return Err(ErrorCode::InvalidUsername);
        }
        if !PASSWORD_LENGTH.contains(&request.password.0.len()) {
            return Err(ErrorCode::InvalidPassword);
        }
        let id = self.metadata(|metadata| {
            if metadata
                .users
                .values()
                .any(|user| user.username == username)
            {
                return Err(ErrorCode::UserAlreadyExists);
            }
            if metadata.users.len() >= MAX_USERS {
                return Err(ErrorCode::UsersLimitReached);
            }
            lowest_free_id(&metadata.users).ok_or(ErrorCode::UsersLimitReached)
        })??;
        let password = request.password.0;
        let password_hash = compio::runtime::spawn_blocking(move || hash_password(&password))
            .await
            .map_err(|_| ErrorCode::Error)??;
        let user = User {
            id,
            username,
            password_hash,
            status: request.status,
            permissions: request.permissions,
            created_at: crate::time::now_micros(),
        };
        let details = user_details(&user).to_bytes();
        self.commit(MetadataOp::CreateUser(user)).await?;
        Ok(details)
    }

    fn target_user(&self, id: &rill_core::primitives::Identifier) -> Result<User, ErrorCode> {
        self.metadata(|metadata| metadata.user(id).cloned())?
            .ok_or(ErrorCode::ResourceNotFound)
    }

    pub(super) async fn delete_user(
        &mut self,
        actor: &User,
        request: DeleteUser,
    ) -> Result<Vec<u8>, ErrorCode> {
        Self::require(actor, Action::ManageUsers)?;
        let target = self.target_user(&request.user_id)?;
        if target.id == ROOT_USER_ID {
            return Err(ErrorCode::CannotDeleteUser);
        }
        self.commit(MetadataOp::DeleteUser { id: target.id })
            .await?;
        self.end_sessions(target.id, None, "user deleted");
        Ok(Vec::new())
    }

    pub(super) async fn update_user(
        &mut self,
        actor: &User,
        request: UpdateUser,
    ) -> Result<Vec<u8>, ErrorCode> {
        Self::require(actor, Action::ManageUsers)?;
        let target = self.target_user(&request.user_id)?;
        if target.id == ROOT_USER_ID && actor.id != ROOT_USER_ID {
            return Err(ErrorCode::Unauthorized);
        }
        let username = request.username.map(Name::into_string);
        if let Some(username) = &username {
            if !USERNAME_LENGTH.contains(&username.len()) {
                return Err(ErrorCode::InvalidUsername);
            }
            let taken = self.metadata(|metadata| {
                metadata
                    .users
                    .values()
                    .any(|u| &u.username == username && u.id != target.id)
            })?;
            if taken {
                return Err(ErrorCode::UserAlreadyExists);
            }
        }
        self.commit(MetadataOp::UpdateUser {
            id: target.id,
            username,
            status: request.status,
        })
        .await?;
        if request.status == Some(UserStatus::Inactive) {
            self.end_sessions(target.id, None, "user deactivated");
        }
        Ok(Vec::new())
    }

    pub(super) async fn update_permissions(
        &mut self,
        actor: &User,
        request: UpdatePermissions,
    ) -> Result<Vec<u8>, ErrorCode> {
        Self::require(actor, Action::ManageUsers)?;
        let target = self.target_user(&request.user_id)?;
        if target.id == ROOT_USER_ID {
            return Err(ErrorCode::CannotChangePermissions);
        }
        self.commit(MetadataOp::UpdatePermissions {
            id: target.id,
            permissions: request.permissions,
        })
        .await?;
        Ok(Vec::new())
    }

    /// Stores a password hash verified on the caller's shard (handlers::users), unless the
    /// user's hash changed meanwhile, and ends the user's other sessions.
    pub(super) async fn set_password(
        &mut self,
        user_id: u32,
        verified_hash: &str,
        password_hash: String,
        client_id: u32,
    ) -> Result<Vec<u8>, ErrorCode> {
        let current = self
            .metadata(|metadata| {
                metadata
                    .users
                    .get(&user_id)
                    .map(|u| u.password_hash.clone())
            })?
            .ok_or(ErrorCode::ResourceNotFound)?;
        if current != verified_hash {
            return Err(ErrorCode::InvalidCredentials);
        }
        self.commit(MetadataOp::ChangePassword {
            id: user_id,
            password_hash,
        })
        .await?;
        self.end_sessions(user_id, Some(client_id), "password changed");
        Ok(Vec::new())
    }

    /// Ends the user's sessions (but `except`): they are refused from their next request.
    pub(super) fn end_sessions(&self, user_id: u32, except: Option<u32>, why: &'static str) {
        let ended = self.shard.shared.clients.revoke_user(user_id, except);
        if ended > 0 {
            tracing::info!(user_id, sessions = ended, why, "ended the user's sessions");
        }
    }
}
