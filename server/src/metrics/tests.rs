use super::*;
use rill_core::primitives::Transport;

#[test]
fn slots_round_trip_to_labels() {
    assert_eq!(
        command_label(command_slot(CommandCode::Ping.code())),
        "Ping"
    );
    assert_eq!(
        command_label(command_slot(CommandCode::SendMessages.code())),
        "SendMessages"
    );
    assert_eq!(command_label(command_slot(9999)), "Unknown");
    assert_eq!(status_label(status_slot(None)), "ok");
    assert_eq!(
        status_label(status_slot(Some(ErrorCode::StreamIdNotFound))),
        "StreamIdNotFound"
    );
    for &code in ErrorCode::ALL {
        assert_eq!(status_label(status_slot(Some(code))), code.name());
    }
    for &command in CommandCode::ALL {
        assert_eq!(command_label(command_slot(command.code())), command.name());
    }
}

#[test]
fn histogram_buckets_follow_prometheus_le() {
    let histogram = LatencyHistogram::default();
    // 10 is <= the first bound; 11 goes to the second; beyond the last bound is +Inf.
    histogram.observe(&LATENCY_BOUNDS_MICROS, 0);
    histogram.observe(&LATENCY_BOUNDS_MICROS, 10);
    histogram.observe(&LATENCY_BOUNDS_MICROS, 11);
    histogram.observe(&LATENCY_BOUNDS_MICROS, u64::MAX / 2);
    let mut snapshot = HistogramSnapshot::default();
    histogram.add_to(&mut snapshot);
    assert_eq!(snapshot.buckets[0], 2);
    assert_eq!(snapshot.buckets[1], 1);
    assert_eq!(*snapshot.buckets.last().unwrap(), 1);
    assert_eq!(snapshot.count(), 4);
    assert_eq!(snapshot.sum, 21 + u64::MAX / 2);
}

#[test]
fn snapshot_sums_shards_and_keeps_per_shard_figures() {
    let metrics = Metrics::new(3);
    let ping = command_slot(CommandCode::Ping.code());
    let send = command_slot(CommandCode::SendMessages.code());
    let ms = Duration::from_millis(1);
    metrics.shards[0].record_request(ping, None, ms, false);
    metrics.shards[1].record_request(ping, None, ms * 3, false);
    metrics.shards[2].record_request(ping, Some(ErrorCode::Unauthenticated), ms, true);
    metrics.shards[2].record_request(send, None, Duration::from_secs(20), true);
    metrics.shards[0].messages_in.add(7);
    metrics.shards[2].messages_in.add(5);
    metrics.shards[1].transport(Transport::Quic).connected();
    metrics.shards[0].metadata_log_bytes.set(1234);
    metrics.shards[1].write_rounds.add_bucketed(&[2, 0, 1], 6);
    metrics.shards[2].write_rounds.add_bucketed(&[1], 1);
    metrics.shards[1].record_ack(crate::storage::AckMode::Fsync, ms);

    let snapshot = metrics.snapshot();
    assert_eq!(snapshot.requests(CommandCode::Ping, None), 2);
    assert_eq!(
        snapshot.requests(CommandCode::Ping, Some(ErrorCode::Unauthenticated)),
        1
    );
    assert_eq!(snapshot.requests(CommandCode::SendMessages, None), 1);
    assert_eq!(snapshot.requests.iter().sum::<u64>(), 4);
    assert_eq!(snapshot.latency[ping].count(), 3);
    assert_eq!(snapshot.latency[ping].sum, 5_000);
    assert_eq!(*snapshot.latency[send].buckets.last().unwrap(), 1);
    assert_eq!(snapshot.slow_requests[ping], 1);
    assert_eq!(snapshot.slow_requests[send], 1);
    assert_eq!(
        snapshot
            .shards
            .iter()
            .map(|shard| shard.messages_in)
            .collect::<Vec<_>>(),
        [7, 0, 5]
    );
    assert_eq!(snapshot.shards[1].transports[1].connections, 1);
    assert_eq!(snapshot.shards[1].transports[1].accepted, 1);
    assert_eq!(snapshot.shards[1].transports[0].connections, 0);
    assert_eq!(snapshot.metadata_log_bytes, 1234);
    assert_eq!(snapshot.write_rounds.buckets[..3], [3, 0, 1]);
    assert_eq!(snapshot.write_rounds.count(), 4);
    assert_eq!(snapshot.write_rounds.sum, 7);
    assert_eq!(snapshot.ack_latency[2].count(), 1);
    assert_eq!(snapshot.ack_latency[0].count(), 0);
}

#[test]
fn counters_are_single_writer_but_readable_anywhere() {
    let metrics = Arc::new(Metrics::new(2));
    let writers: Vec<_> = (0..2u16)
        .map(|shard| {
            let handle = ShardMetricsHandle::new(metrics.clone(), shard);
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    handle.appends.inc();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let snapshot = metrics.snapshot();
    assert_eq!(snapshot.shards[0].appends, 10_000);
    assert_eq!(snapshot.shards[1].appends, 10_000);
}

#[test]
#[cfg(debug_assertions)]
fn a_second_writer_thread_is_caught_in_debug_builds() {
    let metrics = Arc::new(Metrics::new(1));
    let handle = ShardMetricsHandle::new(metrics.clone(), 0);
    handle.appends.inc();
    let other = ShardMetricsHandle::new(metrics, 0);
    let result = std::thread::spawn(move || other.appends.inc()).join();
    assert!(result.is_err(), "a write from another thread panics");
}
