use super::*;
use proptest::prelude::*;
use rill_core::message::{MessageView, OutgoingMessage, stamp};

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

fn key() -> MasterKey {
    MasterKey::from_base64(KEY).unwrap()
}

fn other_key() -> MasterKey {
    MasterKey::from_base64("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=").unwrap()
}

fn batch(messages: &[OutgoingMessage]) -> MessageBatch {
    MessageBatch::from_messages(messages)
}

/// What storage does to a sealed batch: offsets, timestamp, checksums.
fn stored(sealed: MessageBatch, first_offset: u64) -> Bytes {
    let mut sealed = sealed;
    sealed.stamp(first_offset, 1_000, || {
        unreachable!("seal assigned every id")
    });
    sealed.into_bytes().freeze()
}

fn views(bytes: &[u8]) -> Vec<MessageView<'_>> {
    MessageIter::new(bytes).map(Result::unwrap).collect()
}

prop_compose! {
    fn message()(
        id in prop_oneof![Just(0u128), any::<u128>()],
        origin in any::<u64>(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        headers in proptest::collection::vec(any::<u8>(), 0..40),
    ) -> OutgoingMessage {
        OutgoingMessage {
            id,
            origin_timestamp: origin,
            payload: payload.into(),
            user_headers: headers.into(),
        }
    }
}

proptest! {
    #[test]
    fn what_is_sealed_opens_to_the_same_messages(
        messages in proptest::collection::vec(message(), 1..20),
        split in any::<prop::sample::Index>(),
    ) {
        let cipher = key().partition(1, 2, 3);
        let sealed = cipher.seal(&batch(&messages)).unwrap();
        prop_assert_eq!(sealed.size(), batch(&messages).size() + OVERHEAD * messages.len());
        let stored = stored(sealed, 40);
        // Storage may hand the messages over in several buffers, cut anywhere.
        let at = split.index(stored.len() + 1);
        let opened = cipher.open(&[stored.slice(..at), stored.slice(at..)]).unwrap();
        let opened = views(&opened);
        prop_assert_eq!(opened.len(), messages.len());
        for (i, (view, sent)) in opened.iter().zip(&messages).enumerate() {
            prop_assert_eq!(view.payload(), &sent.payload[..]);
            prop_assert_eq!(view.user_headers(), &sent.user_headers[..]);
            prop_assert_eq!(view.origin_timestamp(), sent.origin_timestamp);
            prop_assert_eq!(view.offset(), 40 + i as u64);
            prop_assert_ne!(view.id(), 0);
            if sent.id != 0 {
                prop_assert_eq!(view.id(), sent.id);
            }
            prop_assert!(view.checksum_is_valid());
        }
    }

    #[test]
    fn any_bytes_given_to_open_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let cipher = key().partition(0, 0, 0);
        let _ = cipher.open(&[Bytes::from(bytes)]);
    }

    #[test]
    fn a_flipped_bit_in_what_the_tag_covers_is_refused(
        payload in proptest::collection::vec(any::<u8>(), 1..100),
        pick in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let cipher = key().partition(1, 1, 1);
        let message = OutgoingMessage {
            id: 7,
            origin_timestamp: 9,
            payload: payload.into(),
            user_headers: Bytes::from_static(b"\x01\x00\x00\x00k\x01\x01\x00\x00\x00v"),
        };
        let mut bytes = BytesMut::from(&stored(cipher.seal(&batch(&[message])).unwrap(), 0)[..]);
        // Covered: id, origin timestamp, user-header length, nonce, ciphertext, tag.
        let covered: Vec<usize> = (ID..ID + 16)
            .chain(ORIGIN_TIMESTAMP..ORIGIN_TIMESTAMP + 12)
            .chain(HEADER_SIZE..bytes.len())
            .collect();
        let at = covered[pick.index(covered.len())];
        bytes[at] ^= 1 << bit;
        prop_assert!(cipher.open(&[bytes.freeze()]).is_err());
    }
}

#[test]
fn the_stored_bytes_do_not_hold_the_plaintext() {
    let cipher = key().partition(1, 1, 1);
    let secret = b"the quarterly figures are excellent";
    let message = OutgoingMessage {
        user_headers: Bytes::from_static(b"\x06\x00\x00\x00header\x01\x05\x00\x00\x00value"),
        ..OutgoingMessage::new(&secret[..])
    };
    let stored = stored(cipher.seal(&batch(&[message])).unwrap(), 0);
    let contains = |needle: &[u8]| stored.windows(needle.len()).any(|window| window == needle);
    assert!(!contains(secret));
    assert!(!contains(b"header"));
    assert!(!contains(b"value"));
}

