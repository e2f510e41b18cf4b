//! Helpers shared by the WebSocket tests: official SDK connections over WebSocket, and a send
//! and poll round trip with content checks.

use iggy::prelude::*;
use rill_integration::TestServer;
use rill_integration::fixtures::{expected_of, message_id, test_messages};
use rill_integration::sdk::id;

pub(crate) const OPTIONS: &str = "reconnection_retries=3&reconnection_interval=200ms";

pub(crate) fn ws_connection_string(server: &TestServer) -> String {
    format!(
        "iggy+ws://iggy:iggy@{}?{OPTIONS}",
        server.websocket_address()
    )
}

pub(crate) async fn ws_client(server: &TestServer) -> IggyClient {
    connect(&ws_connection_string(server)).await
}

pub(crate) async fn connect(connection_string: &str) -> IggyClient {
    let client = IggyClient::from_connection_string(connection_string)
        .unwrap_or_else(|error| panic!("connection string {connection_string}: {error}"));
    client
        .connect()
        .await
        .unwrap_or_else(|error| panic!("connect with {connection_string}: {error}"));
    client
}

/// Sends `count` messages to partition 0 in batches of `per_batch`, polls them back from offset
/// 0 and checks ids, payloads and offsets.
pub(crate) async fn send_and_poll_back(
    client: &IggyClient,
    stream: u32,
    tag: u32,
    count: u64,
    per_batch: u64,
) {
    let (s, t) = (id(stream), id(0));
    let mut sent = Vec::new();
    for start in (0..count).step_by(per_batch as usize) {
        let mut batch = test_messages(tag, start, per_batch.min(count - start));
        sent.extend(batch.iter().map(expected_of));
        client
            .send_messages(&s, &t, &Partitioning::partition_id(0), &mut batch)
            .await
            .unwrap_or_else(|error| panic!("send from {start}: {error}"));
    }
    let polled = client
        .poll_messages(
            &s,
            &t,
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            count as u32,
            false,
        )
        .await
        .expect("poll");
    assert_eq!(polled.messages.len(), sent.len(), "polled count");
    for (offset, (message, expected)) in polled.messages.iter().zip(&sent).enumerate() {
        assert_eq!(message.header.offset, offset as u64);
        assert_eq!(message.header.id, message_id(tag, offset as u64));
        assert_eq!(message.payload, expected.payload, "payload at {offset}");
    }
}
