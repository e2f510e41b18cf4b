//! The 256-byte request, reply and eviction headers (protocol-0.9.md section 2), and the map from
//! a request's operation (and, for reads, the command code it carries) to a 0.8 command code.

use super::{u32_at, u64_at, u128_at};
use crate::error::{DecodeError, ErrorCode};

/// Every 0.9 header is this long; a frame is a header followed by `size - 256` body bytes.
pub const HEADER_SIZE: usize = 256;

/// Header `command` values seen on client connections.
pub const COMMAND_REQUEST: u8 = 5;
pub const COMMAND_REPLY: u8 = 8;
pub const COMMAND_EVICTION: u8 = 13;

/// Request operations (protocol-0.9.md 2.4).
pub const OP_REGISTER: u8 = 1;
pub const OP_NON_REPLICATED: u8 = 2;
pub const OP_LOGOUT: u8 = 3;
pub const OP_SEND_MESSAGES: u8 = 160;
pub const OP_DELETE_SEGMENTS: u8 = 138;

// Field offsets, from the first byte of the header.
const SIZE: usize = 48;
const COMMAND: usize = 60;
const REQUEST_CLIENT: usize = 128;
const REQUEST_CHECKSUM: usize = 144;
const REQUEST_NUMBER: usize = 168;
const REQUEST_OPERATION: usize = 176;
const REQUEST_SESSION: usize = 184;
const REQUEST_CODE: usize = 196;
const REPLY_REQUEST_CHECKSUM: usize = 128;
const REPLY_CLIENT: usize = 160;
const REPLY_OP: usize = 176;
const REPLY_COMMIT: usize = 184;
const REPLY_REQUEST: usize = 200;
const REPLY_OPERATION: usize = 208;
const REPLY_STATUS: usize = 216;
const EVICTION_CLIENT: usize = 128;
const EVICTION_VERSION: usize = 144;
const EVICTION_VERSION_MIN: usize = 148;
const EVICTION_REASON: usize = 255;

/// Metadata and partition operations and the 0.8 command each one carries. Register (1) is
/// LoginRegister or LoginRegisterWithPat, told apart by the body; NonReplicated (2) names its
/// command in the header.
const OPERATION_CODES: [(u8, u32); 25] = [
    (OP_LOGOUT, 39),
    (128, 202),
    (129, 204),
    (130, 203),
    (131, 205),
    (132, 302),
    (133, 304),
    (134, 303),
    (135, 305),
    (136, 402),
    (137, 403),
    (OP_DELETE_SEGMENTS, 503),
    (139, 602),
    (140, 603),
    (141, 33),
    (142, 35),
    (143, 34),
    (144, 37),
    (145, 36),
    (146, 42),
    (147, 43),
    (148, 604),
    (149, 605),
    (OP_SEND_MESSAGES, 101),
    (161, 121),
];

/// The command code a replicated operation carries (DeleteConsumerOffset, 162, included).
pub fn operation_code(operation: u8) -> Option<u32> {
    if operation == 162 {
        return Some(122);
    }
    OPERATION_CODES
        .iter()
        .find(|(op, _)| *op == operation)
        .map(|(_, code)| *code)
}

/// The operation a client sends a command under: the inverse of [`operation_code`], and
/// NonReplicated for every read, ping, poll, flush and sync.
pub fn code_operation(code: u32) -> u8 {
    match code {
        40 | 45 => OP_REGISTER,
        122 => 162,
        _ => OPERATION_CODES
            .iter()
            .find(|(_, c)| *c == code)
            .map_or(OP_NON_REPLICATED, |(op, _)| *op),
    }
}

/// Whether a reply to `operation` starts with a result section (protocol-0.9.md 2.7): every
/// metadata operation but DeleteSegments, the two offset writes, and a Register that answers
/// with a body.
pub fn is_result_framed(operation: u8) -> bool {
    matches!(operation, 64..=149 | 161 | 162) && operation != OP_DELETE_SEGMENTS
        || operation == OP_REGISTER
}

/// A request header's fields that the server uses. The rest (checksums of the frame, cluster,
/// view, release, timestamp, user id) are ignored, as upstream ignores them from clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Header plus body bytes.
    pub size: u32,
    pub client: u128,
    /// XXH3-64 of the body, zero-extended; 0 = not stamped.
    pub request_checksum: u128,
    pub request: u64,
    pub operation: u8,
    pub session: u64,
    /// The command code a NonReplicated request carries in its reserved bytes.
    pub code: u32,
}

