//! [`WsStream`]: a WebSocket connection seen as the byte stream the binary protocol runs on, so
//! the TCP connection loop serves it unchanged. Reads return the payload bytes of the client's
//! binary messages back to back (message boundaries carry no meaning, as in upstream's server and
//! the official clients, which frame each request as one message); pings are answered, a close is
//! answered and reads as the end of the stream, and a rule broken by the client closes the
//! connection with the RFC's code. Writes gather one response; the flush after it sends it as one
//! binary message: one frame, or, past `write_buffer_size`, a binary frame and continuations.

use super::frame::{self, Decoder, Event, Limits, MAX_SERVER_HEADER_LEN, Opcode, Violation, close};
use compio::BufResult;
use compio::buf::{IntoInner, IoBuf, IoBufMut};
use compio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use std::io;
use std::time::Duration;

/// How long a close frame may take to leave when the connection ends.
const CLOSE_WRITE_LIMIT: Duration = Duration::from_secs(5);

/// The read and write buffer sizes (`[websocket]`).
#[derive(Debug, Clone, Copy)]
pub struct Buffers {
    /// Bytes read from the socket at a time (the read buffer, allocated at the first read).
    pub read: usize,
    /// The largest frame a response is sent in.
    pub write: usize,
}

pub struct WsStream<S> {
    inner: S,
    decoder: Decoder,
    /// Bytes read from the socket not yet decoded: `read_buffer[read_at..]`.
    read_buffer: Vec<u8>,
    read_at: usize,
    read_size: usize,
    /// The response being gathered, after [`MAX_SERVER_HEADER_LEN`] bytes kept for its header.
    write_buffer: Vec<u8>,
    frame_size: usize,
    /// A response's first frames went out without the final one.
    message_open: bool,
    /// The client closed, or we did: reads see the end of the stream.
    closed: bool,
    close_sent: bool,
}

impl<S: AsyncRead + AsyncWrite> WsStream<S> {
    /// `leftover`: bytes that arrived after the handshake's request head.
    pub fn new(inner: S, leftover: Vec<u8>, limits: Limits, buffers: Buffers) -> Self {
        WsStream {
            inner,
            decoder: Decoder::new(limits),
            read_buffer: leftover,
            read_at: 0,
            read_size: buffers.read.max(1024),
            write_buffer: Vec::new(),
            frame_size: buffers.write.max(1024),
            message_open: false,
            closed: false,
            close_sent: false,
        }
    }

    /// Sends a small frame at once (a pong, a close).
    async fn send_now(&mut self, frame: Vec<u8>) -> io::Result<()> {
        self.inner.write_all(frame).await.0?;
        self.inner.flush().await
    }

    /// Answers a violation with its close code; the connection is over.
    async fn refuse(&mut self, violation: Violation) -> io::Error {
        self.closed = true;
        if !self.close_sent {
            self.close_sent = true;
            let frame = frame::close_frame(violation.code, violation.reason);
            let _ = compio::time::timeout(CLOSE_WRITE_LIMIT, self.send_now(frame)).await;
        }
        io::Error::new(io::ErrorKind::InvalidData, violation.to_string())
    }

    /// Reads more bytes from the socket into the read buffer; Ok(false) at its end.
    async fn fill(&mut self) -> io::Result<bool> {
        let mut buffer = std::mem::take(&mut self.read_buffer);
        if self.read_at == buffer.len() {
            buffer.clear();
            self.read_at = 0;
        } else if self.read_at > 0 {
            buffer.drain(..self.read_at);
            self.read_at = 0;
        }
        if buffer.capacity() - buffer.len() < self.read_size / 2 {
            buffer.reserve(self.read_size);
        }
        let start = buffer.len();
        let BufResult(result, slice) = self.inner.read(buffer.slice(start..)).await;
        self.read_buffer = slice.into_inner();
        Ok(result? > 0)
    }

    /// Sends what the write buffer holds as one frame: the final one of the message when `fin`.
    async fn send_frame(&mut self, fin: bool) -> io::Result<()> {
        let mut buffer = std::mem::take(&mut self.write_buffer);
        if buffer.len() < MAX_SERVER_HEADER_LEN {
            buffer.resize(MAX_SERVER_HEADER_LEN, 0);
        }
        let payload = (buffer.len() - MAX_SERVER_HEADER_LEN) as u64;
        let opcode = if self.message_open {
            Opcode::Continuation
        } else {
            Opcode::Binary
        };
        let mut header = [0u8; MAX_SERVER_HEADER_LEN];
        let len = frame::encode_header(fin, opcode, payload, &mut header);
        let start = MAX_SERVER_HEADER_LEN - len;
        buffer[start..MAX_SERVER_HEADER_LEN].copy_from_slice(&header[..len]);
        let BufResult(result, slice) = self.inner.write_all(buffer.slice(start..)).await;
        let mut buffer = slice.into_inner();
        buffer.clear();
        self.write_buffer = buffer;
        self.message_open = !fin;
        result
    }
}

