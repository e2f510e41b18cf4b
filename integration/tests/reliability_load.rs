//! Load (issue 10): many concurrent logged-in connections producing and polling small batches,
//! and a metadata scale test (thousands of partitions, restart, start-up time).
//!
//! Environment:
//! - `RILL_LOAD_CONNECTIONS` (default 1000) and `RILL_LOAD_SECONDS` (default 20): the connection
//!   test's size and duration.
//! - `RILL_SCALE_FULL=1`: the metadata test creates 1000 topics x 10 partitions instead of the CI
//!   size; `RILL_SCALE_TOPICS` sets the topic count directly (10 partitions each).
//!
//! The two tests run one after the other (a lock), so their figures do not include each other's
//! load. Both print their figures; run with `--nocapture` to see them.

use bytes::{BufMut, Bytes};
use iggy::prelude::*;
use rill_integration::raw::{frame, name, numeric_identifier};
use rill_integration::sdk::{create_stream, create_topic, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One test at a time in this file.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|value| value.parse().ok())
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit (1000 client sockets need it where
/// the default soft limit is 1024); returns the new soft limit.
fn raise_own_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_cur
}

// ---------------------------------------------------------------------------------------------
// A minimal async raw client (tokio): one request at a time, as the protocol requires.
// ---------------------------------------------------------------------------------------------

/// How long one request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

struct Connection {
    stream: TcpStream,
    payload: Vec<u8>,
}

impl Connection {
    async fn connect(address: std::net::SocketAddr) -> Result<Connection, String> {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|error| format!("connect: {error}"))?;
        stream
            .set_nodelay(true)
            .map_err(|error| format!("nodelay: {error}"))?;
        Ok(Connection {
            stream,
            payload: Vec::new(),
        })
    }

    /// Sends one frame and reads its answer into `self.payload`; the status.
    async fn request(&mut self, bytes: &[u8]) -> Result<u32, String> {
        let exchange = async {
            self.stream.write_all(bytes).await?;
            let mut header = [0u8; 8];
            self.stream.read_exact(&mut header).await?;
            let status = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
            let length = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
            self.payload.resize(length as usize, 0);
            self.stream.read_exact(&mut self.payload).await?;
            Ok::<u32, std::io::Error>(status)
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Ok(Ok(status)) => Ok(status),
            Ok(Err(error)) => Err(format!("I/O: {error}")),
            Err(_) => Err(format!("no answer within {REQUEST_TIMEOUT:?}")),
        }
    }
}

/// SendMessages (101) of `count` messages with ids `first_id..` and 48-byte payloads derived
/// from the id, to partition `partition` of stream/topic 0 (protocol.md 6.4).
fn send_frame(stream: u32, partition: u32, first_id: u128, count: u32) -> Vec<u8> {
    let mut metadata = Vec::new();
    metadata.extend_from_slice(&numeric_identifier(stream));
    metadata.extend_from_slice(&numeric_identifier(0));
    metadata.extend_from_slice(&[2, 4]);
    metadata.extend_from_slice(&partition.to_le_bytes());
    metadata.extend_from_slice(&count.to_le_bytes());
    let mut messages = Vec::new();
    let mut index = Vec::new();
    for i in 0..count {
        let message_id = first_id + i as u128;
        let payload = payload_of(message_id);
        messages.put_u64_le(0); // checksum
        messages.put_u128_le(message_id);
        messages.put_u64_le(0); // offset
        messages.put_u64_le(0); // timestamp
        messages.put_u64_le(1); // origin timestamp
        messages.put_u32_le(0); // user headers
        messages.put_u32_le(payload.len() as u32);
        messages.put_u64_le(0); // reserved
        messages.extend_from_slice(&payload);
        index.put_u32_le(0);
        index.put_u32_le(messages.len() as u32);
        index.put_u64_le(0);
    }
    let mut body = Vec::new();
    body.put_u32_le(metadata.len() as u32);
    body.extend_from_slice(&metadata);
    body.extend_from_slice(&index);
    body.extend_from_slice(&messages);
    frame(101, &body)
}

