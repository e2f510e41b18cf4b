//! User and personal access token records (protocol.md 7.3, 7.9).

use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use crate::primitives::permissions::{decode_sized, encode_sized};
use crate::primitives::{Name, Permissions, UserStatus};
use bytes::BufMut;

wire_struct! {
    /// A user record (GetUsers).
    pub struct UserInfo { pub id: u32, pub created_at: u64, pub status: UserStatus, pub username: Name }
}

/// GetUser / CreateUser response: the user record, then `00 00 00 00` for no permissions or
/// `01` + `permissions_length u32` + blob.
#[derive(Debug, Clone, PartialEq)]
pub struct UserDetails {
    pub user: UserInfo,
    pub permissions: Option<Permissions>,
}

impl Encode for UserDetails {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.user.encode(out);
        match &self.permissions {
            Some(permissions) => {
                out.put_u8(1);
                encode_sized(permissions, out);
            }
            None => out.put_u32_le(0),
        }
    }
    fn encoded_len(&self) -> usize {
        self.user.encoded_len()
            + self
                .permissions
                .as_ref()
                .map_or(4, |permissions| 1 + 4 + permissions.encoded_len())
    }
}

impl Decode for UserDetails {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let user = UserInfo::decode(reader)?;
        let permissions = match reader.u8("has_permissions")? {
            0 => {
                reader.take(3, "permissions padding")?;
                None
            }
            _ => Some(decode_sized(reader)?),
        };
        Ok(UserDetails { user, permissions })
    }
}

wire_struct! {
    /// LoginUser / LoginWithPersonalAccessToken response.
    pub struct IdentityInfo { pub user_id: u32 }
}

wire_struct! {
    /// CreatePersonalAccessToken response: the token, shown once.
    pub struct RawPersonalAccessToken { pub token: Name }
}

wire_struct! {
    /// A token record (GetPersonalAccessTokens). `expiry_at` in µs since the epoch; 0 = never.
    pub struct PersonalAccessTokenInfo { pub name: Name, pub expiry_at: u64 }
}
