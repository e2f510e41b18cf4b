//! 0.9 request bodies (protocol-0.9.md sections 3-6), decoded into the 0.8 requests the server's
//! handlers take wherever the command exists in both, plus the few that only 0.9 has.

use super::batch;
use super::options::{self, TopicOptions};
use crate::codec::{Decode, Reader};
use crate::error::{DecodeError, ErrorCode};
use crate::primitives::{CompressionAlgorithm, Identifier, Name};
use crate::requests::{
    CreateStream, CreateTopic, CreateUser, DeleteConsumerOffset, GetConsumerGroup, LoginUser,
    LoginWithPersonalAccessToken, Request, StoreConsumerOffset, UpdateStream, UpdateUser,
};
use bytes::BytesMut;

/// Most partitions one CreateTopic may ask for.
const MAX_PARTITIONS: u32 = 1000;

/// A decoded 0.9 request.
#[derive(Debug, Clone, PartialEq)]
pub enum V09Request {
    /// A command whose meaning is the 0.8 one.
    Request(Request),
    /// UpdateTopic: absent options leave the topic's settings as they are, which only the
    /// server knows.
    UpdateTopic {
        stream_id: Identifier,
        topic_id: Identifier,
        name: Name,
        options: TopicOptions,
    },
    /// CreateTopic with an explicit `segment_size` option, which 0.8's CreateTopic cannot carry
    /// (without one it decodes to [`V09Request::Request`]).
    CreateTopic {
        request: CreateTopic,
        segment_size: u64,
    },
    /// DescribeOptions (13) for a scope.
    DescribeOptions(u8),
    /// SyncConsumerGroup (606): the caller's partitions in the group.
    SyncConsumerGroup(GetConsumerGroup),
}

/// A LoginRegister (40) or LoginRegisterWithPat (45) body.
#[derive(Debug, Clone, PartialEq)]
pub struct Login {
    pub protocol_version: u32,
    pub sdk_name: Name,
    pub sdk_version: Name,
    pub credentials: Credentials,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Credentials {
    Password(LoginUser),
    Token(LoginWithPersonalAccessToken),
}

/// Why a login body is refused, as the eviction that answers it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefusal {
    /// No decodable version prefix (eviction 15).
    Malformed,
    /// Credentials that cannot be valid, e.g. out-of-range lengths (eviction 9).
    InvalidCredentials,
}

/// Decodes a Register body. Upstream tells a password login from a token login by trying the
/// first shape, then the second; so do we.
pub fn decode_login(body: &[u8]) -> Result<Login, LoginRefusal> {
    let mut reader = Reader::new(body);
    let prefix = (|| {
        Ok::<_, DecodeError>((
            reader.u32("protocol version")?,
            Name::decode(&mut reader)?,
            Name::decode(&mut reader)?,
        ))
    })();
    let (protocol_version, sdk_name, sdk_version) = prefix.map_err(|_| LoginRefusal::Malformed)?;
    let rest = reader.rest();
    let password = (|| {
        let mut reader = Reader::new(rest);
        let login = LoginUser {
            username: Name::decode(&mut reader)?,
            password: Decode::decode(&mut reader)?,
            version: Some(sdk_version.as_str().to_owned()),
            context: Some(reader.str32("client context")?).filter(|c| !c.is_empty()),
        };
        reader
            .is_empty()
            .then_some(login)
            .ok_or(DecodeError::invalid("login"))
    })();
    let credentials = match password {
        Ok(login) => Credentials::Password(login),
        Err(_) => {
            let mut reader = Reader::new(rest);
            let token = (|| {
                let token = LoginWithPersonalAccessToken::decode(&mut reader)?;
                reader.str32("client context")?;
                Ok::<_, DecodeError>(token)
            })();
            match token {
                Ok(token) if reader.is_empty() => Credentials::Token(token),
                _ => return Err(LoginRefusal::InvalidCredentials),
            }
        }
    };
    Ok(Login {
        protocol_version,
        sdk_name,
        sdk_version,
        credentials,
    })
}

