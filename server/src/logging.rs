//! Logging with `tracing`: the config's level (RUST_LOG, when set, takes precedence), text or
//! JSON lines, written to stdout and/or to size-rotated files. The most recent lines are also
//! kept in memory for GetSnapshot's server logs.
//!
//! Every line written by a shard thread carries its shard id (`shard=N` in text, `"shard_id"`
//! in JSON): [`set_shard`] records it in a thread-local when the shard thread starts, and the
//! formatter reads it, so no span has to be entered or survive filtering.
//!
//! A line is formatted into a buffer and written whole when the event ends (one `write` to
//! stdout, one to the file), so lines from different threads never interleave.

use crate::config::{LogFormat, LoggingConfig};
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// How many recent log lines a snapshot can include.
const RECENT_LINES: usize = 2000;
/// Name of the current log file; rotated ones get `.1`, `.2`, ... (1 = newest).
pub const LOG_FILE_NAME: &str = "iggy-server.log";

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
static SINKS: OnceLock<Sinks> = OnceLock::new();

thread_local! {
    static SHARD: Cell<Option<u16>> = const { Cell::new(None) };
}

/// Marks the current thread as shard `id`: its log lines carry the id from now on.
pub fn set_shard(id: u16) {
    SHARD.with(|shard| shard.set(Some(id)));
}

fn current_shard() -> Option<u16> {
    SHARD.with(Cell::get)
}

/// The most recent log lines, oldest first.
pub fn recent_lines() -> Vec<String> {
    RECENT
        .lock()
        .map(|lines| lines.iter().cloned().collect())
        .unwrap_or_default()
}

/// Where lines go besides the in-memory ring.
struct Sinks {
    stdout: bool,
    file: Option<Mutex<RotatingFile>>,
}

/// A log file rotated by size: `name` is current, `name.1` the newest rotated one.
pub struct RotatingFile {
    directory: PathBuf,
    max_size: u64,
    max_files: u32,
    file: Option<File>,
    size: u64,
}

// File logging writes and rotates on the thread that logs, a shard's among them: buffered
// writes of log lines (off by default, [logging.file]), not data I/O. A writer thread behind a
// bounded queue would take that off the shards; not done yet.
#[allow(clippy::disallowed_methods, reason = "log file writes, see above")]
impl RotatingFile {
    /// Opens (appending to) `directory/iggy-server.log`, creating the directory.
    pub fn open(directory: &Path, max_size: u64, max_files: u32) -> std::io::Result<Self> {
        std::fs::create_dir_all(directory)?;
        let mut file = RotatingFile {
            directory: directory.to_path_buf(),
            max_size,
            max_files,
            file: None,
            size: 0,
        };
        file.reopen()?;
        Ok(file)
    }

    fn path(&self, generation: u32) -> PathBuf {
        match generation {
            0 => self.directory.join(LOG_FILE_NAME),
            n => self.directory.join(format!("{LOG_FILE_NAME}.{n}")),
        }
    }

    fn reopen(&mut self) -> std::io::Result<()> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(self.path(0))?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// Shifts `name.i` to `name.i+1` (dropping the oldest) and starts a new current file.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file = None;
        if self.max_files == 0 {
            std::fs::remove_file(self.path(0))?;
        } else {
            let _ = std::fs::remove_file(self.path(self.max_files));
            for generation in (0..self.max_files).rev() {
                let from = self.path(generation);
                if from.exists() {
                    std::fs::rename(&from, self.path(generation + 1))?;
                }
            }
        }
        self.reopen()
    }

    /// Appends one line, rotating first if it would push the file past its maximum size.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.size > 0 && self.size + line.len() as u64 > self.max_size {
            self.rotate()?;
        }
        if self.file.is_none() {
            self.reopen()?;
        }
        let file = self.file.as_mut().expect("reopened");
        file.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }
}

struct TeeWriter {
    line: Vec<u8>,
}

