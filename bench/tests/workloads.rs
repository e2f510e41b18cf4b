//! End-to-end tests of `iggy-bench` against the real `iggy-server` binary.
//!
//! Each test starts the server (the SDK tests' harness: built once per test process with
//! `cargo build -p rill-server --bin iggy-server`, two shards, a fresh data directory, a port of
//! its own on 127.0.0.1), runs workloads briefly, and checks the report against what the
//! server stored: GetTopic `messages_count` must equal what the producers say they sent, and
//! consumers must have read exactly what they were meant to.

use rill_bench::args::Cli;
use rill_bench::client::{Connection, Endpoint, Transport};
use rill_bench::plan::{TOPIC_NAME, WorkloadKind, stream_name};
use rill_bench::report::Report;
use rill_bench::stats::ActorKind;
use rill_bench::workload;
use rill_core::primitives::Identifier;
use rill_sdk::Protocol;
use std::path::Path;
use std::process::Command;

use rill_testkit as common;

/// A server with two shards on a fresh data directory (see `common::TestServer`).
struct Server(common::TestServer);

impl Server {
    fn start(extra_env: &[(&str, &str)]) -> Server {
        Server(common::TestServer::start_with(extra_env))
    }

    fn address(&self) -> String {
        self.0.tcp_address()
    }

    fn log(&self) -> String {
        self.0.log()
    }

    fn pid(&self) -> u32 {
        self.0.pid().expect("the server is running")
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            transport: Transport::Tcp,
            address: self.address(),
            username: "iggy".into(),
            password: "iggy".into(),
            nodelay: true,
            tls: None,
            quic: Default::default(),
            protocol: Protocol::V08,
        }
    }

    /// GetTopic messages_count of bench-stream-N/topic-1, asked on a fresh connection.
    fn stored_messages(&self, stream: u32) -> u64 {
        let mut connection = Connection::open(&self.endpoint()).expect("connect");
        connection
            .get_topic(
                &Identifier::named(&stream_name(stream)).unwrap(),
                &Identifier::named(TOPIC_NAME).unwrap(),
            )
            .expect("get topic")
            .expect("topic exists")
            .topic
            .messages_count
    }
}

fn run_workload(server: &Server, args: &str, output: &Path, protocol: Protocol) -> Report {
    let command_line = format!(
        "iggy-bench -q --protocol {protocol} {args} tcp --server-address {} output -o {}",
        server.address(),
        output.display()
    );
    let cli = Cli::parse_from_args(command_line.split_whitespace()).expect("valid command line");
    let plan = cli.into_plan().expect("valid plan");
    workload::run(&plan, None)
        .unwrap_or_else(|error| panic!("`{args}` failed: {error}\n{}", server.log()))
}

fn sum(report: &Report, kind: ActorKind, field: fn(&rill_bench::stats::ActorResult) -> u64) -> u64 {
    report
        .actors
        .iter()
        .filter(|actor| actor.kind == kind)
        .map(field)
        .sum()
}

/// Messages the producers (or producing consumers) sent, warm-up included.
fn sent(report: &Report) -> u64 {
    let kinds = [ActorKind::Producer, ActorKind::ProducingConsumer];
    kinds
        .iter()
        .map(|&kind| sum(report, kind, |a| a.messages) + sum(report, kind, |a| a.warmup_messages))
        .sum()
}

fn stored_delta(report: &Report) -> u64 {
    report
        .streams
        .iter()
        .map(|count| count.messages_after - count.messages_before)
        .sum()
}

#[test]
fn every_workload_reports_what_it_sent_and_read() {
    every_workload(Protocol::V08);
}

/// The same workloads in the 0.9 protocol; what they stored is counted over 0.8.
#[test]
fn every_workload_runs_over_the_0_9_protocol() {
    every_workload(Protocol::V09);
}

