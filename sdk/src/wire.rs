//! Turns a core [`Request`] into the two parts of an [`OutgoingFrame`], and response payloads
//! into core's typed responses. All encodings are core's; this module only decides where the
//! bytes go.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use rill_core::codec::{Decode, Encode};
use rill_core::frame::{REQUEST_HEADER_SIZE, RequestHeader, encode_request};
use rill_core::message::PolledMessages;
use rill_core::requests::*;
use rill_core::responses::*;
use rill_core::{Command, DecodeError, Request};

/// A request frame ready to write: `head` is the frame header plus the payload, except that for
/// SendMessages the messages section stays in the batch buffer and is written from there.
pub(crate) struct EncodedFrame<'a> {
    pub head: BytesMut,
    pub body: &'a [u8],
}

pub(crate) fn encode_frame(request: &Request) -> EncodedFrame<'_> {
    if let Request::SendMessages(send) = request {
        let payload_len = send.encoded_len();
        let body = send.batch.as_bytes();
        let prefix_len = payload_len - body.len();
        let mut head = BytesMut::with_capacity(REQUEST_HEADER_SIZE + prefix_len);
        head.put_slice(
            &RequestHeader {
                length: 4 + payload_len as u32,
                code: CommandCode::SendMessages.code(),
            }
            .to_bytes(),
        );
        // Core writes the messages section last, straight from the batch: capture everything
        // before it and let the batch bytes go out as the second slice of the vectored write.
        let mut prefix = PrefixWriter {
            out: head,
            remaining_prefix: prefix_len,
            written: 0,
            scratch: [0; 16],
        };
        send.encode(&mut prefix);
        assert_eq!(
            prefix.written, payload_len,
            "SendMessages encoded_len disagrees"
        );
        return EncodedFrame {
            head: prefix.out,
            body,
        };
    }
    let mut head = BytesMut::with_capacity(REQUEST_HEADER_SIZE + request.payload_len());
    encode_request(request, &mut head);
    EncodedFrame { head, body: &[] }
}

/// A `BufMut` that keeps the first `remaining_prefix` bytes written and counts (but drops) the
/// rest, which the caller already holds in its own buffer.
struct PrefixWriter {
    out: BytesMut,
    remaining_prefix: usize,
    written: usize,
    scratch: [u8; 16],
}

impl PrefixWriter {
    fn capture(&mut self, bytes: &[u8]) {
        let keep = bytes.len().min(self.remaining_prefix);
        self.out.put_slice(&bytes[..keep]);
        self.remaining_prefix -= keep;
        self.written += bytes.len();
    }
}

// SAFETY: `chunk_mut` hands out an initialised scratch array, and `advance_mut` only reads
// the `cnt` bytes of it that the caller reports as written (at most its length).
unsafe impl BufMut for PrefixWriter {
    fn remaining_mut(&self) -> usize {
        usize::MAX - self.written
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        assert!(cnt <= self.scratch.len());
        let scratch = self.scratch;
        self.capture(&scratch[..cnt]);
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        UninitSlice::new(&mut self.scratch)
    }

    fn put_slice(&mut self, src: &[u8]) {
        self.capture(src);
    }
}

/// Ties each command to the type its OK payload decodes into.
pub trait CommandResponse: Command {
    /// What a successful response holds.
    type Output;

    /// Decodes an OK payload.
    fn parse_response(payload: Bytes) -> Result<Self::Output, DecodeError>;
}

/// Commands answered with an empty OK frame.
macro_rules! empty_responses {
    ($($command:ident),* $(,)?) => {$(
        impl CommandResponse for $command {
            type Output = ();
            fn parse_response(_payload: Bytes) -> Result<(), DecodeError> {
                Ok(())
            }
        }
    )*};
}

/// Commands answered with one record.
macro_rules! record_responses {
    ($($command:ident => $output:ty),* $(,)?) => {$(
        impl CommandResponse for $command {
            type Output = $output;
            fn parse_response(payload: Bytes) -> Result<$output, DecodeError> {
                <$output>::from_bytes(&payload)
            }
        }
    )*};
}

/// Commands whose empty OK means "not found" (protocol.md 12.3).
macro_rules! optional_responses {
    ($($command:ident => $output:ty),* $(,)?) => {$(
        impl CommandResponse for $command {
            type Output = Option<$output>;
            fn parse_response(payload: Bytes) -> Result<Option<$output>, DecodeError> {
                if payload.is_empty() {
                    return Ok(None);
                }
                <$output>::from_bytes(&payload).map(Some)
            }
        }
    )*};
}

