use super::*;
use proptest::prelude::*;

const STRICT: Limits = Limits {
    max_frame: None,
    max_message: None,
    accept_unmasked: false,
};

/// A client frame, masked with `mask` when given.
fn client_frame(fin: bool, opcode: Opcode, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut header = [0u8; MAX_SERVER_HEADER_LEN];
    let len = encode_header(fin, opcode, payload.len() as u64, &mut header);
    let mut frame = header[..len].to_vec();
    let mut body = payload.to_vec();
    if let Some(mask) = mask {
        frame[1] |= 0x80;
        frame.extend_from_slice(&mask);
        apply_mask(&mut body, mask, 0);
    }
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn headers_of_every_length_round_trip() {
    for len in [0u64, 1, 125, 126, 65_535, 65_536, 1 << 40] {
        let mut out = [0u8; MAX_SERVER_HEADER_LEN];
        let used = encode_header(true, Opcode::Binary, len, &mut out);
        let parsed = parse_header(&out[..used]).unwrap().unwrap();
        assert_eq!(parsed.payload_len, len);
        assert_eq!(parsed.header_len, used);
        assert!(parse_header(&out[..used - 1]).unwrap().is_none());
    }
}

#[test]
fn rules_of_the_protocol() {
    let mask = Some([1, 2, 3, 4]);
    let violation = |bytes: &[u8], limits: Limits| decode_all(limits, bytes, &[]).2;
    // Unmasked frames: refused unless allowed.
    let unmasked = client_frame(true, Opcode::Binary, b"abc", None);
    assert_eq!(
        violation(&unmasked, STRICT).unwrap().code,
        close::PROTOCOL_ERROR
    );
    let lenient = Limits {
        accept_unmasked: true,
        ..STRICT
    };
    assert_eq!(decode_all(lenient, &unmasked, &[]).0, b"abc");
    // Text frames, unknown opcodes, reserved bits, oversized or fragmented control frames.
    let text = client_frame(true, Opcode::Text, b"hi", mask);
    assert_eq!(
        violation(&text, STRICT).unwrap().code,
        close::UNSUPPORTED_DATA
    );
    assert!(violation(&[0x83, 0x80, 0, 0, 0, 0], STRICT).is_some());
    assert!(violation(&[0xC2, 0x80, 0, 0, 0, 0], STRICT).is_some());
    let mut big_ping = client_frame(true, Opcode::Ping, &[0; 126], mask);
    assert!(violation(&big_ping, STRICT).is_some());
    big_ping = client_frame(false, Opcode::Ping, b"", mask);
    assert!(violation(&big_ping, STRICT).is_some());
    // Continuation without a message, a new message inside one.
    let lone = client_frame(true, Opcode::Continuation, b"x", mask);
    assert!(violation(&lone, STRICT).is_some());
    let mut nested = client_frame(false, Opcode::Binary, b"x", mask);
    nested.extend(client_frame(true, Opcode::Binary, b"y", mask));
    assert!(violation(&nested, STRICT).is_some());
    // Limits: per frame, per message over its fragments.
    let limited = Limits {
        max_frame: Some(4),
        max_message: Some(6),
        ..STRICT
    };
    let frame = client_frame(true, Opcode::Binary, b"12345", mask);
    assert_eq!(violation(&frame, limited).unwrap().code, close::TOO_BIG);
    let mut message = client_frame(false, Opcode::Binary, b"1234", mask);
    message.extend(client_frame(true, Opcode::Continuation, b"567", mask));
    assert_eq!(violation(&message, limited).unwrap().code, close::TOO_BIG);
    // A 64-bit length with the top bit set.
    let mut huge = vec![0x82, 0xFF];
    huge.extend_from_slice(&u64::MAX.to_be_bytes());
    huge.extend_from_slice(&[0; 4]);
    assert!(violation(&huge, STRICT).is_some());
    // Ping, pong, close.
    let mut stream = client_frame(true, Opcode::Ping, b"p", mask);
    stream.extend(client_frame(true, Opcode::Pong, b"", mask));
    stream.extend(client_frame(
        true,
        Opcode::Close,
        &1000u16.to_be_bytes(),
        mask,
    ));
    stream.extend(client_frame(true, Opcode::Binary, b"after close", mask));
    let (data, events, violation) = decode_all(STRICT, &stream, &[1]);
    assert!(data.is_empty() && violation.is_none());
    assert_eq!(
        events,
        vec![
            Event::Ping(b"p".to_vec()),
            Event::Pong,
            Event::Close(Some(1000))
        ]
    );
}

fn message_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<usize>, [u8; 4], bool)> {
    (
        proptest::collection::vec(any::<u8>(), 0..600),
        proptest::collection::vec(0usize..200, 1..6),
        any::<[u8; 4]>(),
        any::<bool>(),
    )
}

proptest! {
    /// Messages cut into fragments, with pings between fragments, come out as the bytes
    /// that went in, however the stream is split into reads.
    #[test]
    fn fragmented_messages_decode_to_their_bytes(
        messages in proptest::collection::vec(message_strategy(), 1..5),
        pieces in proptest::collection::vec(0usize..40, 1..8),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        let mut pings = 0;
        for (payload, cuts, mask, ping) in &messages {
            expected.extend_from_slice(payload);
            let mut rest = &payload[..];
            let mut first = true;
            let mut cuts = cuts.iter().cycle();
            loop {
                let take = (*cuts.next().unwrap()).max(1).min(rest.len());
                let last = take == rest.len();
                let opcode = if first { Opcode::Binary } else { Opcode::Continuation };
                stream.extend(client_frame(last, opcode, &rest[..take], Some(*mask)));
                rest = &rest[take..];
                first = false;
                if *ping && !last {
                    stream.extend(client_frame(true, Opcode::Ping, b"hi", Some(*mask)));
                    pings += 1;
                }
                if last {
                    break;
                }
            }
        }
        let (data, events, violation) = decode_all(STRICT, &stream, &pieces);
        prop_assert!(violation.is_none(), "{violation:?}");
        prop_assert_eq!(data, expected);
        prop_assert_eq!(events.len(), pings);
    }

    /// Any input: no panic, and the same outcome whatever the split.
    #[test]
    fn arbitrary_input_is_split_independent(
        input in proptest::collection::vec(any::<u8>(), 0..300),
        pieces in proptest::collection::vec(0usize..20, 1..6),
        unmasked in any::<bool>(),
    ) {
        let limits = Limits { max_frame: Some(64), max_message: Some(100), accept_unmasked: unmasked };
        let whole = decode_all(limits, &input, &[]);
        let split = decode_all(limits, &input, &pieces);
        prop_assert_eq!(whole, split);
    }
}
