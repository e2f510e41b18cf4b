//! The exposition of a known scrape: every series family, labels, histograms, strict format.

use super::*;
use crate::metrics::{Metrics, command_slot};
use rill_core::ErrorCode;
use rill_core::requests::CommandCode;
use std::time::Duration;

fn activity(partition_id: u32, appended: u64, polled: u64) -> PartitionActivity {
    PartitionActivity {
        key: PartitionKey::new(1, 1, partition_id),
        appends: appended.min(1),
        appended_messages: appended,
        deduplicated_messages: 0,
        polls: polled.min(1),
        polled_messages: polled,
    }
}

#[test]
fn top_partitions_keeps_the_busiest_in_order() {
    let all = vec![
        activity(1, 10, 0),
        activity(2, 0, 0),
        activity(3, 5, 50),
        activity(4, 20, 0),
        activity(5, 20, 0),
    ];
    let top = top_partitions(all.clone(), 3);
    let ids: Vec<u32> = top.iter().map(|p| p.key.partition_id).collect();
    assert_eq!(ids, [3, 4, 5]);
    assert!(top_partitions(all.clone(), 0).is_empty());
    // Idle partitions are never listed.
    assert_eq!(top_partitions(all, 10).len(), 4);
}

#[test]
fn ring_fdinfo_parses_heads_and_tails() {
    let text = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t1057\nSqMask:\t0xfff\nSqHead:\t4242\nSqTail:\t4243\nCachedSqHead:\t4243\nCqMask:\t0x1fff\nCqHead:\t4200\nCqTail:\t4241\nCachedCqTail:\t4241\n";
    assert_eq!(parse_ring_fdinfo(text), Some((4242, 4241)));
    assert_eq!(parse_ring_fdinfo("pos:\t0\nflags:\t02\n"), None);
}

#[test]
fn ring_counters_survive_the_u32_wrap() {
    let mut tracker = IoUringTracker::default();
    assert_eq!(
        tracker.update(0, 7, u32::MAX - 1, 10),
        RingCounters {
            submissions: u64::from(u32::MAX - 1),
            completions: 10
        }
    );
    let after = tracker.update(0, 7, 3, 20);
    assert_eq!(after.submissions, u64::from(u32::MAX) + 4);
    assert_eq!(after.completions, 20);
    // A new ring (another fd) starts again from its own counters.
    assert_eq!(tracker.update(0, 9, 5, 5).submissions, 5);
}

fn scrape() -> Scrape {
    let metrics = Metrics::new(2);
    let ping = command_slot(CommandCode::Ping.code());
    metrics.shards[0].record_request(ping, None, Duration::from_micros(30), false);
    metrics.shards[1].record_request(
        ping,
        Some(ErrorCode::Unauthenticated),
        Duration::from_micros(30),
        false,
    );
    metrics.shards[1].messages_in.add(3);
    metrics.shards[1]
        .write_rounds
        .add_bucketed(&[1, 1, 0, 0, 1], 19);
    Scrape {
        metrics: metrics.snapshot(),
        stats: Stats {
            process_id: 1,
            cpu_usage: 1.5,
            total_cpu_usage: 0.0,
            memory_usage: 0,
            total_memory: 0,
            available_memory: 0,
            run_time: 0,
            start_time: 0,
            read_bytes: 0,
            written_bytes: 0,
            messages_size_bytes: 640,
            streams_count: 1,
            topics_count: 2,
            partitions_count: 3,
            segments_count: 3,
            messages_count: 10,
            clients_count: 1,
            consumer_groups_count: 0,
            hostname: String::new(),
            os_name: String::new(),
            os_version: String::new(),
            kernel_version: String::new(),
            iggy_server_version: "0.8.0".into(),
            iggy_server_semver: 8000,
            cache_metrics: Vec::new(),
            threads_count: 4,
            free_disk_space: 0,
            total_disk_space: 0,
        },
        storage: vec![ShardStorage::default(); 2],
        top_partitions: vec![activity(7, 3, 1)],
        rings: vec![
            Some(RingCounters {
                submissions: 5,
                completions: 4,
            }),
            None,
        ],
        process: ProcessFigures::default(),
        io_driver: "io_uring",
    }
}

#[test]
fn exposition_has_the_expected_series() {
    let text = encode(scrape());
    for line in [
        "iggy_requests_total{command=\"Ping\",status=\"ok\"} 1",
        "iggy_requests_total{command=\"Ping\",status=\"Unauthenticated\"} 1",
        "iggy_request_duration_seconds_count{command=\"Ping\"} 2",
        "iggy_messages_in_total{shard=\"1\"} 3",
        "iggy_group_commit_messages_count 3",
        "iggy_group_commit_messages_sum 19.0",
        "iggy_group_commit_messages_bucket{le=\"1.0\"} 1",
        "iggy_group_commit_messages_bucket{le=\"2.0\"} 2",
        "iggy_group_commit_messages_bucket{le=\"+Inf\"} 3",
        "iggy_io_uring_submissions_total{shard=\"0\"} 5",
        "iggy_partition_appended_messages_total{stream_id=\"1\",topic_id=\"1\",partition_id=\"7\"} 3",
        "iggy_streams 1",
        "iggy_messages 10",
        "iggy_info{version=\"0.8.0\",io_driver=\"io_uring\"} 1",
    ] {
        assert!(
            text.lines().any(|candidate| candidate == line),
            "missing `{line}` in:\n{text}"
        );
    }
    assert!(!text.contains("iggy_io_uring_submissions_total{shard=\"1\"}"));
    assert!(text.ends_with("# EOF\n"));
    // Every family is declared once with HELP and TYPE.
    let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
    assert_eq!(types, helps);
}
