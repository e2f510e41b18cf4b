//! Typed requests for all 47 commands of the 0.8.0 protocol (protocol.md sections 3 and 4), and
//! the [`Request`] enum that decodes a payload by command code.

mod groups;
mod messages;
mod offsets;
mod partitions;
mod streams;
mod system;
mod tokens;
mod topics;
mod users;

pub use groups::*;
pub use messages::*;
pub use offsets::*;
pub use partitions::*;
pub use streams::*;
pub use system::*;
pub use tokens::*;
pub use topics::*;
pub use users::*;

use crate::codec::{Decode, Encode};
use crate::error::DecodeError;
use bytes::{BufMut, BytesMut};

macro_rules! requests {
    ($($variant:ident = $code:literal,)*) => {
        /// A command code (the `code` field of a request frame).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum CommandCode { $($variant = $code,)* }

        impl CommandCode {
            /// All commands, in ascending code order.
            pub const ALL: &'static [CommandCode] = &[$(CommandCode::$variant,)*];

            pub const fn code(self) -> u32 {
                self as u32
            }

            pub const fn from_code(code: u32) -> Option<Self> {
                match code {
                    $($code => Some(CommandCode::$variant),)*
                    _ => None,
                }
            }

            pub const fn name(self) -> &'static str {
                match self {
                    $(CommandCode::$variant => stringify!($variant),)*
                }
            }
        }

        /// Any request, decoded.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request { $($variant($variant),)* }

        impl Request {
            pub fn command(&self) -> CommandCode {
                match self {
                    $(Request::$variant(_) => CommandCode::$variant,)*
                }
            }

            /// Decodes the payload of a frame with the given code. Unknown codes, truncated
            /// payloads and bad enum values are status 3; failed validation is status 4.
            /// SendMessages keeps its messages in `payload`'s allocation.
            pub fn decode(code: u32, payload: BytesMut) -> Result<Request, DecodeError> {
                if code == CommandCode::SendMessages.code() {
                    return SendMessages::decode_owned(payload).map(Request::SendMessages);
                }
                match code {
                    $($code => $variant::from_bytes(&payload).map(Request::$variant),)*
                    _ => Err(DecodeError::invalid("command code")),
                }
            }

            /// Writes the payload (without the frame header).
            pub fn encode_payload<B: BufMut>(&self, out: &mut B) {
                match self {
                    $(Request::$variant(request) => request.encode(out),)*
                }
            }

            pub fn payload_len(&self) -> usize {
                match self {
                    $(Request::$variant(request) => request.encoded_len(),)*
                }
            }
        }

        $(
            impl From<$variant> for Request {
                fn from(request: $variant) -> Self {
                    Request::$variant(request)
                }
            }

            impl Command for $variant {
                const CODE: CommandCode = CommandCode::$variant;
            }
        )*
    };
}

/// Ties each request type to its command code.
pub trait Command: Encode + Decode + Into<Request> {
    const CODE: CommandCode;
}

requests! {
    Ping = 1,
    GetStats = 10,
    GetSnapshot = 11,
    GetClusterMetadata = 12,
    GetMe = 20,
    GetClient = 21,
    GetClients = 22,
    GetUser = 31,
    GetUsers = 32,
    CreateUser = 33,
    DeleteUser = 34,
    UpdateUser = 35,
    UpdatePermissions = 36,
    ChangePassword = 37,
    LoginUser = 38,
    LogoutUser = 39,
    GetPersonalAccessTokens = 41,
    CreatePersonalAccessToken = 42,
    DeletePersonalAccessToken = 43,
    LoginWithPersonalAccessToken = 44,
    PollMessages = 100,
    SendMessages = 101,
    FlushUnsavedBuffer = 102,
    GetConsumerOffset = 120,
    StoreConsumerOffset = 121,
    DeleteConsumerOffset = 122,
    GetStream = 200,
    GetStreams = 201,
    CreateStream = 202,
    DeleteStream = 203,
    UpdateStream = 204,
    PurgeStream = 205,
    GetTopic = 300,
    GetTopics = 301,
    CreateTopic = 302,
    DeleteTopic = 303,
    UpdateTopic = 304,
    PurgeTopic = 305,
    CreatePartitions = 402,
    DeletePartitions = 403,
    DeleteSegments = 503,
    GetConsumerGroup = 600,
    GetConsumerGroups = 601,
    CreateConsumerGroup = 602,
    DeleteConsumerGroup = 603,
    JoinConsumerGroup = 604,
    LeaveConsumerGroup = 605,
}

impl CommandCode {
    /// Whether the command needs a logged-in session (all but Ping and the two logins).
    pub const fn requires_authentication(self) -> bool {
        !matches!(
            self,
            CommandCode::Ping | CommandCode::LoginUser | CommandCode::LoginWithPersonalAccessToken
        )
    }
}

impl std::fmt::Display for CommandCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_47_commands_in_order() {
        assert_eq!(CommandCode::ALL.len(), 47);
        assert!(
            CommandCode::ALL
                .windows(2)
                .all(|pair| pair[0].code() < pair[1].code())
        );
        for &command in CommandCode::ALL {
            assert_eq!(CommandCode::from_code(command.code()), Some(command));
        }
        for code in [0, 13, 40, 45, 606, 9999] {
            assert_eq!(CommandCode::from_code(code), None);
            assert_eq!(
                Request::decode(code, BytesMut::new()).unwrap_err().code,
                crate::ErrorCode::InvalidCommand
            );
        }
    }

    #[test]
    fn only_ping_and_logins_skip_authentication() {
        let open: Vec<_> = CommandCode::ALL
            .iter()
            .filter(|c| !c.requires_authentication())
            .map(|c| c.code())
            .collect();
        assert_eq!(open, [1, 38, 44]);
    }
}
