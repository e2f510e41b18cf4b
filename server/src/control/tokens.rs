//! Personal access tokens: created with a random secret shown once, stored as its SHA-256.

use super::ControlPlane;
use crate::metadata::{MetadataOp, PersonalAccessToken, User};
use rill_core::primitives::Name;
use rill_core::requests::{CreatePersonalAccessToken, DeletePersonalAccessToken};
use rill_core::responses::RawPersonalAccessToken;
use rill_core::{Encode, ErrorCode};

/// Token names are 3..=30 bytes (protocol.md 4.3).
pub const TOKEN_NAME_LENGTH: std::ops::RangeInclusive<usize> = 3..=30;
/// At most this many tokens per user.
pub const MAX_TOKENS_PER_USER: usize = 100;

impl ControlPlane {
    pub(super) async fn create_token(
        &mut self,
        actor: &User,
        request: CreatePersonalAccessToken,
    ) -> Result<Vec<u8>, ErrorCode> {
        let name = request.name.into_string();
        if !TOKEN_NAME_LENGTH.contains(&name.len()) {
            return Err(ErrorCode::InvalidPersonalAccessTokenName);
        }
        self.metadata(|metadata| {
            let mine: Vec<_> = metadata
                .tokens
                .values()
                .filter(|token| token.user_id == actor.id)
                .collect();
            if mine.iter().any(|token| token.name == name) {
                return Err(ErrorCode::PersonalAccessTokenAlreadyExists);
            }
            if mine.len() >= MAX_TOKENS_PER_USER {
                return Err(ErrorCode::PersonalAccessTokensLimitReached);
            }
            Ok(())
        })??;
        let expiry_at = match request.expiry {
            0 | u64::MAX => None,
            micros => Some(crate::time::now_micros().saturating_add(micros)),
        };
        let secret = crate::auth::generate_token();
        let token_hash = crate::auth::token_hash(&secret);
        let token = PersonalAccessToken {
            user_id: actor.id,
            name,
            expiry_at,
        };
        self.commit(MetadataOp::CreateToken { token_hash, token })
            .await?;
        Ok(RawPersonalAccessToken {
            token: Name::new(secret).expect("tokens are 64 characters"),
        }
        .to_bytes())
    }

    pub(super) async fn delete_token(
        &mut self,
        actor: &User,
        request: DeletePersonalAccessToken,
    ) -> Result<Vec<u8>, ErrorCode> {
        let token_hash = self
            .metadata(|metadata| {
                metadata
                    .tokens
                    .iter()
                    .find(|(_, token)| {
                        token.user_id == actor.id && token.name == request.name.as_str()
                    })
                    .map(|(hash, _)| hash.clone())
            })?
            .ok_or(ErrorCode::ResourceNotFound)?;
        self.commit(MetadataOp::DeleteToken { token_hash }).await?;
        Ok(Vec::new())
    }

    /// Deletes tokens whose expiry has passed (run on a timer).
    pub(super) async fn delete_expired_tokens(&mut self) -> Result<usize, ErrorCode> {
        let now = crate::time::now_micros();
        let expired: Vec<String> = self.metadata(|metadata| {
            metadata
                .tokens
                .iter()
                .filter(|(_, token)| token.expiry_at.is_some_and(|expiry| expiry <= now))
                .map(|(hash, _)| hash.clone())
                .collect()
        })?;
        let count = expired.len();
        for token_hash in expired {
            self.commit(MetadataOp::DeleteToken { token_hash }).await?;
        }
        Ok(count)
    }
}
