//! Slow and abusive clients: connections that never read, never send or send half a header.

use crate::helpers::{
    MIB, RssSampler, closed_within, env_u64, mib, read_status, rss_bytes, well_behaved_client,
};
use iggy::prelude::*;
use rill_integration::raw::{frame, login_payload};
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// PollMessages (100) for partition 0 of stream/topic 0, consumer 1, from offset 0.
fn poll_frame(stream: u32, count: u32) -> Vec<u8> {
    let mut payload = vec![1u8, 1, 4];
    payload.extend_from_slice(&1u32.to_le_bytes()); // consumer 1
    payload.extend_from_slice(&[1, 4]);
    payload.extend_from_slice(&stream.to_le_bytes());
    payload.extend_from_slice(&[1, 4]);
    payload.extend_from_slice(&0u32.to_le_bytes()); // topic 0
    payload.push(1);
    payload.extend_from_slice(&0u32.to_le_bytes()); // partition 0
    payload.push(1); // strategy: offset
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&count.to_le_bytes());
    payload.push(0); // no auto-commit
    frame(100, &payload)
}

/// Connects and logs in as root with a raw login frame.
fn raw_root_login(address: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
        .write_all(&frame(38, &login_payload("iggy", "iggy")))
        .expect("send login");
    assert_eq!(
        read_status(&mut stream, Duration::from_secs(30)),
        Some(0),
        "raw root login"
    );
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_or_never_send_neither_grow_memory_nor_starve_others() {
    // Proves: (1) 8 logged-in connections that pipeline 100 large polls each (~3 MiB answers,
    // ~2.4 GiB requested in all) and never read a byte make the server hold at most about one
    // answer per connection: its RSS grows by less than 256 MiB; (2) 200 connections that never
    // send and 20 that send 3 bytes of a header are still open after 1 s and closed by the server
    // once `tcp.unauthenticated_timeout` (IGGY_TCP_UNAUTHENTICATED_TIMEOUT, here 2 s) passes,
    // while 10 logged-in idle connections stay open and answer Ping; (3) meanwhile a
    // well-behaved client keeps sending and polling with no error.
    let unauthenticated_timeout = Duration::from_secs(2);
    let server = Arc::new(TestServer::start(
        ServerOptions::new()
            .env("IGGY_TCP_UNAUTHENTICATED_TIMEOUT", "2 s")
            .env("IGGY_HTTP_ENABLED", "false"),
    ));
    let pid = server.pid().expect("server pid");
    let address = server.address();
    let root = root_client(&server).await;
    let big_stream = create_stream(&root, "big").await;
    create_topic(&root, big_stream, "big-topic", 1).await;
    let good_stream = create_stream(&root, "good").await;
    create_topic(&root, good_stream, "good-topic", 1).await;
    // 200 messages of 16 KiB: a poll of 200 answers ~3.2 MiB.
    for batch in 0..4u128 {
        let mut messages: Vec<IggyMessage> = (0..50u128)
            .map(|i| {
                IggyMessage::builder()
                    .id(batch * 50 + i + 1)
                    .payload(bytes::Bytes::from(vec![b'x'; 16 * 1024]))
                    .build()
                    .expect("message")
            })
            .collect();
        root.send_messages(
            &id(big_stream),
            &id(0),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .expect("fill big partition");
    }

    let stop_good = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(well_behaved_client(
        server.clone(),
        good_stream,
        9,
        stop_good.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = rss_bytes(pid);
    let sampler = RssSampler::start(pid);

    // (1) Non-readers: write pipelined polls until the write blocks for 2 s (the server stopped
    // reading because its answer cannot be sent) or 100 are written; never read.
    let non_reader_count = env_u64("RILL_NON_READERS").unwrap_or(8);
    let non_readers: Vec<_> = (0..non_reader_count)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = raw_root_login(address);
                stream
                    .set_write_timeout(Some(Duration::from_secs(2)))
                    .expect("write timeout");
                let request = poll_frame(big_stream, 200);
                let mut written = 0u32;
                while written < 100 && stream.write_all(&request).is_ok() {
                    written += 1;
                }
                (stream, written)
            })
        })
        .collect();

    // (2) Silent and half-header connections; then (after checking they are still open well
    // before the timeout) logged-in idle ones, whose logins take a while.
    let opened = Instant::now();
    let silent: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(address).expect("connect silent"))
        .collect();
    let partial: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut stream = TcpStream::connect(address).expect("connect partial");
            stream.write_all(&[8, 0, 0]).expect("partial header");
            stream
        })
        .collect();
    let opened_in = opened.elapsed();
    // Before the timeout: still open (sampled; a read that times out means open).
    let early_closed = silent
        .iter()
        .chain(partial.iter())
        .step_by(11)
        .filter(|stream| closed_within(stream, Duration::from_millis(20)))
        .count();
    let early_checked_after = opened.elapsed();
    let mut idle_logged_in: Vec<TcpStream> = (0..10).map(|_| raw_root_login(address)).collect();
    // After the timeout (plus scheduling slack): every one of them closed.
    let mut still_open = 0;
    for stream in silent.iter().chain(partial.iter()) {
        let left = (unauthenticated_timeout + Duration::from_secs(5))
            .saturating_sub(opened.elapsed())
            .max(Duration::from_millis(10));
        if !closed_within(stream, left) {
            still_open += 1;
        }
    }
    let all_closed_after = opened.elapsed();
    // Logged-in idle sessions are not subject to the unauthenticated timeout.
    let mut idle_failures = 0;
    for stream in &mut idle_logged_in {
        if stream.write_all(&frame(1, &[])).is_err()
            || read_status(stream, Duration::from_secs(10)) != Some(0)
        {
            idle_failures += 1;
        }
    }

    let mut written_total = 0;
    let mut non_reader_streams = Vec::new();
    for thread in non_readers {
        let (stream, written) = thread.join().expect("non-reader thread");
        written_total += written;
        non_reader_streams.push(stream);
    }
    // Let the good client run a little longer with the non-readers still connected.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_max = sampler.max();
    // Steady state with every non-reader stalled: what their pending answers pin.
    let rss_stalled = rss_bytes(pid);
    stop_good.store(true, Ordering::Relaxed);
    let good = good.await.expect("good client task");
    drop(non_reader_streams);
    drop(sampler);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = rss_bytes(pid);

    println!(
        "abusive clients: {non_reader_count} non-readers wrote {written_total} polls of ~3.2 MiB answers \
         (~{:.0} MiB requested); 220 silent/partial connections opened in {opened_in:?}, \
         {early_closed}/20 closed {early_checked_after:?} after opening, {still_open} still open and all others closed \
         {all_closed_after:?} after opening; {idle_failures} idle logged-in sessions failed Ping",
        written_total as f64 * 3.2
    );
    println!(
        "well-behaved client: {} rounds, slowest round {:?}, {} errors",
        good.rounds,
        good.max_round,
        good.errors.len()
    );
    println!(
        "server RSS: {:.1} MiB before, {:.1} MiB max, {:.1} MiB with the non-readers stalled, \
         {:.1} MiB after they left",
        mib(rss_before),
        mib(rss_max),
        mib(rss_stalled),
        mib(rss_after)
    );

    assert!(
        good.errors.is_empty(),
        "good client errors: {:?}",
        good.errors
    );
    assert!(
        good.rounds >= 5,
        "good client starved: {} rounds",
        good.rounds
    );
    assert_eq!(
        early_closed, 0,
        "connections closed before the unauthenticated timeout"
    );
    assert_eq!(
        still_open, 0,
        "silent connections outlived the unauthenticated timeout"
    );
    assert_eq!(idle_failures, 0, "logged-in idle sessions were disturbed");
    assert!(
        written_total >= 8,
        "the non-readers could not even send their first polls"
    );
    assert!(
        rss_max < rss_before + 256 * MIB,
        "server RSS grew from {:.1} MiB to {:.1} MiB with non-reading clients",
        mib(rss_before),
        mib(rss_max)
    );
    assert!(
        rss_after < rss_before + 64 * MIB,
        "server RSS stayed at {:.1} MiB after the non-readers left (was {:.1} MiB)",
        mib(rss_after),
        mib(rss_before)
    );
    let log = server.log();
    assert!(
        log.contains("closing connection: timed out") && log.contains("what=\"login\""),
        "the server did not log the unauthenticated timeouts"
    );
    let mut server = Arc::into_inner(server).expect("only the test holds the server");
    assert!(server.is_running(), "iggy-server died");
    root.ping().await.expect("ping after the abusive clients");
    server.stop();
}
