//! Personal access token commands (protocol.md 4.3).

use crate::codec::wire_struct;
use crate::primitives::Name;

wire_struct! {
    /// GetPersonalAccessTokens (41): the caller's tokens.
    pub struct GetPersonalAccessTokens {}
}
wire_struct! {
    /// CreatePersonalAccessToken (42). `expiry`: 0 server default, u64::MAX never, else µs.
    pub struct CreatePersonalAccessToken { pub name: Name, pub expiry: u64 }
}
wire_struct! {
    /// DeletePersonalAccessToken (43).
    pub struct DeletePersonalAccessToken { pub name: Name }
}
wire_struct! {
    /// LoginWithPersonalAccessToken (44).
    pub struct LoginWithPersonalAccessToken { pub token: Name }
}
