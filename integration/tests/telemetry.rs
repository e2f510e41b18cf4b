//! `[telemetry]` (upstream's keys): the server exports its log records and one span per request
//! over OTLP to an in-process collector, over gRPC and over HTTP protobuf, with the configured
//! service name; a collector that is not there does not stop or slow the server.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use rill_integration::raw::{RawClient, numeric_identifier};
use rill_integration::{ServerOptions, TestServer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a collector received, by signal.
#[derive(Clone, Default)]
struct Received {
    logs: Arc<Mutex<Vec<ExportLogsServiceRequest>>>,
    traces: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

impl Received {
    /// Records one OTLP request body (protobuf) sent to `path`.
    fn record(&self, path: &str, body: &[u8]) {
        if path.ends_with("LogsService/Export") || path == "/v1/logs" {
            let request = ExportLogsServiceRequest::decode(body).expect("an OTLP logs request");
            self.logs.lock().unwrap().push(request);
        } else if path.ends_with("TraceService/Export") || path == "/v1/traces" {
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace request");
            self.traces.lock().unwrap().push(request);
        } else {
            panic!("OTLP export to an unexpected path {path}");
        }
    }
}

/// An OTLP/gRPC collector on a free loopback port: HTTP/2, one gRPC message per request
/// (flag byte, u32 BE length, protobuf), answered with an empty message and grpc-status 0.
async fn grpc_collector() -> (SocketAddr, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let received = Received::default();
    let sink = received.clone();
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let sink = sink.clone();
            tokio::spawn(async move {
                let mut connection = h2::server::handshake(socket).await.unwrap();
                // Each request on a task of its own: the connection makes progress (its
                // streams' data included) only while accept() is polled.
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer_grpc(request, respond, sink.clone()));
                }
            });
        }
    });
    (address, received)
}

/// Reads one gRPC request (a single uncompressed message), records it, answers OK with an
/// empty message.
async fn answer_grpc(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    sink: Received,
) {
    let path = request.uri().path().to_string();
    let mut body = request.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    assert!(
        bytes.len() >= 5 && bytes[0] == 0,
        "an uncompressed gRPC message"
    );
    sink.record(&path, &bytes[5..]);
    let response = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let mut stream = respond.send_response(response, false).unwrap();
    stream
        .send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), false)
        .unwrap();
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    stream.send_trailers(trailers).unwrap();
}

/// An OTLP/HTTP collector: a plain HTTP/1.1 server on its own thread that decodes the protobuf
/// bodies POSTed to /v1/logs and /v1/traces and answers 200.
fn http_collector() -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let received = Received::default();
    let sink = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let sink = sink.clone();
            std::thread::spawn(move || serve_http(stream, sink));
        }
    });
    (address, received)
}

fn serve_http(stream: std::net::TcpStream, sink: Received) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        sink.record(request_line.split_whitespace().nth(1).unwrap_or(""), &body);
        writer
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
            )
            .unwrap();
    }
}

fn text(value: &Option<AnyValue>) -> Option<&str> {
    match value.as_ref()?.value.as_ref()? {
        any_value::Value::StringValue(text) => Some(text),
        _ => None,
    }
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()
}

/// (service name, log bodies) of everything received.
fn log_bodies(received: &Received) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for request in received.logs.lock().unwrap().iter() {
        for resource in &request.resource_logs {
            let service = resource
                .resource
                .as_ref()
                .and_then(|resource| attribute(&resource.attributes, "service.name"))
                .map(|value| format!("{value:?}"))
                .unwrap_or_default();
            for scope in &resource.scope_logs {
                for record in &scope.log_records {
                    out.push((
                        service.clone(),
                        text(&record.body).unwrap_or("").to_string(),
                    ));
                }
            }
        }
    }
    out
}

/// One received span: what the tests look at.
#[derive(Debug)]
struct Span {
    name: String,
    id: Vec<u8>,
    parent: Vec<u8>,
    command: String,
    status: Option<i64>,
}

/// Every span received.
fn spans(received: &Received) -> Vec<Span> {
    let mut out = Vec::new();
    for request in received.traces.lock().unwrap().iter() {
        for resource in &request.resource_spans {
            for scope in &resource.scope_spans {
                for span in &scope.spans {
                    let command = match attribute(&span.attributes, "command") {
                        Some(any_value::Value::StringValue(command)) => command.clone(),
                        _ => String::new(),
                    };
                    let status = match attribute(&span.attributes, "status") {
                        Some(any_value::Value::IntValue(status)) => Some(*status),
                        _ => None,
                    };
                    out.push(Span {
                        name: span.name.clone(),
                        id: span.span_id.clone(),
                        parent: span.parent_span_id.clone(),
                        command,
                        status,
                    });
                }
            }
        }
    }
    out
}

