//! Official SDK (`iggy` 0.10.0) clients for a [`TestServer`], and small helpers around its API.
//!
//! Clients use TCP with TCP_NODELAY, a short reconnection budget (3 retries, 200 ms apart) so a
//! broken server makes a test fail quickly instead of hanging, and the SDK's default 5 s heartbeat.

use crate::server::{ROOT_PASSWORD, ROOT_USERNAME, TestServer};
use iggy::prelude::*;
use std::fmt::Debug;

/// Connection string options shared by all test clients.
const OPTIONS: &str =
    "nodelay=true&reconnection_retries=3&reconnection_interval=200ms&reestablish_after=100ms";

/// `iggy://iggy:iggy@127.0.0.1:<port>?...`: connects and logs in as root on `connect()` (and
/// again after a reconnection), the way applications usually configure the SDK.
pub fn root_connection_string(server: &TestServer) -> String {
    format!(
        "iggy://{ROOT_USERNAME}:{ROOT_PASSWORD}@{}?{OPTIONS}",
        server.tcp_address()
    )
}

/// A client connected to `server` and logged in as root (auto-login on connect).
pub async fn root_client(server: &TestServer) -> IggyClient {
    let client = IggyClient::from_connection_string(&root_connection_string(server))
        .expect("valid connection string");
    client
        .connect()
        .await
        .unwrap_or_else(|error| panic!("connect and log in to {}: {error}", server.address()));
    client
}

/// A client connected to `server` but not logged in.
pub async fn anonymous_client(server: &TestServer) -> IggyClient {
    let client = IggyClient::builder()
        .with_tcp()
        .with_server_address(server.tcp_address())
        .with_no_delay()
        .with_reconnection_max_retries(Some(3))
        .with_reconnection_interval(IggyDuration::from(std::time::Duration::from_millis(200)))
        .with_reestablish_after(IggyDuration::from(std::time::Duration::from_millis(100)))
        .build()
        .expect("build TCP client");
    client
        .connect()
        .await
        .unwrap_or_else(|error| panic!("connect to {}: {error}", server.address()));
    client
}

/// Numeric identifier (ids are 0-based and server-assigned).
pub fn id(value: u32) -> Identifier {
    Identifier::numeric(value).expect("numeric identifier")
}

/// Name identifier.
pub fn named(value: &str) -> Identifier {
    Identifier::named(value).expect("named identifier")
}

/// A plain (non-group) consumer with a numeric id.
pub fn consumer(value: u32) -> Consumer {
    Consumer::new(id(value))
}

/// Creates a stream and returns its server-assigned id.
pub async fn create_stream(client: &IggyClient, name: &str) -> u32 {
    client
        .create_stream(name)
        .await
        .unwrap_or_else(|error| panic!("create stream {name:?}: {error}"))
        .id
}

/// Creates a topic with server defaults (no compression, default expiry and size) and returns
/// its details as the server answered them.
pub async fn create_topic(
    client: &IggyClient,
    stream_id: u32,
    name: &str,
    partitions: u32,
) -> TopicDetails {
    client
        .create_topic(
            &id(stream_id),
            name,
            partitions,
            CompressionAlgorithm::None,
            None,
            IggyExpiry::ServerDefault,
            MaxTopicSize::ServerDefault,
        )
        .await
        .unwrap_or_else(|error| panic!("create topic {name:?} in stream {stream_id}: {error}"))
}

/// Asserts that `result` is an error whose wire status code is `code`.
#[track_caller]
pub fn assert_error_code<T: Debug>(result: Result<T, IggyError>, code: u32, what: &str) {
    match result {
        Ok(value) => panic!("{what}: expected error {code}, got Ok({value:?})"),
        Err(error) => assert_eq!(
            error.as_code(),
            code,
            "{what}: expected error {code}, got {} ({error})",
            error.as_code()
        ),
    }
}
