//! A blocking raw-frame TCP client, for what the official SDK cannot send: requests before
//! login, malformed frames, half frames, garbage.
//!
//! Request frame (protocol.md 1.1), all integers little-endian:
//!
//! ```text
//! 0        4        8
//! +--------+--------+-------------------+
//! | length | code   | payload           |   length = 4 + payload size
//! +--------+--------+-------------------+
//! ```
//!
//! Response frame (protocol.md 1.2): `status u32`, `length u32` (payload size), payload (only when
//! status is 0).
//!
//! The encoders here are written from protocol.md, independently of the server's own codec, so the
//! tests cross-check the server rather than share its mistakes.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Command codes used by the raw tests (protocol.md section 3).
pub mod codes {
    pub const PING: u32 = 1;
    pub const GET_STATS: u32 = 10;
    pub const LOGIN_USER: u32 = 38;
    pub const LOGOUT_USER: u32 = 39;
    pub const POLL_MESSAGES: u32 = 100;
    pub const SEND_MESSAGES: u32 = 101;
    pub const GET_STREAM: u32 = 200;
    pub const GET_STREAMS: u32 = 201;
    pub const CREATE_STREAM: u32 = 202;
}

/// Status codes checked by the raw tests (protocol.md section 8).
pub mod status {
    pub const OK: u32 = 0;
    pub const INVALID_COMMAND: u32 = 3;
    pub const INVALID_FORMAT: u32 = 4;
    pub const UNAUTHENTICATED: u32 = 40;
    pub const INVALID_CREDENTIALS: u32 = 42;
}

/// How long a raw read may block before the test fails (or a close check gives up).
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// One response frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u32,
    pub payload: Vec<u8>,
}

/// A raw TCP connection to the server.
#[derive(Debug)]
pub struct RawClient {
    stream: TcpStream,
}

impl RawClient {
    /// Connects with TCP_NODELAY and a read timeout of 10 s.
    pub fn connect(address: SocketAddr) -> RawClient {
        let stream = TcpStream::connect_timeout(&address, IO_TIMEOUT)
            .unwrap_or_else(|error| panic!("raw connect to {address}: {error}"));
        stream.set_nodelay(true).expect("TCP_NODELAY");
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("read timeout");
        stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .expect("write timeout");
        RawClient { stream }
    }

    /// The client side's address (ip:port).
    pub fn local_address(&self) -> SocketAddr {
        self.stream.local_addr().expect("local address")
    }

    /// Writes `bytes` as they are.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Writes one well-formed request frame.
    pub fn write_frame(&mut self, code: u32, payload: &[u8]) -> io::Result<()> {
        self.write_raw(&frame(code, payload))
    }

    /// Reads one response frame: the 8-byte header, then the payload when status is 0.
    pub fn read_response(&mut self) -> io::Result<Response> {
        let mut header = [0u8; 8];
        self.stream.read_exact(&mut header)?;
        let status = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
        let length = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
        if status != status::OK {
            // protocol.md 1.2: an error frame never carries a payload.
            assert_eq!(
                length, 0,
                "error frame with status {status} declares {length} payload bytes"
            );
            return Ok(Response {
                status,
                payload: Vec::new(),
            });
        }
        let mut payload = vec![0u8; length as usize];
        self.stream.read_exact(&mut payload)?;
        Ok(Response { status, payload })
    }

    /// Sends a request frame and reads its response; panics on I/O errors.
    pub fn request(&mut self, code: u32, payload: &[u8]) -> Response {
        self.write_frame(code, payload)
            .unwrap_or_else(|error| panic!("write request {code}: {error}"));
        self.read_response()
            .unwrap_or_else(|error| panic!("read response to request {code}: {error}"))
    }

    /// Logs in as `username`/`password` and returns the response.
    pub fn login(&mut self, username: &str, password: &str) -> Response {
        self.request(codes::LOGIN_USER, &login_payload(username, password))
    }

