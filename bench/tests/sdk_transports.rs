//! `iggy-bench` over rill-sdk's transports against the real server: pinned producers and pinned
//! consumers over WebSocket (ws in both protocol generations, wss) and over the HTTP API (HTTP,
//! HTTPS), their counts checked against what the server stored (asked over plain TCP, so the
//! transport is not checking itself).

use rill_bench::args::Cli;
use rill_bench::client::{Connection, Endpoint, Transport};
use rill_bench::plan::{TOPIC_NAME, WorkloadKind, stream_name};
use rill_bench::report::Report;
use rill_bench::stats::ActorKind;
use rill_bench::workload;
use rill_core::primitives::Identifier;
use rill_sdk::Protocol;
use rill_testkit::{ServerOptions, TestServer};
use std::path::Path;

/// GetTopic messages_count of bench-stream-N/topic-1, over plain TCP.
fn stored_messages(server: &TestServer, stream: u32) -> u64 {
    let endpoint = Endpoint {
        transport: Transport::Tcp,
        address: server.tcp_address(),
        username: "iggy".into(),
        password: "iggy".into(),
        nodelay: true,
        tls: None,
        quic: Default::default(),
        protocol: Protocol::V08,
    };
    let mut connection = Connection::open(&endpoint).expect("connect over TCP");
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

/// The listener a transport subcommand (`ws ...` or `http ...`) goes to.
fn address_for(server: &TestServer, transport: &str) -> (String, Transport) {
    if transport.starts_with("http") {
        let address = server.http_address().expect("the HTTP API listens");
        (address.to_string(), Transport::Http)
    } else {
        (server.websocket_address().to_string(), Transport::WebSocket)
    }
}

fn run(server: &TestServer, args: &str, transport: &str, output: &Path) -> Report {
    let (address, expected) = address_for(server, transport);
    let command_line = format!(
        "iggy-bench -q {args} {transport} --server-address {address} output -o {}",
        output.display()
    );
    let cli = Cli::parse_from_args(command_line.split_whitespace()).expect("valid command line");
    let plan = cli.into_plan().expect("valid plan");
    assert_eq!(plan.endpoint.transport, expected);
    workload::run(&plan, None)
        .unwrap_or_else(|error| panic!("`{args}` failed: {error}\n{}", server.log_tail()))
}

fn messages(report: &Report, kind: ActorKind) -> u64 {
    report
        .actors
        .iter()
        .filter(|actor| actor.kind == kind)
        .map(|actor| actor.messages)
        .sum()
}

/// 2 pinned producers of 200 messages each (10 × 100 B per batch), then 2 pinned consumers
/// reading them back; `transport` is the subcommand with its flags (`ws --tls`, `http`).
fn produce_and_consume(server: &TestServer, transport: &str, protocol: Protocol) {
    let output = tempfile::tempdir().unwrap();
    let common = format!("--protocol {protocol} -m 100 -P 10 -b 20");
    let report = run(
        server,
        &format!("{common} pinned-producer -p 2"),
        transport,
        output.path(),
    );
    assert_eq!(report.workload, WorkloadKind::PinnedProducer);
    assert_eq!(messages(&report, ActorKind::Producer), 400);
    assert_eq!(stored_messages(server, 1), 200);
    assert_eq!(stored_messages(server, 2), 200);

    let report = run(
        server,
        &format!("{common} --reuse-streams pinned-consumer -c 2"),
        transport,
        output.path(),
    );
    assert_eq!(messages(&report, ActorKind::Consumer), 400);
    let before_after: Vec<_> = report
        .streams
        .iter()
        .map(|count| (count.messages_before, count.messages_after))
        .collect();
    assert_eq!(before_after, [(200, 200), (200, 200)], "no prefill needed");
}

#[test]
fn pinned_workloads_over_ws_in_both_generations() {
    for protocol in [Protocol::V08, Protocol::V09] {
        let server = TestServer::start_default();
        produce_and_consume(&server, "ws", protocol);
    }
}

#[test]
fn pinned_workloads_over_wss() {
    let server = TestServer::start(ServerOptions::new().env("IGGY_WEBSOCKET_TLS_ENABLED", "true"));
    produce_and_consume(&server, "ws --tls --tls-domain localhost", Protocol::V08);
}

#[test]
fn pinned_workloads_over_http() {
    let server = TestServer::start_default();
    produce_and_consume(&server, "http", Protocol::V08);
}

#[test]
fn pinned_workloads_over_https() {
    let server = TestServer::start(ServerOptions::new().env("IGGY_HTTP_TLS_ENABLED", "true"));
    produce_and_consume(&server, "http --tls --tls-domain localhost", Protocol::V08);
}
