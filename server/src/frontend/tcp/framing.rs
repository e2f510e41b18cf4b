//! Bytes on a connection: request headers read under the idle and read deadlines, bodies read
//! into reusable buffers, response frames written with vectored writes.

use crate::frontend::{MAX_IOVECS, ResponseFrame, SMALL_BODY_BYTES, with_optional_timeout};
use crate::shard::Shard;
use bytes::BytesMut;
use compio::BufResult;
use compio::buf::IoBuf;
use compio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use rill_core::frame::REQUEST_HEADER_SIZE;
use rill_core::primitives::Transport;
use std::io;
use std::time::Duration;

/// Why no request header was read.
pub(super) enum HeaderWait {
    /// Nothing arrived within the idle limit.
    Idle,
    /// Part of a header arrived, the rest not within the read timeout.
    Partial,
    Io(io::Error),
}

/// How many bytes one receive asks for beyond what the current frame still needs: enough for
/// a small request's header and body together (ten 1 KB messages), little enough that what a
/// connection reads ahead of its admission check stays small.
const READ_AHEAD_BYTES: usize = 16 * 1024;

/// Bytes received on a connection and not yet consumed. A receive asks for up to
/// [`READ_AHEAD_BYTES`], so a small request's header and body usually arrive in one receive
/// (one io_uring operation, not two) and its body is split off this buffer without a copy.
/// Bytes of the next request, when a client pipelines, stay here for the next header read.
#[derive(Default)]
pub(super) struct Inbound {
    bytes: BytesMut,
}

impl Inbound {
    /// True when nothing received is left unconsumed: the socket alone holds the session's
    /// state, so it can change hands.
    pub(super) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Drops an allocation over [`SMALL_BODY_BYTES`] once nothing is left in it, so a connection
    /// going idle does not keep it.
    fn shrink(&mut self) {
        if self.bytes.is_empty() && self.bytes.capacity() > SMALL_BODY_BYTES {
            self.bytes = BytesMut::new();
        }
    }

    /// One receive of up to `room` more bytes; Ok(0) at end of stream.
    async fn receive<S: AsyncRead>(&mut self, stream: &mut S, room: usize) -> io::Result<usize> {
        let len = self.bytes.len();
        self.bytes.reserve(room);
        let buffer = std::mem::take(&mut self.bytes);
        let BufResult(result, slice) = stream.read(buffer.slice(len..len + room)).await;
        self.bytes = compio::buf::IntoInner::into_inner(slice);
        result
    }

