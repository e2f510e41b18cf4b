//! The poll side: stored 0.8 messages rewritten into 0.9 batches (for our server) and 0.9
//! poll replies read back (for our clients).

use super::*;

/// Rewrites a 0.8 poll reply's messages (`stored`, back to back, as storage returns them) into
/// 0.9 batches after the 16-byte poll head. Consecutive messages appended together share one
/// timestamp and become one batch; a batch also ends where offsets stop being consecutive or
/// origin timestamps spread beyond what a u32 delta holds.
pub fn encode_polled(poll_head: &[u8; 16], stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    encode_polled_chunks(poll_head, &[stored])
}

/// [`encode_polled`] over the stored messages in several buffers (as a poll gathers them from
/// the cache and the segments), each holding whole messages. A message split across two
/// buffers is a decode error.
pub fn encode_polled_chunks(
    poll_head: &[u8; 16],
    chunks: &[&[u8]],
) -> Result<Vec<u8>, DecodeError> {
    let reply = polled_pieces(poll_head, chunks)?;
    let mut out = Vec::with_capacity(reply.len(chunks));
    for piece in &reply.pieces {
        out.put_slice(reply.bytes(piece, chunks));
    }
    Ok(out)
}

/// A 0.9 poll reply as the pieces of one vectored write: the new bytes (poll head, batch
/// headers, frame headers) in `heads`, and each message's payload and user headers left where
/// storage keeps them. A stored 0.8 message is its 64-byte header followed by the payload and
/// the user headers, which is exactly how a 0.9 frame ends, so only the headers are new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledPieces {
    pub heads: Vec<u8>,
    /// In write order.
    pub pieces: Vec<Piece>,
}

/// One piece of a [`PolledPieces`] reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A range of [`PolledPieces::heads`].
    Heads(std::ops::Range<usize>),
    /// A range of stored buffer `chunk`.
    Stored {
        chunk: usize,
        range: std::ops::Range<usize>,
    },
}

