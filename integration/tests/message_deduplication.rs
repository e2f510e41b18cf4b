//! `[system.message_deduplication]` through the official SDK: a batch resent with the same ids
//! is stored once, a batch mixing old and new ids stores only the new ones at consecutive
//! offsets, ids are forgotten after `expiry`, after a purge and after a restart (as upstream's
//! in-memory cache forgets them), the drops are counted in `/metrics`, and with the feature off
//! (the default) a resent batch is stored twice.

use iggy::prelude::*;
use rill_integration::fixtures::{poll_from, send_batch, test_messages};
use rill_integration::http::metric_sum;
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

fn deduplicating(expiry: &str) -> ServerOptions {
    ServerOptions::new()
        .env("IGGY_SYSTEM_MESSAGE_DEDUPLICATION_ENABLED", "true")
        .env("IGGY_SYSTEM_MESSAGE_DEDUPLICATION_MAX_ENTRIES", "1000")
        .env("IGGY_SYSTEM_MESSAGE_DEDUPLICATION_EXPIRY", expiry)
        .env("IGGY_HTTP_ENABLED", "true")
        .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
}

async fn send(client: &IggyClient, tag: u32, start: u64, count: u64) {
    let messages = test_messages(tag, start, count);
    send_batch(
        client,
        &id(0),
        &id(0),
        &Partitioning::partition_id(0),
        messages,
    )
    .await;
}

/// (offset, id) of everything partition 0 holds.
async fn stored(client: &IggyClient) -> Vec<(u64, u128)> {
    poll_from(client, &id(0), &id(0), 0, 0, 100)
        .await
        .iter()
        .map(|message| (message.header.offset, message.header.id))
        .collect()
}

fn ids(messages: &[IggyMessage]) -> Vec<u128> {
    messages.iter().map(|message| message.header.id).collect()
}

#[tokio::test]
async fn a_resent_batch_is_stored_once_and_only_new_ids_are_appended() {
    let mut server = TestServer::start(deduplicating("1 m"));
    let http = server.http_address().expect("the HTTP endpoint listens");
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;

    send(&client, 1, 0, 10).await;
    send(&client, 1, 0, 10).await; // a producer's retry: same ids
    send(&client, 1, 5, 10).await; // ids 5..10 again, 10..15 new
    let expected_ids = ids(&test_messages(1, 0, 15));
    let held = stored(&client).await;
    assert_eq!(
        held.iter().map(|&(offset, _)| offset).collect::<Vec<_>>(),
        (0..15).collect::<Vec<u64>>(),
        "consecutive offsets, no gap where duplicates were dropped"
    );
    assert_eq!(
        held.iter().map(|&(_, id)| id).collect::<Vec<_>>(),
        expected_ids
    );
    assert_eq!(metric_sum(http, "iggy_deduplicated_messages_total"), 15.0);
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(topic.messages_count, 15);

    // A purge empties the partition: the same ids are stored again.
    client.purge_topic(&id(0), &id(0)).await.expect("purge");
    send(&client, 1, 0, 10).await;
    assert_eq!(stored(&client).await.len(), 10);

    // A restart forgets every id, as upstream's in-memory cache does.
    drop(client);
    server.restart();
    let client = root_client(&server).await;
    send(&client, 1, 0, 10).await;
    assert_eq!(stored(&client).await.len(), 20);
    send(&client, 1, 0, 10).await;
    assert_eq!(
        stored(&client).await.len(),
        20,
        "remembered again after the restart"
    );
}

#[tokio::test]
async fn ids_are_forgotten_after_the_expiry() {
    let server = TestServer::start(deduplicating("1 s"));
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;
    send(&client, 2, 0, 5).await;
    send(&client, 2, 0, 5).await;
    assert_eq!(stored(&client).await.len(), 5);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    send(&client, 2, 0, 5).await;
    assert_eq!(stored(&client).await.len(), 10, "expired ids are new again");
}

#[tokio::test]
async fn without_deduplication_a_resent_batch_is_stored_twice() {
    let server = TestServer::start_default();
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;
    send(&client, 3, 0, 5).await;
    send(&client, 3, 0, 5).await;
    assert_eq!(stored(&client).await.len(), 10);
}