impl Write for TeeWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for TeeWriter {
    // One event is one write sequence; it is emitted whole when the writer is dropped.
    fn drop(&mut self) {
        let sinks = SINKS.get();
        if sinks.is_none_or(|sinks| sinks.stdout) {
            let _ = std::io::stdout().lock().write_all(&self.line);
        }
        if let Some(file) = sinks.and_then(|sinks| sinks.file.as_ref())
            && let Ok(mut file) = file.lock()
            && let Err(error) = file.write_line(&self.line)
        {
            // Nowhere else to report it without recursing into the logger.
            let _ = writeln!(
                std::io::stderr(),
                "iggy-server: cannot write log file: {error}"
            );
        }
        if let Ok(mut recent) = RECENT.lock() {
            if recent.len() == RECENT_LINES {
                recent.pop_front();
            }
            recent.push_back(String::from_utf8_lossy(&self.line).trim_end().to_string());
        }
    }
}

/// Formats one event as a text or JSON line, with the shard id of the thread.
pub struct LineFormat {
    pub format: LogFormat,
}

/// Collects an event's fields as JSON values.
#[derive(Default)]
struct JsonFields {
    message: Option<String>,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl JsonFields {
    fn insert(&mut self, field: &Field, value: serde_json::Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            });
        } else {
            self.fields.insert(field.name().to_string(), value);
        }
    }
}

impl Visit for JsonFields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, serde_json::json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, value.into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.insert(field, value.to_string().into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.insert(field, format!("{value:?}").into());
    }
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        let mut timestamp = String::with_capacity(32);
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let shard = current_shard();
        let thread = std::thread::current();
        match self.format {
            LogFormat::Text => {
                write!(writer, "{timestamp} {:>5} ", metadata.level())?;
                match shard {
                    Some(id) => write!(writer, "shard={id} ")?,
                    None => write!(writer, "{} ", thread.name().unwrap_or("-"))?,
                }
                if let Some(scope) = ctx.event_scope() {
                    for span in scope.from_root() {
                        write!(writer, "{}", span.name())?;
                        let extensions = span.extensions();
                        if let Some(fields) = extensions.get::<FormattedFields<N>>()
                            && !fields.is_empty()
                        {
                            write!(writer, "{{{fields}}}")?;
                        }
                        write!(writer, ": ")?;
                    }
                }
                ctx.field_format().format_fields(writer.by_ref(), event)?;
                writeln!(writer)
            }
            LogFormat::Json => {
                let mut fields = JsonFields::default();
                event.record(&mut fields);
                let mut line = serde_json::Map::new();
                line.insert("timestamp".into(), timestamp.into());
                line.insert("level".into(), metadata.level().as_str().into());
                if let Some(id) = shard {
                    line.insert("shard_id".into(), id.into());
                }
                if let Some(name) = thread.name() {
                    line.insert("thread".into(), name.into());
                }
                line.insert("target".into(), metadata.target().into());
                if let Some(scope) = ctx.event_scope() {
                    let spans: Vec<serde_json::Value> =
                        scope.from_root().map(|span| span.name().into()).collect();
                    line.insert("spans".into(), spans.into());
                }
                line.insert("message".into(), fields.message.unwrap_or_default().into());
                if !fields.fields.is_empty() {
                    line.insert("fields".into(), fields.fields.into());
                }
                writeln!(writer, "{}", serde_json::Value::Object(line))
            }
        }
    }
}

