//! RFC 6455 framing, without I/O: the server's side of it. [`Decoder`] reads client frames
//! (header by header; the payload of a data frame is left to the caller, which copies or reads
//! it where it wants and unmasks it with [`Decoder::unmask`]), [`encode_header`] writes the
//! server's unmasked frame headers.
//!
//! Nothing here allocates more than a control frame's payload (at most 125 bytes): a data
//! frame's length is a number to count down, never a buffer size. Every rule broken by the peer
//! is a [`Violation`] carrying the close code to answer with.

/// The longest frame header: 2 bytes, an 8-byte length and a 4-byte mask key.
pub const MAX_HEADER_LEN: usize = 14;

/// The longest header of a server frame (no mask key).
pub const MAX_SERVER_HEADER_LEN: usize = 10;

/// Close codes (RFC 6455 7.4.1).
pub mod close {
    pub const NORMAL: u16 = 1000;
    pub const GOING_AWAY: u16 = 1001;
    pub const PROTOCOL_ERROR: u16 = 1002;
    pub const UNSUPPORTED_DATA: u16 = 1003;
    pub const TOO_BIG: u16 = 1009;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    pub fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub fin: bool,
    pub opcode: Opcode,
    pub mask: Option<[u8; 4]>,
    pub payload_len: u64,
    /// Bytes the header took.
    pub header_len: usize,
}

/// The peer broke a rule: close the connection with `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Violation {
    pub code: u16,
    pub reason: &'static str,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (close {})", self.reason, self.code)
    }
}

const fn violation(code: u16, reason: &'static str) -> Violation {
    Violation { code, reason }
}

/// Parses a frame header from the start of `bytes`: `Ok(None)` while it is incomplete. Checks
/// what the header alone decides: no reserved bits (no extension is negotiated), a known opcode,
/// control frames final and at most 125 bytes, a 64-bit length with its top bit clear.
pub fn parse_header(bytes: &[u8]) -> Result<Option<FrameHeader>, Violation> {
    let [first, second, ..] = *bytes else {
        return Ok(None);
    };
    if first & 0x70 != 0 {
        return Err(violation(close::PROTOCOL_ERROR, "reserved bits set"));
    }
    let fin = first & 0x80 != 0;
    let opcode = Opcode::from_bits(first & 0x0F)
        .ok_or(violation(close::PROTOCOL_ERROR, "unknown opcode"))?;
    let masked = second & 0x80 != 0;
    let (payload_len, mut at) = match second & 0x7F {
        126 => {
            let Some(len) = bytes.get(2..4) else {
                return Ok(None);
            };
            (u64::from(u16::from_be_bytes([len[0], len[1]])), 4)
        }
        127 => {
            let Some(len) = bytes.get(2..10) else {
                return Ok(None);
            };
            let len = u64::from_be_bytes(len.try_into().expect("8 bytes"));
            if len >> 63 != 0 {
                return Err(violation(
                    close::PROTOCOL_ERROR,
                    "frame length out of range",
                ));
            }
            (len, 10)
        }
        short => (u64::from(short), 2),
    };
    if opcode.is_control() && (!fin || payload_len > 125) {
        return Err(violation(
            close::PROTOCOL_ERROR,
            "fragmented or oversized control frame",
        ));
    }
    let mask = if masked {
        let Some(key) = bytes.get(at..at + 4) else {
            return Ok(None);
        };
        at += 4;
        Some(key.try_into().expect("4 bytes"))
    } else {
        None
    };
    Ok(Some(FrameHeader {
        fin,
        opcode,
        mask,
        payload_len,
        header_len: at,
    }))
}

/// Writes a server frame header (never masked) into `out`; returns its length.
pub fn encode_header(
    fin: bool,
    opcode: Opcode,
    payload_len: u64,
    out: &mut [u8; MAX_SERVER_HEADER_LEN],
) -> usize {
    out[0] = (if fin { 0x80 } else { 0 }) | opcode.bits();
    if payload_len < 126 {
        out[1] = payload_len as u8;
        2
    } else if let Ok(len) = u16::try_from(payload_len) {
        out[1] = 126;
        out[2..4].copy_from_slice(&len.to_be_bytes());
        4
    } else {
        out[1] = 127;
        out[2..10].copy_from_slice(&payload_len.to_be_bytes());
        10
    }
}

/// A whole small server frame (control frames, a close with its code).
pub fn server_frame(opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut header = [0u8; MAX_SERVER_HEADER_LEN];
    let len = encode_header(true, opcode, payload.len() as u64, &mut header);
    let mut frame = Vec::with_capacity(len + payload.len());
    frame.extend_from_slice(&header[..len]);
    frame.extend_from_slice(payload);
    frame
}

