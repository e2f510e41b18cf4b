//! The one error type of `iggy-bench`: what failed, in words a person running a benchmark can act
//! on.

use rill_core::{DecodeError, ErrorCode};
use std::fmt;
use std::io;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug)]
pub enum Error {
    /// Bad or conflicting command-line values.
    Usage(String),
    /// A feature this tool does not implement (yet).
    Unsupported(String),
    /// The server could not be reached.
    Connect(String, io::Error),
    /// The server's certificate (or the TLS settings) were refused; retrying cannot help.
    Tls(String),
    /// A socket or file operation failed.
    Io(io::Error),
    /// The server answered a request with an error status.
    Server(&'static str, ErrorCode),
    /// A response did not decode.
    Decode(&'static str, DecodeError),
    /// The server broke the protocol or a run's invariant does not hold.
    Protocol(String),
    /// This actor stopped because another one failed.
    Aborted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) => write!(f, "{message}"),
            Error::Unsupported(message) => write!(f, "{message}"),
            Error::Connect(address, error) => write!(
                f,
                "cannot connect to {address}: {error} (is the server running and listening there?)"
            ),
            Error::Tls(message) => write!(
                f,
                "{message} [iggy-bench flags: tcp --tls-ca-file/--tls-domain/\
                 --tls-validate-certificate, quic --ca-file/--server-name/--validate-certificate]"
            ),
            Error::Io(error) => write!(f, "I/O error: {error}"),
            Error::Server(during, code) => {
                write!(f, "the server refused to {during}: {code}")?;
                if *code == ErrorCode::InvalidCredentials {
                    write!(
                        f,
                        " (start the server with --with-default-root-credentials, or pass -u/-p)"
                    )?;
                }
                Ok(())
            }
            Error::Decode(during, error) => {
                write!(f, "malformed response while trying to {during}: {error}")
            }
            Error::Protocol(message) => write!(f, "{message}"),
            Error::Aborted => write!(f, "stopped because another actor failed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Self {
        Error::Io(error)
    }
}