/// 48 payload bytes derived from the message id.
fn payload_of(message_id: u128) -> Vec<u8> {
    let mut payload = Vec::with_capacity(48);
    for round in 0..3u128 {
        payload.extend_from_slice(&(message_id ^ (round << 120)).to_le_bytes());
    }
    payload
}

/// PollMessages (100): consumer 1, partition `partition` of stream/topic 0, offset strategy.
fn poll_frame(stream: u32, partition: u32, offset: u64, count: u32) -> Vec<u8> {
    let mut payload = vec![1u8];
    payload.extend_from_slice(&numeric_identifier(1));
    payload.extend_from_slice(&numeric_identifier(stream));
    payload.extend_from_slice(&numeric_identifier(0));
    payload.push(1);
    payload.extend_from_slice(&partition.to_le_bytes());
    payload.push(1);
    payload.extend_from_slice(&offset.to_le_bytes());
    payload.extend_from_slice(&count.to_le_bytes());
    payload.push(0);
    frame(100, &payload)
}

/// Checks a poll answer: partition, count, and each message's offset, id and payload.
fn check_polled(
    payload: &[u8],
    partition: u32,
    first_offset: u64,
    first_id: u128,
    count: u32,
) -> Result<(), String> {
    if payload.len() < 16 {
        return Err(format!("poll answer of {} bytes", payload.len()));
    }
    let answered_partition = u32::from_le_bytes(payload[0..4].try_into().expect("4"));
    let answered_count = u32::from_le_bytes(payload[12..16].try_into().expect("4"));
    if answered_partition != partition || answered_count != count {
        return Err(format!(
            "poll answered partition {answered_partition} count {answered_count}, expected {partition} / {count}"
        ));
    }
    let mut at = 16;
    for i in 0..count as usize {
        let header = payload
            .get(at..at + 64)
            .ok_or_else(|| format!("message {i} truncated"))?;
        let message_id = u128::from_le_bytes(header[8..24].try_into().expect("16"));
        let offset = u64::from_le_bytes(header[24..32].try_into().expect("8"));
        let headers_len = u32::from_le_bytes(header[48..52].try_into().expect("4")) as usize;
        let payload_len = u32::from_le_bytes(header[52..56].try_into().expect("4")) as usize;
        let expected_id = first_id + i as u128;
        if offset != first_offset + i as u64 || message_id != expected_id {
            return Err(format!(
                "message {i}: offset {offset} id {message_id}, expected {} / {expected_id}",
                first_offset + i as u64
            ));
        }
        let body = payload
            .get(at + 64..at + 64 + payload_len)
            .ok_or_else(|| format!("message {i} payload truncated"))?;
        if body != payload_of(expected_id).as_slice() {
            return Err(format!("message {i}: payload differs"));
        }
        at += 64 + payload_len + headers_len;
    }
    Ok(())
}

/// What one connection did.
#[derive(Default)]
struct ConnectionReport {
    latencies_us: Vec<u32>,
    errors: Vec<String>,
}

