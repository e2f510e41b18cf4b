//! TCP framing (protocol.md 1.1-1.3). QUIC streams carry the same frames.
//!
//! ```text
//! request:  [length u32 = 4 + payload size][code u32][payload]
//! response: [status u32][length u32 = payload size][payload, only when status = 0]
//! ```

use crate::error::ErrorCode;
use crate::requests::{CommandCode, Request};
use bytes::BufMut;

pub const REQUEST_HEADER_SIZE: usize = 8;
pub const RESPONSE_HEADER_SIZE: usize = 8;
/// Largest payload of any command but SendMessages.
pub const MAX_CONTROL_PAYLOAD_BYTES: usize = 10 * 1024 * 1024;

/// The fixed start of a request frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// 4 + payload size.
    pub length: u32,
    pub code: u32,
}

/// What a server does with a request header it cannot accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// `length` < 4: answer 3 and keep reading frames (nothing more to consume).
    LengthTooSmall,
    /// The declared payload exceeds the limit: answer 3, then close the connection, since the
    /// body was not consumed and the stream cannot be resynchronised.
    TooLarge {
        payload_bytes: usize,
        limit_bytes: usize,
    },
}

impl FrameError {
    pub fn code(self) -> ErrorCode {
        ErrorCode::InvalidCommand
    }

    pub fn closes_connection(self) -> bool {
        matches!(self, FrameError::TooLarge { .. })
    }
}

impl RequestHeader {
    pub fn parse(bytes: [u8; REQUEST_HEADER_SIZE]) -> Self {
        RequestHeader {
            length: u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")),
            code: u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")),
        }
    }

    pub fn to_bytes(self) -> [u8; REQUEST_HEADER_SIZE] {
        let mut bytes = [0u8; REQUEST_HEADER_SIZE];
        bytes[0..4].copy_from_slice(&self.length.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.code.to_le_bytes());
        bytes
    }

    /// The payload size to read, checked against the limits: 10 MiB for control commands and
    /// (unknown codes included) and `max_send_payload_bytes` for SendMessages.
    pub fn payload_len(self, max_send_payload_bytes: usize) -> Result<usize, FrameError> {
        let payload_bytes = self
            .length
            .checked_sub(4)
            .ok_or(FrameError::LengthTooSmall)? as usize;
        let limit_bytes = if self.code == CommandCode::SendMessages.code() {
            max_send_payload_bytes
        } else {
            MAX_CONTROL_PAYLOAD_BYTES
        };
        if payload_bytes > limit_bytes {
            return Err(FrameError::TooLarge {
                payload_bytes,
                limit_bytes,
            });
        }
        Ok(payload_bytes)
    }
}

/// Writes a whole request frame: header then payload.
pub fn encode_request<B: BufMut>(request: &Request, out: &mut B) {
    let header = RequestHeader {
        length: 4 + request.payload_len() as u32,
        code: request.command().code(),
    };
    out.put_slice(&header.to_bytes());
    request.encode_payload(out);
}

/// The fixed start of a response frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    pub status: u32,
    pub length: u32,
}

impl ResponseHeader {
    /// An OK header for a payload of `length` bytes. A payload of exactly 1 byte would be
    /// misread by the official SDK (protocol.md 1.2); no response type has one.
    pub fn ok(length: usize) -> Self {
        debug_assert_ne!(length, 1, "the SDK cannot read a 1-byte OK payload");
        ResponseHeader {
            status: 0,
            length: length as u32,
        }
    }

    /// An error header: the status and no payload.
    pub fn error(code: ErrorCode) -> Self {
        ResponseHeader {
            status: code.code(),
            length: 0,
        }
    }

    pub fn parse(bytes: [u8; RESPONSE_HEADER_SIZE]) -> Self {
        ResponseHeader {
            status: u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")),
            length: u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")),
        }
    }

    pub fn to_bytes(self) -> [u8; RESPONSE_HEADER_SIZE] {
        let mut bytes = [0u8; RESPONSE_HEADER_SIZE];
        bytes[0..4].copy_from_slice(&self.status.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.length.to_le_bytes());
        bytes
    }

    /// `Ok(payload length)` for a success, or the error the status names (an unknown status
    /// maps to the generic `Error`, as the SDK does).
    pub fn result(self) -> Result<usize, ErrorCode> {
        match self.status {
            0 => Ok(self.length as usize),
            status => Err(ErrorCode::from_code(status).unwrap_or(ErrorCode::Error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_limits() {
        let header = |length, code| RequestHeader { length, code };
        assert_eq!(
            header(3, 1).payload_len(usize::MAX),
            Err(FrameError::LengthTooSmall)
        );
        assert_eq!(header(4, 1).payload_len(0), Ok(0));
        assert_eq!(
            header(4 + 10 * 1024 * 1024, 200).payload_len(0),
            Ok(10 * 1024 * 1024)
        );
        assert!(
            header(5 + 10 * 1024 * 1024, 200)
                .payload_len(usize::MAX)
                .unwrap_err()
                .closes_connection()
        );
        assert!(
            header(5 + 10 * 1024 * 1024, 9999)
                .payload_len(usize::MAX)
                .is_err()
        );
        assert_eq!(
            header(u32::MAX, 101).payload_len(usize::MAX),
            Ok(u32::MAX as usize - 4)
        );
        assert!(header(100, 101).payload_len(50).is_err());
    }

    #[test]
    fn response_headers() {
        assert_eq!(
            ResponseHeader::error(ErrorCode::Unauthenticated).to_bytes(),
            [0x28, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            ResponseHeader::parse([3, 0, 0, 0, 0, 0, 0, 0]).result(),
            Err(ErrorCode::InvalidCommand)
        );
        assert_eq!(
            ResponseHeader::parse([0, 0, 0, 0, 9, 0, 0, 0]).result(),
            Ok(9)
        );
        assert_eq!(
            ResponseHeader::parse([0xff, 0xff, 0, 0, 0, 0, 0, 0]).result(),
            Err(ErrorCode::Error)
        );
    }
}
