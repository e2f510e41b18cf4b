//! Observability end to end: `/metrics` scraped during a workload moves by exactly what the
//! workload did and always passes a strict exposition check (and parses with
//! `prometheus-parse`); `/stats` carries the GetStats figures; `/ping`; JSON log lines are valid
//! JSON with the shard id; log files rotate; slow requests are logged with command and timing.

use iggy::prelude::*;
use rill_integration::fixtures::{MESSAGE_HEADER_BYTES, test_messages};
use rill_integration::http::{http, http_with};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::{BTreeMap, HashMap, HashSet};

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

fn free_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("free port")
}

// ---------------------------------------------------------------------------------------------
// A strict check of the text exposition (OpenMetrics text as prometheus-client writes it, which
// Prometheus reads), then the values through prometheus-parse.
// ---------------------------------------------------------------------------------------------

/// A sample's name and its labels, sorted.
type Key = (String, Vec<(String, String)>);
/// Series -> value.
type Series = BTreeMap<Key, f64>;

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `{a="x",b="y"}` (escapes \\ \" \n) and the rest of the line after it.
fn parse_labels(text: &str, line: &str) -> (Vec<(String, String)>, String) {
    let mut labels = Vec::new();
    let mut chars = text.chars().peekable();
    assert_eq!(chars.next(), Some('{'), "labels must open with {{: {line}");
    if chars.peek() == Some(&'}') {
        chars.next();
        return (labels, chars.collect());
    }
    loop {
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert!(is_label_name(&name), "bad label name {name:?} in {line}");
        assert_eq!(
            chars.next(),
            Some('"'),
            "label value must be quoted: {line}"
        );
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("unterminated label value in {line}"),
            }
        }
        assert!(
            labels.iter().all(|(existing, _)| existing != &name),
            "duplicate label {name} in {line}"
        );
        labels.push((name, value));
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            other => panic!("expected , or }} after a label, got {other:?} in {line}"),
        }
    }
    (labels, chars.collect())
}

fn parse_value(text: &str, line: &str) -> f64 {
    match text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        other => other
            .parse()
            .unwrap_or_else(|_| panic!("bad sample value {other:?} in {line}")),
    }
}

/// Checks the exposition strictly and returns every sample. Rules: `# EOF` exactly once, last;
/// each family has one HELP and one TYPE before its samples and appears once; sample names
/// are the family name plus the suffixes its type allows; label names and escapes are valid;
/// values are numbers; no series twice; counters are non-negative; every histogram's buckets
/// are cumulative, ascending, end with +Inf, and +Inf equals `_count`.
fn check_exposition(text: &str) -> Series {
    assert!(text.ends_with("# EOF\n"), "exposition must end with # EOF");
    let body = &text[..text.len() - "# EOF\n".len()];
    assert!(!body.contains("# EOF"), "# EOF must appear once");
    let mut families: HashMap<String, String> = HashMap::new();
    let mut helped: HashSet<String> = HashSet::new();
    let mut current: Option<(String, String)> = None;
    let mut series = Series::new();
    // (family, labels without le) -> [(le, cumulative count)]
    let mut buckets: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(is_metric_name(name), "bad family name in {line}");
            assert!(
                helped.insert(name.to_string()),
                "family {name} described twice"
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(
                ["counter", "gauge", "histogram", "info", "unknown"].contains(&kind),
                "unknown type in {line}"
            );
            assert!(helped.contains(name), "TYPE before HELP for {name}");
            assert!(
                families
                    .insert(name.to_string(), kind.to_string())
                    .is_none(),
                "family {name} declared twice"
            );
            current = Some((name.to_string(), kind.to_string()));
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line:?}");
        assert!(!line.is_empty(), "empty line in the exposition");
        let (family, kind) = current
            .as_ref()
            .unwrap_or_else(|| panic!("sample before any TYPE: {line}"));
        let name_end = line.find(['{', ' ']).expect("sample value");
        let name = &line[..name_end];
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..], line)
        } else {
            (Vec::new(), line[name_end..].to_string())
        };
        let value_text = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("missing space before the value: {line}"));
        assert!(
            !value_text.contains(' '),
            "timestamps are not expected: {line}"
        );
        let value = parse_value(value_text, line);
        let suffix = name
            .strip_prefix(family.as_str())
            .unwrap_or_else(|| panic!("sample {name} outside its family {family}"));
        let allowed: &[&str] = match kind.as_str() {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            "info" => &["_info"],
            _ => &[""],
        };
        assert!(
            allowed.contains(&suffix),
            "sample {name} is not allowed in {kind} family {family}"
        );
        if kind == "counter" {
            assert!(value >= 0.0, "negative counter: {line}");
        }
        let mut sorted = labels.clone();
        sorted.sort();
        if suffix == "_bucket" {
            let le = labels
                .iter()
                .find(|(name, _)| name == "le")
                .map(|(_, value)| parse_value(value, line))
                .unwrap_or_else(|| panic!("bucket without le: {line}"));
            let others: Vec<_> = sorted.iter().filter(|(n, _)| n != "le").cloned().collect();
            buckets
                .entry((family.clone(), others))
                .or_default()
                .push((le, value));
        }
        assert!(
            series.insert((name.to_string(), sorted), value).is_none(),
            "series twice: {line}"
        );
    }
    for ((family, labels), list) in &buckets {
        assert!(
            list.windows(2)
                .all(|pair| pair[0].0 < pair[1].0 && pair[0].1 <= pair[1].1),
            "{family}{labels:?}: buckets must ascend and be cumulative: {list:?}"
        );
        let (last_le, last_count) = *list.last().unwrap();
        assert_eq!(last_le, f64::INFINITY, "{family}: last bucket must be +Inf");
        let count = series[&(format!("{family}_count"), labels.clone())];
        assert_eq!(
            last_count, count,
            "{family}{labels:?}: +Inf bucket != _count"
        );
    }
    series
}