impl PolledPieces {
    /// The bytes of one piece.
    pub fn bytes<'a>(&'a self, piece: &Piece, chunks: &[&'a [u8]]) -> &'a [u8] {
        match piece {
            Piece::Heads(range) => &self.heads[range.clone()],
            Piece::Stored { chunk, range } => &chunks[*chunk][range.clone()],
        }
    }

    /// The reply's length.
    pub fn len(&self, chunks: &[&[u8]]) -> usize {
        self.pieces
            .iter()
            .map(|piece| self.bytes(piece, chunks).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}

/// One stored message: the buffer it is in and where its body (payload and user headers)
/// starts there.
struct StoredMessage<'a> {
    view: MessageView<'a>,
    chunk: usize,
    body_at: usize,
}

/// Plans a 0.9 poll reply over stored messages (see [`encode_polled`] for how messages are
/// grouped into batches), computing every frame and batch checksum from the stored bytes.
pub fn polled_pieces(poll_head: &[u8; 16], chunks: &[&[u8]]) -> Result<PolledPieces, DecodeError> {
    polled_pieces_known(poll_head, chunks, &[])
}

/// [`polled_pieces`] where some chunks are whole batches that arrived as 0.9 sends:
/// `frame_checksums[c]`, when present, holds chunk `c`'s frame checksums as its sender
/// computed them (`MessageBatch::frame_checksums`). They are used, instead of hashing the
/// messages again, for a reply batch that is exactly that chunk, the one case where the frames
/// are the same; any other grouping (a poll starting inside the chunk, or two chunks merged)
/// hashes as usual. Missing entries count as None.
pub fn polled_pieces_known(
    poll_head: &[u8; 16],
    chunks: &[&[u8]],
    frame_checksums: &[Option<&[u64]>],
) -> Result<PolledPieces, DecodeError> {
    let mut messages = Vec::new();
    let mut chunk_counts = Vec::with_capacity(chunks.len());
    for (chunk, bytes) in chunks.iter().enumerate() {
        let mut position = 0;
        let before = messages.len();
        while position < bytes.len() {
            let view = MessageView::parse(&bytes[position..])?;
            messages.push(StoredMessage {
                view,
                chunk,
                body_at: position + V08_HEADER_SIZE,
            });
            position += view.size();
        }
        chunk_counts.push(messages.len() - before);
    }
    // The sender's checksums of the chunk `batch` is exactly, if it has them.
    let known = |batch: &[StoredMessage]| -> Option<&[u64]> {
        let first = batch.first()?;
        let sums = frame_checksums.get(first.chunk).copied().flatten()?;
        let whole = first.body_at == V08_HEADER_SIZE
            && chunk_counts[first.chunk] == batch.len()
            && sums.len() == batch.len()
            && batch.iter().all(|message| message.chunk == first.chunk);
        whole.then_some(sums)
    };
    let mut batches = Vec::new();
    let mut rest = messages.as_slice();
    while let Some(first) = rest.first().map(|message| message.view) {
        let mut min_origin = first.origin_timestamp();
        let mut max_origin = min_origin;
        let mut len = 1;
        for (i, message) in rest.iter().enumerate().skip(1) {
            let view = message.view;
            let low = min_origin.min(view.origin_timestamp());
            let high = max_origin.max(view.origin_timestamp());
            if view.timestamp() != first.timestamp()
                || first.offset().checked_add(i as u64) != Some(view.offset())
                || high - low > u64::from(u32::MAX)
            {
                break;
            }
            (min_origin, max_origin) = (low, high);
            len += 1;
        }
        let (batch, after) = rest.split_at(len);
        batches.push((batch, min_origin));
        rest = after;
    }
    let mut heads = Vec::with_capacity(
        16 + batches.len() * BATCH_HEADER_SIZE + messages.len() * FRAME_HEADER_SIZE,
    );
    heads.put_slice(poll_head);
    let mut pieces = Vec::with_capacity(2 * messages.len() + 1);
    // Where the heads not yet covered by a piece start.
    let mut pending = 0;
    let partition_id = u64::from(u32_at(poll_head, 0));
    // A frame's checksum input is its new header and the stored body, which are not adjacent:
    // they are copied side by side here, since one-shot hashing of one slice is cheaper than
    // streaming two (twice as fast as xxhash-rust's streaming state, copy included).
    let mut frame_bytes = Vec::new();
    for (batch, min_origin) in batches {
        let first = batch[0].view;
        let sent = known(batch);
        let header_at = heads.len();
        heads.resize(header_at + BATCH_HEADER_SIZE, 0);
        let mut checksums = Vec::with_capacity(batch.len());
        let mut batch_length = BATCH_HEADER_SIZE;
        for (i, message) in batch.iter().enumerate() {
            let view = message.view;
            let body = &chunks[message.chunk]
                [message.body_at..message.body_at + view.size() - V08_HEADER_SIZE];
            let start = heads.len();
            heads.put_u64_le(0);
            heads.put_u128_le(view.id());
            heads.put_u32_le((view.offset() - first.offset()) as u32);
            heads.put_u32_le((view.origin_timestamp() - min_origin) as u32);
            heads.put_u32_le(view.user_headers().len() as u32);
            heads.put_u32_le(view.payload().len() as u32);
            heads.put_u64_le(0);
            let checksum = match sent {
                Some(sums) => sums[i],
                None => {
                    // The frame checksum covers its header after the checksum, then the body.
                    frame_bytes.clear();
                    frame_bytes.extend_from_slice(&heads[start + 8..]);
                    frame_bytes.extend_from_slice(body);
                    xxh3_64(&frame_bytes)
                }
            };
            heads[start..start + 8].copy_from_slice(&checksum.to_le_bytes());
            checksums.push(checksum);
            batch_length += FRAME_HEADER_SIZE + body.len();
            if !body.is_empty() {
                pieces.push(Piece::Heads(pending..heads.len()));
                pieces.push(Piece::Stored {
                    chunk: message.chunk,
                    range: message.body_at..message.body_at + body.len(),
                });
                pending = heads.len();
            }
        }
        let header = &mut heads[header_at..header_at + BATCH_HEADER_SIZE];
        header[0..8].copy_from_slice(&partition_id.to_le_bytes());
        header[8..16].copy_from_slice(&first.offset().to_le_bytes());
        header[16..24].copy_from_slice(&first.timestamp().to_le_bytes());
        header[24..32].copy_from_slice(&min_origin.to_le_bytes());
        header[BATCH_LENGTH..BATCH_LENGTH + 8]
            .copy_from_slice(&(batch_length as u64).to_le_bytes());
        header[MESSAGE_COUNT..MESSAGE_COUNT + 4]
            .copy_from_slice(&(checksums.len() as u32).to_le_bytes());
        let checksum = batch_checksum(header, checksums.into_iter());
        header[BATCH_CHECKSUM..BATCH_CHECKSUM + 8].copy_from_slice(&checksum.to_le_bytes());
    }
    if pending < heads.len() {
        pieces.push(Piece::Heads(pending..heads.len()));
    }
    Ok(PolledPieces { heads, pieces })
}

/// A polled message as a 0.9 client reads it back (tests and our tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledMessage {
    pub id: u128,
    pub offset: u64,
    pub timestamp: u64,
    pub origin_timestamp: u64,
    pub payload: Vec<u8>,
    pub user_headers: Vec<u8>,
}

/// One message of a 0.9 poll reply, borrowed from the reply: what [`PolledFrames`] yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolledFrame<'a> {
    pub id: u128,
    pub offset: u64,
    pub timestamp: u64,
    pub origin_timestamp: u64,
    pub payload: &'a [u8],
    pub user_headers: &'a [u8],
    /// Frame header, payload and user headers.
    pub frame_len: usize,
}