fn every_workload(protocol: Protocol) {
    let server = Server::start(&[]);
    let output = tempfile::tempdir().unwrap();
    // 10 messages of 100 bytes per batch, 20 batches per actor: 200 messages per actor.
    let common = "-m 100 -P 10 -b 20";

    let report = run_workload(
        &server,
        &format!("{common} pinned-producer -p 2"),
        output.path(),
        protocol,
    );
    assert_eq!(report.workload, WorkloadKind::PinnedProducer);
    assert_eq!(sum(&report, ActorKind::Producer, |a| a.messages), 400);
    assert_eq!(sum(&report, ActorKind::Producer, |a| a.batches), 40);
    assert_eq!(server.stored_messages(1) + server.stored_messages(2), 400);
    assert_eq!(stored_delta(&report), 400);
    // Bytes are messages with their 64-byte headers.
    assert_eq!(sum(&report, ActorKind::Producer, |a| a.bytes), 400 * 164);
    assert_eq!(report.groups[0].latency.samples, 40);

    // Consumers find the producers' data (kept with --reuse-streams) and read 200 each.
    let report = run_workload(
        &server,
        &format!("{common} --reuse-streams pinned-consumer -c 2"),
        output.path(),
        protocol,
    );
    assert_eq!(sum(&report, ActorKind::Consumer, |a| a.messages), 400);
    assert_eq!(stored_delta(&report), 0, "no prefill was needed");
    assert_eq!(server.stored_messages(1), 200);

    // Without --reuse-streams the streams are recreated and filled before consuming.
    let report = run_workload(
        &server,
        &format!("{common} pinned-consumer -c 2"),
        output.path(),
        protocol,
    );
    assert_eq!(sum(&report, ActorKind::Consumer, |a| a.messages), 400);
    assert!(report.streams.iter().all(|s| s.messages_before >= 200));

    let report = run_workload(
        &server,
        &format!("{common} pinned-producer-and-consumer -p 2 -c 2"),
        output.path(),
        protocol,
    );
    assert_eq!(sent(&report), 400);
    assert_eq!(stored_delta(&report), 400);
    assert_eq!(sum(&report, ActorKind::Consumer, |a| a.messages), 400);

    let report = run_workload(
        &server,
        &format!("{common} balanced-producer -p 2 -a 3"),
        output.path(),
        protocol,
    );
    assert_eq!(sent(&report), 400);
    assert_eq!(server.stored_messages(1), 400);

    // 3 consumers in one group read 3 × 200 messages between them.
    let report = run_workload(
        &server,
        &format!("{common} balanced-consumer-group -c 3 -a 3 -g 1"),
        output.path(),
        protocol,
    );
    assert_eq!(sum(&report, ActorKind::Consumer, |a| a.messages), 600);

    let report = run_workload(
        &server,
        &format!("{common} balanced-producer-and-consumer-group -p 2 -c 2 -a 4 -g 1"),
        output.path(),
        protocol,
    );
    assert_eq!(sent(&report), 400);
    assert_eq!(server.stored_messages(1), 400);
    assert_eq!(sum(&report, ActorKind::Consumer, |a| a.messages), 400);

    let report = run_workload(
        &server,
        &format!("{common} end-to-end-producing-consumer -p 2"),
        output.path(),
        protocol,
    );
    assert_eq!(
        sum(&report, ActorKind::ProducingConsumer, |a| a.messages),
        400
    );
    assert_eq!(server.stored_messages(1) + server.stored_messages(2), 400);

    // A timed run with a warm-up and ranges: whatever was sent is what is stored.
    let report = run_workload(
        &server,
        "-m 10..200 -P 1..5 -d 300ms -w 200ms pinned-producer -p 2",
        output.path(),
        protocol,
    );
    let measured = sum(&report, ActorKind::Producer, |a| a.messages);
    let warmup = sum(&report, ActorKind::Producer, |a| a.warmup_messages);
    assert!(measured > 0 && warmup > 0, "{measured} {warmup}");
    assert_eq!(stored_delta(&report), measured + warmup);
    assert_eq!(
        server.stored_messages(1) + server.stored_messages(2),
        measured + warmup
    );
}

fn bench_binary() -> &'static str {
    env!("CARGO_BIN_EXE_iggy-bench")
}