/// A parsed scrape: the strict check's samples, cross-checked against prometheus-parse.
struct Metrics {
    series: Series,
}

impl Metrics {
    fn parse(text: &str) -> Metrics {
        let series = check_exposition(text);
        let parsed = prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_string())))
            .expect("prometheus-parse reads the exposition");
        // Every plain sample prometheus-parse reads has the value the strict check read.
        for sample in &parsed.samples {
            let value = match sample.value {
                prometheus_parse::Value::Counter(value)
                | prometheus_parse::Value::Gauge(value)
                | prometheus_parse::Value::Untyped(value) => value,
                prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => {
                    continue;
                }
            };
            let mut labels: Vec<(String, String)> = sample
                .labels
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            labels.sort();
            assert_eq!(
                series.get(&(sample.metric.clone(), labels.clone())),
                Some(&value),
                "prometheus-parse disagrees on {}{labels:?}",
                sample.metric
            );
        }
        // One histogram value per histogram series (each has exactly one `_count`).
        let histograms = parsed
            .samples
            .iter()
            .filter(|sample| matches!(sample.value, prometheus_parse::Value::Histogram(_)))
            .count();
        let counts = series
            .keys()
            .filter(|(name, _)| name.ends_with("_count"))
            .count();
        assert_eq!(
            histograms, counts,
            "histogram series seen by prometheus-parse"
        );
        Metrics { series }
    }

    /// Sum of the samples named `name` whose labels include `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.series
            .iter()
            .filter(|((sample, sample_labels), _)| {
                sample == name
                    && labels.iter().all(|(key, value)| {
                        sample_labels.iter().any(|(k, v)| k == key && v == value)
                    })
            })
            .map(|(_, value)| value)
            .sum()
    }

    fn has(&self, name: &str) -> bool {
        self.series.keys().any(|(sample, _)| sample == name)
    }

    /// The value of the one series `name` with exactly `labels`.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut sorted: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        sorted.sort();
        *self
            .series
            .get(&(name.to_string(), sorted))
            .unwrap_or_else(|| panic!("no series {name}{labels:?}"))
    }
}

fn scrape(address: SocketAddr) -> Metrics {
    let response = http(address, "GET", "/metrics");
    assert_eq!(response.status, 200);
    assert!(
        response.headers["content-type"].starts_with("application/openmetrics-text"),
        "{:?}",
        response.headers
    );
    Metrics::parse(&response.body)
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

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
    let server = TestServer::start(
        ServerOptions::new()
            .shards(2)
            .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0"),
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

fn json_lines(text: &str, what: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|line| !line.starts_with("===== rill-integration"))
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|error| panic!("{what}: not JSON ({error}): {line}"))
        })
        .collect()
}

