//! OpenTelemetry export (`[telemetry]`, upstream's keys): log events and one span per request,
//! sent over OTLP (gRPC or HTTP protobuf) by the OpenTelemetry SDK's batch processors.
//!
//! The exporters never run on a shard: each batch processor has its own thread, and the gRPC
//! exporter's connection lives on a one-worker tokio runtime started here (tonic needs one). A
//! span or log record costs a shard only its hand-over into the processor's bounded queue; when
//! the collector is slow or gone, the queue drops what does not fit instead of blocking.

use crate::config::{OtlpExport, OtlpTransport, TelemetryConfig};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{LogExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::{Mutex, OnceLock};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The target of the per-request span (see `frontend::run`); only the trace export enables it.
pub const REQUEST_SPAN_TARGET: &str = "iggy_server::request";

/// Crates whose own events would loop back into the export they are part of.
const EXPORT_INTERNALS: &[&str] = &[
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "tonic",
    "h2",
    "hyper",
    "hyper_util",
    "tower",
    "reqwest",
];

struct Providers {
    tracer: SdkTracerProvider,
    logger: SdkLoggerProvider,
    /// Keeps the gRPC exporters' runtime alive for the life of the process.
    _runtime: tokio::runtime::Runtime,
}

static PROVIDERS: OnceLock<Mutex<Option<Providers>>> = OnceLock::new();

/// The tracing layers that export logs (at `level`, a `logging.level` directive) and request
/// spans, when `[telemetry]` is enabled; None otherwise. Fails on an endpoint the exporters
/// refuse.
pub fn layers<S>(
    config: &TelemetryConfig,
    level: &str,
) -> Result<Option<impl Layer<S> + Send + Sync + 'static>, String>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if !config.enabled {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otel-export")
        .enable_all()
        .build()
        .map_err(|error| format!("telemetry: cannot start the export runtime: {error}"))?;
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    // tonic's channel spawns its connection task where it is built; the HTTP exporter's
    // blocking client runs a runtime of its own and must be built outside this one.
    let grpc =
        |export: &OtlpExport| (export.transport == OtlpTransport::Grpc).then(|| runtime.enter());
    let spans = {
        let _context = grpc(&config.traces);
        span_exporter(&config.traces)?
    };
    let logs = {
        let _context = grpc(&config.logs);
        log_exporter(&config.logs)?
    };
    let tracer = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let logger = SdkLoggerProvider::builder()
        .with_batch_exporter(logs)
        .with_resource(resource)
        .build();
    let trace_layer = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer("iggy-server"))
        .with_filter(Targets::new().with_target(REQUEST_SPAN_TARGET, tracing::Level::DEBUG));
    let mut directives = level.to_string();
    for target in EXPORT_INTERNALS {
        directives.push_str(&format!(",{target}=off"));
    }
    let log_filter = EnvFilter::try_new(&directives)
        .map_err(|error| format!("telemetry: logging.level {level:?}: {error}"))?;
    let log_layer = opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(&logger)
        .with_filter(log_filter);
    let _ = PROVIDERS.set(Mutex::new(Some(Providers {
        tracer,
        logger,
        _runtime: runtime,
    })));
    Ok(Some(trace_layer.and_then(log_layer)))
}

fn span_exporter(export: &OtlpExport) -> Result<SpanExporter, String> {
    let built = match export.transport {
        OtlpTransport::Grpc => SpanExporter::builder()
            .with_tonic()
            .with_endpoint(&export.endpoint)
            .build(),
        OtlpTransport::Http => SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&export.endpoint)
            .build(),
    };
    built.map_err(|error| format!("telemetry.traces.endpoint {:?}: {error}", export.endpoint))
}

fn log_exporter(export: &OtlpExport) -> Result<LogExporter, String> {
    let built = match export.transport {
        OtlpTransport::Grpc => LogExporter::builder()
            .with_tonic()
            .with_endpoint(&export.endpoint)
            .build(),
        OtlpTransport::Http => LogExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&export.endpoint)
            .build(),
    };
    built.map_err(|error| format!("telemetry.logs.endpoint {:?}: {error}", export.endpoint))
}

/// How long each exporter may take to send what is still queued at exit: a collector that
/// accepts but never answers must not hold the process past an orchestrator's stop grace.
const SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Exports what is still queued and stops the exporters (at exit, at most SHUTDOWN_TIMEOUT
/// each). Does nothing when telemetry is off.
pub fn shutdown() {
    let Some(providers) = PROVIDERS.get().and_then(|slot| slot.lock().ok()?.take()) else {
        return;
    };
    if let Err(error) = providers.tracer.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
        eprintln!("iggy-server: telemetry: exporting the last spans failed: {error}");
    }
    if let Err(error) = providers.logger.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
        eprintln!("iggy-server: telemetry: exporting the last log records failed: {error}");
    }
}
