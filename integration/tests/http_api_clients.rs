//! The HTTP REST API through the other official clients: the 0.9-generation SDK's
//! `HttpClient` (0.11.0) and the official CLI 0.13.0 with `--transport http`.

use bytes::Bytes;
use iggy::prelude::*;
use rill_integration::official_cli::CliGeneration;
use rill_integration::sdk::{id, root_client};
use rill_integration::{ServerOptions, TestServer};

fn http_server() -> TestServer {
    TestServer::start(ServerOptions::new())
}

fn api_url(server: &TestServer) -> String {
    format!(
        "http://{}",
        server.http_address().expect("HTTP API listening")
    )
}

/// The 0.9-generation SDK's `HttpClient` (0.11.0): topic options in bodies, `null` for what an
/// update leaves alone, a send answered with no body.
#[tokio::test]
async fn the_0_11_http_client_works_too() {
    use iggy_v011::prelude::{
        Client as _, CompressionAlgorithm as Compression, Consumer as Consumer11,
        Identifier as Id11, IggyClient as Client11, IggyExpiry as Expiry11,
        IggyMessage as Message11, MaxTopicSize as Size11, MessageClient as _, OptionsScope,
        Partitioning as Partitioning11, PollingStrategy as Strategy11, StreamClient as _,
        SystemClient as _, TopicClient as _, TopicCreateOptions, TopicUpdateOptions,
        UserClient as _,
    };
    let server = http_server();
    let client = Client11::builder()
        .with_http()
        .with_api_url(api_url(&server))
        .with_retries(0)
        .build()
        .expect("build 0.11 HTTP client");
    client.connect().await.expect("connect");
    client.login_user("iggy", "iggy").await.expect("login");
    // The options catalog over HTTP, as the 0.11 client asks for it.
    let specs = client
        .describe_options(OptionsScope::Topic)
        .await
        .expect("describe options");
    assert!(specs.iter().any(|spec| spec.key == "compression_algorithm"));
    let none = client.describe_options(OptionsScope::User).await.unwrap();
    assert!(none.is_empty());
    let stream = client.create_stream("v11").await.expect("create stream");
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        compression_algorithm: Some(Compression::Gzip),
        message_expiry: Some(Expiry11::NeverExpire),
        max_topic_size: Some(Size11::ServerDefault),
        ..Default::default()
    };
    let topic = client
        .create_topic(&Id11::numeric(stream.id).unwrap(), "t", &options)
        .await
        .expect("create topic with the options 0.11 always sends");
    assert_eq!(topic.partitions_count, 2);
    // The runtime options travel in the body's `options` map: a segment size of the topic's own
    // (which a 2 MiB cap must hold: 1 GiB segments would be refused with 1019), and a bad value
    // refused as over TCP.
    let sized = TopicCreateOptions {
        partitions_count: Some(1),
        segment_size: Some(iggy_v011::prelude::IggyByteSize::from(1u64 << 20)),
        max_topic_size: Some(Size11::Custom(iggy_v011::prelude::IggyByteSize::from(
            2u64 << 20,
        ))),
        ..Default::default()
    };
    client
        .create_topic(&Id11::numeric(stream.id).unwrap(), "sized", &sized)
        .await
        .expect("1 MiB segments under a 2 MiB cap");
    let capped = TopicCreateOptions {
        segment_size: None,
        ..sized.clone()
    };
    let refused = client
        .create_topic(&Id11::numeric(stream.id).unwrap(), "capped", &capped)
        .await
        .expect_err("a 2 MiB cap cannot hold a 1 GiB segment");
    // The 0.11 HttpClient reports any HTTP error as 300 with the body in its message.
    assert!(refused.to_string().contains("\"id\":1019"), "{refused}");
    let odd = TopicCreateOptions {
        segment_size: Some(iggy_v011::prelude::IggyByteSize::from(1000u64)),
        ..Default::default()
    };
    let refused = client
        .create_topic(&Id11::numeric(stream.id).unwrap(), "odd", &odd)
        .await
        .expect_err("a segment size under 1 MiB");
    assert!(refused.to_string().contains("\"id\":4042"), "{refused}");
    client
        .update_topic(
            &Id11::numeric(stream.id).unwrap(),
            &Id11::numeric(topic.id).unwrap(),
            "t2",
            &TopicUpdateOptions::default(),
        )
        .await
        .expect("an update with nulls");
    let tcp = root_client(&server).await;
    let seen = tcp
        .get_topic(&id(stream.id), &id(topic.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.name, "t2");
    assert_eq!(
        seen.compression_algorithm,
        CompressionAlgorithm::Gzip,
        "null kept the value"
    );
    let mut messages = vec![
        Message11::builder()
            .id(5)
            .payload(Bytes::from_static(b"from 0.11 over http"))
            .build()
            .unwrap(),
    ];
    client
        .send_messages(
            &Id11::numeric(stream.id).unwrap(),
            &Id11::numeric(topic.id).unwrap(),
            &Partitioning11::partition_id(1),
            &mut messages,
        )
        .await
        .expect("send");
    let polled = client
        .poll_messages(
            &Id11::numeric(stream.id).unwrap(),
            &Id11::numeric(topic.id).unwrap(),
            Some(1),
            &Consumer11::new(Id11::numeric(3).unwrap()),
            &Strategy11::offset(0),
            10,
            false,
        )
        .await
        .expect("poll");
    assert_eq!(polled.messages.len(), 1);
    assert_eq!(polled.messages[0].header.id, 5);
    assert_eq!(&polled.messages[0].payload[..], b"from 0.11 over http");
    client.logout_user().await.expect("logout");
}