fn exporting(transport: &str, collector: SocketAddr, service: &str) -> ServerOptions {
    let endpoint = |path: &str| format!("http://{collector}{path}");
    ServerOptions::new()
        .env("IGGY_TELEMETRY_ENABLED", "true")
        .env("IGGY_TELEMETRY_SERVICE_NAME", service)
        .env("IGGY_TELEMETRY_LOGS_TRANSPORT", transport)
        .env("IGGY_TELEMETRY_LOGS_ENDPOINT", &endpoint("/v1/logs"))
        .env("IGGY_TELEMETRY_TRACES_TRANSPORT", transport)
        .env("IGGY_TELEMETRY_TRACES_ENDPOINT", &endpoint("/v1/traces"))
        // The SDK's batch delays (5 s and 1 s by default), shortened for the test.
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .env("OTEL_BLRP_SCHEDULE_DELAY", "200")
}

/// Sends a ping and a request that fails (DeleteStream of a stream that does not exist: 1009).
fn make_requests(server: &TestServer) {
    let mut client = RawClient::connect(server.address());
    client.assert_ping();
    client.login_root();
    let response = client.request(203, &numeric_identifier(77));
    assert_eq!(
        response.status, 1009,
        "DeleteStream of a missing stream fails"
    );
}

async fn wait_for(received: &Received, service: &str) {
    let started = Instant::now();
    loop {
        let logs = log_bodies(received);
        let spans = spans(received);
        let logged_start = logs
            .iter()
            .any(|(name, body)| name.contains(service) && body.contains("starting iggy-server"));
        let pinged = spans
            .iter()
            .any(|span| span.name == "request" && span.command == "Ping");
        let failed = spans
            .iter()
            .any(|span| span.command == "DeleteStream" && span.status == Some(1009));
        if logged_start && pinged && failed {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not exported in time: logs {logs:?}, spans {spans:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How many `child` spans sit inside a `request` span of `command`.
fn nested(tree: &[Span], child: &str, command: &str) -> usize {
    tree.iter()
        .filter(|span| span.name == child)
        .filter(|span| {
            tree.iter().any(|parent| {
                parent.name == "request" && parent.command == command && parent.id == span.parent
            })
        })
        .count()
}

// Two workers: the collector must answer while this test's thread blocks on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_and_request_spans_reach_an_otlp_grpc_collector() {
    let (collector, received) = grpc_collector().await;
    let server = TestServer::start(exporting("grpc", collector, "rill-otel-grpc"));
    make_requests(&server);
    wait_for(&received, "rill-otel-grpc").await;

    // A send's and a poll's storage work is a child of their request span, on whichever shard
    // owns the partition (two shards: a partition owned by the other one is forwarded).
    let client = rill_integration::sdk::root_client(&server).await;
    rill_integration::sdk::create_stream(&client, "s").await;
    rill_integration::sdk::create_topic(&client, 0, "t", 2).await;
    for partition in 0..2 {
        let messages = rill_integration::fixtures::test_messages(partition, 0, 3);
        rill_integration::fixtures::send_batch(
            &client,
            &rill_integration::sdk::id(0),
            &rill_integration::sdk::id(0),
            &iggy::prelude::Partitioning::partition_id(partition),
            messages,
        )
        .await;
        let polled = rill_integration::fixtures::poll_from(
            &client,
            &rill_integration::sdk::id(0),
            &rill_integration::sdk::id(0),
            partition,
            0,
            10,
        )
        .await;
        assert_eq!(polled.len(), 3);
    }
    let started = Instant::now();
    loop {
        let tree = spans(&received);
        // Both partitions' appends and reads, wherever their owner shard is.
        if nested(&tree, "storage.append", "SendMessages") >= 2
            && nested(&tree, "storage.read", "PollMessages") >= 2
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "storage spans not nested in their requests: {tree:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn logs_and_request_spans_reach_an_otlp_http_collector() {
    let (collector, received) = http_collector();
    let mut server = TestServer::start(exporting("http", collector, "rill-otel-http"));
    make_requests(&server);
    wait_for(&received, "rill-otel-http").await;
    // What is still queued at shutdown is exported before the process exits.
    let before = log_bodies(&received).len();
    let status = server.stop();
    assert!(status.success(), "a graceful stop: {status:?}");
    let after = log_bodies(&received);
    assert!(after.len() > before, "the shutdown lines are exported too");
    assert!(
        after.iter().any(|(_, body)| body.contains("shut")),
        "{after:?}"
    );
}

/// A collector that accepts connections and never answers: exports hang until their timeout.
#[test]
fn a_collector_that_never_answers_neither_slows_nor_stops_the_server() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let mut server = TestServer::start(exporting("grpc", address, "nobody-answers"));
    // Requests are answered as usual while every export hangs; 50 rounds take well under a
    // second on an idle machine, so 10 s only trips if a request waited on an export.
    let started = Instant::now();
    for _ in 0..50 {
        make_requests(&server);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // And the stop is not held up for long by what cannot be exported.
    let started = Instant::now();
    assert!(server.stop().success());
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}
