//! The fuzzer and slow-drip peers running against a server while a well-behaved client works.

use crate::fuzzer::{CASE_NAMES, CASES, FuzzCounters, fuzz_worker, token_login_frame};
use crate::helpers::{
    MIB, RssSampler, closed_within, env_u64, mib, read_status, rss_bytes, well_behaved_client,
};
use crate::support;
use iggy::prelude::*;
use rill_integration::raw::frame;
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Sends `bytes` one at a time with `gap` between them. False if a write failed.
fn drip(stream: &mut TcpStream, bytes: &[u8], gap: Duration) -> bool {
    for byte in bytes {
        if stream.write_all(std::slice::from_ref(byte)).is_err() {
            return false;
        }
        std::thread::sleep(gap);
    }
    true
}

/// Slow-drip peers, run once each while the fuzzer runs: a login dripped byte by byte within
/// the read timeout is answered; a body dripped slower than the read timeout allows is cut off.
/// Returns a description of each failure.
fn slow_drip_cases(address: SocketAddr, token: &str, read_timeout: Duration) -> Vec<String> {
    let mut failures = Vec::new();
    // 1. Token login, 8 header bytes + ~70 body bytes at 20 ms each (~1.6 s < read timeout).
    let mut stream = TcpStream::connect(address).expect("connect drip");
    stream.set_nodelay(true).expect("nodelay");
    if !drip(
        &mut stream,
        &token_login_frame(token),
        Duration::from_millis(20),
    ) {
        failures.push("drip login: write failed".into());
    } else {
        match read_status(&mut stream, Duration::from_secs(10)) {
            Some(0) => {
                // And a dripped Ping on the logged-in session.
                if !drip(&mut stream, &frame(1, &[]), Duration::from_millis(50))
                    || read_status(&mut stream, Duration::from_secs(10)) != Some(0)
                {
                    failures.push("drip ping after drip login not answered with 0".into());
                }
            }
            other => failures.push(format!("drip login answered {other:?}")),
        }
    }
    // 2. A header announcing 100 bytes, then one byte every 500 ms: slower than the read
    //    timeout allows for the whole body, so the server must close the connection.
    let mut stream = TcpStream::connect(address).expect("connect drip");
    stream.set_nodelay(true).expect("nodelay");
    let started = Instant::now();
    let _ = stream.write_all(&frame(38, &[0u8; 100])[..8]);
    let mut closed = false;
    while started.elapsed() < read_timeout + Duration::from_secs(5) {
        if stream.write_all(&[0]).is_err() || closed_within(&stream, Duration::from_millis(500)) {
            closed = true;
            break;
        }
    }
    let took = started.elapsed();
    if !closed {
        failures.push(format!(
            "a body dripped slower than the read timeout ({read_timeout:?}) was not cut off after {took:?}"
        ));
    } else if took + Duration::from_millis(600) < read_timeout {
        failures.push(format!(
            "a dripped body was cut off after {took:?}, before the read timeout ({read_timeout:?})"
        ));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_fuzzer_does_not_disturb_a_well_behaved_client() {
    // Proves: for a bounded time (RILL_FUZZ_SECONDS, default 20 s) four fuzzer threads open
    // connection after connection, before and after login, and send mutated valid commands,
    // garbage payloads under valid headers, random command codes, lengths below 4, lengths
    // shorter and longer than the bytes sent, truncated frames, huge declared lengths (up to
    // u32::MAX, and exactly at the 10 MiB / max_send_messages_size limits with almost no body),
    // pure garbage and 1-2 MiB garbage bodies; slow-drip peers drip a login byte by byte and a
    // body slower than the read timeout. Meanwhile a well-behaved official client sends and
    // polls back batches and sees no error and no wrong message; every well-formed fuzz frame is
    // answered (or its connection closed), no error frame carries a payload, the server's RSS
    // stays within 256 MiB of where it started, and at the end the server is alive, answers,
    // holds exactly what the good client sent, and has logged no panic.
    let seconds = env_u64("RILL_FUZZ_SECONDS").unwrap_or(20);
    let seed = env_u64("RILL_FUZZ_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos() as u64
    });
    println!("network fuzzer: seed {seed} (RILL_FUZZ_SEED={seed} replays it), {seconds} s");
    let read_timeout = Duration::from_secs(3);
    let max_send_bytes = 8 * MIB as u32;
    let server = Arc::new(TestServer::start(
        ServerOptions::new()
            // Mutated logins from one address fail by the thousand: with throttling on, the
            // delays they earn (up to limits.login.max_delay) would outlast ANSWER_DEADLINE.
            // Throttling has its own tests (security_limits.rs).
            .env("IGGY_LIMITS_LOGIN_FAILURES_BEFORE_DELAY", "4000000000")
            .env("IGGY_TCP_READ_TIMEOUT", "3 s")
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "10 s")
            .env("IGGY_TCP_MAX_SEND_MESSAGES_SIZE", "8 MiB")
            .env("IGGY_HTTP_ENABLED", "false"),
    ));
    let pid = server.pid().expect("server pid");

    // Stream 0 is the fuzzer's playground (it may send to and poll it); stream 1 belongs to the
    // well-behaved client. The fuzz user can touch nothing but stream 0 and cannot create
    // streams, topics, partitions or users, so the fuzzer cannot change the good client's data.
    let root = root_client(&server).await;
    let fuzz_stream = create_stream(&root, "fuzz").await;
    assert_eq!(fuzz_stream, 0);
    create_topic(&root, fuzz_stream, "fuzz-topic", 1).await;
    let good_stream = create_stream(&root, "good").await;
    create_topic(&root, good_stream, "good-topic", 1).await;
    let mut streams = std::collections::BTreeMap::new();
    streams.insert(
        fuzz_stream as usize,
        StreamPermissions {
            read_stream: true,
            read_topics: true,
            poll_messages: true,
            send_messages: true,
            ..StreamPermissions::default()
        },
    );
    root.create_user(
        "fuzzer",
        "fuzzer-password",
        UserStatus::Active,
        Some(Permissions {
            global: GlobalPermissions::default(),
            streams: Some(streams),
        }),
    )
    .await
    .expect("create fuzz user");
    let fuzz_user = support::login_client(&server, "fuzzer", "fuzzer-password").await;
    let token = fuzz_user
        .create_personal_access_token("fuzz-token", PersonalAccessTokenExpiry::NeverExpire)
        .await
        .expect("create fuzz token")
        .token;

    let stop_good = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(well_behaved_client(
        server.clone(),
        good_stream,
        7,
        stop_good.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_bytes(pid);
    let sampler = RssSampler::start(pid);

    let counters = Arc::new(FuzzCounters::default());
    let case_counts: Arc<[AtomicU64; CASES]> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (counters, case_counts, token) = (counters.clone(), case_counts.clone(), token.clone());
        let address = server.address();
        workers.push(std::thread::spawn(move || {
            fuzz_worker(
                worker,
                seed,
                address,
                token,
                deadline,
                counters,
                case_counts,
                max_send_bytes,
            )
        }));
    }
    let drip_failures = {
        let (address, token) = (server.address(), token.clone());
        tokio::task::spawn_blocking(move || slow_drip_cases(address, &token, read_timeout))
    };
    let drip_failures = drip_failures.await.expect("drip thread");
    for worker in workers {
        tokio::task::spawn_blocking(move || worker.join())
            .await
            .expect("join")
            .unwrap_or_else(|_| panic!("fuzz worker panicked (seed {seed})"));
    }
    stop_good.store(true, Ordering::Relaxed);
    let good = good.await.expect("good client task");
    let rss_max = sampler.max();
    drop(sampler);
    // Connections the fuzzer left are gone; give the allocator a moment to settle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss_bytes(pid);

    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    println!(
        "network fuzzer: {} connections ({} logged in), {} frames, {:.1} MiB sent, {} responses, \
         {} closed by the server, {} unanswered, {} malformed responses",
        load(&counters.connections),
        load(&counters.logged_in),
        load(&counters.frames),
        mib(load(&counters.bytes)),
        load(&counters.responses),
        load(&counters.closed_by_server),
        load(&counters.unanswered),
        load(&counters.malformed_responses),
    );
    for (name, count) in CASE_NAMES.iter().zip(case_counts.iter()) {
        println!("  case {name}: {}", load(count));
    }
    println!(
        "well-behaved client: {} rounds, {} messages, slowest round {:?}, {} errors",
        good.rounds,
        good.messages,
        good.max_round,
        good.errors.len()
    );
    println!(
        "server RSS: {:.1} MiB before, {:.1} MiB max during, {:.1} MiB after",
        mib(rss_before),
        mib(rss_max),
        mib(rss_after)
    );

    assert!(
        good.errors.is_empty(),
        "the well-behaved client saw errors (seed {seed}): {:?}",
        good.errors
    );
    assert!(
        good.rounds >= 5,
        "the well-behaved client was starved: {} rounds",
        good.rounds
    );
    assert!(
        drip_failures.is_empty(),
        "slow-drip cases failed: {drip_failures:?}"
    );
    assert!(
        load(&counters.frames) >= 200,
        "the fuzzer sent too little to mean anything"
    );
    assert_eq!(
        load(&counters.unanswered),
        0,
        "well-formed frames went unanswered (seed {seed})"
    );
    assert_eq!(
        load(&counters.malformed_responses),
        0,
        "error responses carried a payload (seed {seed})"
    );
    assert!(
        rss_max < rss_before + 256 * MIB,
        "server RSS grew from {:.1} MiB to {:.1} MiB under fuzzing",
        mib(rss_before),
        mib(rss_max)
    );

    // Still alive, still answering, still holding exactly what the good client sent.
    let mut server = Arc::into_inner(server).expect("only the test holds the server");
    assert!(server.is_running(), "iggy-server died (seed {seed})");
    let streams = root.get_streams().await.expect("GetStreams after fuzzing");
    assert!(streams.iter().any(|stream| stream.name == "good"));
    let polled =
        rill_integration::fixtures::poll_partition(&root, &id(good_stream), &id(0), 0, 1000).await;
    assert_eq!(polled.len() as u64, good.messages, "good partition content");
    for (offset, message) in polled.iter().enumerate() {
        let sequence = offset as u64;
        assert_eq!(
            message.header.id,
            rill_integration::fixtures::message_id(7, sequence)
        );
    }
    let log = server.log();
    assert!(
        !log.contains("panicked"),
        "the server log shows a panic (seed {seed})"
    );
    server.stop();
}
