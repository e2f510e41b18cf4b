//! Parsing command lines into plans, as upstream iggy-bench 0.5.0 spells them.

use super::*;
use crate::client::Transport;
use rill_sdk::{QuicOptions, TlsOptions};

fn plan_of(args: &str) -> Plan {
    Cli::parse_from_args(std::iter::once("iggy-bench").chain(args.split_whitespace()))
        .unwrap()
        .into_plan()
        .unwrap()
}

#[test]
fn consumers_are_dealt_over_streams_then_groups() {
    let plan = plan_of("bcg -s 2 -g 2 -c 5 -a 3 tcp");
    let assignments: Vec<_> = (0..5).map(|index| plan.group_of(index)).collect();
    assert_eq!(assignments, [(1, 1), (2, 1), (1, 2), (2, 2), (1, 1)]);
    assert_eq!(plan.members_of(1, 1), 2);
    assert_eq!(plan.members_of(2, 2), 1);
}

#[test]
fn prefill_covers_what_consumers_read() {
    // 2 members in group 1 of stream 1 each read 10 batches of 100 messages.
    let groups = plan_of("-b 10 -P 100 bcg -s 2 -g 2 -c 5 -a 3 tcp");
    assert_eq!(groups.prefill_messages(1), 2000);
    assert_eq!(groups.prefill_messages(2), 1000);
    let pinned = plan_of("-b 10 -P 100 pc -c 2 tcp");
    assert_eq!(pinned.prefill_messages(1), 1000);
    let timed = plan_of("-d 1s -P 10 pc -c 1 tcp");
    assert_eq!(
        timed.prefill_messages(1),
        crate::plan::DURATION_PREFILL_BATCHES * 10
    );
}

#[test]
fn producers_are_counted_per_stream() {
    let plan = plan_of("bp -p 5 -s 2 tcp");
    assert_eq!(plan.producers_on(1), 3);
    assert_eq!(plan.producers_on(2), 2);
    assert_eq!(plan.expected_messages(), Some(5 * 1000 * 1000));
}

fn plan(args: &str) -> Result<Plan> {
    let cli = Cli::parse_from_args(std::iter::once("iggy-bench").chain(args.split_whitespace()))
        .map_err(|error| Error::Usage(error.to_string()))?;
    cli.into_plan()
}

#[test]
fn upstream_command_lines_parse_with_upstream_defaults() {
    let plan = plan("-m 1000 -P 100 -b 10 pinned-producer -p 2 tcp --server-address 10.0.0.5:8090")
        .unwrap();
    assert_eq!(plan.kind, WorkloadKind::PinnedProducer);
    assert_eq!(plan.producers, 2);
    assert_eq!(plan.streams, 2);
    assert_eq!(plan.partitions, 1);
    assert_eq!(plan.consumers, 0);
    assert_eq!(plan.message_size, NumericParam::fixed(1000));
    assert_eq!(plan.messages_per_batch, NumericParam::fixed(100));
    assert_eq!(plan.finish, Finish::Batches(10));
    assert_eq!(plan.endpoint.address, "10.0.0.5:8090");
    assert_eq!(plan.endpoint.username, "iggy");
    assert_eq!(plan.sampling, Duration::from_millis(10));

    let defaults = plan_ok("bp tcp");
    assert_eq!(defaults.producers, 8);
    assert_eq!(defaults.partitions, 24);
    assert_eq!(defaults.streams, 1);
    assert_eq!(defaults.finish, Finish::Batches(1000));
    assert_eq!(defaults.endpoint.address, DEFAULT_TCP_ADDRESS);

    let groups = plan_ok("bpcg -p 2 -c 4 -g 2 -a 4 tcp");
    assert_eq!(
        (groups.producers, groups.consumers, groups.groups),
        (2, 4, 2)
    );
    let e2e = plan_ok("e2e -p 3 tcp");
    assert_eq!((e2e.producers, e2e.streams), (3, 3));
}

fn plan_ok(args: &str) -> Plan {
    plan(args).unwrap_or_else(|error| panic!("{args}: {error}"))
}

#[test]
fn total_data_is_split_between_actors_in_whole_batches() {
    // 2 GB of 1000-byte payloads in batches of 1000 over 2 producers: 1000 batches each.
    let plan = plan_ok("-m 1000 -P 1000 -T 2GB pinned-producer -p 2 tcp");
    assert_eq!(plan.finish, Finish::Batches(1000));
    // Consumers split it the same way.
    let plan = plan_ok("-T 2GB pc -c 4 tcp");
    assert_eq!(plan.finish, Finish::Batches(500));
    // Rounded up: 1.5 MB per producer of 1 MB batches.
    let plan = plan_ok("-T 3MB pp -p 2 tcp");
    assert_eq!(plan.finish, Finish::Batches(2));
    let plan = plan_ok("-d 30s pp -p 1 tcp");
    assert_eq!(plan.finish, Finish::Duration(Duration::from_secs(30)));
}

