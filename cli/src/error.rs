//! CLI errors and the exit codes they map to (listed in `iggy --help`).

use rill_sdk::Error as SdkError;
use rill_sdk::types::ErrorCode;
use std::fmt;
use std::process::ExitCode;

/// Exit code: the server answered with an error.
pub const EXIT_SERVER_ERROR: u8 = 1;
/// Exit code: invalid arguments or usage.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the server could not be reached.
pub const EXIT_UNREACHABLE: u8 = 3;
/// Exit code: authentication or permission failure.
pub const EXIT_AUTH: u8 = 4;
/// Exit code: the requested resource does not exist.
pub const EXIT_NOT_FOUND: u8 = 5;

/// An error with the exit code it should produce.
#[derive(Debug)]
pub struct CliError {
    pub exit_code: u8,
    pub message: String,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit_code: EXIT_USAGE,
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        CliError {
            exit_code: EXIT_NOT_FOUND,
            message: message.into(),
        }
    }

    pub fn auth(message: impl Into<String>) -> Self {
        CliError {
            exit_code: EXIT_AUTH,
            message: message.into(),
        }
    }

    pub fn other(message: impl Into<String>) -> Self {
        CliError {
            exit_code: EXIT_SERVER_ERROR,
            message: message.into(),
        }
    }

    /// Adds what the CLI was doing in front of the message.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn exit(&self) -> ExitCode {
        ExitCode::from(self.exit_code)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn exit_code_for(code: ErrorCode) -> u8 {
    use ErrorCode::*;
    match code {
        Unauthenticated
        | Unauthorized
        | InvalidCredentials
        | InvalidUsername
        | InvalidPassword
        | UserInactive
        | InvalidPersonalAccessToken
        | PersonalAccessTokenExpired => EXIT_AUTH,
        ResourceNotFound
        | StreamIdNotFound
        | StreamNameNotFound
        | TopicIdNotFound
        | TopicNameNotFound
        | PartitionNotFound
        | ConsumerOffsetNotFound
        | SegmentNotFound
        | ConsumerGroupIdNotFound
        | ConsumerGroupNameNotFound
        | ConsumerGroupMemberNotFound => EXIT_NOT_FOUND,
        _ => EXIT_SERVER_ERROR,
    }
}

impl From<SdkError> for CliError {
    fn from(error: SdkError) -> Self {
        let exit_code = match &error {
            SdkError::Server { code, .. } => exit_code_for(*code),
            SdkError::Unreachable { .. }
            | SdkError::Io(_)
            | SdkError::Timeout { .. }
            | SdkError::NotConnected => EXIT_UNREACHABLE,
            SdkError::InvalidArgument(_) | SdkError::InvalidConnectionString(_) => EXIT_USAGE,
            // A CA file or server name the user gave is wrong: fix the arguments.
            SdkError::Tls {
                code: ErrorCode::InvalidTlsCertificatePath | ErrorCode::InvalidTlsDomain,
                ..
            } => EXIT_USAGE,
            // The server's certificate was refused: no secure connection could be made.
            SdkError::Tls { .. } => EXIT_UNREACHABLE,
            _ => EXIT_SERVER_ERROR,
        };
        let mut message = error.to_string();
        if let SdkError::Tls { .. } = &error {
            // The SDK names its own options; say which flags of this tool set them.
            message.push_str(if message.contains("QUIC") {
                " [iggy flags: --quic-ca-file, --quic-server-name, --quic-validate-certificate]"
            } else {
                " [iggy flags: --tcp-tls-ca-file, --tcp-tls-domain, \
                 --tcp-tls-validate-certificate=false]"
            });
        } else if message.contains("iggy+tls://") {
            message.push_str(" [iggy flag: --tcp-tls-enabled]");
        }
        CliError { exit_code, message }
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::other(error.to_string())
    }
}
