//! `[system.buffers] huge_pages`: batches and polls over 64 KiB go through buffers carved from
//! 2 MiB huge pages, `/metrics` shows the memory mapped for them, and the messages are the same
//! bytes either way.

use crate::exposition::scrape;
use iggy::prelude::*;
use rill_integration::fixtures::{assert_batches, poll_from, send_series};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};

/// The server's memory in transparent huge pages (`AnonHugePages` of its smaps), in bytes.
fn anon_huge_bytes(server: &TestServer) -> f64 {
    let pid = server.pid().expect("the server runs");
    let rollup =
        std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).expect("the server's smaps");
    let kib: f64 = rollup
        .lines()
        .find_map(|line| line.strip_prefix("AnonHugePages:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .expect("AnonHugePages");
    kib * 1024.0
}

#[tokio::test]
async fn the_heap_gets_no_huge_pages_while_the_read_cache_fills() {
    // Proves: transparent huge pages are confined to the I/O buffers: with the read cache
    // holding ~50 MB of heap memory, the process's huge pages are no more than what
    // `iggy_huge_page_buffers_mapped_bytes` counts (plus what was faulted before main could
    // take the allocator's advice back). Fails if the allocator advises its arenas again (as
    // mimalloc does unless told not to). Holds trivially where THP is off.
    let server = TestServer::start(
        ServerOptions::new()
            .shards(1)
            .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
            .env("IGGY_SYSTEM_READ_CACHE_SIZE", "256 MiB"),
    );
    let http = server.http_address().expect("the HTTP endpoint listens");
    let client = root_client(&server).await;
    create_stream(&client, "heap").await;
    create_topic(&client, 0, "t", 1).await;
    let payload = bytes::Bytes::from(vec![7u8; 1000]);
    for _ in 0..50 {
        let mut messages: Vec<IggyMessage> = (0..1000)
            .map(|_| {
                IggyMessage::builder()
                    .payload(payload.clone())
                    .build()
                    .expect("message")
            })
            .collect();
        client
            .send_messages(
                &id(0),
                &id(0),
                &Partitioning::partition_id(0),
                &mut messages,
            )
            .await
            .expect("send");
    }
    // Shard figures are published once a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let metrics = loop {
        let metrics = scrape(http);
        if metrics.sum("iggy_read_cache_held_bytes", &[]) > 40e6
            || std::time::Instant::now() > deadline
        {
            break metrics;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        metrics.sum("iggy_read_cache_held_bytes", &[]) > 40e6,
        "the cache holds the batches"
    );
    let mapped = metrics.sum("iggy_huge_page_buffers_mapped_bytes", &[]);
    let huge = anon_huge_bytes(&server);
    let before_main = (8 << 20) as f64;
    assert!(
        huge <= mapped + before_main,
        "{huge} bytes in huge pages, {mapped} mapped for I/O buffers"
    );
}

#[tokio::test]
async fn large_batches_and_polls_use_huge_page_buffers_unless_turned_off() {
    // Proves: with the default, sending batches of ~130 KB and polling them back from the
    // segment files maps huge-page buffer memory (the gauge is at least one 2 MiB page, what is
    // in use within it) and returns exactly what was sent; with `huge_pages = false` nothing is
    // mapped and the messages are the same. How: one shard, cache and write-ahead log off (every
    // poll reads the files), 4 batches of 1000 messages, polls of 1000 from offset 0.
    for (setting, huge) in [("true", true), ("false", false)] {
        let server = TestServer::start(
            ServerOptions::new()
                .shards(1)
                .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
                .env("IGGY_SYSTEM_READ_CACHE_SIZE", "0")
                .env("IGGY_SYSTEM_WAL_ENABLED", "false")
                .env("IGGY_SYSTEM_BUFFERS_HUGE_PAGES", setting),
        );
        let http = server.http_address().expect("the HTTP endpoint listens");
        let client = root_client(&server).await;
        create_stream(&client, "huge").await;
        create_topic(&client, 0, "t", 1).await;
        let batches = send_series(
            &client,
            &id(0),
            &id(0),
            &Partitioning::partition_id(0),
            (3, 0, 4000),
            1000,
        )
        .await;
        let polled = poll_from(&client, &id(0), &id(0), 0, 0, 1000).await;
        let every: Vec<_> = batches.iter().collect();
        assert_batches(&polled, &every, 0, &format!("huge_pages = {setting}"));

        let metrics = scrape(http);
        let mapped = metrics.sum("iggy_huge_page_buffers_mapped_bytes", &[]);
        let in_use = metrics.sum("iggy_huge_page_buffers_in_use_bytes", &[]);
        if huge {
            assert!(mapped >= (2 << 20) as f64, "mapped {mapped}");
            assert!(in_use <= mapped, "in use {in_use} of {mapped}");
        } else {
            assert_eq!(
                (mapped, in_use),
                (0.0, 0.0),
                "huge_pages = false maps nothing"
            );
        }
    }
}