/// Commands answered with records concatenated to the end of the payload.
macro_rules! list_responses {
    ($($command:ident => $item:ty),* $(,)?) => {$(
        impl CommandResponse for $command {
            type Output = Vec<$item>;
            fn parse_response(payload: Bytes) -> Result<Vec<$item>, DecodeError> {
                Vec::<$item>::from_bytes(&payload)
            }
        }
    )*};
}

empty_responses!(
    Ping,
    DeleteUser,
    UpdateUser,
    UpdatePermissions,
    ChangePassword,
    LogoutUser,
    DeletePersonalAccessToken,
    SendMessages,
    FlushUnsavedBuffer,
    StoreConsumerOffset,
    DeleteConsumerOffset,
    DeleteStream,
    UpdateStream,
    PurgeStream,
    DeleteTopic,
    UpdateTopic,
    PurgeTopic,
    CreatePartitions,
    DeletePartitions,
    DeleteSegments,
    DeleteConsumerGroup,
    JoinConsumerGroup,
    LeaveConsumerGroup,
);

record_responses!(
    GetStats => Stats,
    GetClusterMetadata => ClusterMetadata,
    GetMe => ClientDetails,
    CreateUser => UserDetails,
    LoginUser => IdentityInfo,
    LoginWithPersonalAccessToken => IdentityInfo,
    CreatePersonalAccessToken => RawPersonalAccessToken,
    // CreateStream answers a stream record with topics_count 0, which the official SDK decodes
    // as StreamDetails (protocol.md 12.4); decoding it that way checks the count too.
    CreateStream => StreamDetails,
    CreateTopic => TopicDetails,
    CreateConsumerGroup => ConsumerGroupDetails,
);

optional_responses!(
    GetClient => ClientDetails,
    GetUser => UserDetails,
    GetConsumerOffset => ConsumerOffsetInfo,
    GetStream => StreamDetails,
    GetTopic => TopicDetails,
    GetConsumerGroup => ConsumerGroupDetails,
);

list_responses!(
    GetClients => ClientInfo,
    GetUsers => UserInfo,
    GetPersonalAccessTokens => PersonalAccessTokenInfo,
    GetStreams => StreamInfo,
    GetTopics => TopicInfo,
    GetConsumerGroups => ConsumerGroupInfo,
);

impl CommandResponse for GetSnapshot {
    /// The ZIP archive, as sent.
    type Output = Bytes;
    fn parse_response(payload: Bytes) -> Result<Bytes, DecodeError> {
        Ok(payload)
    }
}

impl CommandResponse for PollMessages {
    type Output = PolledMessages;
    fn parse_response(payload: Bytes) -> Result<PolledMessages, DecodeError> {
        // Keeps the messages in the response buffer (no copy per message).
        PolledMessages::decode_bytes(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_core::message::{MessageBatch, OutgoingMessage};
    use rill_core::primitives::{Identifier, Name, Partitioning};

    #[test]
    fn send_messages_frame_equals_core_encoding_with_payloads_left_in_place() {
        let messages: Vec<_> = [&b"hello"[..], b"", b"world!"]
            .iter()
            .enumerate()
            .map(|(i, payload)| OutgoingMessage {
                id: i as u128 + 1,
                origin_timestamp: 7,
                payload: Bytes::copy_from_slice(payload),
                user_headers: Bytes::from_static(&[2, 1, 0, 0, 0, b'k', 2, 1, 0, 0, 0, b'v']),
            })
            .collect();
        let request = Request::SendMessages(SendMessages {
            stream_id: Identifier::named("orders").unwrap(),
            topic_id: Identifier::numeric(3),
            partitioning: Partitioning::key("user-1").unwrap(),
            batch: MessageBatch::from_messages(&messages),
        });
        let mut expected = Vec::new();
        encode_request(&request, &mut expected);
        let frame = encode_frame(&request);
        let Request::SendMessages(send) = &request else {
            unreachable!()
        };
        assert_eq!(frame.body.as_ptr(), send.batch.as_bytes().as_ptr());
        assert_eq!([&frame.head[..], frame.body].concat(), expected);
    }

    #[test]
    fn other_frames_are_one_buffer() {
        let request = Request::CreateStream(CreateStream {
            name: Name::new("s").unwrap(),
        });
        let frame = encode_frame(&request);
        assert_eq!(&frame.head[..], &[6, 0, 0, 0, 0xca, 0, 0, 0, 1, 0x73]);
        assert!(frame.body.is_empty());
    }

    #[test]
    fn empty_payload_means_not_found_or_no_items() {
        assert_eq!(GetStream::parse_response(Bytes::new()).unwrap(), None);
        assert_eq!(GetStreams::parse_response(Bytes::new()).unwrap(), vec![]);
        assert!(GetStats::parse_response(Bytes::new()).is_err());
    }
}