#[test]
fn ranges_and_extra_options_parse() {
    let plan = plan_ok(
        "-m 100..1000 -P 10..20 -w 2s -r 50MB --ack-mode memory --server-pid 42 -q pp -p 1 tcp output -o /tmp/x --remark hello",
    );
    assert_eq!(
        plan.message_size,
        NumericParam {
            min: 100,
            max: 1000
        }
    );
    assert_eq!(plan.messages_per_batch, NumericParam { min: 10, max: 20 });
    assert_eq!(plan.warmup, Duration::from_secs(2));
    assert_eq!(plan.rate_limit_bytes_per_second, Some(50_000_000));
    assert_eq!(plan.required_ack_mode, Some(AckMode::Memory));
    assert_eq!(plan.server_pid, Some(42));
    assert!(!plan.progress);
    assert_eq!(plan.output.output_dir, PathBuf::from("/tmp/x"));
    assert_eq!(plan.output.remark.as_deref(), Some("hello"));
}

#[test]
fn tls_and_quic_flags_reach_the_endpoint() {
    let p = plan(
        "pp tcp --server-address 10.0.0.5:8090 --tls --tls-domain localhost \
         --tls-validate-certificate --tls-ca-file /ca.pem",
    )
    .unwrap();
    assert_eq!(p.endpoint.transport, Transport::Tcp);
    assert_eq!(
        p.endpoint.tls,
        Some(TlsOptions {
            domain: Some("localhost".into()),
            ca_file: Some("/ca.pem".into()),
            validate_certificate: true,
        })
    );
    let p = plan("pp tcp --tls").unwrap();
    assert_eq!(
        p.endpoint.tls.map(|tls| tls.validate_certificate),
        Some(false)
    );

    let p = plan("pp ws").unwrap();
    assert_eq!(p.endpoint.transport, Transport::WebSocket);
    assert_eq!(p.endpoint.address, DEFAULT_WEBSOCKET_ADDRESS);
    assert_eq!(p.endpoint.tls, None);
    let p = plan("pp websocket --server-address 10.0.0.5:9 --tls --tls-domain localhost").unwrap();
    assert_eq!(p.endpoint.address, "10.0.0.5:9");
    assert_eq!(
        p.endpoint.tls,
        Some(TlsOptions {
            domain: Some("localhost".into()),
            ca_file: None,
            validate_certificate: false,
        })
    );
    assert!(plan("pp ws --tls-domain x").is_err());

    let p = plan("pp quic").unwrap();
    assert_eq!(p.endpoint.transport, Transport::Quic);
    assert_eq!(p.endpoint.address, DEFAULT_QUIC_ADDRESS);
    assert_eq!(p.endpoint.quic, QuicOptions::default());
    assert_eq!(p.endpoint.tls, None);
    let p = plan(
        "pp quic --server-address 10.0.0.5:8080 --client-address 0.0.0.0:0 \
         --server-name broker --validate-certificate --ca-file /ca.pem \
         --response-buffer-size 50000000",
    )
    .unwrap();
    let quic = p.endpoint.quic;
    assert_eq!(p.endpoint.address, "10.0.0.5:8080");
    assert_eq!(quic.client_address.as_deref(), Some("0.0.0.0:0"));
    assert_eq!(quic.server_name, "broker");
    assert!(quic.validate_certificate);
    assert_eq!(quic.ca_file.as_deref(), Some("/ca.pem"));
    assert_eq!(quic.response_buffer_size, 50_000_000);
}

#[test]
fn conflicts_and_unsupported_choices_are_refused() {
    // -b, -T and -d exclude each other (clap).
    assert!(plan("-b 10 -T 1GB pp tcp").is_err());
    assert!(plan("-b 10 -d 1s pp tcp").is_err());
    // Pinned producers need one stream each and one partition.
    assert!(plan("pp -p 2 -s 3 tcp").is_err());
    assert!(plan("ppc -a 2 tcp").is_err());
    // Every consumer group needs a member.
    assert!(plan("bcg -c 1 -g 2 tcp").is_err());
    assert!(plan("-T 1000 -m 1000 pp tcp").is_err());
    assert!(plan("-m 0 pp tcp").is_err());
    let http = plan("--protocol 0.9 pp http").unwrap_err().to_string();
    assert!(http.contains("0.8"), "{http}");
    assert!(
        plan("pp http --tls-domain x").is_err(),
        "--tls-domain needs --tls"
    );
    let http = plan("pp http --server-address 127.0.0.1:3001 --tls").unwrap();
    assert_eq!(http.endpoint.address, "127.0.0.1:3001");
    assert!(http.endpoint.tls.is_some());
    // TLS options need --tls; a CA file is only read when validating.
    assert!(plan("pp tcp --tls-domain x").is_err());
    assert!(plan("pp tcp --tls --tls-ca-file /ca.pem").is_err());
    assert!(plan("-H pp tcp").is_err());
}

#[test]
fn compare_takes_the_workload_after_a_separator() {
    let cli = Cli::parse_from_args([
        "iggy-bench",
        "compare",
        "--a",
        "127.0.0.1:1",
        "--b",
        "127.0.0.1:2",
        "--rounds",
        "5",
        "--",
        "-T",
        "1GB",
        "pp",
        "-p",
        "2",
        "tcp",
    ])
    .unwrap();
    let Command::Compare(compare) = cli.command else {
        panic!("not compare")
    };
    assert_eq!(compare.rounds, 5);
    assert_eq!(compare.workload, ["-T", "1GB", "pp", "-p", "2", "tcp"]);
}