/// Why a request header is refused. There is no way to answer a header that cannot be trusted,
/// so the connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    NotARequest(u8),
    UnknownOperation(u8),
    /// `size` below the header's own length or above the frame limit.
    Size(u32),
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::NotARequest(command) => {
                write!(f, "header command {command} is not a request (5)")
            }
            HeaderError::UnknownOperation(op) => write!(f, "unknown operation {op}"),
            HeaderError::Size(size) => write!(f, "frame size {size} out of range"),
        }
    }
}

impl RequestHeader {
    /// Parses and checks a request header; `max_frame` bounds `size` (header included).
    pub fn parse(bytes: &[u8; HEADER_SIZE], max_frame: u32) -> Result<Self, HeaderError> {
        if bytes[COMMAND] != COMMAND_REQUEST {
            return Err(HeaderError::NotARequest(bytes[COMMAND]));
        }
        let size = u32_at(bytes, SIZE);
        if (size as usize) < HEADER_SIZE || size > max_frame {
            return Err(HeaderError::Size(size));
        }
        let operation = bytes[REQUEST_OPERATION];
        if !matches!(operation, OP_REGISTER | OP_NON_REPLICATED)
            && operation_code(operation).is_none()
        {
            return Err(HeaderError::UnknownOperation(operation));
        }
        Ok(RequestHeader {
            size,
            client: u128_at(bytes, REQUEST_CLIENT),
            request_checksum: u128_at(bytes, REQUEST_CHECKSUM),
            request: u64_at(bytes, REQUEST_NUMBER),
            operation,
            session: u64_at(bytes, REQUEST_SESSION),
            // Only NonReplicated carries a code there; for the others the bytes mean nothing.
            code: if operation == OP_NON_REPLICATED {
                u32_at(bytes, REQUEST_CODE)
            } else {
                0
            },
        })
    }

    pub fn body_len(&self) -> usize {
        self.size as usize - HEADER_SIZE
    }

    /// The command this request carries; None for Register (the body tells a password login
    /// from a token login) and for an operation that names no command.
    pub fn command_code(&self) -> Option<u32> {
        match self.operation {
            OP_REGISTER => None,
            OP_NON_REPLICATED => Some(self.code),
            op => operation_code(op),
        }
    }

    /// Checks a stamped request checksum against the body (status 4 when it differs).
    pub fn verify_body(&self, body: &[u8]) -> Result<(), DecodeError> {
        if self.request_checksum == 0
            || self.request_checksum == u128::from(crate::hash::xxh3_64(body))
        {
            Ok(())
        } else {
            Err(DecodeError::format("request checksum"))
        }
    }

    /// Writes the header (the client side; tests and our own tools).
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut bytes = [0u8; HEADER_SIZE];
        bytes[SIZE..SIZE + 4].copy_from_slice(&self.size.to_le_bytes());
        bytes[COMMAND] = COMMAND_REQUEST;
        bytes[REQUEST_CLIENT..REQUEST_CLIENT + 16].copy_from_slice(&self.client.to_le_bytes());
        bytes[REQUEST_CHECKSUM..REQUEST_CHECKSUM + 16]
            .copy_from_slice(&self.request_checksum.to_le_bytes());
        bytes[REQUEST_NUMBER..REQUEST_NUMBER + 8].copy_from_slice(&self.request.to_le_bytes());
        bytes[REQUEST_OPERATION] = self.operation;
        bytes[REQUEST_SESSION..REQUEST_SESSION + 8].copy_from_slice(&self.session.to_le_bytes());
        if self.operation == OP_NON_REPLICATED {
            bytes[REQUEST_CODE..REQUEST_CODE + 4].copy_from_slice(&self.code.to_le_bytes());
        }
        bytes
    }
}

