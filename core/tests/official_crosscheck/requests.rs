//! Requests: one cross-check per command, the coverage of the official command table, the
//! hand-built edge cases, and the values outside the protocol.

use crate::common::*;
use crate::helpers::{cross_check_request, longest_unicode_name, name, nested_permissions};
use bytes::{Bytes, BytesMut};
use iggy_binary_protocol as wire;
use iggy_binary_protocol::requests::consumer_offsets::*;
use iggy_binary_protocol::requests::messages::*;
use iggy_binary_protocol::requests::topics::*;
use iggy_binary_protocol::requests::users::*;
use iggy_binary_protocol::{
    WireConsumer, WireEncode, WireIdentifier, WireName, WirePollingStrategy,
};
use proptest::test_runner::TestRunner;
use rill_core::ErrorCode;
use rill_core::message::{MessageBatch, OutgoingMessage, SendMessages};
use rill_core::primitives::user_headers::{self, HeaderField};
use rill_core::primitives::*;
use rill_core::requests::*;

/// One test per command, so a failure names the command.
macro_rules! request_cross_checks {
    ($($test:ident => $command:ident,)*) => {
        $(
            #[test]
            fn $test() {
                // Proves our $command codec and the official one agree both ways on arbitrary
                // valid values (see cross_check_request).
                let mut runner = TestRunner::new(config(256));
                runner
                    .run(&request(CommandCode::$command), |request| {
                        cross_check_request(&request);
                        Ok(())
                    })
                    .unwrap_or_else(|failure| panic!("{}: {failure}", CommandCode::$command));
            }
        )*

        const CROSS_CHECKED: &[CommandCode] = &[$(CommandCode::$command,)*];
    };
}

request_cross_checks! {
    ping => Ping,
    get_stats => GetStats,
    get_snapshot => GetSnapshot,
    get_cluster_metadata => GetClusterMetadata,
    get_me => GetMe,
    get_client => GetClient,
    get_clients => GetClients,
    get_user => GetUser,
    get_users => GetUsers,
    create_user => CreateUser,
    delete_user => DeleteUser,
    update_user => UpdateUser,
    update_permissions => UpdatePermissions,
    change_password => ChangePassword,
    login_user => LoginUser,
    logout_user => LogoutUser,
    get_personal_access_tokens => GetPersonalAccessTokens,
    create_personal_access_token => CreatePersonalAccessToken,
    delete_personal_access_token => DeletePersonalAccessToken,
    login_with_personal_access_token => LoginWithPersonalAccessToken,
    poll_messages => PollMessages,
    send_messages => SendMessages,
    flush_unsaved_buffer => FlushUnsavedBuffer,
    get_consumer_offset => GetConsumerOffset,
    store_consumer_offset => StoreConsumerOffset,
    delete_consumer_offset => DeleteConsumerOffset,
    get_stream => GetStream,
    get_streams => GetStreams,
    create_stream => CreateStream,
    delete_stream => DeleteStream,
    update_stream => UpdateStream,
    purge_stream => PurgeStream,
    get_topic => GetTopic,
    get_topics => GetTopics,
    create_topic => CreateTopic,
    delete_topic => DeleteTopic,
    update_topic => UpdateTopic,
    purge_topic => PurgeTopic,
    create_partitions => CreatePartitions,
    delete_partitions => DeletePartitions,
    delete_segments => DeleteSegments,
    get_consumer_group => GetConsumerGroup,
    get_consumer_groups => GetConsumerGroups,
    create_consumer_group => CreateConsumerGroup,
    delete_consumer_group => DeleteConsumerGroup,
    join_consumer_group => JoinConsumerGroup,
    leave_consumer_group => LeaveConsumerGroup,
}

#[test]
fn every_command_is_cross_checked_and_in_the_official_table() {
    // Proves the per-command cross-checks cover all 47 commands and that our command codes are
    // exactly the official COMMAND_TABLE's (same set, same count).
    assert_eq!(CROSS_CHECKED, CommandCode::ALL);
    let mut official: Vec<u32> = wire::COMMAND_TABLE.iter().map(|meta| meta.code).collect();
    official.sort_unstable();
    let ours: Vec<u32> = CommandCode::ALL.iter().map(|code| code.code()).collect();
    assert_eq!(ours, official);
}