/// The official CLI 0.13.0 with `--transport http`: what it does over TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_cli_0_13_over_http() {
    official_cli_over_http(CliGeneration::V013).await
}

/// The official CLI 0.14.0 (SDK 0.11.0's HTTP client) with `--transport http`: the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_cli_0_14_over_http() {
    official_cli_over_http(CliGeneration::V014).await
}

async fn official_cli_over_http(generation: CliGeneration) {
    use rill_integration::official_cli::{Auth, CliHome, Transport, iggy_via};
    let server = http_server();
    let home = CliHome::of(generation);
    let cli = |args: &[&str]| {
        iggy_via(
            &server,
            Transport::Http,
            &home,
            Auth::Credentials("iggy", "iggy"),
            args,
        )
    };
    cli(&["ping"]).success(&[]);
    cli(&["stream", "create", "h"]).success(&["Stream with name: h"]);
    cli(&["stream", "list"]).success(&["h"]);
    cli(&["stream", "get", "h"]).success(&["h"]);
    cli(&["topic", "create", "h", "t", "2", "none"]).success(&["Topic with name: t"]);
    cli(&["topic", "list", "h"]).success(&["t"]);
    cli(&["topic", "get", "h", "t"]).success(&["t"]);
    cli(&["partition", "create", "h", "t", "1"]).success(&[]);
    cli(&[
        "message",
        "send",
        "--partition-id",
        "0",
        "h",
        "t",
        "over-http",
    ])
    .success(&[]);
    cli(&[
        "message",
        "poll",
        "--offset",
        "0",
        "--message-count",
        "1",
        "h",
        "t",
        "0",
    ])
    .success(&["over-http"]);
    cli(&["message", "flush", "--fsync", "h", "t", "0"]).success(&[]);
    cli(&["consumer-offset", "set", "1", "h", "t", "0", "0"]).success(&[]);
    cli(&["consumer-offset", "get", "1", "h", "t", "0"]).success(&["0"]);
    cli(&["consumer-group", "create", "h", "t", "g"]).success(&["g"]);
    cli(&["consumer-group", "list", "h", "t"]).success(&["g"]);
    cli(&["user", "create", "alice", "secret-pw"]).success(&["alice"]);
    cli(&["user", "list"]).success(&["alice"]);
    cli(&["pat", "create", "cli-token"]).success(&[]);
    cli(&["pat", "list"]).success(&["cli-token"]);
    cli(&["stats"]).success(&[]);
    cli(&["client", "list"]).success(&[]);
    let out = tempfile::tempdir().expect("snapshot directory");
    cli(&[
        "snapshot",
        "--compression",
        "deflated",
        "--snapshot-types",
        "server_config",
        "--out-dir",
        &out.path().to_string_lossy(),
    ])
    .success(&[]);
    let archive = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .expect("a snapshot file")
        .unwrap()
        .path();
    assert!(std::fs::read(archive).unwrap().starts_with(b"PK\x03\x04"));
    // A server error is a failing exit over HTTP too.
    cli(&["stream", "create", "h"]).failure();
    let client = root_client(&server).await;
    assert_eq!(client.get_streams().await.expect("streams").len(), 1);
    let topic = client
        .get_topic(
            &Identifier::named("h").unwrap(),
            &Identifier::named("t").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(topic.partitions_count, 3);
    assert_eq!(topic.messages_count, 1);
}

/// The official Python client of the 0.9 generation over HTTP (`HttpConfig`): login, stream,
/// topic, send, poll with auto-commit, stats, logout; the offset it committed is read over TCP.
#[tokio::test]
async fn the_python_0_9_client_over_http() {
    let server = http_server();
    let address = server.http_address().expect("HTTP API listening");
    // The server is another process: blocking this test's thread on the script is harmless.
    let result = rill_integration::sdk_v011::run_python(
        "v09_http_client.py",
        &[&address.to_string(), "pyh"],
        || server.log_tail(),
    );
    let seen: serde_json::Value = serde_json::from_slice(&result).expect("the script's JSON line");
    assert_eq!(seen["partitions"], 2);
    assert_eq!(
        seen["polled"],
        serde_json::json!([[0, "h1-0"], [1, "h1-1"], [2, "h1-2"]])
    );
    assert_eq!(seen["messages"], 3);
    let tcp = root_client(&server).await;
    let offset = tcp
        .get_consumer_offset(
            &Consumer::new(id(7)),
            &Identifier::named("pyh").unwrap(),
            &Identifier::named("t").unwrap(),
            Some(1),
        )
        .await
        .unwrap()
        .expect("auto-commit stored the offset");
    assert_eq!(offset.stored_offset, 2);
}