#[test]
fn the_binary_writes_results_checks_ack_modes_and_compares() {
    let server = Server::start(&[("IGGY_SYSTEM_PARTITION_ACK_MODE", "memory")]);
    let output = tempfile::tempdir().unwrap();
    let pid = server.pid().to_string();
    let run = |args: &[&str]| {
        Command::new(bench_binary())
            .args(args)
            .output()
            .expect("run iggy-bench")
    };
    let out_dir = output.path().to_str().unwrap();
    let result = run(&[
        "-q",
        "-m",
        "200",
        "-P",
        "50",
        "-b",
        "10",
        "--ack-mode",
        "memory",
        "--server-pid",
        &pid,
        "pp",
        "-p",
        "2",
        "tcp",
        "--server-address",
        &server.address(),
        "output",
        "-o",
        out_dir,
    ]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(stdout.contains("producers (total)"), "{stdout}");
    assert!(stdout.contains("RSS at start"), "{stdout}");
    let dir = std::fs::read_dir(output.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pinned-producer_")
        })
        .expect("a results directory named by workload and time");
    for file in [
        "report.json",
        "throughput.svg",
        "latency.svg",
        "latency_distribution.svg",
    ] {
        assert!(
            dir.join(file).is_file(),
            "{file} missing in {}",
            dir.display()
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["groups"][0]["messages"], 1000);
    assert_eq!(json["ack_mode"]["detected"]["mode"], "memory");
    assert!(json["server_usage"]["rss_max_mib"].as_f64().unwrap() > 0.0);
    assert_eq!(server.stored_messages(1) + server.stored_messages(2), 1000);

    // Requiring another ack mode than the server gives is refused, with the way to fix it.
    let refused = run(&[
        "-q",
        "-b",
        "1",
        "--ack-mode",
        "written",
        "--server-pid",
        &pid,
        "pp",
        "-p",
        "1",
        "tcp",
        "--server-address",
        &server.address(),
        "output",
        "-o",
        out_dir,
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("IGGY_SYSTEM_PARTITION_ACK_MODE=written"),
        "{stderr}"
    );

    // HTTP in the 0.9 generation is refused clearly (the REST API has the 0.8 commands).
    let http = run(&["-q", "--protocol", "0.9", "pp", "http"]);
    assert_eq!(http.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&http.stderr).contains("0.8"));

    // compare: the same server as A and B, driven in the two generations, one round; every
    // figure has a ratio.
    let compare = run(&[
        "compare",
        "--a",
        &server.address(),
        "--b",
        &server.address(),
        "--a-protocol",
        "0.8",
        "--b-protocol",
        "0.9",
        "--rounds",
        "1",
        "-o",
        out_dir,
        "--",
        "-q",
        "-m",
        "100",
        "-P",
        "10",
        "-b",
        "5",
        "pp",
        "-p",
        "1",
        "tcp",
    ]);
    let stdout = String::from_utf8_lossy(&compare.stdout);
    assert!(
        compare.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&compare.stderr)
    );
    assert!(stdout.contains("producers MB/s"), "{stdout}");
    assert!(stdout.contains("B/A"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&compare.stderr).contains("protocol 0.9"),
        "B spoke 0.9"
    );
}

#[test]
fn baseline_measures_disk_and_loopback_and_saves_them() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("baseline.json");
    let output = Command::new(bench_binary())
        .args([
            "baseline",
            "--dir",
            dir.path().join("data").to_str().unwrap(),
            "--disk-size",
            "8MiB",
            "--loopback-size",
            "16MiB",
            "--save",
            save.to_str().unwrap(),
        ])
        .output()
        .expect("run iggy-bench baseline");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("O_DIRECT is not supported") {
        eprintln!("skipping: the temporary directory's file system has no O_DIRECT");
        return;
    }
    assert!(output.status.success(), "{stderr}");
    let baseline = rill_bench::baseline::Baseline::load(&save).unwrap();
    let disk = baseline.disk.expect("disk figures");
    assert!(disk.write_mb_s > 0.0 && disk.read_mb_s > 0.0);
    assert_eq!(disk.bytes, 8 << 20);
    let depths: Vec<u32> = disk.depths.iter().map(|figures| figures.depth).collect();
    assert_eq!(depths, [1, 4, 16], "queue depths measured");
    assert!(
        disk.depths
            .iter()
            .all(|figures| figures.read_mb_s > 0.0 && figures.write_mb_s > 0.0)
    );
    let latency = disk.write_4k_latency_us.expect("4 KiB write latency");
    assert!(
        latency.p50 > 0.0 && latency.p50 <= latency.p99,
        "{latency:?}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("QD16 read") && stdout.contains("4 KiB write p50"),
        "the summary prints the depths and the latency: {stdout}"
    );
    let loopback = baseline.loopback.expect("loopback figures");
    assert!(loopback.single_mb_s > 0.0 && loopback.dual_mb_s > 0.0);
    assert!(
        !dir.path()
            .join("data")
            .join(".iggy-bench-baseline.tmp")
            .exists(),
        "the scratch file is removed"
    );
}