/// Connects, logs in with `token`, waits for `start`, then sends 4 messages to its own
/// partition and polls them back until `stop`.
async fn load_connection(
    address: std::net::SocketAddr,
    stream: u32,
    partition: u32,
    token: Arc<String>,
    login_gate: Arc<tokio::sync::Semaphore>,
    start: Arc<tokio::sync::Barrier>,
    stop: Arc<AtomicBool>,
) -> ConnectionReport {
    let mut report = ConnectionReport::default();
    let connected = async {
        let _permit = login_gate.acquire().await.expect("semaphore");
        let mut connection = Connection::connect(address).await?;
        match connection.request(&frame(44, &name(&token))).await? {
            0 => Ok(connection),
            status => Err(format!("token login answered {status}")),
        }
    }
    .await;
    start.wait().await;
    let mut connection = match connected {
        Ok(connection) => connection,
        Err(error) => {
            report.errors.push(error);
            return report;
        }
    };
    let mut offset = 0u64;
    let base_id = (partition as u128 + 1) << 64;
    while !stop.load(Ordering::Relaxed) {
        let first_id = base_id + offset as u128 + 1;
        let request = send_frame(stream, partition, first_id, 4);
        let started = Instant::now();
        match connection.request(&request).await {
            Ok(0) => {}
            Ok(status) => {
                report.errors.push(format!("send answered {status}"));
                break;
            }
            Err(error) => {
                report.errors.push(format!("send: {error}"));
                break;
            }
        }
        report
            .latencies_us
            .push(started.elapsed().as_micros().min(u32::MAX as u128) as u32);
        let request = poll_frame(stream, partition, offset, 4);
        let started = Instant::now();
        match connection.request(&request).await {
            Ok(0) => {
                if let Err(error) =
                    check_polled(&connection.payload, partition, offset, first_id, 4)
                {
                    report.errors.push(error);
                    break;
                }
            }
            Ok(status) => {
                report.errors.push(format!("poll answered {status}"));
                break;
            }
            Err(error) => {
                report.errors.push(format!("poll: {error}"));
                break;
            }
        }
        report
            .latencies_us
            .push(started.elapsed().as_micros().min(u32::MAX as u128) as u32);
        offset += 4;
    }
    report
}

fn percentile(sorted: &[u32], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    Duration::from_micros(sorted[index] as u64)
}

