//! `[system.encryption]` against the real server: what the official clients of both generations
//! send is stored encrypted (payloads, user headers and the metadata log hold none of their
//! plaintext) and polled back as sent, across a restart; the key is never printed; a restart
//! without the key or with another one, and encryption turned on over plaintext data, refuse
//! to start with a clear message and change nothing.

use bytes::Bytes;
use iggy::prelude::{
    IggyMessage, MessageClient as _, Partitioning, PollingStrategy, UserClient as _, UserStatus,
};
use iggy_v011::prelude as v11;
use iggy_v011::prelude::MessageClient as _;
use rill_integration::binary::run_to_exit;
use rill_integration::fixtures::{
    assert_messages, expected_of, headers_for, poll_from, send_batch,
};
use rill_integration::sdk::{consumer, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer, sdk_v011};
use std::path::Path;

/// 32 bytes in base64, as upstream takes it.
const KEY: &str = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=";
const OTHER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn encrypted() -> ServerOptions {
    ServerOptions::new()
        .env("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true")
        .env("IGGY_SYSTEM_ENCRYPTION_KEY", KEY)
}

/// Message `i`: a payload and user headers (key "sequence", value "series-77") that are easy
/// to look for on disk.
fn secret_message(i: u64) -> IggyMessage {
    IggyMessage::builder()
        .id(1_000 + u128::from(i))
        .payload(Bytes::from(format!(
            "payload-secret-{i}-{}",
            "x".repeat(i as usize)
        )))
        .user_headers(headers_for(77, i))
        .build()
        .unwrap()
}

/// Every file under `dir`, recursively, in a stable order.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every file under `dir` that contains `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    files(dir)
        .into_iter()
        .filter(|path| {
            std::fs::read(path)
                .unwrap()
                .windows(needle.len())
                .any(|window| window == needle)
        })
        .map(|path| path.display().to_string())
        .collect()
}

/// Every file under `dir` with a hash of its content, to show that a refused start changed
/// nothing.
fn file_digests(dir: &Path) -> Vec<(String, u64)> {
    files(dir)
        .into_iter()
        .map(|path| {
            let digest = xxhash_rust::xxh3::xxh3_64(&std::fs::read(&path).unwrap());
            (path.display().to_string(), digest)
        })
        .collect()
}

/// Starts the binary on `data` with `env`, expecting a refusal; returns what it printed.
fn refused_start(data: &Path, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env.to_vec();
    env.push(("IGGY_SYSTEM_PATH", data.to_str().unwrap()));
    let (started, text) = run_to_exit(dir.path(), &env);
    assert!(!started, "must not start:\n{text}");
    text
}

