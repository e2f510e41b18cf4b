//! `[system.read_cache]`: a consumer close behind the producer is answered from memory, one
//! far behind from the files, both with exactly what was sent; the cache stays within its
//! budget and `/metrics` shows hits, misses, bytes held and evictions. A consumer reading the
//! files has its next poll read ahead (`read_ahead`), with the same messages.

use crate::exposition::{Metrics, scrape};
use iggy::prelude::*;
use rill_integration::fixtures::{SentBatch, assert_batches, poll_from, send_series};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const BUDGET: u64 = 64 * 1024;
const MESSAGES: u64 = 3000;
const BATCH: u64 = 50;

/// Scrapes until the once-a-second publication shows what `ready` waits for.
fn scrape_until(address: SocketAddr, ready: impl Fn(&Metrics) -> bool) -> Metrics {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let metrics = scrape(address);
        if ready(&metrics) || Instant::now() > deadline {
            return metrics;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A one-shard server with the given cache size and the HTTP endpoint, stream 0 with one
/// partition, and `messages` test messages sent to it in batches of [`BATCH`].
async fn one_partition_written(
    cache_size: &str,
    messages: u64,
) -> (TestServer, SocketAddr, IggyClient, Vec<SentBatch>) {
    one_partition_written_with(cache_size, messages, &[]).await
}

async fn one_partition_written_with(
    cache_size: &str,
    messages: u64,
    env: &[(&str, &str)],
) -> (TestServer, SocketAddr, IggyClient, Vec<SentBatch>) {
    let mut options = ServerOptions::new();
    for (key, value) in env {
        options = options.env(key, value);
    }
    let server = TestServer::start(
        options
            .shards(1)
            .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
            .env("IGGY_SYSTEM_READ_CACHE_SIZE", cache_size)
            // Every acknowledged batch written to the segment files at once, so that what the
            // cache holds is all that reads find in memory (with the write-ahead log, batches
            // not yet in the files are read from memory too, whatever the cache's size).
            .env("IGGY_SYSTEM_WAL_ENABLED", "false"),
    );
    let http = server.http_address().expect("the HTTP endpoint listens");
    let client = root_client(&server).await;
    create_stream(&client, "cache").await;
    create_topic(&client, 0, "t", 1).await;
    let batches = send_series(
        &client,
        &id(0),
        &id(0),
        &Partitioning::partition_id(0),
        (7, 0, messages),
        BATCH,
    )
    .await;
    (server, http, client, batches)
}

#[tokio::test]
async fn recent_reads_come_from_memory_old_ones_from_the_files_within_the_budget() {
    // Proves: with a 64 KiB budget and ~400 KB written, the newest messages are polled from the
    // cache (hits move, misses do not), the oldest from the files (misses move), both exactly as
    // sent; the cache holds at most its budget and has evicted. How: one shard, one partition,
    // 60 batches of 50 test messages, polls of the tail and of the whole partition.
    let (_server, http, client, batches) = one_partition_written("64 KiB", MESSAGES).await;

    let written = scrape_until(http, |m| m.sum("iggy_read_cache_held_bytes", &[]) > 0.0);
    assert_eq!(
        written.sum("iggy_read_cache_budget_bytes", &[]),
        BUDGET as f64
    );
    let held = written.sum("iggy_read_cache_held_bytes", &[]);
    assert!(
        held > 0.0 && held <= BUDGET as f64,
        "held {held} of {BUDGET}"
    );
    assert!(written.sum("iggy_read_cache_evictions_total", &[]) > 0.0);

    // The last two batches are in the cache: a poll of them touches no file.
    let tail_start = MESSAGES - 2 * BATCH;
    let tail = poll_from(&client, &id(0), &id(0), 0, tail_start, 100).await;
    let recent: Vec<_> = batches[batches.len() - 2..].iter().collect();
    assert_batches(&tail, &recent, tail_start, "tail from the cache");
    let after_tail = scrape_until(http, |m| {
        m.sum("iggy_read_cache_hits_total", &[]) > written.sum("iggy_read_cache_hits_total", &[])
    });
    assert!(
        after_tail.sum("iggy_read_cache_hits_total", &[])
            > written.sum("iggy_read_cache_hits_total", &[])
    );
    assert_eq!(
        after_tail.sum("iggy_read_cache_misses_total", &[]),
        written.sum("iggy_read_cache_misses_total", &[]),
        "the tail needs no file read"
    );

    // The whole partition: the evicted start comes from the files, byte for byte the same.
    let all = poll_from(&client, &id(0), &id(0), 0, 0, 1000).await;
    let every: Vec<_> = batches.iter().collect();
    assert_batches(&all, &every, 0, "the whole partition");
    let after_all = scrape_until(http, |m| {
        m.sum("iggy_read_cache_misses_total", &[])
            > after_tail.sum("iggy_read_cache_misses_total", &[])
    });
    assert!(
        after_all.sum("iggy_read_cache_misses_total", &[])
            > after_tail.sum("iggy_read_cache_misses_total", &[])
    );
    assert!(after_all.sum("iggy_read_cache_held_bytes", &[]) <= BUDGET as f64);
}

#[tokio::test]
async fn a_zero_budget_reads_everything_from_the_files() {
    // Proves: `size = 0` turns the cache off: in the default (written) ack mode nothing is held
    // and every read goes to the files, with exactly what was sent.
    let (_server, http, client, batches) = one_partition_written("0", 200).await;
    let all = poll_from(&client, &id(0), &id(0), 0, 0, 1000).await;
    let every: Vec<_> = batches.iter().collect();
    assert_batches(&all, &every, 0, "uncached partition");
    let metrics = scrape_until(http, |m| m.sum("iggy_read_cache_misses_total", &[]) > 0.0);
    assert!(metrics.sum("iggy_read_cache_misses_total", &[]) > 0.0);
    assert_eq!(metrics.sum("iggy_read_cache_hits_total", &[]), 0.0);
    assert_eq!(metrics.sum("iggy_read_cache_held_bytes", &[]), 0.0);
    assert_eq!(metrics.sum("iggy_read_cache_budget_bytes", &[]), 0.0);
}

#[tokio::test]
async fn a_consumer_reading_the_files_is_answered_from_reads_ahead_within_their_budget() {
    // Proves: with the cache off every poll reads the files, and each poll after the first is
    // answered by the read started when the previous one was answered: exactly what was sent,
    // in order, no message twice or missing; `/metrics` counts the reads ahead and what they
    // hold stays within the budget. How: one shard, 3000 messages, polls of 100 from 0.
    let (_server, http, client, batches) = one_partition_written_with(
        "0",
        MESSAGES,
        &[("IGGY_SYSTEM_READ_CACHE_READ_AHEAD", "256 KiB")],
    )
    .await;
    let all = poll_from(&client, &id(0), &id(0), 0, 0, 100).await;
    let every: Vec<_> = batches.iter().collect();
    assert_batches(&all, &every, 0, "the partition, read ahead");
    let polls = MESSAGES / 100;
    let metrics = scrape_until(http, |m| {
        m.sum("iggy_read_ahead_hits_total", &[]) >= (polls - 1) as f64
    });
    assert_eq!(
        metrics.sum("iggy_read_ahead_budget_bytes", &[]),
        (256 * 1024) as f64
    );
    assert_eq!(
        metrics.sum("iggy_read_ahead_hits_total", &[]),
        (polls - 1) as f64,
        "every poll but the first was read ahead"
    );
    assert_eq!(
        metrics.sum("iggy_read_ahead_started_total", &[]),
        (polls - 1) as f64
    );
    assert_eq!(metrics.sum("iggy_read_ahead_held_bytes", &[]), 0.0);
    assert_eq!(metrics.sum("iggy_read_ahead_wasted_total", &[]), 0.0);
}
