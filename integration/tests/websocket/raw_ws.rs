//! A raw WebSocket client, to misbehave, and a raw HTTP exchange for bad handshakes.

use rill_integration::raw::frame;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub(crate) fn upgrade_request(path: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

pub(crate) struct RawWs {
    stream: TcpStream,
    buffered: Vec<u8>,
}

impl RawWs {
    pub(crate) fn connect(address: SocketAddr) -> RawWs {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(upgrade_request("/").as_bytes()).unwrap();
        let mut ws = RawWs {
            stream,
            buffered: Vec::new(),
        };
        let head = ws.read_until_blank_line();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            "{head}"
        );
        ws
    }

    fn read_until_blank_line(&mut self) -> String {
        loop {
            if let Some(at) = self.buffered.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = self.buffered.drain(..at + 4).collect();
                return String::from_utf8_lossy(&head).into_owned();
            }
            let mut chunk = [0u8; 4096];
            let n = self
                .stream
                .read(&mut chunk)
                .expect("read the handshake answer");
            assert!(n > 0, "closed during the handshake");
            self.buffered.extend_from_slice(&chunk[..n]);
        }
    }

    pub(crate) fn send(&mut self, fin: bool, opcode: u8, payload: &[u8], masked: bool) {
        let mut frame = vec![(if fin { 0x80 } else { 0 }) | opcode];
        let mask_bit = if masked { 0x80 } else { 0 };
        match payload.len() {
            len if len < 126 => frame.push(mask_bit | len as u8),
            len if len <= 65_535 => {
                frame.push(mask_bit | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(mask_bit | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        if masked {
            let mask = [0x12, 0x34, 0x56, 0x78];
            frame.extend_from_slice(&mask);
            frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        } else {
            frame.extend_from_slice(payload);
        }
        self.stream.write_all(&frame).expect("write a frame");
    }

    /// Sends a frame header declaring `len` payload bytes, and no payload.
    pub(crate) fn send_header_only(&mut self, opcode: u8, len: u64) {
        let mut frame = vec![0x80 | opcode, 0x80 | 127];
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(&[1, 2, 3, 4]);
        self.stream.write_all(&frame).expect("write a frame header");
    }

    fn fill(&mut self, at_least: usize) -> bool {
        while self.buffered.len() < at_least {
            let mut chunk = [0u8; 65_536];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.buffered.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// The next server frame: (fin, opcode, payload).
    pub(crate) fn frame(&mut self) -> Option<(bool, u8, Vec<u8>)> {
        if !self.fill(2) {
            return None;
        }
        let (first, second) = (self.buffered[0], self.buffered[1]);
        assert_eq!(second & 0x80, 0, "server frames are not masked");
        let (len, header) = match second & 0x7F {
            126 => {
                self.fill(4);
                (
                    u16::from_be_bytes([self.buffered[2], self.buffered[3]]) as usize,
                    4,
                )
            }
            127 => {
                self.fill(10);
                (
                    u64::from_be_bytes(self.buffered[2..10].try_into().unwrap()) as usize,
                    10,
                )
            }
            len => (len as usize, 2),
        };
        if !self.fill(header + len) {
            return None;
        }
        let frame: Vec<u8> = self.buffered.drain(..header + len).collect();
        Some((first & 0x80 != 0, first & 0x0F, frame[header..].to_vec()))
    }

    /// The next whole binary message (its frames joined), skipping nothing else.
    pub(crate) fn message(&mut self) -> Vec<u8> {
        let (mut fin, opcode, mut payload) = self.frame().expect("a message");
        assert_eq!(opcode, 2, "a binary message");
        while !fin {
            let (more_fin, opcode, more) = self.frame().expect("a continuation");
            assert_eq!(opcode, 0, "a continuation frame");
            payload.extend(more);
            fin = more_fin;
        }
        payload
    }

    /// The close code the server sent, after which it closes the connection.
    pub(crate) fn close_code(&mut self) -> u16 {
        loop {
            let (_, opcode, payload) = self.frame().expect("a close frame");
            if opcode == 8 {
                assert!(payload.len() >= 2, "a close code");
                return u16::from_be_bytes([payload[0], payload[1]]);
            }
        }
    }
}

/// A binary request (0.8 frame) and its response message, which must be exactly one message
/// holding the whole response: returns (status, payload).
pub(crate) fn request(ws: &mut RawWs, code: u32, payload: &[u8]) -> (u32, Vec<u8>) {
    ws.send(true, 2, &frame(code, payload), true);
    let message = ws.message();
    let status = u32::from_le_bytes(message[0..4].try_into().unwrap());
    let length = u32::from_le_bytes(message[4..8].try_into().unwrap()) as usize;
    assert_eq!(message.len(), 8 + length, "one response per message");
    (status, message[8..].to_vec())
}

pub(crate) fn http_answer(address: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}
