//! System, user, permission, login and personal-access-token commands of [`Client`].

use super::identifier::{IntoIdentifier, name, secret};
use super::options::{SnapshotCompression, SnapshotType};
use super::{Client, SDK_VERSION};
use crate::error::Result;
use bytes::Bytes;
use rill_core::primitives::{Permissions, UserStatus};
use rill_core::requests::*;
use rill_core::responses::*;

impl Client {
    // ---- System -------------------------------------------------------------------------

    /// Ping (1). Works without logging in.
    pub async fn ping(&self) -> Result<()> {
        self.execute(Ping {}).await
    }

    /// GetStats (10).
    pub async fn get_stats(&self) -> Result<Stats> {
        self.execute(GetStats {}).await
    }

    /// GetSnapshot (11): the ZIP archive bytes. `compression` and `types` use the codes of
    /// protocol.md 2.6 (see [`SnapshotCompression`] and [`SnapshotType`]).
    pub async fn get_snapshot(
        &self,
        compression: SnapshotCompression,
        types: &[SnapshotType],
    ) -> Result<Bytes> {
        self.execute(GetSnapshot {
            compression: compression as u8,
            types: types.iter().map(|kind| *kind as u8).collect(),
        })
        .await
    }

    /// GetClusterMetadata (12).
    pub async fn get_cluster_metadata(&self) -> Result<ClusterMetadata> {
        self.execute(GetClusterMetadata {}).await
    }

    /// GetMe (20): this session.
    pub async fn get_me(&self) -> Result<ClientDetails> {
        self.execute(GetMe {}).await
    }

    /// GetClient (21); `None` if no such client.
    pub async fn get_client(&self, client_id: u32) -> Result<Option<ClientDetails>> {
        self.execute(GetClient { client_id }).await
    }

    /// GetClients (22).
    pub async fn get_clients(&self) -> Result<Vec<ClientInfo>> {
        self.execute(GetClients {}).await
    }

    // ---- Users --------------------------------------------------------------------------

    /// GetUser (31); `None` if no such user.
    pub async fn get_user(&self, user_id: impl IntoIdentifier) -> Result<Option<UserDetails>> {
        self.execute(GetUser {
            user_id: user_id.into_identifier()?,
        })
        .await
    }

    /// GetUsers (32).
    pub async fn get_users(&self) -> Result<Vec<UserInfo>> {
        self.execute(GetUsers {}).await
    }

    /// CreateUser (33).
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        status: UserStatus,
        permissions: Option<Permissions>,
    ) -> Result<UserDetails> {
        self.execute(CreateUser {
            username: name(username)?,
            password: secret(password, "password")?,
            status,
            permissions,
        })
        .await
    }

    /// DeleteUser (34).
    pub async fn delete_user(&self, user_id: impl IntoIdentifier) -> Result<()> {
        self.execute(DeleteUser {
            user_id: user_id.into_identifier()?,
        })
        .await
    }

    /// UpdateUser (35): a new username and/or status.
    pub async fn update_user(
        &self,
        user_id: impl IntoIdentifier,
        username: Option<&str>,
        status: Option<UserStatus>,
    ) -> Result<()> {
        self.execute(UpdateUser {
            user_id: user_id.into_identifier()?,
            username: username.map(name).transpose()?,
            status,
        })
        .await
    }

    /// UpdatePermissions (36); `None` removes all permissions.
    pub async fn update_permissions(
        &self,
        user_id: impl IntoIdentifier,
        permissions: Option<Permissions>,
    ) -> Result<()> {
        self.execute(UpdatePermissions {
            user_id: user_id.into_identifier()?,
            permissions,
        })
        .await
    }

    /// ChangePassword (37).
    pub async fn change_password(
        &self,
        user_id: impl IntoIdentifier,
        current_password: &str,
        new_password: &str,
    ) -> Result<()> {
        self.execute(ChangePassword {
            user_id: user_id.into_identifier()?,
            current_password: secret(current_password, "current password")?,
            new_password: secret(new_password, "new password")?,
        })
        .await
    }

    /// LoginUser (38). The credentials are remembered and replayed after reconnections.
    pub async fn login_user(&self, username: &str, password: &str) -> Result<IdentityInfo> {
        self.execute(LoginUser {
            username: name(username)?,
            password: secret(password, "password")?,
            version: Some(SDK_VERSION.to_owned()),
            context: Some(String::new()),
        })
        .await
    }

    /// LogoutUser (39). Reconnections no longer log in.
    pub async fn logout_user(&self) -> Result<()> {
        self.execute(LogoutUser {}).await
    }

    // ---- Personal access tokens ----------------------------------------------------------

    /// GetPersonalAccessTokens (41): the caller's tokens.
    pub async fn get_personal_access_tokens(&self) -> Result<Vec<PersonalAccessTokenInfo>> {
        self.execute(GetPersonalAccessTokens {}).await
    }

    /// CreatePersonalAccessToken (42). `expiry` in µs; 0 = server default, `u64::MAX` = never.
    pub async fn create_personal_access_token(
        &self,
        token_name: &str,
        expiry: u64,
    ) -> Result<RawPersonalAccessToken> {
        self.execute(CreatePersonalAccessToken {
            name: name(token_name)?,
            expiry,
        })
        .await
    }

    /// DeletePersonalAccessToken (43).
    pub async fn delete_personal_access_token(&self, token_name: &str) -> Result<()> {
        self.execute(DeletePersonalAccessToken {
            name: name(token_name)?,
        })
        .await
    }

    /// LoginWithPersonalAccessToken (44). The token is replayed after reconnections.
    pub async fn login_with_personal_access_token(&self, token: &str) -> Result<IdentityInfo> {
        self.execute(LoginWithPersonalAccessToken {
            token: name(token)?,
        })
        .await
    }
}