/// A close frame with `code` and a short reason.
pub fn close_frame(code: u16, reason: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(2 + reason.len().min(123));
    payload.extend_from_slice(&code.to_be_bytes());
    // Control payloads are at most 125 bytes; reasons here are short ASCII anyway.
    payload.extend_from_slice(&reason.as_bytes()[..reason.len().min(123)]);
    server_frame(Opcode::Close, &payload)
}

/// XORs `data` with `mask`, the first byte being at `phase` (the payload offset modulo 4).
pub fn apply_mask(data: &mut [u8], mask: [u8; 4], phase: usize) {
    let mut key = [0u8; 4];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = mask[(phase + i) % 4];
    }
    let mut chunks = data.chunks_exact_mut(4);
    let word = u32::from_ne_bytes(key);
    for chunk in &mut chunks {
        let value = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) ^ word;
        chunk.copy_from_slice(&value.to_ne_bytes());
    }
    for (byte, key) in chunks.into_remainder().iter_mut().zip(key) {
        *byte ^= key;
    }
}

/// What the decoder is given to enforce (`[websocket]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame payload; None: no limit.
    pub max_frame: Option<u64>,
    /// Largest message, over all its frames; None: no limit.
    pub max_message: Option<u64>,
    /// Accept client frames without a mask key (RFC 6455 requires one).
    pub accept_unmasked: bool,
}

/// What [`Decoder::next`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// More input is needed.
    NeedMore,
    /// Inside a binary message's frame: [`Decoder::data_remaining`] payload bytes follow.
    Data,
    Ping(Vec<u8>),
    Pong,
    /// The peer closes, with its status code if it gave one.
    Close(Option<u16>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Between frames.
    Header,
    /// In a data frame's payload.
    Data {
        remaining: u64,
        mask: Option<[u8; 4]>,
        /// Payload bytes already taken (the mask's phase).
        taken: u64,
        fin: bool,
    },
    /// In a control frame's payload (at most 125 bytes, gathered here).
    Control {
        opcode: Opcode,
        remaining: usize,
        mask: Option<[u8; 4]>,
        payload: Vec<u8>,
    },
    /// After a violation or a close: nothing more is read.
    Done,
}

/// The client-to-server side of a connection: frame headers, fragmentation, control frames
/// and the limits.
#[derive(Debug, Clone)]
pub struct Decoder {
    limits: Limits,
    state: State,
    /// A binary message is open (a non-final frame arrived), and its bytes so far.
    message: Option<u64>,
}

impl Decoder {
    pub fn new(limits: Limits) -> Decoder {
        Decoder {
            limits,
            state: State::Header,
            message: None,
        }
    }

    /// Payload bytes of the current data frame still to come (0 outside one).
    pub fn data_remaining(&self) -> u64 {
        match self.state {
            State::Data { remaining, .. } => remaining,
            _ => 0,
        }
    }

    /// Takes `data.len()` (at most [`Self::data_remaining`]) payload bytes of the current data
    /// frame, unmasking them in place.
    pub fn unmask(&mut self, data: &mut [u8]) {
        let State::Data {
            remaining,
            mask,
            taken,
            fin,
        } = &mut self.state
        else {
            debug_assert!(data.is_empty(), "payload bytes outside a data frame");
            return;
        };
        let len = data.len() as u64;
        assert!(len <= *remaining, "more payload bytes than the frame has");
        if let Some(mask) = mask {
            apply_mask(data, *mask, (*taken % 4) as usize);
        }
        *taken += len;
        *remaining -= len;
        if *remaining == 0 {
            if *fin {
                self.message = None;
            }
            self.state = State::Header;
        }
    }

    /// Reads what `input` holds up to the next event. Returns how many bytes of `input` it
    /// consumed (headers, control payloads; never data payload: see [`Event::Data`]).
    pub fn next(&mut self, input: &[u8]) -> Result<(usize, Event), Violation> {
        let result = self.step(input);
        if result.is_err() {
            self.state = State::Done;
        }
        result
    }