impl<S: AsyncRead + AsyncWrite> AsyncRead for WsStream<S> {
    async fn read<B: IoBufMut>(&mut self, mut buf: B) -> BufResult<usize, B> {
        let capacity = buf.buf_capacity();
        if capacity == 0 {
            return BufResult(Ok(0), buf);
        }
        loop {
            if self.closed {
                return BufResult(Ok(0), buf);
            }
            let (used, event) = match self.decoder.next(&self.read_buffer[self.read_at..]) {
                Ok(step) => step,
                Err(violation) => return BufResult(Err(self.refuse(violation).await), buf),
            };
            self.read_at += used;
            match event {
                Event::Data => {
                    let remaining = self.decoder.data_remaining();
                    let wanted = remaining.min(capacity as u64) as usize;
                    let buffered = self.read_buffer.len() - self.read_at;
                    if buffered > 0 {
                        let n = wanted.min(buffered);
                        let source = &self.read_buffer[self.read_at..self.read_at + n];
                        let target = &mut buf.as_uninit()[..n];
                        for (target, source) in target.iter_mut().zip(source) {
                            target.write(*source);
                        }
                        // SAFETY: the first n bytes were just written.
                        unsafe { buf.advance_to(n) };
                        self.decoder.unmask(&mut buf.as_mut_slice()[..n]);
                        self.read_at += n;
                        return BufResult(Ok(n), buf);
                    }
                    // Nothing buffered: the payload goes straight into the caller's buffer.
                    let BufResult(result, slice) = self.inner.read(buf.slice(0..wanted)).await;
                    buf = slice.into_inner();
                    return match result {
                        Ok(0) => BufResult(Err(io::ErrorKind::UnexpectedEof.into()), buf),
                        Ok(n) => {
                            self.decoder.unmask(&mut buf.as_mut_slice()[..n]);
                            BufResult(Ok(n), buf)
                        }
                        Err(error) => BufResult(Err(error), buf),
                    };
                }
                Event::NeedMore => match self.fill().await {
                    Ok(true) => {}
                    // The socket ended without a close frame.
                    Ok(false) => {
                        self.closed = true;
                        return BufResult(Ok(0), buf);
                    }
                    Err(error) => return BufResult(Err(error), buf),
                },
                Event::Ping(payload) => {
                    let pong = frame::server_frame(Opcode::Pong, &payload);
                    if let Err(error) = self.send_now(pong).await {
                        return BufResult(Err(error), buf);
                    }
                }
                Event::Pong => {}
                Event::Close(code) => {
                    // Answer with the same code (RFC 6455 5.5.1); the stream ends here.
                    self.closed = true;
                    if !self.close_sent {
                        self.close_sent = true;
                        let code = code.unwrap_or(close::NORMAL);
                        let _ = compio::time::timeout(
                            CLOSE_WRITE_LIMIT,
                            self.send_now(frame::close_frame(code, "")),
                        )
                        .await;
                    }
                    return BufResult(Ok(0), buf);
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite> AsyncWrite for WsStream<S> {
    async fn write<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        if self.close_sent {
            return BufResult(Err(io::ErrorKind::BrokenPipe.into()), buf);
        }
        if self.write_buffer.len() < MAX_SERVER_HEADER_LEN {
            self.write_buffer.resize(MAX_SERVER_HEADER_LEN, 0);
        }
        let mut room = MAX_SERVER_HEADER_LEN + self.frame_size - self.write_buffer.len();
        if room == 0 {
            if let Err(error) = self.send_frame(false).await {
                return BufResult(Err(error), buf);
            }
            self.write_buffer.resize(MAX_SERVER_HEADER_LEN, 0);
            room = self.frame_size;
        }
        let source = buf.as_init();
        let n = room.min(source.len());
        self.write_buffer.extend_from_slice(&source[..n]);
        BufResult(Ok(n), buf)
    }

    async fn flush(&mut self) -> io::Result<()> {
        if self.write_buffer.len() > MAX_SERVER_HEADER_LEN || self.message_open {
            self.send_frame(true).await?;
        }
        self.inner.flush().await
    }

    async fn shutdown(&mut self) -> io::Result<()> {
        if !self.close_sent {
            self.close_sent = true;
            let frame = frame::close_frame(close::NORMAL, "");
            let _ = compio::time::timeout(CLOSE_WRITE_LIMIT, self.send_now(frame)).await;
        }
        self.inner.shutdown().await
    }
}
