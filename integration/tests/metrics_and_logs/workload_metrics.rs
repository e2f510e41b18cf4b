//! `/metrics` moving by exactly what a workload did, `/stats`, `/ping`, unknown paths and methods.

use crate::exposition::scrape;
use iggy::prelude::*;
use rill_integration::fixtures::{MESSAGE_HEADER_BYTES, test_messages};
use rill_integration::http::{http, http_with};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BATCHES_PER_PARTITION: u64 = 4;
const BATCH: u64 = 50;
const PARTITIONS: u32 = 3;

#[tokio::test]
async fn metrics_move_by_exactly_what_the_workload_did() {
    // Proves: during a workload every scrape passes the strict exposition check and counters
    // never go back; afterwards requests by command and status, latency counts, messages and
    // bytes in and out, appends and polls (per shard and per partition), ack latencies,
    // group-commit sums, storage gauges and the GetStats gauges moved by exactly what the
    // workload did; io_uring, pool, metadata-log and process figures are present. How: 2 shards,
    // one SDK client, 3 partitions x 4 batches x 50 messages, 3 polls, 1 failing GetStream,
    // a background thread scraping in a loop throughout.
    // The write-ahead log off: every acknowledged round is then a segment write, which the
    // group-commit series count (with it, small rounds are logged and the segment files
    // written later; its series are checked in reliability_disk_faults.rs).
    let server = TestServer::start(
        ServerOptions::new()
            .shards(2)
            .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
            .env("IGGY_SYSTEM_WAL_ENABLED", "false"),
    );
    let http_address = server.http_address().expect("the HTTP endpoint listens");
    let before_setup = scrape(http_address);
    assert_eq!(before_setup.get("iggy_streams", &[]), 0.0);

    let client = root_client(&server).await;
    let stream_id = create_stream(&client, "observed").await;
    let topic = create_topic(&client, stream_id, "events", PARTITIONS).await;
    let topic_id = topic.id;
    let baseline = scrape(http_address);
    assert_eq!(
        baseline.get("iggy_metadata_log_appends_total", &[])
            - before_setup.get("iggy_metadata_log_appends_total", &[]),
        2.0,
        "create stream + create topic are two metadata log records"
    );
    assert!(
        baseline.get("iggy_metadata_log_bytes", &[])
            > before_setup.get("iggy_metadata_log_bytes", &[])
    );
    assert_eq!(
        baseline.sum("iggy_shard_forwards_total", &[("kind", "control")])
            - before_setup.sum("iggy_shard_forwards_total", &[("kind", "control")]),
        2.0,
        "both changes went to shard 0's control lane"
    );

    // Scrape continuously while the workload runs: every scrape is well-formed and counters
    // are monotonic. The workload starts after the first scrape and the scraper stops after a
    // later one, so at least one comparison spans the workload however fast it runs.
    let running = Arc::new(AtomicBool::new(true));
    let scraped = Arc::new(AtomicUsize::new(0));
    let scraper = {
        let running = running.clone();
        let scraped = scraped.clone();
        std::thread::spawn(move || {
            let mut previous = scrape(http_address);
            let mut scrapes = 1;
            scraped.store(scrapes, Ordering::Relaxed);
            while running.load(Ordering::Relaxed) {
                let current = scrape(http_address);
                for ((name, labels), value) in &previous.series {
                    if name.ends_with("_total") || name.ends_with("_count") {
                        let now = current
                            .series
                            .get(&(name.clone(), labels.clone()))
                            .unwrap_or_else(|| panic!("{name}{labels:?} disappeared"));
                        assert!(now >= value, "{name}{labels:?} went back: {value} -> {now}");
                    }
                }
                previous = current;
                scrapes += 1;
                scraped.store(scrapes, Ordering::Relaxed);
            }
            scrapes
        })
    };
    let scrapes_reach = |count: usize| {
        let scraped = scraped.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            while scraped.load(Ordering::Relaxed) < count {
                assert!(Instant::now() < deadline, "the scraper is stuck");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            scraped.load(Ordering::Relaxed)
        }
    };
    let scrapes_before_workload = scrapes_reach(1).await;

    let mut sent_bytes = 0u64;
    let mut sent_to = [0u64; PARTITIONS as usize];
    for batch in 0..BATCHES_PER_PARTITION {
        for partition in 0..PARTITIONS {
            let mut messages = test_messages(partition, batch * BATCH, BATCH);
            sent_bytes += messages
                .iter()
                .map(|message| {
                    MESSAGE_HEADER_BYTES
                        + message.payload.len() as u64
                        + message.user_headers.as_ref().map_or(0, |h| h.len() as u64)
                })
                .sum::<u64>();
            client
                .send_messages(
                    &id(stream_id),
                    &id(topic_id),
                    &Partitioning::partition_id(partition),
                    &mut messages,
                )
                .await
                .expect("send");
            sent_to[partition as usize] += BATCH;
        }
    }
    let sends = u64::from(PARTITIONS) * BATCHES_PER_PARTITION;
    let messages_total = sends * BATCH;
    let consumer = Consumer::new(id(7));
    let mut polled_total = 0u64;
    for partition in 0..PARTITIONS {
        let polled = client
            .poll_messages(
                &id(stream_id),
                &id(topic_id),
                Some(partition),
                &consumer,
                &PollingStrategy::offset(0),
                10_000,
                false,
            )
            .await
            .expect("poll");
        assert_eq!(polled.messages.len() as u64, sent_to[partition as usize]);
        polled_total += polled.messages.len() as u64;
    }
    let missing = client.delete_stream(&id(4242)).await;
    assert!(missing.is_err(), "stream 4242 does not exist");

    scrapes_reach(scrapes_before_workload + 1).await;
    running.store(false, Ordering::Relaxed);
    let scrapes = scraper.join().expect("scraper thread");
    assert!(scrapes >= 2, "scraped {scrapes} times during the workload");

    let after = scrape(http_address);
    let delta =
        |name: &str, labels: &[(&str, &str)]| after.sum(name, labels) - baseline.sum(name, labels);
    let requests = |command: &str, status: &str| {
        delta(
            "iggy_requests_total",
            &[("command", command), ("status", status)],
        )
    };
    assert_eq!(requests("SendMessages", "ok"), sends as f64);
    assert_eq!(requests("PollMessages", "ok"), f64::from(PARTITIONS));
    assert_eq!(requests("DeleteStream", "StreamIdNotFound"), 1.0);
    assert_eq!(
        delta(
            "iggy_request_duration_seconds_count",
            &[("command", "SendMessages")]
        ),
        sends as f64
    );
    assert_eq!(
        delta(
            "iggy_request_duration_seconds_count",
            &[("command", "PollMessages")]
        ),
        f64::from(PARTITIONS)
    );
    assert!(
        delta(
            "iggy_request_duration_seconds_sum",
            &[("command", "SendMessages")]
        ) > 0.0
    );

    assert_eq!(delta("iggy_messages_in_total", &[]), messages_total as f64);
    assert_eq!(
        delta("iggy_messages_in_bytes_total", &[]),
        sent_bytes as f64
    );
    assert_eq!(delta("iggy_messages_out_total", &[]), polled_total as f64);
    assert_eq!(
        delta("iggy_messages_out_bytes_total", &[]),
        sent_bytes as f64
    );
    assert_eq!(delta("iggy_appends_total", &[]), sends as f64);
    assert_eq!(
        delta("iggy_appended_messages_total", &[]),
        messages_total as f64
    );
    assert_eq!(delta("iggy_polls_total", &[]), f64::from(PARTITIONS));
    assert_eq!(
        delta("iggy_polled_messages_total", &[]),
        polled_total as f64
    );
    assert!(delta("iggy_received_bytes_total", &[("transport", "tcp")]) > sent_bytes as f64);
    assert!(delta("iggy_sent_bytes_total", &[("transport", "tcp")]) > sent_bytes as f64);

    // Default ack mode: written. Each append is acknowledged once its round is written, so all
    // its messages were counted by group commit by then.
    assert_eq!(
        delta(
            "iggy_append_ack_duration_seconds_count",
            &[("ack_mode", "written")]
        ),
        sends as f64
    );
    assert_eq!(
        delta(
            "iggy_append_ack_duration_seconds_count",
            &[("ack_mode", "fsync")]
        ),
        0.0
    );
    assert_eq!(
        delta("iggy_group_commit_messages_sum", &[]),
        messages_total as f64
    );
    let rounds = delta("iggy_group_commit_messages_count", &[]);
    assert!(
        (1.0..=sends as f64).contains(&rounds),
        "{rounds} write rounds for {sends} sequential appends"
    );
    assert!(delta("iggy_storage_written_bytes_total", &[]) >= sent_bytes as f64);

    // Every forward, and every connection handed to the shard owning its partitions, is
    // delivered by that shard's inbox; a single connection forwards at most every partition
    // operation it made.
    let forwards = delta("iggy_shard_forwards_total", &[("kind", "data")]);
    assert!(forwards <= (sends + u64::from(PARTITIONS)) as f64);
    let moves = delta("iggy_shard_connections_moved_total", &[]);
    assert_eq!(
        delta("iggy_shard_inbox_messages_total", &[]),
        forwards + moves
    );

    // Per-partition series (top N, default 10 >= 3 partitions): exact per partition.
    for partition in 0..PARTITIONS {
        let stream = stream_id.to_string();
        let topic = topic_id.to_string();
        let partition_label = partition.to_string();
        let labels = [
            ("stream_id", stream.as_str()),
            ("topic_id", topic.as_str()),
            ("partition_id", partition_label.as_str()),
        ];
        assert_eq!(
            after.get("iggy_partition_appended_messages_total", &labels),
            sent_to[partition as usize] as f64
        );
        assert_eq!(
            after.get("iggy_partition_appends_total", &labels),
            BATCHES_PER_PARTITION as f64
        );
        assert_eq!(after.get("iggy_partition_polls_total", &labels), 1.0);
        assert_eq!(
            after.get("iggy_partition_polled_messages_total", &labels),
            sent_to[partition as usize] as f64
        );
    }

    // Storage and GetStats gauges.
    assert_eq!(after.sum("iggy_partitions", &[]), f64::from(PARTITIONS));
    assert_eq!(after.sum("iggy_segments", &[]), f64::from(PARTITIONS));
    assert_eq!(
        after.sum("iggy_stored_messages", &[]),
        messages_total as f64
    );
    assert_eq!(after.sum("iggy_stored_bytes", &[]), sent_bytes as f64);
    assert_eq!(after.get("iggy_streams", &[]), 1.0);
    assert_eq!(after.get("iggy_topics", &[]), 1.0);
    assert_eq!(after.get("iggy_messages", &[]), messages_total as f64);
    assert_eq!(
        after.get("iggy_messages_size_bytes", &[]),
        sent_bytes as f64
    );
    assert_eq!(after.get("iggy_clients", &[]), 1.0);
    assert_eq!(after.sum("iggy_connections", &[("transport", "tcp")]), 1.0);
    // iggy_info carries the protocol version and the shards' I/O driver.
    let info: Vec<_> = after
        .series
        .iter()
        .filter(|((name, _), _)| name == "iggy_info")
        .collect();
    assert_eq!(info.len(), 1, "{info:?}");
    let ((_, labels), value) = info[0];
    assert_eq!(*value, 1.0);
    assert!(labels.contains(&("version".to_string(), "0.8.0".to_string())));
    assert!(
        labels
            .iter()
            .any(|(k, v)| k == "io_driver" && (v == "io_uring" || v == "polling")),
        "{labels:?}"
    );

    // io_uring counters per shard (Linux >= 5.18 prints them), process figures.
    for shard in ["0", "1"] {
        let submissions = after.get("iggy_io_uring_submissions_total", &[("shard", shard)]);
        assert!(
            submissions > 0.0,
            "shard {shard}: {submissions} submissions"
        );
        assert!(after.get("iggy_io_uring_completions_total", &[("shard", shard)]) > 0.0);
    }
    assert!(
        after.sum("iggy_io_uring_submissions_total", &[])
            > baseline.sum("iggy_io_uring_submissions_total", &[])
    );
    assert!(after.get("process_resident_memory_bytes", &[]) > 0.0);
    assert!(after.get("process_cpu_seconds_total", &[]) > 0.0);
    assert!(after.get("process_open_fds", &[]) > 0.0);
    assert!(after.has("iggy_buffer_pool_misses_total"));

    // The pool gauges are published every second: the partitions' owners have allocated.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = scrape(http_address);
        if now.sum("iggy_buffer_pool_allocated_bytes", &[]) > 0.0 {
            assert!(now.sum("iggy_buffer_pool_misses_total", &[]) > 0.0);
            break;
        }
        assert!(Instant::now() < deadline, "pool gauges never published");
        std::thread::sleep(Duration::from_millis(200));
    }

    // /stats is GetStats as JSON.
    let stats = client.get_stats().await.expect("GetStats");
    // Without credentials /stats is refused; root's (Basic "iggy:iggy") open it.
    let refused = http(http_address, "GET", "/stats");
    assert_eq!(refused.status, 401, "{}", refused.body);
    let wrong = http_with(
        http_address,
        "GET",
        "/stats",
        "Authorization: Basic aWdneTpub3BlCg==\r\n",
    );
    assert_eq!(wrong.status, 401, "wrong password");
    let response = http_with(
        http_address,
        "GET",
        "/stats",
        "Authorization: Basic aWdneTppZ2d5\r\n",
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.headers["content-type"], "application/json");
    let json: serde_json::Value = serde_json::from_str(&response.body).expect("JSON /stats");
    assert_eq!(json["process_id"], stats.process_id);
    assert_eq!(json["streams_count"], stats.streams_count);
    assert_eq!(json["topics_count"], stats.topics_count);
    assert_eq!(json["partitions_count"], stats.partitions_count);
    assert_eq!(json["segments_count"], stats.segments_count);
    assert_eq!(json["messages_count"], stats.messages_count);
    assert_eq!(
        json["messages_size_bytes"]
            .as_str()
            .and_then(|size| size.parse::<IggyByteSize>().ok())
            .map(|size| size.as_bytes_u64()),
        Some(stats.messages_size_bytes.as_bytes_u64())
    );
    assert_eq!(json["clients_count"], stats.clients_count);
    assert_eq!(json["consumer_groups_count"], stats.consumer_groups_count);
    assert_eq!(json["hostname"], stats.hostname.as_str());
    assert_eq!(json["kernel_version"], stats.kernel_version.as_str());
    assert_eq!(
        json["iggy_server_version"],
        stats.iggy_server_version.as_str()
    );
    assert_eq!(json["start_time"], stats.start_time.as_micros());
    // Sizes as upstream's HTTP API writes them: "34732 KiB", "0 B".
    assert_ne!(json["memory_usage"], "0 B");
    assert_ne!(json["total_disk_space"], "0 B");
    assert_eq!(json["messages_count"], messages_total);

    // /ping, unknown paths and methods.
    let ping = http(http_address, "GET", "/ping");
    assert_eq!((ping.status, ping.body.as_str()), (200, "pong"));
    assert_eq!(http(http_address, "GET", "/nope").status, 404);
    assert_eq!(http(http_address, "POST", "/metrics").status, 405);
    let head = http(http_address, "HEAD", "/metrics");
    assert_eq!((head.status, head.body.as_str()), (200, ""));
}