#[tokio::test]
async fn both_generations_read_back_what_is_stored_encrypted_and_only_with_the_key() {
    let mut server = TestServer::start(encrypted());
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;
    client
        .create_user("auditor-alice", "pa55word-alice", UserStatus::Active, None)
        .await
        .expect("create user");
    let old: Vec<IggyMessage> = (0..20).map(secret_message).collect();
    let expected: Vec<_> = old.iter().map(expected_of).collect();
    let sent = send_batch(&client, &id(0), &id(0), &Partitioning::partition_id(0), old).await;
    let new = sdk_v011::root_client(&server).await;
    let mut batch = vec![
        sdk_v011::message(501, "payload-secret-from-0.11", Some("header-secret-0.11")),
        sdk_v011::message(0, "payload-secret-id-zero", None),
    ];
    new.send_messages(
        &sdk_v011::id(0),
        &sdk_v011::id(0),
        &v11::Partitioning::partition_id(0),
        &mut batch,
    )
    .await
    .expect("send from 0.11");

    let check = |polled: &[IggyMessage]| {
        assert_eq!(polled.len(), 22);
        assert_messages(&polled[..20], &expected, 0, sent.window, "0.10 poll");
        assert_eq!(&polled[20].payload[..], b"payload-secret-from-0.11");
        assert_eq!(polled[20].header.id, 501);
        assert!(polled[20].user_headers.is_some(), "0.11's header travels");
        assert_eq!(&polled[21].payload[..], b"payload-secret-id-zero");
        assert_ne!(polled[21].header.id, 0, "id 0 gets a random id");
    };
    let polled = poll_from(&client, &id(0), &id(0), 0, 0, 7).await;
    check(&polled);
    let polled_new = new
        .poll_messages(
            &sdk_v011::id(0),
            &sdk_v011::id(0),
            Some(0),
            &v11::Consumer::new(sdk_v011::id(3)),
            &v11::PollingStrategy::offset(0),
            100,
            false,
        )
        .await
        .expect("poll from 0.11");
    let payloads: Vec<Bytes> = polled_new
        .messages
        .iter()
        .map(|m| m.payload.clone())
        .collect();
    assert_eq!(
        payloads,
        polled.iter().map(|m| m.payload.clone()).collect::<Vec<_>>(),
        "0.11 reads the same plaintext"
    );
    assert_eq!(polled_new.messages[21].header.id, polled[21].header.id);
    drop((client, new));

    // The data directory holds none of it in the clear, and no log line holds the key.
    server.stop();
    let data = server.data_path();
    for needle in [
        &b"payload-secret"[..],
        b"header-secret",
        b"series-77",
        b"sequence",
        b"auditor-alice",
        KEY.as_bytes(),
    ] {
        let found = files_containing(&data, needle);
        assert!(
            found.is_empty(),
            "{} in the clear in {found:?}",
            String::from_utf8_lossy(needle)
        );
    }
    let log = server.log();
    assert!(!log.contains(KEY), "the key is never logged");
    assert!(log.contains("encryption at rest is on"), "{log}");

    // A restart with the key reads everything back; new messages join them.
    server.start_again();
    let client = root_client(&server).await;
    let more = vec![secret_message(99)];
    send_batch(
        &client,
        &id(0),
        &id(0),
        &Partitioning::partition_id(0),
        more,
    )
    .await;
    let polled = poll_from(&client, &id(0), &id(0), 0, 0, 100).await;
    check(&polled[..22]);
    assert_eq!(&polled[22].payload[..], &secret_message(99).payload[..]);
    client
        .login_user("auditor-alice", "pa55word-alice")
        .await
        .expect("the encrypted metadata log kept the user");
    drop(client);
    server.stop();

    // Without the key, or with another, the start is refused and nothing changes.
    let before = file_digests(&data);
    let text = refused_start(&data, &[]);
    assert!(text.contains("written with encryption at rest"), "{text}");
    let text = refused_start(
        &data,
        &[
            ("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true"),
            ("IGGY_SYSTEM_ENCRYPTION_KEY", OTHER_KEY),
        ],
    );
    assert!(text.contains("not the key the data"), "{text}");
    assert!(!text.contains(OTHER_KEY), "{text}");
    assert_eq!(file_digests(&data), before);

    // A byte of ciphertext changed on disk: with the checksum not verified on read, the
    // authentication refuses it (72), counted with the checksum mismatches.
    let log = data.join("streams/0/topics/0/partitions/0/00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[64 + 12 + 3] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    server.set_env("IGGY_SYSTEM_PARTITION_VERIFY_CHECKSUMS_ON_READ", "none");
    server.start_again();
    let client = root_client(&server).await;
    let error = client
        .poll_messages(
            &id(0),
            &id(0),
            Some(0),
            &consumer(4),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(error.as_code(), 72, "CannotDecryptData: {error}");
    assert!(server.log().contains("cannot be decrypted"));
}

#[tokio::test]
async fn encryption_cannot_be_turned_on_over_plaintext_data() {
    let mut server = TestServer::start_default();
    let client = root_client(&server).await;
    create_stream(&client, "plain").await;
    drop(client);
    server.stop();
    let data = server.data_path();
    assert!(
        !files_containing(&data, b"plain").is_empty(),
        "without encryption the metadata log holds the name (the scan finds what is there)"
    );
    let before = file_digests(&data);
    let text = refused_start(
        &data,
        &[
            ("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true"),
            ("IGGY_SYSTEM_ENCRYPTION_KEY", KEY),
        ],
    );
    assert!(text.contains("written without encryption"), "{text}");
    assert_eq!(file_digests(&data), before, "nothing written");
    // And the plaintext server still starts as it was.
    server.start_again();
    let client = root_client(&server).await;
    assert_eq!(
        iggy::prelude::StreamClient::get_streams(&client)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_bad_or_missing_key_stops_the_start_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let text = refused_start(
        &data,
        &[
            ("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true"),
            ("IGGY_SYSTEM_ENCRYPTION_KEY", "c2hvcnQtc2VjcmV0"),
        ],
    );
    assert!(text.contains("must decode to 32 bytes"), "{text}");
    assert!(!text.contains("c2hvcnQtc2VjcmV0"), "{text}");
    let text = refused_start(&data, &[("IGGY_SYSTEM_ENCRYPTION_ENABLED", "true")]);
    assert!(text.contains("needs system.encryption.key"), "{text}");
    assert!(
        !data.join("state").exists(),
        "nothing stored before refusing"
    );
}
