//! A blocking raw-frame client for the 0.9 protocol, written from protocol-0.9.md sections 2
//! and 3 (not from the server's codec), for golden-byte, duplicate and hostile-input tests.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub const HEADER: usize = 256;
pub const OP_REGISTER: u8 = 1;
pub const OP_NON_REPLICATED: u8 = 2;
pub const OP_LOGOUT: u8 = 3;
pub const OP_CREATE_STREAM: u8 = 128;

/// One request's header fields (everything else is zero, as the official clients send it).
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub client: u128,
    pub request: u64,
    pub operation: u8,
    pub session: u64,
    /// For NonReplicated: the command code carried at byte 196.
    pub code: u32,
    /// Stamp XXH3-64 of the body at byte 144 (the SDK does for Register, Logout, metadata).
    pub stamp: bool,
}

/// A reply as read: the 256 header bytes and the body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub header: [u8; HEADER],
    pub body: Vec<u8>,
}

impl Reply {
    pub fn command(&self) -> u8 {
        self.header[60]
    }
    pub fn operation(&self) -> u8 {
        self.header[208]
    }
    pub fn status(&self) -> u32 {
        u32_at(&self.header, 216)
    }
    pub fn request(&self) -> u64 {
        u64::from_le_bytes(self.header[200..208].try_into().expect("8 bytes"))
    }
    /// For an eviction (command 13): its reason byte.
    pub fn eviction_reason(&self) -> Option<u8> {
        (self.command() == 13).then_some(self.header[255])
    }
}

pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// A request frame: header then body.
pub fn frame(request: &Request, body: &[u8]) -> Vec<u8> {
    let mut header = [0u8; HEADER];
    header[48..52].copy_from_slice(&((HEADER + body.len()) as u32).to_le_bytes());
    header[60] = 5;
    header[128..144].copy_from_slice(&request.client.to_le_bytes());
    if request.stamp {
        let checksum = u128::from(xxhash_rust::xxh3::xxh3_64(body));
        header[144..160].copy_from_slice(&checksum.to_le_bytes());
    }
    header[168..176].copy_from_slice(&request.request.to_le_bytes());
    header[176] = request.operation;
    header[184..192].copy_from_slice(&request.session.to_le_bytes());
    if request.operation == OP_NON_REPLICATED {
        header[196..200].copy_from_slice(&request.code.to_le_bytes());
    }
    let mut out = header.to_vec();
    out.extend_from_slice(body);
    out
}

/// A LoginRegister body (section 3.1) with protocol version `version`.
pub fn login_body(version: u32, username: &str, password: &str) -> Vec<u8> {
    let mut body = version.to_le_bytes().to_vec();
    for field in ["rust-sdk", "0.11.0", username, password] {
        body.push(field.len() as u8);
        body.extend_from_slice(field.as_bytes());
    }
    body.extend_from_slice(&0u32.to_le_bytes());
    body
}

pub struct Client {
    stream: TcpStream,
    pub client: u128,
    pub session: u64,
    /// The next replicated request number.
    pub next: u64,
}

impl Client {
    pub fn connect(address: SocketAddr) -> Client {
        let stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        stream.set_nodelay(true).expect("nodelay");
        Client {
            stream,
            client: 0xa55e_b102_2ddc_42cd_8278_d30a_c1d1_8443,
            session: 0,
            next: 1,
        }
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    pub fn read(&mut self) -> io::Result<Reply> {
        let mut header = [0u8; HEADER];
        self.stream.read_exact(&mut header)?;
        let size = u32_at(&header, 48) as usize;
        let mut body = vec![0u8; size.saturating_sub(HEADER)];
        self.stream.read_exact(&mut body)?;
        Ok(Reply { header, body })
    }

    pub fn call(&mut self, request: &Request, body: &[u8]) -> Reply {
        self.write(&frame(request, body)).expect("write request");
        self.read().expect("read reply")
    }

    /// Logs in as root and keeps the session number.
    pub fn login_root(&mut self) -> Reply {
        let request = Request {
            client: self.client,
            request: 0,
            operation: OP_REGISTER,
            session: 0,
            code: 0,
            stamp: true,
        };
        let reply = self.call(&request, &login_body(0x2C00, "iggy", "iggy"));
        assert_eq!((reply.command(), reply.status()), (8, 0), "root login");
        self.session = u64::from_le_bytes(reply.body[8..16].try_into().expect("8 bytes"));
        reply
    }

    /// A replicated (metadata) request taking the next number.
    pub fn replicated(&mut self, operation: u8) -> Request {
        let request = Request {
            client: self.client,
            request: self.next,
            operation,
            session: self.session,
            code: 0,
            stamp: true,
        };
        self.next += 1;
        request
    }

    /// A NonReplicated request for `code`.
    pub fn read_only(&self, code: u32) -> Request {
        Request {
            client: self.client,
            request: self.next,
            operation: OP_NON_REPLICATED,
            session: self.session,
            code,
            stamp: false,
        }
    }
}