    /// Receives until at least `len` bytes are here; UnexpectedEof if the stream ends first.
    async fn fill<S: AsyncRead>(&mut self, stream: &mut S, len: usize) -> io::Result<()> {
        while self.bytes.len() < len {
            let room = len - self.bytes.len() + READ_AHEAD_BYTES;
            if self.receive(stream, room).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(())
    }

    fn take_array<const N: usize>(&mut self) -> [u8; N] {
        let mut array = [0u8; N];
        array.copy_from_slice(&self.bytes.split_to(N));
        array
    }

    /// Reads a request header: the wait for its first bytes is bounded by `idle` (None: no
    /// bound), the rest by `rest` (and `idle`), so a peer cannot hold a session open by sending
    /// half a header. No receive at all when a previous one brought it.
    pub(super) async fn read_header<S: AsyncRead>(
        &mut self,
        stream: &mut S,
        idle: Option<Duration>,
        rest: Duration,
    ) -> Result<[u8; REQUEST_HEADER_SIZE], HeaderWait> {
        if self.bytes.is_empty() {
            let first = with_optional_timeout(
                idle,
                self.receive(stream, REQUEST_HEADER_SIZE + READ_AHEAD_BYTES),
            );
            match first.await.ok_or(HeaderWait::Idle)? {
                Ok(0) => return Err(HeaderWait::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => {}
                Err(error) => return Err(HeaderWait::Io(error)),
            }
        }
        if self.bytes.len() < REQUEST_HEADER_SIZE {
            // The rest of a started header never gets longer than the idle limit had left (a
            // session that has not logged in is still bound by its login deadline).
            let rest = idle.map_or(rest, |idle| idle.min(rest));
            match compio::time::timeout(rest, self.fill(stream, REQUEST_HEADER_SIZE)).await {
                Err(_) => return Err(HeaderWait::Partial),
                Ok(result) => result.map_err(HeaderWait::Io)?,
            }
        }
        Ok(self.take_array())
    }

    /// The next `N` bytes (the rest of a 0.9 header).
    pub(super) async fn read_array<const N: usize, S: AsyncRead>(
        &mut self,
        stream: &mut S,
    ) -> io::Result<[u8; N]> {
        self.fill(stream, N).await?;
        Ok(self.take_array())
    }

    /// The next `len` bytes, a request body: split off what was already received, the rest
    /// read straight into the same buffer (exactly what is missing, nothing ahead of it). A
    /// body over [`SMALL_BODY_BYTES`] gets an allocation of its own, freed with it: split off
    /// the connection's buffer, it would keep that whole allocation alive for the connection.
    pub(super) async fn read_body<S: AsyncRead>(
        &mut self,
        stream: &mut S,
        len: usize,
    ) -> io::Result<BytesMut> {
        let have = self.bytes.len();
        if have < len && len > SMALL_BODY_BYTES {
            let mut body = BytesMut::with_capacity(len);
            // All of it is this body's: it is shorter than the body.
            body.extend_from_slice(&self.bytes);
            self.bytes.clear();
            let BufResult(result, slice) = stream.read_exact(body.slice(have..len)).await;
            result?;
            return Ok(compio::buf::IntoInner::into_inner(slice));
        }
        if have < len {
            self.bytes.reserve(len - have);
            let buffer = std::mem::take(&mut self.bytes);
            let BufResult(result, slice) = stream.read_exact(buffer.slice(have..len)).await;
            self.bytes = compio::buf::IntoInner::into_inner(slice);
            result?;
        }
        let body = self.bytes.split_to(len);
        self.shrink();
        Ok(body)
    }
}

pub(in crate::frontend) async fn read_exact_array<const N: usize, S: AsyncRead>(
    stream: &mut S,
    buffer: [u8; N],
) -> io::Result<[u8; N]> {
    let BufResult(result, buffer) = stream.read_exact(buffer).await;
    result.map(|()| buffer)
}

/// Writes a whole response frame with one vectored write (header and payload together), or
/// several when it has more than MAX_IOVECS pieces (a large 0.9 poll reply).
/// TLS buffers what it encrypts, hence the flush (a no-op on a plain socket).
pub(super) async fn write_frame<S: AsyncWrite>(
    shard: &Shard,
    stream: &mut S,
    frame: ResponseFrame,
    transport: Transport,
) -> io::Result<()> {
    let bytes: usize = frame.chunks.iter().map(|chunk| chunk.len()).sum();
    let mut chunks = frame.chunks;
    if chunks.len() == 1 {
        let chunk = chunks.pop().expect("one chunk");
        stream.write_all(chunk).await.0?;
    } else {
        // A 0.9 poll reply has two pieces per message; a write carries at most MAX_IOVECS.
        while !chunks.is_empty() {
            let rest = chunks.split_off(chunks.len().min(MAX_IOVECS));
            stream.write_vectored_all(chunks).await.0?;
            chunks = rest;
        }
    }
    stream.flush().await?;
    shard
        .metrics
        .transport(transport)
        .sent_bytes
        .add(bytes as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use compio::buf::IoBufMut;
    use proptest::prelude::*;

    /// A stream that hands out its bytes in the given pieces, one piece (or what fits of it)
    /// per receive, as a socket may.
    struct Pieces {
        bytes: Vec<u8>,
        cuts: Vec<usize>,
        receives: usize,
    }

    impl AsyncRead for Pieces {
        async fn read<B: IoBufMut>(&mut self, mut buffer: B) -> BufResult<usize, B> {
            let piece = self.cuts.first().copied().unwrap_or(self.bytes.len());
            let room = buffer.as_uninit();
            let len = piece.min(room.len()).min(self.bytes.len());
            for (to, from) in room.iter_mut().zip(self.bytes.drain(..len)) {
                to.write(from);
            }
            // SAFETY: the first `len` bytes were just written.
            unsafe { buffer.set_len(len) };
            match self.cuts.first_mut() {
                Some(cut) if *cut > len => *cut -= len,
                Some(_) => drop(self.cuts.remove(0)),
                None => {}
            }
            self.receives += 1;
            BufResult(Ok(len), buffer)
        }
    }

    /// A request: an 8-byte header whose first four bytes are the body's length, then the body.
    fn frames(bodies: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for (n, body) in bodies.iter().enumerate() {
            bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&(n as u32).to_le_bytes());
            bytes.extend_from_slice(body);
        }
        bytes
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        compio::runtime::Runtime::new().unwrap().block_on(future)
    }

    proptest! {
        /// However the bytes arrive (pipelined requests, a header split anywhere, a body in
        /// many pieces), every header and body, small or large, comes out whole and in order,
        /// then end of stream.
        #[test]
        fn requests_come_out_whole_however_the_bytes_arrive(
            bodies in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..100_000), 1..6),
            cuts in proptest::collection::vec(1usize..30_000, 0..12),
        ) {
            let mut stream = Pieces { bytes: frames(&bodies), cuts, receives: 0 };
            let mut inbound = Inbound::default();
            let timeout = Duration::from_secs(5);
            run(async {
                for (n, body) in bodies.iter().enumerate() {
                    let header = inbound.read_header(&mut stream, None, timeout).await;
                    let header = header.unwrap_or_else(|_| panic!("header {n}"));
                    let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
                    assert_eq!(len, body.len());
                    assert_eq!(u32::from_le_bytes(header[4..].try_into().unwrap()), n as u32);
                    let got = inbound.read_body(&mut stream, len).await.unwrap();
                    assert_eq!(&got[..], &body[..], "body {n}");
                }
                assert!(inbound.is_empty());
                let end = inbound.read_header(&mut stream, None, timeout).await;
                assert!(matches!(end, Err(HeaderWait::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof));
            });
        }
    }

    #[test]
    fn a_small_request_costs_one_receive() {
        let body = vec![7u8; 10_240];
        let mut stream = Pieces {
            bytes: frames(std::slice::from_ref(&body)),
            cuts: vec![],
            receives: 0,
        };
        let mut inbound = Inbound::default();
        run(async {
            let header = inbound
                .read_header(&mut stream, None, Duration::from_secs(1))
                .await;
            assert!(header.is_ok());
            let got = inbound.read_body(&mut stream, body.len()).await.unwrap();
            assert_eq!(&got[..], &body[..]);
        });
        assert_eq!(stream.receives, 1, "header and body in one receive");
        assert!(inbound.is_empty());
    }

    #[test]
    fn a_large_body_leaves_the_connection_buffer_small() {
        let large = vec![3u8; 5 * SMALL_BODY_BYTES];
        let small = vec![4u8; 100];
        let mut stream = Pieces {
            bytes: frames(&[large.clone(), small.clone()]),
            cuts: vec![],
            receives: 0,
        };
        let mut inbound = Inbound::default();
        run(async {
            let timeout = Duration::from_secs(1);
            assert!(
                inbound
                    .read_header(&mut stream, None, timeout)
                    .await
                    .is_ok()
            );
            let got = inbound.read_body(&mut stream, large.len()).await.unwrap();
            assert_eq!(&got[..], &large[..]);
            drop(got);
            assert!(inbound.is_empty());
            assert!(
                inbound
                    .read_header(&mut stream, None, timeout)
                    .await
                    .is_ok()
            );
            // The receive for the next header would reclaim the large body's allocation had
            // the body been split off the connection's buffer.
            assert!(
                inbound.bytes.capacity() <= 2 * SMALL_BODY_BYTES,
                "the next receive took {} bytes",
                inbound.bytes.capacity()
            );
            let got = inbound.read_body(&mut stream, small.len()).await.unwrap();
            assert_eq!(&got[..], &small[..]);
        });
        assert!(
            inbound.bytes.capacity() <= 2 * SMALL_BODY_BYTES,
            "the connection's buffer grew to {} bytes",
            inbound.bytes.capacity()
        );
    }

    #[test]
    fn a_stream_ending_inside_a_body_is_unexpected_eof() {
        let mut bytes = frames(&[vec![1u8; 100]]);
        bytes.truncate(50);
        let mut stream = Pieces {
            bytes,
            cuts: vec![],
            receives: 0,
        };
        let mut inbound = Inbound::default();
        run(async {
            assert!(
                inbound
                    .read_header(&mut stream, None, Duration::from_secs(1))
                    .await
                    .is_ok()
            );
            let error = inbound.read_body(&mut stream, 100).await.unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
        });
    }
}