/// Sets up logging from the config. `data_dir` resolves a relative log directory. Fails only
/// when file output is on and the file cannot be opened.
pub fn init(
    config: &LoggingConfig,
    data_dir: &Path,
    telemetry: &crate::config::TelemetryConfig,
) -> Result<(), String> {
    let file = if config.file.enabled {
        let directory = config.file_directory(data_dir);
        let file = RotatingFile::open(&directory, config.file.max_size.0, config.file.max_files)
            .map_err(|error| {
                format!(
                    "cannot open the log file in {}: {error}",
                    directory.display()
                )
            })?;
        Some(Mutex::new(file))
    } else {
        None
    };
    let _ = SINKS.set(Sinks {
        stdout: config.stdout,
        file,
    });
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(quiet_raft(&config.level)))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(LineFormat {
            format: config.format,
        })
        .with_writer(|| TeeWriter {
            line: Vec::with_capacity(256),
        })
        .with_filter(filter);
    let export = crate::telemetry::layers(telemetry, &config.level)?;
    let _ = tracing_subscriber::registry()
        .with(lines)
        .with(export)
        .try_init();
    Ok(())
}

/// openraft logs every vote and every failed RPC to a down peer, at INFO and ERROR: the cluster
/// module reports what an operator needs (leader changes, peers lost and found, a stopped Raft
/// node) in its own lines, so openraft is silent unless the level names it
/// (`level = "info,openraft=info"`, or RUST_LOG).
fn quiet_raft(level: &str) -> String {
    if level.contains("openraft") {
        level.to_string()
    } else {
        format!("{level},openraft=off")
    }
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture(format: LogFormat, emit: impl FnOnce()) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .event_format(LineFormat { format })
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        String::from_utf8(captured.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn json_lines_are_objects_with_shard_and_fields() {
        // Each test runs on its own thread, so the thread-local shard id stays in this test.
        let text = capture(LogFormat::Json, || {
            tracing::info!(partitions = 3, name = "a \"quoted\"\nname", "shard started");
            set_shard(5);
            let _span = tracing::info_span!("request", id = 9).entered();
            tracing::warn!(elapsed = ?std::time::Duration::from_millis(3), "slow request");
        });
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect(line))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["message"], "shard started");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["fields"]["partitions"], 3);
        assert_eq!(lines[0]["fields"]["name"], "a \"quoted\"\nname");
        assert!(lines[0].get("shard_id").is_none());
        assert_eq!(lines[1]["shard_id"], 5);
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["spans"][0], "request");
        assert_eq!(lines[1]["fields"]["elapsed"], "3ms");
    }

    #[test]
    fn text_lines_carry_the_shard_id() {
        let text = capture(LogFormat::Text, || {
            set_shard(2);
            tracing::info!(partitions = 1, "shard stopped");
        });
        assert!(
            text.contains(" INFO shard=2 shard stopped partitions=1"),
            "{text}"
        );
    }

    #[test]
    fn files_rotate_by_size_and_keep_max_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = RotatingFile::open(dir.path(), 100, 2).unwrap();
        let line = [b'x'; 39]
            .iter()
            .copied()
            .chain([b'\n'])
            .collect::<Vec<u8>>();
        // 40-byte lines: two fit in 100 bytes, the third rotates.
        for _ in 0..7 {
            file.write_line(&line).unwrap();
        }
        let size = |name: &str| std::fs::metadata(dir.path().join(name)).map(|m| m.len());
        assert_eq!(size(LOG_FILE_NAME).unwrap(), 40);
        assert_eq!(size("iggy-server.log.1").unwrap(), 80);
        assert_eq!(size("iggy-server.log.2").unwrap(), 80);
        assert!(size("iggy-server.log.3").is_err());
        // Reopening appends to the current file.
        drop(file);
        let mut file = RotatingFile::open(dir.path(), 100, 2).unwrap();
        file.write_line(&line).unwrap();
        assert_eq!(size(LOG_FILE_NAME).unwrap(), 80);
        // Without kept files the current file restarts.
        let mut file = RotatingFile::open(dir.path(), 100, 0).unwrap();
        file.write_line(&line).unwrap();
        assert_eq!(size(LOG_FILE_NAME).unwrap(), 40);
        assert_eq!(size("iggy-server.log.1").unwrap(), 80);
    }
}