#[tokio::test]
async fn json_logs_carry_shard_ids_slow_requests_and_rotate() {
    // Proves: with logging.format = json every line on stdout and in the log files is one JSON
    // object; lines from shard threads carry shard_id; a request over the slow threshold is
    // logged at WARN with its command, status and duration; the log file rotates by size and
    // keeps at most max_files rotated files; with http.enabled = false nothing listens. How:
    // 2 shards, threshold 0 ms (every request is slow), 8 KiB files, 2 kept, a burst of pings.
    const PINGS: usize = 200;
    let http_address = free_address();
    let mut server = TestServer::start(
        ServerOptions::new()
            .shards(2)
            .env("IGGY_HTTP_ENABLED", "false")
            .env("IGGY_HTTP_ADDRESS", &http_address.to_string())
            .env("IGGY_LOGGING_FORMAT", "json")
            .env("IGGY_LOGGING_SLOW_REQUEST_THRESHOLD", "0 ms")
            .env("IGGY_LOGGING_FILE_ENABLED", "true")
            .env("IGGY_LOGGING_FILE_MAX_SIZE", "8 KiB")
            .env("IGGY_LOGGING_FILE_MAX_FILES", "2"),
    );
    assert!(
        TcpStream::connect_timeout(&http_address, Duration::from_millis(300)).is_err(),
        "http.enabled = false must not listen"
    );
    let client = root_client(&server).await;
    let stream_id = create_stream(&client, "logged").await;
    assert!(client.get_stream(&id(stream_id)).await.unwrap().is_some());
    assert!(client.delete_stream(&id(4242)).await.is_err());
    for _ in 0..PINGS {
        client.ping().await.expect("ping");
    }
    drop(client);
    let status = server.stop();
    assert!(status.success(), "clean stop");

    let stdout = json_lines(&server.log(), "stdout");
    assert!(
        stdout.iter().all(|line| line["timestamp"].is_string()
            && line["level"].is_string()
            && line["message"].is_string()),
        "every line has timestamp, level and message"
    );
    let shard_lines: Vec<_> = stdout
        .iter()
        .filter(|line| {
            line["thread"]
                .as_str()
                .is_some_and(|t| t.starts_with("shard-"))
        })
        .collect();
    assert!(!shard_lines.is_empty());
    for line in &shard_lines {
        let thread = line["thread"].as_str().unwrap();
        assert_eq!(
            line["shard_id"]
                .as_u64()
                .map(|id| format!("shard-{id}"))
                .as_deref(),
            Some(thread),
            "shard lines carry their shard id: {line}"
        );
    }
    let started: HashSet<u64> = stdout
        .iter()
        .filter(|line| line["message"] == "shard started")
        .map(|line| line["shard_id"].as_u64().expect("shard_id"))
        .collect();
    assert_eq!(started, HashSet::from([0, 1]));

    let slow: Vec<_> = stdout
        .iter()
        .filter(|line| line["message"] == "slow request")
        .collect();
    let slow_of = |command: &str, status: &str| {
        slow.iter()
            .filter(|line| {
                line["fields"]["command"] == command && line["fields"]["status"] == status
            })
            .count()
    };
    assert!(
        slow_of("Ping", "ok") >= PINGS,
        "every ping was slow at 0 ms"
    );
    assert_eq!(slow_of("CreateStream", "ok"), 1);
    assert_eq!(slow_of("GetStream", "ok"), 1);
    assert_eq!(slow_of("DeleteStream", "StreamIdNotFound"), 1);
    for line in &slow {
        assert_eq!(line["level"], "WARN");
        assert!(line["fields"]["duration_ms"].as_f64().is_some(), "{line}");
        assert!(line["shard_id"].as_u64().is_some(), "{line}");
    }

    // Files: the current one and at most 2 rotated ones, each at most 8 KiB, all JSON lines,
    // together holding the end of what stdout got.
    let directory = server.data_path().join("logs");
    let mut names: Vec<String> = std::fs::read_dir(&directory)
        .expect("log directory")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["iggy-server.log", "iggy-server.log.1", "iggy-server.log.2"],
        "rotation keeps the current file and 2 rotated ones"
    );
    let mut file_lines = Vec::new();
    for name in ["iggy-server.log.2", "iggy-server.log.1", "iggy-server.log"] {
        let text = std::fs::read_to_string(directory.join(name)).unwrap();
        assert!(text.len() <= 8 * 1024, "{name} is {} bytes", text.len());
        file_lines.extend(json_lines(&text, name));
    }
    let last = stdout.last().unwrap();
    assert_eq!(
        file_lines.last(),
        Some(last),
        "the files end where stdout ends"
    );
    assert!(
        file_lines.len() < stdout.len(),
        "older lines were rotated away"
    );
}