#[test]
fn another_partition_or_key_cannot_open_a_message() {
    let stored = stored(
        key()
            .partition(1, 1, 1)
            .seal(&batch(&[OutgoingMessage::new("m")]))
            .unwrap(),
        0,
    );
    assert!(
        key()
            .partition(1, 1, 2)
            .open(std::slice::from_ref(&stored))
            .is_err()
    );
    assert!(other_key().partition(1, 1, 1).open(&[stored]).is_err());
}

#[test]
fn nonces_do_not_repeat_within_a_partition_and_start_apart() {
    let cipher = key().partition(1, 1, 1);
    let sealed = cipher
        .seal(&batch(&vec![OutgoingMessage::new("x"); 100]))
        .unwrap();
    let nonces: std::collections::HashSet<Vec<u8>> = sealed
        .iter()
        .map(|message| message.payload()[..NONCE_LEN].to_vec())
        .collect();
    assert_eq!(nonces.len(), 100);
    let again = key().partition(1, 1, 1).take_nonce();
    assert!(!nonces.contains(again.as_slice()));
    // The counter wraps within 96 bits.
    cipher.next_nonce.set(NONCE_MASK);
    assert_eq!(cipher.take_nonce(), [0xff; NONCE_LEN]);
    assert_eq!(cipher.take_nonce(), [0; NONCE_LEN]);
}

#[test]
fn a_payload_that_cannot_grow_is_refused() {
    let cipher = key().partition(1, 1, 1);
    let big = OutgoingMessage::new(vec![0u8; MAX_PAYLOAD_BYTES - OVERHEAD + 1]);
    assert_eq!(cipher.seal(&batch(&[big])), Err(SealError::PayloadTooBig));
    let fits = OutgoingMessage::new(vec![0u8; MAX_PAYLOAD_BYTES - OVERHEAD]);
    assert!(cipher.seal(&batch(&[fits])).is_ok());
}

#[test]
fn a_stamped_message_keeps_the_id_seal_gave_it() {
    let cipher = key().partition(1, 1, 1);
    let sealed = cipher.seal(&batch(&[OutgoingMessage::new("m")])).unwrap();
    let id = sealed.iter().next().unwrap().id();
    assert_ne!(id, 0);
    let mut bytes = sealed.into_bytes();
    stamp(&mut bytes, 5, 6, || 1);
    assert_eq!(MessageView::parse(&bytes).unwrap().id(), id);
}

#[test]
fn records_open_only_where_they_were_sealed() {
    let cipher = key().metadata_log();
    let sealed = cipher.seal(b"log 3", b"create user alice");
    assert!(!sealed.windows(5).any(|window| window == b"alice"));
    assert_eq!(
        cipher.open(b"log 3", &sealed).unwrap(),
        b"create user alice"
    );
    assert!(cipher.open(b"log 4", &sealed).is_none());
    assert!(cipher.open(b"log 3", &sealed[..10]).is_none());
}

#[test]
fn key_errors_name_the_problem_but_never_the_key() {
    let short = "c2hvcnQga2V5";
    let error = MasterKey::from_base64(short).unwrap_err();
    assert!(error.contains("32 bytes, got 9"), "{error}");
    assert!(!error.contains(short));
    let error = MasterKey::from_base64("not base64 at all!").unwrap_err();
    assert!(
        error.contains("not valid base64") && !error.contains("at all"),
        "{error}"
    );
    assert_eq!(format!("{:?}", key()), "MasterKey(redacted)");
}

#[test]
fn the_data_directory_is_checked_against_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // No encryption, no marker: nothing to say.
    check_data_dir(&state, None, true).unwrap();
    // Turning encryption on over plaintext data is refused, and nothing is written.
    let error = check_data_dir(&state, Some(&key()), true).unwrap_err();
    assert!(error.contains("written without encryption"), "{error}");
    assert!(!state.join(CHECK_FILE).exists());
    // A new data directory records the key's check value.
    check_data_dir(&state, Some(&key()), false).unwrap();
    let marker = std::fs::read(state.join(CHECK_FILE)).unwrap();
    assert!(
        !marker
            .windows(8)
            .any(|window| KEY.as_bytes().windows(8).any(|k| k == window))
    );
    check_data_dir(&state, Some(&key()), true).unwrap();
    // A wrong key, or none, is refused.
    let error = check_data_dir(&state, Some(&other_key()), true).unwrap_err();
    assert!(error.contains("not the key"), "{error}");
    let error = check_data_dir(&state, None, true).unwrap_err();
    assert!(error.contains("written with encryption"), "{error}");
    // A damaged marker is named.
    std::fs::write(state.join(CHECK_FILE), b"junk").unwrap();
    let error = check_data_dir(&state, Some(&key()), true).unwrap_err();
    assert!(error.contains("not a key-check file"), "{error}");
}