/// A reply header answering `request`: `status` 0 with `body_len` bytes to follow, or an error
/// status with none. `op` and `commit` carry the session number for a Register and the
/// request's session otherwise (protocol-0.9.md 2.3); the SDK ignores both.
pub fn reply(request: &RequestHeader, status: u32, body_len: usize, op: u64) -> [u8; HEADER_SIZE] {
    let mut bytes = [0u8; HEADER_SIZE];
    let size = (HEADER_SIZE + body_len) as u32;
    bytes[SIZE..SIZE + 4].copy_from_slice(&size.to_le_bytes());
    bytes[COMMAND] = COMMAND_REPLY;
    bytes[REPLY_REQUEST_CHECKSUM..REPLY_REQUEST_CHECKSUM + 16]
        .copy_from_slice(&request.request_checksum.to_le_bytes());
    bytes[REPLY_CLIENT..REPLY_CLIENT + 16].copy_from_slice(&request.client.to_le_bytes());
    bytes[REPLY_OP..REPLY_OP + 8].copy_from_slice(&op.to_le_bytes());
    bytes[REPLY_COMMIT..REPLY_COMMIT + 8].copy_from_slice(&op.to_le_bytes());
    bytes[REPLY_REQUEST..REPLY_REQUEST + 8].copy_from_slice(&request.request.to_le_bytes());
    bytes[REPLY_OPERATION] = request.operation;
    bytes[REPLY_STATUS..REPLY_STATUS + 4].copy_from_slice(&status.to_le_bytes());
    bytes
}

/// Why a session is evicted (protocol-0.9.md 2.5), as the SDK maps each to an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EvictionReason {
    /// A replicated request without a session: the SDK sees 40 and logs in again.
    NoSession = 1,
    /// Wrong username or password, unknown or inactive user: the SDK sees 42.
    InvalidCredentials = 9,
    /// Unknown or expired token: the SDK sees 53.
    InvalidToken = 10,
    /// The session missed its heartbeats: the SDK sees 30.
    StaleClient = 13,
    /// The client's protocol version is outside the server's range: the SDK sees 14003.
    IncompatibleProtocol = 14,
    /// A login body without a version prefix, or a 0.8 login code: the SDK sees 4.
    MalformedLogin = 15,
}

/// An eviction frame: a header alone, ending the session.
pub fn eviction(client: u128, reason: EvictionReason) -> [u8; HEADER_SIZE] {
    let mut bytes = [0u8; HEADER_SIZE];
    bytes[SIZE..SIZE + 4].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
    bytes[COMMAND] = COMMAND_EVICTION;
    // The reason must reach a client whose id we never learned; any non-zero id will do.
    bytes[EVICTION_CLIENT..EVICTION_CLIENT + 16].copy_from_slice(&client.max(1).to_le_bytes());
    if reason == EvictionReason::IncompatibleProtocol {
        bytes[EVICTION_VERSION..EVICTION_VERSION + 4]
            .copy_from_slice(&super::PROTOCOL_VERSION.to_le_bytes());
        bytes[EVICTION_VERSION_MIN..EVICTION_VERSION_MIN + 4]
            .copy_from_slice(&super::PROTOCOL_VERSION_MIN.to_le_bytes());
    }
    bytes[EVICTION_REASON] = reason as u8;
    bytes
}

/// A reply header as a client reads it: (command, size, operation, status).
pub fn parse_reply(bytes: &[u8; HEADER_SIZE]) -> (u8, u32, u8, u32) {
    (
        bytes[COMMAND],
        u32_at(bytes, SIZE),
        bytes[REPLY_OPERATION],
        u32_at(bytes, REPLY_STATUS),
    )
}