/// Decodes the body of a request for `code` (the 0.8 command code its operation names).
pub fn decode(code: u32, body: BytesMut) -> Result<V09Request, DecodeError> {
    let mut reader = Reader::new(&body);
    let request = match code {
        13 => {
            let scope = reader.u8("options scope")?;
            end(&reader)?;
            return Ok(V09Request::DescribeOptions(scope));
        }
        606 => {
            let group = GetConsumerGroup::decode(&mut reader)?;
            end(&reader)?;
            return Ok(V09Request::SyncConsumerGroup(group));
        }
        101 => Request::SendMessages(batch::decode_send(&body)?),
        202 => {
            let name = Name::decode(&mut reader)?;
            options::expect_none(&options::decode(reader.rest())?)?;
            Request::CreateStream(CreateStream { name })
        }
        204 => {
            let stream_id = Identifier::decode(&mut reader)?;
            let name = Name::decode(&mut reader)?;
            options::expect_none(&options::decode(reader.rest())?)?;
            Request::UpdateStream(UpdateStream { stream_id, name })
        }
        302 => {
            let stream_id = Identifier::decode(&mut reader)?;
            let partitions_count = reader.u32("partitions count")?;
            if partitions_count > MAX_PARTITIONS {
                return Err(DecodeError::new(ErrorCode::TooManyPartitions, "partitions"));
            }
            let name = Name::decode(&mut reader)?;
            let options =
                options::topic_options(&options::decode(reader.rest())?, false, partitions_count)?;
            let request = CreateTopic {
                stream_id,
                partitions_count,
                compression_algorithm: options.compression.unwrap_or(CompressionAlgorithm::None),
                // 0 asks for the server's default, as in 0.8.
                message_expiry: options.message_expiry.unwrap_or(0),
                max_topic_size: options.max_topic_size.unwrap_or(0),
                replication_factor: 1,
                name,
            };
            match options.segment_size {
                Some(segment_size) => {
                    return Ok(V09Request::CreateTopic {
                        request,
                        segment_size,
                    });
                }
                None => Request::CreateTopic(request),
            }
        }
        304 => {
            let stream_id = Identifier::decode(&mut reader)?;
            let topic_id = Identifier::decode(&mut reader)?;
            let name = Name::decode(&mut reader)?;
            let options = options::topic_options(&options::decode(reader.rest())?, true, 0)?;
            return Ok(V09Request::UpdateTopic {
                stream_id,
                topic_id,
                name,
                options,
            });
        }
        33 => {
            let user = CreateUser::decode(&mut reader)?;
            options::expect_none(&options::decode(reader.rest())?)?;
            Request::CreateUser(user)
        }
        35 => {
            let user = UpdateUser::decode(&mut reader)?;
            options::expect_none(&options::decode(reader.rest())?)?;
            Request::UpdateUser(user)
        }
        121 => {
            let store = StoreConsumerOffset::decode(&mut reader)?;
            ack(&mut reader)?;
            Request::StoreConsumerOffset(store)
        }
        122 => {
            let delete = DeleteConsumerOffset::decode(&mut reader)?;
            ack(&mut reader)?;
            Request::DeleteConsumerOffset(delete)
        }
        // Cluster routing, which a single node never receives (protocol-0.9.md 8); legacy
        // logins are refused before decoding.
        14 | 38 | 44 | 103 | 104 | 123 => return Err(DecodeError::invalid("command code")),
        _ => Request::decode(code, body)?,
    };
    Ok(V09Request::Request(request))
}

/// The `ack` byte that ends an offset write: 0 no ack, 1 quorum. A single node acknowledges
/// after the write either way.
fn ack(reader: &mut Reader<'_>) -> Result<(), DecodeError> {
    match reader.u8("ack")? {
        0 | 1 => end(reader),
        _ => Err(DecodeError::invalid("ack")),
    }
}

