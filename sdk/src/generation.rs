//! The two protocol generations behind one client. Every command is built as a 0.8
//! [`Request`] and every response decoded from a 0.8 payload; a [`Codec`] decides what goes on
//! the wire: the 0.8 frame as it is, or the 0.9 frame `rill_core::v09::client` writes from it
//! (and the 0.9 reply read back into the 0.8 payload).

use crate::config::Protocol;
use crate::error::{Error, Result};
use crate::transport::{OutgoingFrame, RawResponse};
use crate::wire::{EncodedFrame, encode_frame};
use bytes::Bytes;
use rill_core::frame::ResponseHeader;
use rill_core::v09::client::{ClientSession, OutgoingRequest, ReplyError};
use rill_core::{ErrorCode, Request};

/// The name this SDK gives in a 0.9 login.
const SDK_NAME: &str = "rill-sdk";

/// How one connection writes requests and reads replies.
pub(crate) enum Codec {
    V08,
    /// The session numbering of this connection (a new connection starts a new one).
    V09(ClientSession),
}

/// A request written for the wire.
pub(crate) enum Encoded<'a> {
    V08(EncodedFrame<'a>),
    /// Boxed: the 256-byte header would make every 0.8 frame as large.
    V09(Box<OutgoingRequest>),
}

impl Encoded<'_> {
    /// The bytes to write.
    pub fn frame(&self) -> OutgoingFrame<'_> {
        match self {
            Encoded::V08(frame) => OutgoingFrame {
                head: &frame.head,
                body: frame.body,
                protocol: Protocol::V08,
            },
            Encoded::V09(request) => OutgoingFrame {
                head: &request.header,
                body: &request.body,
                protocol: Protocol::V09,
            },
        }
    }
}

impl Codec {
    /// The codec of a new connection.
    pub fn new(protocol: Protocol) -> Self {
        match protocol {
            Protocol::V08 => Codec::V08,
            Protocol::V09 => Codec::V09(
                ClientSession::new(rand::random(), SDK_NAME, env!("CARGO_PKG_VERSION"))
                    .expect("the SDK's name and version are valid names"),
            ),
        }
    }

    /// Writes `request` in this connection's generation.
    pub fn encode<'a>(&mut self, request: &'a Request) -> Result<Encoded<'a>> {
        match self {
            Codec::V08 => Ok(Encoded::V08(encode_frame(request))),
            Codec::V09(session) => session
                .encode(request)
                .map(|sent| Encoded::V09(Box::new(sent)))
                .map_err(|source| Error::Decode {
                    command: request.command(),
                    source,
                }),
        }
    }

    /// The 0.8 payload of a successful reply, or the error it reports.
    pub fn decode(
        &mut self,
        request: &Request,
        sent: &Encoded<'_>,
        response: RawResponse,
    ) -> Result<Bytes> {
        let command = request.command();
        match (self, sent) {
            (Codec::V09(session), Encoded::V09(sent)) => {
                match session.read_reply(sent, response.status, &response.payload) {
                    Ok(payload) => Ok(Bytes::from(payload)),
                    Err(ReplyError::Status(code)) => Err(Error::Server { command, code }),
                    Err(ReplyError::Malformed(source)) => Err(Error::Decode { command, source }),
                }
            }
            _ => {
                let header = ResponseHeader {
                    status: response.status,
                    length: response.payload.len() as u32,
                };
                match header.result() {
                    Ok(_) => Ok(response.payload),
                    Err(code) => Err(Error::Server { command, code }),
                }
            }
        }
    }
}

/// Whether the server ends the connection after answering with `code`: 0.8 closes after 11
/// and 30 (protocol.md 1.3); a 0.9 eviction ends the session (its codes 30, 40, 42, 53).
pub(crate) fn ends_connection(protocol: Protocol, code: ErrorCode) -> bool {
    match protocol {
        Protocol::V08 => code.closes_connection(),
        Protocol::V09 => matches!(
            code,
            ErrorCode::StaleClient
                | ErrorCode::Unauthenticated
                | ErrorCode::InvalidCredentials
                | ErrorCode::InvalidPersonalAccessToken
                | ErrorCode::IncompatibleProtocolVersion
        ),
    }
}