    /// Logs in as root (iggy/iggy) and asserts it worked (user id 0).
    pub fn login_root(&mut self) {
        let response = self.login(crate::server::ROOT_USERNAME, crate::server::ROOT_PASSWORD);
        assert_eq!(response.status, status::OK, "raw root login failed");
        assert_eq!(
            response.payload,
            0u32.to_le_bytes(),
            "root user id must be 0"
        );
    }

    /// Sends Ping and asserts the empty OK answer: the connection is usable and in sync.
    pub fn assert_ping(&mut self) {
        let response = self.request(codes::PING, &[]);
        assert_eq!(
            response,
            Response {
                status: status::OK,
                payload: Vec::new()
            },
            "ping"
        );
    }

    /// Whether the server has closed the connection: a read sees EOF or a reset within 10 s.
    /// Returns false if bytes arrive or the read times out with the connection still open.
    pub fn is_closed_by_server(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(error) => matches!(
                error.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            ),
        }
    }

    /// The socket, for tests that read it their own way.
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// Shuts down the sending half (the server sees EOF).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Encodes a request frame: `length = 4 + payload`, `code`, payload.
pub fn frame(code: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len() + 4).expect("frame fits u32");
    let mut bytes = Vec::with_capacity(8 + payload.len());
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(&code.to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// `Name`: u8 length (1..=255) + UTF-8 bytes.
pub fn name(value: &str) -> Vec<u8> {
    let length = u8::try_from(value.len()).expect("name of at most 255 bytes");
    let mut bytes = vec![length];
    bytes.extend_from_slice(value.as_bytes());
    bytes
}

/// A SendMessages payload (protocol.md 4.6) with one message for `partition` of
/// `stream`/`topic` (numeric ids): checksum 0, origin timestamp 1, no user headers.
pub fn send_one_message(
    stream: u32,
    topic: u32,
    partition: u32,
    message_id: u128,
    payload: &[u8],
) -> Vec<u8> {
    let stream = numeric_identifier(stream);
    let topic = numeric_identifier(topic);
    let mut partitioning = vec![2u8, 4];
    partitioning.extend_from_slice(&partition.to_le_bytes());
    let metadata_length = (stream.len() + topic.len() + partitioning.len() + 4) as u32;
    let mut message = Vec::new();
    message.extend_from_slice(&0u64.to_le_bytes()); // checksum
    message.extend_from_slice(&message_id.to_le_bytes());
    message.extend_from_slice(&0u64.to_le_bytes()); // offset
    message.extend_from_slice(&0u64.to_le_bytes()); // timestamp
    message.extend_from_slice(&1u64.to_le_bytes()); // origin timestamp
    message.extend_from_slice(&0u32.to_le_bytes()); // user headers length
    message.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    message.extend_from_slice(&0u64.to_le_bytes()); // reserved
    message.extend_from_slice(payload);
    let mut body = Vec::new();
    body.extend_from_slice(&metadata_length.to_le_bytes());
    body.extend_from_slice(&stream);
    body.extend_from_slice(&topic);
    body.extend_from_slice(&partitioning);
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes()); // index: relative offset
    body.extend_from_slice(&(message.len() as u32).to_le_bytes()); // index: end position
    body.extend_from_slice(&0u64.to_le_bytes()); // index: timestamp
    body.extend_from_slice(&message);
    body
}

/// Numeric Identifier: kind 1, length 4, u32.
pub fn numeric_identifier(value: u32) -> Vec<u8> {
    let mut bytes = vec![1, 4];
    bytes.extend_from_slice(&value.to_le_bytes());
    bytes
}

/// LoginUser payload as the SDK 0.10.0 sends it: Name username, u8-length password, Str32 version
/// "0.10.0", empty Str32 context (protocol.md 4.2).
pub fn login_payload(username: &str, password: &str) -> Vec<u8> {
    let mut bytes = name(username);
    bytes.push(u8::try_from(password.len()).expect("short password"));
    bytes.extend_from_slice(password.as_bytes());
    let version = b"0.10.0";
    bytes.extend_from_slice(&(version.len() as u32).to_le_bytes());
    bytes.extend_from_slice(version);
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes
}
