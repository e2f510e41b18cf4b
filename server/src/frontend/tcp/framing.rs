//! Bytes on a connection: request headers read under the idle and read deadlines, bodies read
//! into reusable buffers, response frames written with vectored writes.

use crate::frontend::{MAX_IOVECS, ResponseFrame, with_optional_timeout};
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

/// Reads a request header: the wait for its first bytes is bounded by `idle` (None: no bound),
/// the rest by `rest` (and `idle`), so a peer cannot hold a session open by sending half a
/// header. One read in the usual case, where the whole header arrives at once.
pub(super) async fn read_header<S: AsyncRead>(
    stream: &mut S,
    idle: Option<Duration>,
    rest: Duration,
) -> Result<[u8; REQUEST_HEADER_SIZE], HeaderWait> {
    let first = with_optional_timeout(idle, stream.read([0u8; REQUEST_HEADER_SIZE])).await;
    let BufResult(read, header) = first.ok_or(HeaderWait::Idle)?;
    // The rest of a started header never gets longer than the idle limit had left (a session
    // that has not logged in is still bound by its login deadline).
    let rest = idle.map_or(rest, |idle| idle.min(rest));
    let read = read.map_err(HeaderWait::Io)?;
    if read == 0 {
        return Err(HeaderWait::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    if read == REQUEST_HEADER_SIZE {
        return Ok(header);
    }
    let remainder = stream.read_exact(header.slice(read..));
    match compio::time::timeout(rest, remainder).await {
        Err(_) => Err(HeaderWait::Partial),
        Ok(BufResult(result, slice)) => {
            result.map_err(HeaderWait::Io)?;
            Ok(compio::buf::IntoInner::into_inner(slice))
        }
    }
}

pub(in crate::frontend) async fn read_exact_array<const N: usize, S: AsyncRead>(
    stream: &mut S,
    buffer: [u8; N],
) -> io::Result<[u8; N]> {
    let BufResult(result, buffer) = stream.read_exact(buffer).await;
    result.map(|()| buffer)
}

/// Reads exactly `len` bytes into `buffer`'s spare capacity (which must hold them).
pub(in crate::frontend) async fn read_payload<S: AsyncRead>(
    stream: &mut S,
    buffer: BytesMut,
    len: usize,
) -> io::Result<BytesMut> {
    debug_assert!(buffer.is_empty() && buffer.capacity() >= len);
    let BufResult(result, slice) = stream.read_exact(buffer.slice(0..len)).await;
    result?;
    let buffer = compio::buf::IntoInner::into_inner(slice);
    debug_assert_eq!(buffer.len(), len);
    Ok(buffer)
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
