//! Fuzzes every response decoder a client runs: the first byte selects the decoder (modulo the
//! number of decoders), the rest is the response payload. Must never panic; an accepted value
//! must re-encode to `encoded_len()` bytes that decode to the same bytes again.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rill_core::ErrorCode;
use rill_core::codec::{Decode, Encode};
use rill_core::message::PolledMessages;
use rill_core::primitives::user_headers;
use rill_core::responses::*;

fn check<T: Decode + Encode>(payload: &[u8]) {
    match T::from_bytes(payload) {
        Ok(value) => {
            let encoded = value.to_bytes();
            assert_eq!(encoded.len(), value.encoded_len());
            let again = T::from_bytes(&encoded).expect("a re-encoded response decodes");
            assert_eq!(again.to_bytes(), encoded);
        }
        Err(error) => assert_eq!(ErrorCode::from_code(error.code.code()), Some(error.code)),
    }
}

fn polled(payload: &[u8]) {
    check::<PolledMessages>(payload);
    if let Ok(polled) = PolledMessages::decode_bytes(Bytes::copy_from_slice(payload)) {
        assert_eq!(polled.count as usize, polled.messages().count());
        for message in polled.messages() {
            let _ = (
                message.header(),
                message.checksum_is_valid(),
                message.user_headers(),
            );
        }
    }
}

fn headers(payload: &[u8]) {
    if let Ok(pairs) = user_headers::parse(payload) {
        let mut encoded = Vec::new();
        user_headers::encode(&pairs, &mut encoded);
        assert_eq!(encoded, payload);
    }
}

const DECODERS: &[fn(&[u8])] = &[
    check::<StreamInfo>,
    check::<StreamDetails>,
    check::<Vec<StreamInfo>>,
    check::<TopicInfo>,
    check::<TopicDetails>,
    check::<Vec<TopicInfo>>,
    check::<PartitionInfo>,
    check::<ConsumerGroupInfo>,
    check::<ConsumerGroupMember>,
    check::<ConsumerGroupDetails>,
    check::<Vec<ConsumerGroupInfo>>,
    check::<ConsumerOffsetInfo>,
    check::<Stats>,
    check::<CacheMetric>,
    check::<ClientInfo>,
    check::<Vec<ClientInfo>>,
    check::<ClientGroup>,
    check::<ClientDetails>,
    check::<ClusterNode>,
    check::<ClusterMetadata>,
    check::<UserInfo>,
    check::<Vec<UserInfo>>,
    check::<UserDetails>,
    check::<IdentityInfo>,
    check::<RawPersonalAccessToken>,
    check::<PersonalAccessTokenInfo>,
    check::<Vec<PersonalAccessTokenInfo>>,
    polled,
    headers,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    DECODERS[usize::from(selector) % DECODERS.len()](payload);
});