/// Walks the messages of a 0.9 poll reply's batches (everything after the 16-byte head) by
/// their lengths, as the official SDK does, without copying them. Each batch's checksums are
/// checked when [`PolledFrames::verified`] asks for it.
pub struct PolledFrames<'a> {
    batches: Reader<'a>,
    header: &'a [u8],
    frames: Reader<'a>,
    left_in_batch: u32,
    verify: bool,
    checksums: Vec<u64>,
}

impl<'a> PolledFrames<'a> {
    /// The messages of `batches`, lengths checked, checksums not.
    pub fn new(batches: &'a [u8]) -> Self {
        PolledFrames {
            batches: Reader::new(batches),
            header: &[],
            frames: Reader::new(&[]),
            left_in_batch: 0,
            verify: false,
            checksums: Vec::new(),
        }
    }

    /// The messages of `batches`, every message and batch checksum checked.
    pub fn verified(batches: &'a [u8]) -> Self {
        PolledFrames {
            verify: true,
            ..PolledFrames::new(batches)
        }
    }

    /// Ends the current batch (its frames must tile it) and opens the next one.
    fn next_batch(&mut self) -> Result<bool, DecodeError> {
        if !self.frames.is_empty() {
            return Err(DecodeError::new(ErrorCode::InvalidBatchChecksum, "batch"));
        }
        if self.verify && !self.header.is_empty() {
            let checksums = std::mem::take(&mut self.checksums);
            if batch_checksum(self.header, checksums.into_iter())
                != u64_at(self.header, BATCH_CHECKSUM)
            {
                return Err(DecodeError::new(ErrorCode::InvalidBatchChecksum, "batch"));
            }
        }
        self.header = &[];
        if self.batches.is_empty() {
            return Ok(false);
        }
        self.header = self.batches.take(BATCH_HEADER_SIZE, "batch header")?;
        let length = u64_at(self.header, BATCH_LENGTH) as usize;
        let blob_len = length
            .checked_sub(BATCH_HEADER_SIZE)
            .ok_or(DecodeError::invalid("batch length"))?;
        self.frames = Reader::new(self.batches.take(blob_len, "batch")?);
        self.left_in_batch = u32_at(self.header, MESSAGE_COUNT);
        Ok(true)
    }

    fn next_frame(&mut self) -> Result<Option<PolledFrame<'a>>, DecodeError> {
        while self.left_in_batch == 0 {
            if !self.next_batch()? {
                return Ok(None);
            }
        }
        self.left_in_batch -= 1;
        let (frame, whole) = parse_frame(&mut self.frames)?;
        if self.verify {
            if xxh3_64(&whole[8..]) != frame.checksum {
                return Err(DecodeError::new(
                    ErrorCode::InvalidMessageChecksum,
                    "message checksum",
                ));
            }
            self.checksums.push(frame.checksum);
        }
        Ok(Some(PolledFrame {
            id: frame.id,
            offset: u64_at(self.header, 8).wrapping_add(u64::from(u32_at(whole, 24))),
            timestamp: u64_at(self.header, 16),
            origin_timestamp: u64_at(self.header, 24)
                .wrapping_add(u64::from(frame.timestamp_delta)),
            payload: frame.payload,
            user_headers: frame.user_headers,
            frame_len: whole.len(),
        }))
    }
}

impl<'a> Iterator for PolledFrames<'a> {
    type Item = Result<PolledFrame<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_frame() {
            Ok(frame) => frame.map(Ok),
            Err(error) => {
                // Nothing after a malformed batch can be trusted.
                self.batches = Reader::new(&[]);
                self.frames = Reader::new(&[]);
                self.left_in_batch = 0;
                self.header = &[];
                Some(Err(error))
            }
        }
    }
}

/// Decodes a 0.9 poll reply: (partition id, current offset, messages), checking every checksum.
pub fn decode_polled(body: &[u8]) -> Result<(u32, u64, Vec<PolledMessage>), DecodeError> {
    let mut reader = Reader::new(body);
    let partition_id = reader.u32("partition id")?;
    let current_offset = reader.u64("current offset")?;
    let _count = reader.u32("count")?;
    let messages = PolledFrames::verified(reader.rest())
        .map(|frame| {
            frame.map(|frame| PolledMessage {
                id: frame.id,
                offset: frame.offset,
                timestamp: frame.timestamp,
                origin_timestamp: frame.origin_timestamp,
                payload: frame.payload.to_vec(),
                user_headers: frame.user_headers.to_vec(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((partition_id, current_offset, messages))
}