/// Whether a status is one the SDK treats as "re-send the same request".
pub fn is_transient(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::TransientNotCommitted | ErrorCode::TransientNotAccepted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replicated_operation_maps_to_its_command_and_back() {
        for (op, code) in OPERATION_CODES.iter().copied().chain([(162, 122)]) {
            assert_eq!(operation_code(op), Some(code));
            assert_eq!(code_operation(code), op);
        }
        for read in [1, 10, 12, 13, 100, 102, 120, 200, 301, 606] {
            assert_eq!(code_operation(read), OP_NON_REPLICATED);
        }
        assert_eq!(code_operation(40), OP_REGISTER);
        assert_eq!(code_operation(45), OP_REGISTER);
    }

    #[test]
    fn result_framing_follows_the_operation() {
        assert!(is_result_framed(128) && is_result_framed(149) && is_result_framed(161));
        assert!(is_result_framed(162) && is_result_framed(OP_REGISTER));
        assert!(!is_result_framed(OP_DELETE_SEGMENTS));
        assert!(!is_result_framed(OP_NON_REPLICATED) && !is_result_framed(OP_LOGOUT));
        assert!(!is_result_framed(OP_SEND_MESSAGES));
    }

    /// The captured Ping request of protocol-0.9.md 11.2.
    #[test]
    fn parses_the_captured_ping() {
        let mut bytes = [0u8; HEADER_SIZE];
        bytes[48] = 0x00;
        bytes[49] = 0x01;
        bytes[60] = 5;
        let client = 0x4384d1c10ad37882cd42dc2d02b15ea5u128;
        bytes[128..144].copy_from_slice(&client.to_le_bytes());
        bytes[168] = 1;
        bytes[176] = 2;
        bytes[184] = 1;
        bytes[196] = 1;
        let header = RequestHeader::parse(&bytes, 64 << 20).unwrap();
        assert_eq!(header.size, 256);
        assert_eq!(header.client, client);
        assert_eq!((header.request, header.session), (1, 1));
        assert_eq!(header.command_code(), Some(1));
        assert_eq!(header.encode(), bytes);
        let reply = reply(&header, 0, 0, 1);
        assert_eq!(
            parse_reply(&reply),
            (COMMAND_REPLY, 256, OP_NON_REPLICATED, 0)
        );
        assert_eq!(&reply[160..176], &client.to_le_bytes());
    }

    #[test]
    fn refuses_headers_it_cannot_trust() {
        let ok = RequestHeader {
            size: 256,
            client: 7,
            request_checksum: 0,
            request: 1,
            operation: OP_NON_REPLICATED,
            session: 0,
            code: 1,
        };
        let mut bytes = ok.encode();
        assert_eq!(RequestHeader::parse(&bytes, 1024), Ok(ok));
        bytes[60] = 8;
        assert_eq!(
            RequestHeader::parse(&bytes, 1024),
            Err(HeaderError::NotARequest(8))
        );
        let mut small = ok;
        small.size = 255;
        assert_eq!(
            RequestHeader::parse(&small.encode(), 1024),
            Err(HeaderError::Size(255))
        );
        small.size = 1025;
        assert_eq!(
            RequestHeader::parse(&small.encode(), 1024),
            Err(HeaderError::Size(1025))
        );
        let mut unknown = ok;
        unknown.operation = 99;
        assert_eq!(
            RequestHeader::parse(&unknown.encode(), 1024),
            Err(HeaderError::UnknownOperation(99))
        );
    }

    /// Found by the v09 fuzz target: reserved bytes of a Register are not a command code.
    #[test]
    fn only_non_replicated_requests_carry_a_code() {
        let register = RequestHeader {
            size: 256,
            client: 1,
            request_checksum: 0,
            request: 0,
            operation: OP_REGISTER,
            session: 0,
            code: 0,
        };
        let mut bytes = register.encode();
        bytes[REQUEST_CODE..REQUEST_CODE + 4].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(RequestHeader::parse(&bytes, 1024), Ok(register));
        assert_eq!(register.command_code(), None);
    }

    #[test]
    fn a_stamped_checksum_must_match_the_body() {
        let mut header = RequestHeader {
            size: 258,
            client: 1,
            request_checksum: 0,
            request: 1,
            operation: 128,
            session: 1,
            code: 0,
        };
        assert!(header.verify_body(b"\x01s").is_ok());
        header.request_checksum = 0x20b87c5695dd0912;
        assert!(header.verify_body(b"\x01s").is_ok(), "captured in 11.3");
        assert_eq!(
            header.verify_body(b"\x01t").unwrap_err().code,
            ErrorCode::InvalidFormat
        );
    }

    #[test]
    fn an_eviction_carries_its_reason_and_the_version_range() {
        let frame = eviction(0, EvictionReason::IncompatibleProtocol);
        assert_eq!(frame[60], COMMAND_EVICTION);
        assert_eq!(frame[255], 14);
        assert_eq!(u32_at(&frame, 48), 256);
        assert_eq!(u32_at(&frame, 144), super::super::PROTOCOL_VERSION);
        assert_ne!(u128_at(&frame, 128), 0);
        let wrong = eviction(5, EvictionReason::InvalidCredentials);
        assert_eq!((wrong[255], u32_at(&wrong, 144)), (9, 0));
    }
}
