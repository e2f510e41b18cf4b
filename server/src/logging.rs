//! Logging with `tracing`: the config's level, overridden by RUST_LOG when set. Lines go to
//! stdout and the most recent ones are also kept in memory for GetSnapshot's server logs.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;
use tracing_subscriber::EnvFilter;

/// How many recent log lines a snapshot can include.
const RECENT_LINES: usize = 2000;

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// The most recent log lines, oldest first.
pub fn recent_lines() -> Vec<String> {
    RECENT
        .lock()
        .map(|lines| lines.iter().cloned().collect())
        .unwrap_or_default()
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
        let _ = std::io::stdout().lock().write_all(&self.line);
        if let Ok(mut recent) = RECENT.lock() {
            if recent.len() == RECENT_LINES {
                recent.pop_front();
            }
            recent.push_back(String::from_utf8_lossy(&self.line).trim_end().to_string());
        }
    }
}

pub fn init(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_thread_names(true)
        .with_target(false)
        .with_ansi(false)
        .with_writer(|| TeeWriter {
            line: Vec::with_capacity(256),
        })
        .try_init();
}
