//! User commands (protocol.md 4.2). Length rules on usernames and passwords (43, 44) are the
//! server's to apply; the decoder checks structure only.

use crate::codec::{Decode, Encode, Reader, put_str32, wire_struct};
use crate::error::DecodeError;
use crate::primitives::permissions::{decode_sized, encode_sized};
use crate::primitives::{Identifier, Name, Permissions, UserStatus};
use bytes::BufMut;

pub use crate::primitives::ShortString;

wire_struct! {
    /// GetUser (31).
    pub struct GetUser { pub user_id: Identifier }
}
wire_struct! {
    /// GetUsers (32).
    pub struct GetUsers {}
}
wire_struct! {
    /// DeleteUser (34).
    pub struct DeleteUser { pub user_id: Identifier }
}
wire_struct! {
    /// ChangePassword (37).
    pub struct ChangePassword {
        pub user_id: Identifier,
        pub current_password: ShortString,
        pub new_password: ShortString,
    }
}
wire_struct! {
    /// LogoutUser (39).
    pub struct LogoutUser {}
}

/// Reads a "has" flag: 1 means the optional field follows.
fn has(reader: &mut Reader<'_>, what: &'static str) -> Result<bool, DecodeError> {
    Ok(reader.u8(what)? == 1)
}

fn encode_optional_permissions<B: BufMut>(permissions: &Option<Permissions>, out: &mut B) {
    match permissions {
        Some(permissions) => {
            out.put_u8(1);
            encode_sized(permissions, out);
        }
        None => out.put_u8(0),
    }
}

fn optional_permissions_len(permissions: &Option<Permissions>) -> usize {
    1 + permissions
        .as_ref()
        .map_or(0, |permissions| 4 + permissions.encoded_len())
}

/// CreateUser (33).
#[derive(Debug, Clone, PartialEq)]
pub struct CreateUser {
    pub username: Name,
    pub password: ShortString,
    pub status: UserStatus,
    pub permissions: Option<Permissions>,
}

impl Encode for CreateUser {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.username.encode(out);
        self.password.encode(out);
        self.status.encode(out);
        encode_optional_permissions(&self.permissions, out);
    }
    fn encoded_len(&self) -> usize {
        self.username.encoded_len()
            + self.password.encoded_len()
            + 1
            + optional_permissions_len(&self.permissions)
    }
}

impl Decode for CreateUser {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let username = Name::decode(reader)?;
        let password = ShortString::decode(reader)?;
        let status = UserStatus::decode(reader)?;
        let permissions = if has(reader, "has_permissions")? {
            Some(decode_sized(reader)?)
        } else {
            None
        };
        Ok(CreateUser {
            username,
            password,
            status,
            permissions,
        })
    }
}

/// UpdateUser (35): optional new username and status.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateUser {
    pub user_id: Identifier,
    pub username: Option<Name>,
    pub status: Option<UserStatus>,
}

impl Encode for UpdateUser {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.user_id.encode(out);
        match &self.username {
            Some(username) => {
                out.put_u8(1);
                username.encode(out);
            }
            None => out.put_u8(0),
        }
        match self.status {
            Some(status) => {
                out.put_u8(1);
                status.encode(out);
            }
            None => out.put_u8(0),
        }
    }
    fn encoded_len(&self) -> usize {
        self.user_id.encoded_len()
            + 1
            + self.username.as_ref().map_or(0, Encode::encoded_len)
            + 1
            + usize::from(self.status.is_some())
    }
}

impl Decode for UpdateUser {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let user_id = Identifier::decode(reader)?;
        let username = if has(reader, "has_username")? {
            Some(Name::decode(reader)?)
        } else {
            None
        };
        let status = if has(reader, "has_status")? {
            Some(UserStatus::decode(reader)?)
        } else {
            None
        };
        Ok(UpdateUser {
            user_id,
            username,
            status,
        })
    }
}

/// UpdatePermissions (36).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatePermissions {
    pub user_id: Identifier,
    pub permissions: Option<Permissions>,
}

impl Encode for UpdatePermissions {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.user_id.encode(out);
        encode_optional_permissions(&self.permissions, out);
    }
    fn encoded_len(&self) -> usize {
        self.user_id.encoded_len() + optional_permissions_len(&self.permissions)
    }
}

impl Decode for UpdatePermissions {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let user_id = Identifier::decode(reader)?;
        let permissions = if has(reader, "has_permissions")? {
            Some(decode_sized(reader)?)
        } else {
            None
        };
        Ok(UpdatePermissions {
            user_id,
            permissions,
        })
    }
}

/// LoginUser (38). `version` and `context` are `Str32`s where length 0 means absent; a payload
/// that ends before them is accepted too (upstream rejects it; leniency is harmless).
#[derive(Debug, Clone, PartialEq)]
pub struct LoginUser {
    pub username: Name,
    pub password: ShortString,
    pub version: Option<String>,
    pub context: Option<String>,
}

impl Encode for LoginUser {
    fn encode<B: BufMut>(&self, out: &mut B) {
        self.username.encode(out);
        self.password.encode(out);
        put_str32(out, self.version.as_deref().unwrap_or(""));
        put_str32(out, self.context.as_deref().unwrap_or(""));
    }
    fn encoded_len(&self) -> usize {
        self.username.encoded_len()
            + self.password.encoded_len()
            + 4
            + self.version.as_ref().map_or(0, String::len)
            + 4
            + self.context.as_ref().map_or(0, String::len)
    }
}

impl Decode for LoginUser {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let username = Name::decode(reader)?;
        let password = ShortString::decode(reader)?;
        let mut optional = |what| -> Result<Option<String>, DecodeError> {
            if reader.is_empty() {
                return Ok(None);
            }
            let value = reader.str32(what)?;
            Ok((!value.is_empty()).then_some(value))
        };
        let version = optional("login version")?;
        let context = optional("login context")?;
        Ok(LoginUser {
            username,
            password,
            version,
            context,
        })
    }
}