    fn step(&mut self, input: &[u8]) -> Result<(usize, Event), Violation> {
        let mut consumed = 0;
        loop {
            let rest = &input[consumed..];
            match &mut self.state {
                State::Done => return Ok((consumed, Event::Close(None))),
                State::Data { .. } => return Ok((consumed, Event::Data)),
                State::Control {
                    opcode,
                    remaining,
                    mask,
                    payload,
                } => {
                    let take = (*remaining).min(rest.len());
                    let start = payload.len();
                    payload.extend_from_slice(&rest[..take]);
                    if let Some(mask) = mask {
                        apply_mask(&mut payload[start..], *mask, start % 4);
                    }
                    consumed += take;
                    *remaining -= take;
                    if *remaining > 0 {
                        return Ok((consumed, Event::NeedMore));
                    }
                    let opcode = *opcode;
                    let payload = std::mem::take(payload);
                    self.state = State::Header;
                    let event = match opcode {
                        Opcode::Ping => Event::Ping(payload),
                        Opcode::Pong => Event::Pong,
                        _ => {
                            self.state = State::Done;
                            Event::Close(close_code(&payload)?)
                        }
                    };
                    return Ok((consumed, event));
                }
                State::Header => {
                    let Some(header) = parse_header(rest)? else {
                        return Ok((consumed, Event::NeedMore));
                    };
                    if header.mask.is_none() && !self.limits.accept_unmasked {
                        return Err(violation(close::PROTOCOL_ERROR, "unmasked client frame"));
                    }
                    consumed += header.header_len;
                    match header.opcode {
                        Opcode::Close | Opcode::Ping | Opcode::Pong => {
                            self.state = State::Control {
                                opcode: header.opcode,
                                remaining: header.payload_len as usize,
                                mask: header.mask,
                                payload: Vec::with_capacity(header.payload_len as usize),
                            };
                        }
                        Opcode::Text => {
                            return Err(violation(
                                close::UNSUPPORTED_DATA,
                                "text frames are not accepted: send the binary protocol",
                            ));
                        }
                        Opcode::Binary | Opcode::Continuation => {
                            let so_far = match (header.opcode, self.message) {
                                (Opcode::Binary, None) => 0,
                                (Opcode::Continuation, Some(so_far)) => so_far,
                                (Opcode::Binary, Some(_)) => {
                                    return Err(violation(
                                        close::PROTOCOL_ERROR,
                                        "a new message inside a fragmented one",
                                    ));
                                }
                                _ => {
                                    return Err(violation(
                                        close::PROTOCOL_ERROR,
                                        "a continuation frame outside a message",
                                    ));
                                }
                            };
                            if self
                                .limits
                                .max_frame
                                .is_some_and(|max| header.payload_len > max)
                            {
                                return Err(violation(close::TOO_BIG, "frame too large"));
                            }
                            let total = so_far.saturating_add(header.payload_len);
                            if self.limits.max_message.is_some_and(|max| total > max) {
                                return Err(violation(close::TOO_BIG, "message too large"));
                            }
                            self.message = (!header.fin).then_some(total);
                            if header.payload_len > 0 {
                                self.state = State::Data {
                                    remaining: header.payload_len,
                                    mask: header.mask,
                                    taken: 0,
                                    fin: header.fin,
                                };
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The status code of a close frame's payload: none, or two bytes and an optional UTF-8 reason.
fn close_code(payload: &[u8]) -> Result<Option<u16>, Violation> {
    match payload {
        [] => Ok(None),
        [_] => Err(violation(close::PROTOCOL_ERROR, "a one-byte close payload")),
        [high, low, reason @ ..] => {
            if std::str::from_utf8(reason).is_err() {
                return Err(violation(1007, "a close reason that is not UTF-8"));
            }
            Ok(Some(u16::from_be_bytes([*high, *low])))
        }
    }
}

/// Decodes a whole client byte stream fed in pieces of the given sizes (cycled; 0 is taken as
/// 1): the binary payload it carries and the control events. For tests and the fuzz target:
/// the result must not depend on how the input is split.
pub fn decode_all(
    limits: Limits,
    input: &[u8],
    pieces: &[usize],
) -> (Vec<u8>, Vec<Event>, Option<Violation>) {
    let mut decoder = Decoder::new(limits);
    let mut data = Vec::new();
    let mut events = Vec::new();
    let mut buffered: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut piece = 0;
    loop {
        let (used, event) = match decoder.next(&buffered) {
            Ok(step) => step,
            Err(violation) => return (data, events, Some(violation)),
        };
        buffered.drain(..used);
        match event {
            Event::Data => {
                if buffered.is_empty() {
                    if fed == input.len() {
                        return (data, events, None);
                    }
                } else {
                    let take = (decoder.data_remaining().min(buffered.len() as u64)) as usize;
                    let mut chunk: Vec<u8> = buffered.drain(..take).collect();
                    decoder.unmask(&mut chunk);
                    data.extend_from_slice(&chunk);
                    continue;
                }
            }
            Event::NeedMore => {
                if fed == input.len() {
                    return (data, events, None);
                }
            }
            Event::Close(code) => {
                events.push(Event::Close(code));
                return (data, events, None);
            }
            other => {
                events.push(other);
                continue;
            }
        }
        let size = pieces
            .get(piece % pieces.len().max(1))
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        piece += 1;
        let end = fed.saturating_add(size).min(input.len());
        buffered.extend_from_slice(&input[fed..end]);
        fed = end;
    }
}

#[cfg(test)]
mod tests;