fn end(reader: &Reader<'_>) -> Result<(), DecodeError> {
    if reader.is_empty() {
        Ok(())
    } else {
        Err(DecodeError::invalid("bytes after the request"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The captured LoginRegister body of protocol-0.9.md 11.1.
    #[test]
    fn decodes_the_captured_login() {
        let body = b"\x00\x2c\x00\x00\x08rust-sdk\x060.11.0\x04iggy\x04iggy\x00\x00\x00\x00";
        let login = decode_login(body).unwrap();
        assert_eq!(login.protocol_version, 0x2C00);
        assert_eq!(login.sdk_name.as_str(), "rust-sdk");
        let Credentials::Password(user) = login.credentials else {
            panic!("a password login")
        };
        assert_eq!(user.username.as_str(), "iggy");
        assert_eq!(user.password.0, "iggy");
    }

    #[test]
    fn tells_a_token_login_from_a_password_login() {
        let body = b"\x00\x2c\x00\x00\x08rust-sdk\x060.11.0\x05token\x00\x00\x00\x00";
        let login = decode_login(body).unwrap();
        assert!(matches!(login.credentials, Credentials::Token(t) if t.token.as_str() == "token"));
        assert_eq!(decode_login(b"\x00\x2c"), Err(LoginRefusal::Malformed));
        assert_eq!(
            decode_login(b"\x00\x2c\x00\x00\x01a\x01b\x05token"),
            Err(LoginRefusal::InvalidCredentials)
        );
    }

    #[test]
    fn decodes_changed_layouts_into_0_8_requests() {
        let create_stream = decode(202, BytesMut::from(&b"\x01s"[..])).unwrap();
        assert!(matches!(
            create_stream,
            V09Request::Request(Request::CreateStream(CreateStream { ref name })) if name.as_str() == "s"
        ));
        // 11.4's CreateTopic with the SDK's default options.
        let mut topic = b"\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x01t".to_vec();
        topic.extend_from_slice(b"\x02\x0a\x00\x00\x00durability\x02\x0a\x00\x00\x00replicated");
        let V09Request::Request(Request::CreateTopic(topic)) =
            decode(302, BytesMut::from(&topic[..])).unwrap()
        else {
            panic!("a CreateTopic")
        };
        assert_eq!((topic.partitions_count, topic.message_expiry), (1, 0));
        // A segment size of the topic's own cannot ride in 0.8's CreateTopic; 0 means none.
        let sized = |value: &[u8]| {
            let mut topic = b"\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x01t".to_vec();
            topic.extend_from_slice(b"\x02\x0c\x00\x00\x00segment_size\x02");
            topic.extend_from_slice(&(value.len() as u32).to_le_bytes());
            topic.extend_from_slice(value);
            decode(302, BytesMut::from(&topic[..]))
        };
        let Ok(V09Request::CreateTopic {
            request,
            segment_size,
        }) = sized(b"1MiB")
        else {
            panic!("a sized CreateTopic")
        };
        assert_eq!((request.name.as_str(), segment_size), ("t", 1 << 20));
        assert!(matches!(
            sized(b"0"),
            Ok(V09Request::Request(Request::CreateTopic(_)))
        ));
        assert_eq!(
            sized(b"1000").unwrap_err().code,
            ErrorCode::InvalidOptionValue
        );
        // 11.6's StoreConsumerOffset, with its ack byte.
        let store = b"\x01\x01\x04\x01\x00\x00\x00\x01\x04\x00\x00\x00\x00\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01";
        assert!(matches!(
            decode(121, BytesMut::from(&store[..])).unwrap(),
            V09Request::Request(Request::StoreConsumerOffset(_))
        ));
        assert!(decode(121, BytesMut::from(&store[..store.len() - 1])).is_err());
        assert_eq!(
            decode(
                202,
                BytesMut::from(&b"\x01s\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v"[..])
            )
            .unwrap_err()
            .code,
            ErrorCode::UnsupportedOptionKey
        );
        assert_eq!(
            decode(13, BytesMut::from(&[1u8][..])).unwrap(),
            V09Request::DescribeOptions(1)
        );
        assert_eq!(
            decode(103, BytesMut::new()).unwrap_err().code,
            ErrorCode::InvalidCommand
        );
    }
}
