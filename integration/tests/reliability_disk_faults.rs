//! Disk faults: the storage fault-injection seam (`RILL_STORAGE_FAULT_FILE`, see
//! `server/src/storage/fault.rs`) makes segment writes fail with ENOSPC or EIO, or fsyncs fail,
//! in one partition of the real binary. The client gets 4010 CannotAppendMessage for the
//! affected request, the partition stays readable and shows nothing that was not stored, other
//! partitions keep working, writes resume when the fault clears, data is consistent after a
//! restart, and after a failed fsync the data it covered is never acknowledged or shown as
//! durable (it is cut, not resurrected).
//!
//! Bit rot: a byte flipped in a stored message is caught by its checksum, on every poll from disk
//! (`verify_checksums_on_read`, on by default) and by the opt-in boot scan
//! (`verify_checksums_at_boot`); the message is never served, the refusal is error 4027 and
//! `iggy_checksum_mismatches_total` counts it.

use bytes::Bytes;
use iggy::prelude::*;
use rill_integration::fixtures::{message_id, poll_partition, send_batch, test_messages};
use rill_integration::http::metric_sum;
use rill_integration::sdk::{create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::path::{Path, PathBuf};

/// CannotAppendMessage: what an append gets when the storage failed under it.
const CANNOT_APPEND: u32 = 4010;

struct Faults {
    _dir: tempfile::TempDir,
    control: PathBuf,
}

impl Faults {
    fn new() -> Faults {
        let dir = tempfile::tempdir().expect("temporary directory");
        let control = dir.path().join("fault");
        std::fs::write(&control, "off").expect("write fault control file");
        Faults { _dir: dir, control }
    }

    fn set(&self, spec: &str) {
        std::fs::write(&self.control, spec).expect("write fault control file");
    }

    fn path(&self) -> &Path {
        &self.control
    }
}

fn server(faults: &Faults, extra: &[(&str, &str)]) -> TestServer {
    let mut options = ServerOptions::new().env(
        "RILL_STORAGE_FAULT_FILE",
        faults.path().to_str().expect("utf-8 path"),
    );
    for (key, value) in extra {
        options = options.env(key, value);
    }
    TestServer::start(options)
}

async fn send(
    client: &IggyClient,
    topic: &str,
    partition: u32,
    tag: u32,
    start: u64,
    count: u64,
) -> Result<(), IggyError> {
    let mut messages = test_messages(tag, start, count);
    client
        .send_messages(
            &id(0),
            &Identifier::named(topic).expect("name"),
            &Partitioning::partition_id(partition),
            &mut messages,
        )
        .await
}

#[track_caller]
fn assert_refused(result: Result<(), IggyError>, what: &str) {
    match result {
        Ok(()) => panic!("{what}: the append was acknowledged despite the fault"),
        Err(error) => assert_eq!(
            error.as_code(),
            CANNOT_APPEND,
            "{what}: expected {CANNOT_APPEND}, got {} ({error})",
            error.as_code()
        ),
    }
}

/// (offset, id, payload) of the whole partition.
async fn content(client: &IggyClient, topic: &str, partition: u32) -> Vec<(u64, u128, Bytes)> {
    poll_partition(
        client,
        &id(0),
        &Identifier::named(topic).expect("name"),
        partition,
        1000,
    )
    .await
    .into_iter()
    .map(|m| (m.header.offset, m.header.id, m.payload))
    .collect()
}

/// Asserts the partition holds exactly the messages `(tag, sequences)`, at offsets 0, 1, ...
#[track_caller]
fn assert_content(found: &[(u64, u128, Bytes)], tag: u32, sequences: &[u64], what: &str) {
    let expected: Vec<(u64, u128, Bytes)> = sequences
        .iter()
        .enumerate()
        .map(|(offset, &sequence)| {
            let message = &test_messages(tag, sequence, 1)[0];
            (
                offset as u64,
                message_id(tag, sequence),
                message.payload.clone(),
            )
        })
        .collect();
    let summary = |list: &[(u64, u128, Bytes)]| -> Vec<(u64, u64)> {
        list.iter().map(|(o, id, _)| (*o, *id as u64)).collect()
    };
    assert_eq!(
        summary(found),
        summary(&expected),
        "{what}: (offset, sequence) of the stored messages"
    );
    assert!(found == expected.as_slice(), "{what}: payloads differ");
}

#[tokio::test]
async fn write_faults_fail_the_request_keep_the_partition_consistent_and_clear() {
    // Proves: with ENOSPC and then EIO on one partition's writes (ack mode `written`), each
    // send to it gets 4010 while the fault lasts, its content stays exactly the acknowledged
    // messages (readable throughout), the other partition keeps accepting and serving
    // messages, sends succeed again once the fault clears (offsets continue densely, no refused
    // message appears), a purge works after a fault, and a graceful restart and a kill -9 keep
    // exactly that content. The write-ahead log is off here, so that every send is a segment
    // write; with it, see `with_the_write_ahead_log_...` below.
    let faults = Faults::new();
    let mut server = server(&faults, &[("IGGY_SYSTEM_WAL_ENABLED", "false")]);
    let client = root_client(&server).await;
    create_stream(&client, "faults").await;
    client
        .create_topic(
            &id(0),
            "t",
            2,
            CompressionAlgorithm::None,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("create topic");
    send(&client, "t", 0, 0, 0, 20).await.expect("send p0");
    send(&client, "t", 1, 1, 0, 20).await.expect("send p1");
    let mut p0: Vec<u64> = (0..20).collect();
    let mut p1: Vec<u64> = (0..20).collect();

    for (round, fault) in ["enospc", "eio"].into_iter().enumerate() {
        let base = 100 * (round as u64 + 1);
        faults.set(&format!("{fault} topics/0/partitions/0"));
        assert_refused(send(&client, "t", 0, 0, base, 5).await, fault);
        assert_refused(send(&client, "t", 0, 0, base + 5, 5).await, fault);
        assert_content(&content(&client, "t", 0).await, 0, &p0, fault);
        send(&client, "t", 1, 1, base, 5)
            .await
            .unwrap_or_else(|error| panic!("{fault} on p0 must not affect p1: {error}"));
        p1.extend(base..base + 5);
        assert_content(&content(&client, "t", 1).await, 1, &p1, fault);

        faults.set("off");
        send(&client, "t", 0, 0, base + 10, 5)
            .await
            .unwrap_or_else(|error| panic!("send after clearing {fault}: {error}"));
        p0.extend(base + 10..base + 15);
        assert_content(&content(&client, "t", 0).await, 0, &p0, "after clearing");
    }
    // A purge of a partition a fault stopped works once the fault clears (the log is reopened
    // before it is replaced); offsets restart at 0 as after any purge.
    faults.set("eio topics/0/partitions/0");
    assert_refused(send(&client, "t", 0, 0, 500, 2).await, "before the purge");
    faults.set("off");
    client
        .purge_topic(&id(0), &Identifier::named("t").unwrap())
        .await
        .expect("purge after the fault cleared");
    send(&client, "t", 0, 0, 600, 3)
        .await
        .expect("send after purge");
    p0 = (600..603).collect();
    p1.clear();
    assert_content(&content(&client, "t", 0).await, 0, &p0, "after the purge");
    drop(client);

    server.restart();
    let client = root_client(&server).await;
    assert_content(&content(&client, "t", 0).await, 0, &p0, "after restart");
    assert_content(&content(&client, "t", 1).await, 1, &p1, "p1 after restart");
    send(&client, "t", 0, 0, 900, 3)
        .await
        .expect("send after restart");
    p0.extend(900..903);
    drop(client);
    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_content(&content(&client, "t", 0).await, 0, &p0, "after kill -9");
    assert_content(&content(&client, "t", 1).await, 1, &p1, "p1 after kill -9");
}

/// The value of a metric family once it is above 0 (metrics are published every second).
async fn eventually_positive(http: std::net::SocketAddr, family: &str) -> f64 {
    for _ in 0..100 {
        let value = metric_sum(http, family);
        if value > 0.0 {
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{family} stayed 0");
}

#[tokio::test]
async fn with_the_write_ahead_log_a_faulty_partition_loses_nothing_it_acknowledged() {
    // Proves: with the shard's write-ahead log on (the default), a small send to a partition
    // whose segment files fail is acknowledged from the log (it survives a crash); the flush
    // that writes it to the segment files fails, and so do sends while the fault lasts; what
    // was acknowledged stays readable; once the fault clears the partition is reopened with
    // every acknowledged message and sends continue at the next offset; a restart and a
    // kill -9 keep exactly those. A fault on the log file itself turns the log off: sends keep
    // succeeding, written to the segment files directly, and a kill -9 keeps them.
    let faults = Faults::new();
    let mut server = server(&faults, &[]);
    let client = root_client(&server).await;
    create_stream(&client, "faults").await;
    create_topic(&client, 0, "w", 1).await;
    send(&client, "w", 0, 0, 0, 20).await.expect("send");
    let mut acknowledged: Vec<u64> = (0..20).collect();

    let records =
        eventually_positive(server.http_address().unwrap(), "iggy_wal_records_total").await;
    assert!(records >= 1.0, "the send went through the log");
    faults.set("enospc topics/0/partitions/0");
    send(&client, "w", 0, 0, 100, 5)
        .await
        .expect("acknowledged from the log while the segment files fail");
    acknowledged.extend(100..105);
    assert_content(&content(&client, "w", 0).await, 0, &acknowledged, "logged");
    let flushed = client
        .flush_unsaved_buffer(&id(0), &Identifier::named("w").unwrap(), 0, false)
        .await;
    assert!(flushed.is_err(), "the segment write fails: {flushed:?}");
    assert_refused(
        send(&client, "w", 0, 0, 200, 5).await,
        "after the failed flush",
    );
    assert_content(
        &content(&client, "w", 0).await,
        0,
        &acknowledged,
        "during the fault",
    );

    faults.set("off");
    send(&client, "w", 0, 0, 300, 5)
        .await
        .expect("send once the fault cleared");
    acknowledged.extend(300..305);
    assert_content(&content(&client, "w", 0).await, 0, &acknowledged, "after");
    drop(client);
    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_content(
        &content(&client, "w", 0).await,
        0,
        &acknowledged,
        "after kill -9",
    );

    let http = server.http_address().expect("HTTP endpoint");
    faults.set("eio wal/");
    for start in [400, 405, 410] {
        send(&client, "w", 0, 0, start, 5)
            .await
            .expect("with the log failing, rounds go to the segment files");
        acknowledged.extend(start..start + 5);
    }
    faults.set("off");
    eventually_positive(http, "iggy_wal_refused_total").await;
    assert_content(&content(&client, "w", 0).await, 0, &acknowledged, "log off");
    drop(client);
    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_content(
        &content(&client, "w", 0).await,
        0,
        &acknowledged,
        "log off, after kill -9",
    );
    server.restart();
    let client2 = root_client(&server).await;
    assert_content(
        &content(&client2, "w", 0).await,
        0,
        &acknowledged,
        "after a graceful restart",
    );
    drop(client);
}

#[tokio::test]
async fn a_failed_fsync_is_never_acknowledged_and_its_data_is_not_kept() {
    // Proves: in `fsync` ack mode, when fsync fails the send gets 4010, the messages it wrote
    // are never shown (the fsync watermark does not move), sends keep failing while fsync
    // does (the partition cannot be reopened: cutting the unsynced data needs an fsync), a
    // flush with fsync fails too, the other partition keeps working, and once fsync works
    // again the next send succeeds at the offset after the last acknowledged message: the
    // written-but-unsynced data was cut, not resurrected ("fsyncgate"). A kill -9 afterwards
    // keeps exactly the acknowledged messages.
    let faults = Faults::new();
    let mut server = server(
        &faults,
        &[("IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES", "faults/d=fsync")],
    );
    let client = root_client(&server).await;
    create_stream(&client, "faults").await;
    client
        .create_topic(
            &id(0),
            "d",
            2,
            CompressionAlgorithm::None,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::ServerDefault,
        )
        .await
        .expect("create topic");
    send(&client, "d", 0, 0, 0, 10).await.expect("send p0");
    send(&client, "d", 1, 1, 0, 10).await.expect("send p1");
    let mut p0: Vec<u64> = (0..10).collect();
    let mut p1: Vec<u64> = (0..10).collect();

    faults.set("fsync topics/0/partitions/0");
    assert_refused(send(&client, "d", 0, 0, 100, 5).await, "failed fsync");
    assert_content(
        &content(&client, "d", 0).await,
        0,
        &p0,
        "after the failed fsync",
    );
    assert_refused(
        send(&client, "d", 0, 0, 105, 5).await,
        "fsync still failing",
    );
    let flushed = client
        .flush_unsaved_buffer(&id(0), &Identifier::named("d").unwrap(), 0, true)
        .await;
    assert!(
        flushed.is_err(),
        "a flush with fsync must fail while fsync fails"
    );
    send(&client, "d", 1, 1, 100, 5)
        .await
        .expect("a failing fsync of p0 must not affect p1");
    p1.extend(100..105);
    assert_content(&content(&client, "d", 0).await, 0, &p0, "still failing");
    assert_content(&content(&client, "d", 1).await, 1, &p1, "p1");

    faults.set("off");
    send(&client, "d", 0, 0, 200, 5)
        .await
        .expect("send after fsync works again");
    p0.extend(200..205);
    assert_content(&content(&client, "d", 0).await, 0, &p0, "after clearing");
    drop(client);

    server.kill();
    server.start_again();
    let client = root_client(&server).await;
    assert_content(&content(&client, "d", 0).await, 0, &p0, "after kill -9");
    assert_content(&content(&client, "d", 1).await, 1, &p1, "p1 after kill -9");
    send(&client, "d", 0, 0, 300, 2)
        .await
        .expect("send after kill");
    p0.extend(300..302);
    assert_content(
        &content(&client, "d", 0).await,
        0,
        &p0,
        "after sending again",
    );
}

/// InvalidMessageChecksum: a poll whose first message does not match its checksum.
const INVALID_CHECKSUM: u32 = 4027;

/// Flips one payload byte of the message at `offset` in partition 0 of stream 0, topic 0.
fn flip_payload_byte(data: &Path, offset: u64) {
    let dir = data.join("streams/0/topics/0/partitions/0");
    let log = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).expect("read the segment");
    let mut position = 0;
    for current in 0.. {
        let header = &bytes[position..position + 64];
        let field = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        let size = 64 + field(48) as usize + field(52) as usize;
        if current == offset {
            bytes[position + 64 + 2] ^= 0x01;
            break;
        }
        position += size;
    }
    std::fs::write(&log, bytes).expect("write the segment");
}

async fn poll_at(
    client: &IggyClient,
    offset: u64,
    count: u32,
) -> Result<Vec<IggyMessage>, IggyError> {
    client
        .poll_messages(
            &id(0),
            &id(0),
            Some(0),
            &Consumer::new(id(7)),
            &PollingStrategy::offset(offset),
            count,
            false,
        )
        .await
        .map(|polled| polled.messages)
}

fn checksum_options() -> ServerOptions {
    ServerOptions::new()
        .env("IGGY_HTTP_ENABLED", "true")
        .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
}

/// A stopped server whose one partition holds messages `0..count` of series 1, the payload of
/// the one at `broken` with a flipped bit.
async fn stopped_with_a_flipped_bit(options: ServerOptions, count: u64, broken: u64) -> TestServer {
    let mut server = TestServer::start(options);
    let client = root_client(&server).await;
    create_stream(&client, "s").await;
    create_topic(&client, 0, "t", 1).await;
    send_batch(
        &client,
        &id(0),
        &id(0),
        &Partitioning::partition_id(0),
        test_messages(1, 0, count),
    )
    .await;
    drop(client);
    server.stop();
    flip_payload_byte(&server.data_path(), broken);
    server
}

#[tokio::test]
async fn a_flipped_bit_is_never_served_and_the_boot_scan_reports_it() {
    let mut server = stopped_with_a_flipped_bit(checksum_options(), 20, 7).await;
    server.set_env("IGGY_SYSTEM_PARTITION_VERIFY_CHECKSUMS_AT_BOOT", "true");
    server.start_again();
    let http = server.http_address().expect("the HTTP endpoint listens");
    let log = server.log();
    assert!(
        log.contains("checksum scan found corrupted messages") && log.contains("offset=7"),
        "the boot scan names the broken message: {}",
        server.log_tail()
    );
    assert_eq!(metric_sum(http, "iggy_checksum_mismatches_total"), 1.0);

    let client = root_client(&server).await;
    // A poll stops before the broken message; a poll from it is refused; later ones are served.
    let first = poll_at(&client, 0, 20).await.expect("poll from 0");
    assert_eq!(
        first
            .iter()
            .map(|message| message.header.offset)
            .collect::<Vec<_>>(),
        (0..7).collect::<Vec<u64>>()
    );
    for _ in 0..2 {
        let refused = poll_at(&client, 7, 20)
            .await
            .expect_err("the broken message");
        assert_eq!(refused.as_code(), INVALID_CHECKSUM, "{refused}");
    }
    let rest = poll_at(&client, 8, 20).await.expect("poll from 8");
    assert_eq!(rest.len(), 12);
    assert_eq!(rest[0].header.offset, 8);
    assert_eq!(metric_sum(http, "iggy_checksum_mismatches_total"), 3.0);
    let log = server.log();
    assert_eq!(
        log.matches("stored message is corrupted").count(),
        1,
        "a consumer retrying the same message is logged once"
    );
    // Nothing was removed: the partition still counts all 20 messages.
    let topic = client.get_topic(&id(0), &id(0)).await.unwrap().unwrap();
    assert_eq!(topic.messages_count, 20);
}

#[tokio::test]
async fn without_verification_the_flipped_bit_would_reach_the_consumer() {
    let unchecked =
        ServerOptions::new().env("IGGY_SYSTEM_PARTITION_VERIFY_CHECKSUMS_ON_READ", "none");
    let mut server = stopped_with_a_flipped_bit(unchecked, 10, 3).await;
    server.start_again();
    let client = root_client(&server).await;
    let served = poll_at(&client, 3, 1).await.expect("served unchecked");
    let expected = &test_messages(1, 3, 1)[0];
    assert_eq!(served.len(), 1);
    assert_ne!(
        served[0].payload, expected.payload,
        "the corrupted payload is what a consumer gets when reads are not verified"
    );
}