#[test]
fn hand_built_edge_cases_agree_with_the_official_crate() {
    // Proves agreement on deliberately chosen edge cases regardless of what proptest happens to
    // draw: string identifiers (1 byte, 255 bytes of 4-byte UTF-8), numeric 0 and u32::MAX,
    // permissions with several streams with and without nested topics, optional fields
    // (permissions, username, status, partition, version/context) present and absent, a
    // 255-byte messages key, user headers after the payload, and an empty snapshot type list.
    let unicode = Identifier::String(name("stream-ñ-日本-🦀"));
    let ids = [
        Identifier::numeric(0),
        Identifier::numeric(u32::MAX),
        Identifier::named("s").unwrap(),
        Identifier::String(longest_unicode_name()),
        unicode.clone(),
    ];
    let mut requests: Vec<Request> = Vec::new();
    for id in &ids {
        requests.push(
            GetStream {
                stream_id: id.clone(),
            }
            .into(),
        );
        requests.push(
            GetConsumerGroup {
                stream_id: id.clone(),
                topic_id: unicode.clone(),
                group_id: Identifier::numeric(3),
            }
            .into(),
        );
        requests.push(
            PollMessages {
                consumer: Consumer::group(id.clone()),
                stream_id: id.clone(),
                topic_id: Identifier::numeric(0),
                partition_id: OptionalPartition(None),
                strategy: PollingStrategy::next(),
                count: u32::MAX,
                auto_commit: true,
            }
            .into(),
        );
    }
    for permissions in [None, Some(Permissions::root()), Some(nested_permissions())] {
        requests.push(
            CreateUser {
                username: longest_unicode_name(),
                password: ShortString("пароль🔑".to_owned()),
                status: UserStatus::Inactive,
                permissions: permissions.clone(),
            }
            .into(),
        );
        requests.push(
            UpdatePermissions {
                user_id: Identifier::named("user").unwrap(),
                permissions,
            }
            .into(),
        );
    }
    for username in [None, Some(name("ünïcödé"))] {
        for status in [None, Some(UserStatus::Active), Some(UserStatus::Inactive)] {
            requests.push(
                UpdateUser {
                    user_id: Identifier::numeric(1),
                    username: username.clone(),
                    status,
                }
                .into(),
            );
        }
    }
    for (version, context) in [
        (None, None),
        (Some("0.10.0"), None),
        (None, Some("ctx")),
        (Some("v"), Some("日本")),
    ] {
        requests.push(
            LoginUser {
                username: name("iggy"),
                password: ShortString(String::new()),
                version: version.map(str::to_owned),
                context: context.map(str::to_owned),
            }
            .into(),
        );
    }
    requests.push(
        GetSnapshot {
            compression: 1,
            types: vec![],
        }
        .into(),
    );
    requests.push(
        GetSnapshot {
            compression: 6,
            types: vec![100],
        }
        .into(),
    );
    let mut headers = Vec::new();
    user_headers::encode(
        &[(HeaderField::string("k"), HeaderField::string("v"))],
        &mut headers,
    );
    requests.push(
        SendMessages {
            stream_id: unicode.clone(),
            topic_id: Identifier::String(longest_unicode_name()),
            partitioning: Partitioning::key(vec![0xab; 255]).unwrap(),
            batch: MessageBatch::from_messages(&[
                OutgoingMessage {
                    id: u128::MAX,
                    origin_timestamp: u64::MAX,
                    payload: Bytes::from_static("🦀 payload".as_bytes()),
                    user_headers: Bytes::from(headers),
                },
                OutgoingMessage::new(Bytes::new()),
            ]),
        }
        .into(),
    );
    for request in &requests {
        cross_check_request(request);
    }
}

#[test]
fn values_outside_the_protocol_are_rejected_with_status_3() {
    // Proves that where the official types allow any byte (enums carried as u8), bytes the
    // official encoder writes with a value protocol.md 2.6 does not define are refused by our
    // decoder with 3 (InvalidCommand), as the 0.8.0 server answers.
    let stream_id = WireIdentifier::numeric(0);
    let bad_compression = CreateTopicRequest {
        stream_id: stream_id.clone(),
        partitions_count: 1,
        compression_algorithm: 3,
        message_expiry: 0,
        max_topic_size: 0,
        replication_factor: 0,
        name: WireName::new("t").unwrap(),
    };
    let bad_status = UpdateUserRequest {
        user_id: stream_id.clone(),
        username: None,
        status: Some(0),
    };
    let bad_consumer = GetConsumerOffsetRequest {
        consumer: WireConsumer {
            kind: 3,
            id: stream_id.clone(),
        },
        stream_id: stream_id.clone(),
        topic_id: stream_id.clone(),
        partition_id: None,
    };
    let bad_strategy = PollMessagesRequest {
        consumer: WireConsumer::consumer(stream_id.clone()),
        stream_id: stream_id.clone(),
        topic_id: stream_id.clone(),
        partition_id: Some(0),
        strategy: WirePollingStrategy { kind: 6, value: 0 },
        count: 1,
        auto_commit: false,
    };
    let bad_user_status = CreateUserRequest {
        username: WireName::new("user").unwrap(),
        password: "secret".to_owned(),
        status: 9,
        permissions: None,
    };
    let cases: [(CommandCode, Bytes); 5] = [
        (CommandCode::CreateTopic, bad_compression.to_bytes()),
        (CommandCode::UpdateUser, bad_status.to_bytes()),
        (CommandCode::GetConsumerOffset, bad_consumer.to_bytes()),
        (CommandCode::PollMessages, bad_strategy.to_bytes()),
        (CommandCode::CreateUser, bad_user_status.to_bytes()),
    ];
    for (code, bytes) in cases {
        let error = Request::decode(code.code(), BytesMut::from(&bytes[..])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidCommand, "{code}: {error}");
    }
}