fn count_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_produce_and_poll_without_errors() {
    // Proves: RILL_LOAD_CONNECTIONS (default 1000) connections, all logged in at once (personal
    // access token) and each sending 4-message batches to its own partition and polling them
    // back for RILL_LOAD_SECONDS (default 20 s), all get every answer right (status 0, the exact
    // messages at the expected offsets) with no timeouts or resets; the server raised its
    // RLIMIT_NOFILE at start and says so in its log. Prints requests/s and latency percentiles.
    let _serial = SERIAL.lock().await;
    let connections = env_u64("RILL_LOAD_CONNECTIONS").unwrap_or(1000) as u32;
    let seconds = env_u64("RILL_LOAD_SECONDS").unwrap_or(20);
    let own_limit = raise_own_fd_limit();
    assert!(
        own_limit >= connections as u64 + 200,
        "this test process can open only {own_limit} files"
    );
    let server = TestServer::start(ServerOptions::new().env("IGGY_HTTP_ENABLED", "false"));
    let log = server.log();
    assert!(
        log.contains("file descriptor limit (RLIMIT_NOFILE) raised"),
        "the server did not log its file descriptor limit"
    );
    let pid = server.pid().expect("pid");

    let root = root_client(&server).await;
    let stream = create_stream(&root, "load").await;
    // One partition per connection, in one topic (at most 1000 partitions per request).
    assert!(
        (1..=1000).contains(&connections),
        "RILL_LOAD_CONNECTIONS must be 1..=1000"
    );
    let created = Instant::now();
    create_topic(&root, stream, "load-topic", connections).await;
    let created_in = created.elapsed();
    let token = Arc::new(
        root.create_personal_access_token("load-token", PersonalAccessTokenExpiry::NeverExpire)
            .await
            .expect("create token")
            .token,
    );

    let login_gate = Arc::new(tokio::sync::Semaphore::new(100));
    let start = Arc::new(tokio::sync::Barrier::new(connections as usize + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let login_started = Instant::now();
    let tasks: Vec<_> = (0..connections)
        .map(|partition| {
            tokio::spawn(load_connection(
                server.address(),
                stream,
                partition,
                token.clone(),
                login_gate.clone(),
                start.clone(),
                stop.clone(),
            ))
        })
        .collect();
    start.wait().await;
    let logged_in_after = login_started.elapsed();
    let server_fds = count_fds(pid);
    let run_started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    let mut idle_connections = 0;
    for task in tasks {
        let report = task.await.expect("connection task");
        if report.latencies_us.is_empty() {
            idle_connections += 1;
        }
        latencies.extend(report.latencies_us);
        errors.extend(report.errors);
    }
    let elapsed = run_started.elapsed();
    latencies.sort_unstable();
    let requests = latencies.len();
    println!(
        "load: {connections} connections ({created_in:?} to create {connections} partitions, all \
         logged in after {logged_in_after:?}, server holding {server_fds} fds), {requests} \
         requests in {elapsed:.1?} = {:.0} requests/s ({:.0} messages/s sent and polled back); \
         latency p50 {:?}, p99 {:?}, p99.9 {:?}, max {:?}; {} errors",
        requests as f64 / elapsed.as_secs_f64(),
        requests as f64 / 2.0 * 4.0 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 0.999),
        percentile(&latencies, 1.0),
        errors.len()
    );
    assert!(
        errors.is_empty(),
        "{} errors, first ones: {:?}",
        errors.len(),
        &errors[..errors.len().min(10)]
    );
    assert_eq!(
        idle_connections, 0,
        "connections that completed no request at all"
    );
    assert!(
        server_fds >= connections as usize,
        "the server holds {server_fds} fds for {connections} connections"
    );
    let stats = root.get_stats().await.expect("GetStats after the load");
    assert!(
        stats.messages_count >= requests as u64 / 2 * 4,
        "GetStats counts {} messages, {} were acknowledged",
        stats.messages_count,
        requests / 2 * 4
    );
}

/// The soft "Max open files" of process `pid`, from /proc/<pid>/limits.
fn server_fd_limit(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("Max open files line");
    line.split_whitespace()
        .nth(3)
        .and_then(|value| value.parse().ok())
        .expect("soft limit")
}

/// Bytes the data directory occupies on disk (allocated blocks, so preallocation shows).
fn disk_usage(path: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut allocated = 0;
    let mut files = 0;
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            allocated += metadata.blocks() * 512;
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                files += 1;
            }
        }
    }
    (allocated, files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_partitions_survive_a_restart_and_start_up_time_is_reported() {
    // Proves: TOPICS topics x 10 partitions (CI: 200 x 10; RILL_SCALE_FULL=1: 1000 x 10) are
    // created without preallocating segment space (the data directory stays under 64 KiB per
    // partition), survive a graceful restart with every topic and partition count intact, and
    // the restarted server answers GetStreams and accepts a message on the last partition of the
    // last topic. Prints creation time, disk use, server fds and the start-up times.
    let _serial = SERIAL.lock().await;
    let topics = env_u64("RILL_SCALE_TOPICS").unwrap_or(
        if std::env::var_os("RILL_SCALE_FULL").is_some_and(|value| value == "1") {
            1000
        } else {
            200
        },
    ) as u32;
    const PARTITIONS: u32 = 10;
    raise_own_fd_limit();
    let mut server = TestServer::start(ServerOptions::new().env("IGGY_HTTP_ENABLED", "false"));
    let pid = server.pid().expect("pid");
    // Every partition keeps its active segment's .log open (its .index only while sealing,
    // recovering or reading a sealed segment): 1 fd per partition.
    let total_partitions = topics * PARTITIONS;
    let fd_limit = server_fd_limit(pid);
    assert!(
        total_partitions as u64 + 200 <= fd_limit,
        "{total_partitions} partitions need about {} file descriptors (1 per partition), but the \
         server's RLIMIT_NOFILE is {fd_limit} (its hard limit here): raise the hard limit \
         (ulimit -Hn / LimitNOFILE=) or choose fewer topics with RILL_SCALE_TOPICS",
        total_partitions + 200
    );
    let root = root_client(&server).await;
    let stream = create_stream(&root, "scale").await;
    let created = Instant::now();
    // Four clients create topics concurrently (the control lane applies them one at a time).
    let mut creators = Vec::new();
    for creator in 0..4u32 {
        let connection_string = rill_integration::sdk::root_connection_string(&server);
        creators.push(tokio::spawn(async move {
            let client = IggyClient::from_connection_string(&connection_string).expect("client");
            client.connect().await.expect("connect");
            let mut topic = creator;
            while topic < topics {
                client
                    .create_topic(
                        &id(stream),
                        &format!("topic-{topic:04}"),
                        PARTITIONS,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
                    .unwrap_or_else(|error| panic!("create topic {topic}: {error}"));
                topic += 4;
            }
        }));
    }
    for creator in creators {
        creator.await.expect("creator task");
    }
    let created_in = created.elapsed();
    let details = root
        .get_stream(&id(stream))
        .await
        .expect("get stream")
        .expect("stream");
    assert_eq!(details.topics_count, topics);
    let (allocated, files) = disk_usage(&server.data_path());
    let fds = count_fds(pid);
    println!(
        "scale: {topics} topics x {PARTITIONS} partitions = {total_partitions} partitions created \
         in {created_in:.1?} ({:.0} partitions/s); data directory {:.1} MiB allocated in {files} \
         files; server holds {fds} fds",
        total_partitions as f64 / created_in.as_secs_f64(),
        allocated as f64 / (1024.0 * 1024.0)
    );
    assert!(
        fds < total_partitions as usize + 200,
        "{fds} fds for {total_partitions} partitions: more than one per partition"
    );
    assert!(
        allocated < total_partitions as u64 * 64 * 1024 + 64 * 1024 * 1024,
        "creating {total_partitions} partitions allocated {allocated} bytes: space is preallocated at creation"
    );
    drop(root);

    let stopping = Instant::now();
    let status = server.stop_within(Duration::from_secs(180));
    let stopped_in = stopping.elapsed();
    assert!(status.success(), "graceful stop");
    let started = Instant::now();
    server.start_again();
    let listening_after = started.elapsed();
    let client = root_client(&server).await;
    let streams = client
        .get_streams()
        .await
        .expect("GetStreams after restart");
    let answered_after = started.elapsed();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].topics_count, topics, "topics after restart");
    // The last partition of the last topic takes a message once the server is up.
    let last_topic = topics - 1;
    let mut messages = vec![
        IggyMessage::builder()
            .id(1)
            .payload(Bytes::from_static(b"after restart"))
            .build()
            .expect("message"),
    ];
    client
        .send_messages(
            &id(stream),
            &named(&format!("topic-{last_topic:04}")),
            &Partitioning::partition_id(PARTITIONS - 1),
            &mut messages,
        )
        .await
        .expect("send to the last partition after restart");
    let writable_after = started.elapsed();
    let restarted_fds = count_fds(server.pid().expect("pid"));
    println!(
        "scale: restart with {total_partitions} partitions: graceful stop took {stopped_in:.1?}; \
         TCP port accepting after {listening_after:?}, GetStreams answered after {answered_after:?}, last partition \
         writable after {writable_after:?}; server holds {restarted_fds} fds"
    );
    assert!(
        restarted_fds < total_partitions as usize + 200,
        "{restarted_fds} fds for {total_partitions} partitions after recovery: indexes stay open"
    );
    // Every topic kept its name and partition count (sampled: first, middle, last).
    for topic in [0, topics / 2, last_topic] {
        let details = client
            .get_topic(&id(stream), &named(&format!("topic-{topic:04}")))
            .await
            .expect("get topic")
            .expect("topic exists");
        assert_eq!(details.name, format!("topic-{topic:04}"));
        assert_eq!(details.partitions_count, PARTITIONS, "topic {topic}");
    }
    let details = client
        .get_stream(&id(stream))
        .await
        .expect("get stream")
        .expect("stream");
    let partitions: u32 = details.topics.iter().map(|t| t.partitions_count).sum();
    assert_eq!(partitions, total_partitions, "partitions after restart");
    server.stop_within(Duration::from_secs(180));
}
