//! The one error type of the SDK.
//!
//! Server failures keep the wire status ([`ErrorCode`]) so callers can match on the numeric code
//! and print its upstream name; everything that happens on the client side (I/O, timeouts,
//! malformed responses, bad arguments) has its own variant.

use rill_core::{CommandCode, DecodeError, ErrorCode};
use std::fmt;
use std::io;
use std::time::Duration;

/// Everything that can go wrong in the SDK.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The server answered the command with a non-zero status.
    Server {
        /// The command that failed.
        command: CommandCode,
        /// The status the server sent (unknown statuses map to the generic `Error`, code 1).
        code: ErrorCode,
    },
    /// The server's response could not be decoded.
    Decode {
        /// The command whose response was malformed.
        command: CommandCode,
        /// What was wrong.
        source: DecodeError,
    },
    /// No connection could be established after every allowed attempt.
    Unreachable {
        /// The address tried.
        address: String,
        /// How many connection attempts were made.
        attempts: u32,
        /// The error of the last attempt.
        source: io::Error,
    },
    /// The connection failed while a request was in flight.
    Io(io::Error),
    /// The request did not complete within the configured timeout.
    Timeout {
        /// The command that timed out.
        command: CommandCode,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The client was shut down (or never connected) and reconnection is disabled.
    NotConnected,
    /// A connection string could not be parsed.
    InvalidConnectionString(String),
    /// An argument was rejected on the client side before anything was sent.
    InvalidArgument(String),
    /// TLS (over TCP or inside QUIC) could not be set up: an untrusted certificate, a name the
    /// certificate does not cover, an unreadable CA file, an invalid server name. Retrying does
    /// not help, so the client fails at once; the message says what to change.
    Tls {
        /// `InvalidTlsCertificate`, `InvalidTlsCertificatePath` or `InvalidTlsDomain`.
        code: ErrorCode,
        /// What failed and what to do about it.
        message: String,
    },
    /// The high-level producer or consumer was closed.
    Closed,
}

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The protocol status this error corresponds to: the server's code for [`Error::Server`],
    /// and the closest upstream client-side code otherwise (as the official SDK reports them).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Server { code, .. } => *code,
            Error::Decode { source, .. } => source.code,
            Error::Unreachable { .. } => ErrorCode::CannotEstablishConnection,
            Error::Io(_) => ErrorCode::TcpError,
            Error::Timeout { .. } => ErrorCode::TcpError,
            Error::NotConnected => ErrorCode::NotConnected,
            Error::InvalidConnectionString(_) => ErrorCode::InvalidConnectionString,
            Error::InvalidArgument(_) => ErrorCode::InvalidFormat,
            Error::Tls { code, .. } => *code,
            Error::Closed => ErrorCode::ClientShutdown,
        }
    }

    /// The numeric status of [`Error::code`].
    pub fn code_number(&self) -> u32 {
        self.code().code()
    }

    /// The server's status, only when the server itself answered with an error.
    pub fn server_code(&self) -> Option<ErrorCode> {
        match self {
            Error::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the official SDK would drop the connection, reconnect, log in again and retry the
    /// request once (protocol.md 8.3): statuses 8, 30, 40 and broken connections.
    pub fn should_reconnect(&self) -> bool {
        match self {
            Error::Server { code, .. } => matches!(
                code,
                ErrorCode::Disconnected | ErrorCode::StaleClient | ErrorCode::Unauthenticated
            ),
            Error::Io(_) => true,
            _ => false,
        }
    }

    /// Whether retrying the same operation later may succeed (used by the producer's and
    /// consumer's retry loops): connection problems, timeouts and the reconnect codes.
    pub fn is_transient(&self) -> bool {
        self.should_reconnect()
            || matches!(
                self,
                Error::Timeout { .. } | Error::Unreachable { .. } | Error::NotConnected
            )
            || matches!(
                self.server_code(),
                Some(ErrorCode::TaskTimeout | ErrorCode::ShardCommunicationError)
            )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Server { command, code } => write!(
                f,
                "{} failed: server error {} {} ({})",
                command.name(),
                code.code(),
                code.name(),
                code.message()
            ),
            Error::Decode { command, source } => {
                write!(f, "malformed {} response: {source}", command.name())
            }
            Error::Unreachable {
                address,
                attempts,
                source,
            } => write!(
                f,
                "cannot connect to the server at {address} after {attempts} attempt(s): {source}"
            ),
            Error::Io(error) => write!(f, "connection error: {error}"),
            Error::Timeout { command, after } => {
                write!(f, "{} timed out after {after:?}", command.name())
            }
            Error::NotConnected => f.write_str("the client is not connected"),
            Error::InvalidConnectionString(message) => {
                write!(f, "invalid connection string: {message}")
            }
            Error::InvalidArgument(message) => write!(f, "invalid argument: {message}"),
            Error::Tls { message, .. } => f.write_str(message),
            Error::Closed => f.write_str("closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Decode { source, .. } => Some(source),
            Error::Unreachable { source, .. } => Some(source),
            Error::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Self {
        Error::Io(error)
    }
}

impl From<DecodeError> for Error {
    /// A value rejected by core's validation before sending (e.g. an empty name).
    fn from(error: DecodeError) -> Self {
        Error::InvalidArgument(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_name_the_code() {
        let error = Error::Server {
            command: CommandCode::GetStream,
            code: ErrorCode::StreamIdNotFound,
        };
        assert_eq!(error.code_number(), 1009);
        let text = error.to_string();
        assert!(
            text.contains("1009") && text.contains("StreamIdNotFound"),
            "{text}"
        );
        assert!(!error.should_reconnect());
    }

    #[test]
    fn reconnect_codes_match_the_official_sdk() {
        let reconnects = |code| {
            Error::Server {
                command: CommandCode::Ping,
                code,
            }
            .should_reconnect()
        };
        assert!(reconnects(ErrorCode::Disconnected));
        assert!(reconnects(ErrorCode::StaleClient));
        assert!(reconnects(ErrorCode::Unauthenticated));
        assert!(!reconnects(ErrorCode::Unauthorized));
        assert!(Error::Io(io::Error::other("x")).should_reconnect());
    }
}
