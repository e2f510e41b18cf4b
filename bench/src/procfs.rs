//! Reading a server process from `/proc` (Linux): its resident memory and CPU time sampled during
//! a run (`--server-pid`), and the acknowledgement mode its configuration gives the bench topics.
//!
//! * RSS: `VmRSS` of `/proc/PID/status` (KiB).
//! * CPU: `utime` and `stime` (fields 14 and 15 of `/proc/PID/stat`, clock ticks), which include
//!   every thread of the process, io_uring workers (`iou-wrk-*`) among them.

use crate::units::BYTES_PER_MEBIBYTE;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProcessSample {
    /// Seconds since the sampler started.
    pub time_s: f64,
    pub rss_mib: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
}

/// CPU seconds (user + system) this process has used so far.
pub fn own_cpu_seconds() -> f64 {
    sample(std::process::id(), Instant::now())
        .map_or(0.0, |reading| reading.cpu_user_s + reading.cpu_system_s)
}

/// Reads `/proc/PID/status` and `/proc/PID/stat`; `None` if the process is gone.
pub fn sample(pid: u32, since: Instant) -> Option<ProcessSample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rss_kib = parse_vm_rss_kib(&status)?;
    let (user_ticks, system_ticks) = parse_cpu_ticks(&stat)?;
    let ticks_per_second = clock_ticks_per_second();
    Some(ProcessSample {
        time_s: since.elapsed().as_secs_f64(),
        rss_mib: rss_kib as f64 * 1024.0 / BYTES_PER_MEBIBYTE,
        cpu_user_s: user_ticks as f64 / ticks_per_second,
        cpu_system_s: system_ticks as f64 / ticks_per_second,
    })
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// `VmRSS:   12345 kB` → 12345.
pub fn parse_vm_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// utime and stime from a `/proc/PID/stat` line. The command name (field 2) is in parentheses and
/// may contain spaces, so fields are counted after the last `)`.
pub fn parse_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name, field 3 (state) is index 0, so field N is index N - 3.
    let user = fields.get(14 - 3)?.parse().ok()?;
    let system = fields.get(15 - 3)?.parse().ok()?;
    Some((user, system))
}

/// Samples a process periodically on a background thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<ProcessSample>>>,
}

impl Sampler {
    /// Starts sampling `pid` every `interval`; the first sample is taken before returning.
    pub fn start(pid: u32, interval: Duration) -> Option<(Sampler, ProcessSample)> {
        let since = Instant::now();
        let first = sample(pid, since)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("server-sampler".into())
                .spawn(move || {
                    let mut samples = vec![first];
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(interval);
                        match sample(pid, since) {
                            Some(reading) => samples.push(reading),
                            None => break,
                        }
                    }
                    if let Some(reading) = sample(pid, since) {
                        samples.push(reading);
                    }
                    samples
                })
                .expect("spawn sampler thread")
        };
        Some((
            Sampler {
                stop,
                thread: Some(thread),
            },
            first,
        ))
    }

    pub fn stop(mut self) -> Vec<ProcessSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .map(|thread| thread.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// What a run did to the server process.
#[derive(Debug, Clone, Serialize)]
pub struct ServerUsage {
    pub pid: u32,
    /// Before this run created its streams: the server's idle RSS when it was just started,
    /// otherwise whatever earlier runs left.
    pub rss_start_mib: f64,
    pub rss_max_mib: f64,
    pub rss_end_mib: f64,
    /// (max − min) / min over the measured part of the run, in percent: how flat RSS stayed.
    pub rss_spread_percent: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// CPU seconds per second of wall time over the measured part (2.0 = two cores busy).
    pub cpu_cores_avg: f64,
    pub samples: Vec<ProcessSample>,
}

impl ServerUsage {
    /// Summarises samples; `measured_from_s` is when measurement began (after setup and warm-up).
    pub fn from_samples(
        pid: u32,
        idle: ProcessSample,
        samples: Vec<ProcessSample>,
        measured_from_s: f64,
    ) -> Self {
        let measured: Vec<&ProcessSample> = samples
            .iter()
            .filter(|s| s.time_s >= measured_from_s)
            .collect();
        let window: Vec<&ProcessSample> = if measured.len() >= 2 {
            measured
        } else {
            samples.iter().collect()
        };
        let max = window.iter().map(|s| s.rss_mib).fold(0.0, f64::max);
        let min = window.iter().map(|s| s.rss_mib).fold(f64::MAX, f64::min);
        let (first, last) = (window.first().copied(), window.last().copied());
        let cpu = |s: Option<&ProcessSample>| s.map_or(0.0, |s| s.cpu_user_s + s.cpu_system_s);
        let wall = match (first, last) {
            (Some(first), Some(last)) => last.time_s - first.time_s,
            _ => 0.0,
        };
        let end = samples.last().copied().unwrap_or(idle);
        ServerUsage {
            pid,
            rss_start_mib: idle.rss_mib,
            rss_max_mib: samples
                .iter()
                .map(|s| s.rss_mib)
                .fold(idle.rss_mib, f64::max),
            rss_end_mib: end.rss_mib,
            rss_spread_percent: if min > 0.0 && min < f64::MAX {
                (max - min) / min * 100.0
            } else {
                0.0
            },
            cpu_user_s: end.cpu_user_s - idle.cpu_user_s,
            cpu_system_s: end.cpu_system_s - idle.cpu_system_s,
            cpu_cores_avg: if wall > 0.0 {
                (cpu(last) - cpu(first)) / wall
            } else {
                0.0
            },
            samples,
        }
    }
}

/// The acknowledgement modes of rill's `iggy-server` (`[system.partition] ack_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AckMode {
    Memory,
    Written,
    Fsync,
}

impl AckMode {
    pub fn name(self) -> &'static str {
        match self {
            AckMode::Memory => "memory",
            AckMode::Written => "written",
            AckMode::Fsync => "fsync",
        }
    }

    pub fn parse(text: &str) -> Option<AckMode> {
        match text.trim().trim_matches('"').to_ascii_lowercase().as_str() {
            "memory" => Some(AckMode::Memory),
            "written" => Some(AckMode::Written),
            "fsync" => Some(AckMode::Fsync),
            _ => None,
        }
    }
}

/// The ack mode a topic gets from a server process's configuration, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DetectedAckMode {
    pub mode: AckMode,
    pub source: String,
}

/// Works out the ack mode of `stream/topic` on the server `pid` the way rill's server resolves
/// it: the embedded default (`written`), then the `--config` file, then `IGGY_SYSTEM_PARTITION_*`
/// environment variables; the first matching `ack_mode_overrides` entry wins over the default.
/// `None` when the process cannot be read (not ours, not Linux, or gone).
pub fn detect_ack_mode(pid: u32, stream: &str, topic: &str) -> Option<DetectedAckMode> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
    let env: Vec<(String, String)> = environ
        .split(|&byte| byte == 0)
        .filter_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (key, value) = text.split_once('=')?;
            Some((key.to_string(), value.to_string()))
        })
        .collect();
    let args: Vec<String> = cmdline
        .split(|&byte| byte == 0)
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    let config_text = config_path(&args, &cwd).and_then(|path| std::fs::read_to_string(path).ok());
    resolve_ack_mode(&env, config_text.as_deref(), stream, topic)
}

fn config_path(args: &[String], cwd: &Path) -> Option<PathBuf> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let value = if arg == "--config" || arg == "-c" {
            iter.next().cloned()
        } else {
            arg.strip_prefix("--config=").map(str::to_string)
        };
        if let Some(value) = value {
            let path = PathBuf::from(value);
            return Some(if path.is_absolute() {
                path
            } else {
                cwd.join(path)
            });
        }
    }
    None
}

/// The pure part of [`detect_ack_mode`].
pub fn resolve_ack_mode(
    env: &[(String, String)],
    config_text: Option<&str>,
    stream: &str,
    topic: &str,
) -> Option<DetectedAckMode> {
    let mut mode = AckMode::Written;
    let mut source = "server default".to_string();
    let mut overrides: Vec<String> = Vec::new();
    if let Some(config) = config_text.and_then(|text| text.parse::<toml::Table>().ok()) {
        let partition = config
            .get("system")
            .and_then(|system| system.get("partition"));
        if let Some(value) = partition
            .and_then(|p| p.get("ack_mode"))
            .and_then(|v| v.as_str())
            .and_then(AckMode::parse)
        {
            mode = value;
            source = "config file [system.partition] ack_mode".to_string();
        }
        if let Some(list) = partition
            .and_then(|p| p.get("ack_mode_overrides"))
            .and_then(|v| v.as_array())
        {
            overrides = list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
        }
    }
    for (key, value) in env {
        if key == "IGGY_SYSTEM_PARTITION_ACK_MODE" {
            mode = AckMode::parse(value)?;
            source = "IGGY_SYSTEM_PARTITION_ACK_MODE".to_string();
        } else if key == "IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES" {
            overrides = value
                .split(',')
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .map(str::to_string)
                .collect();
        }
    }
    for entry in &overrides {
        let Some((names, entry_mode)) = entry.rsplit_once('=') else {
            continue;
        };
        let Some((entry_stream, entry_topic)) = names.split_once('/') else {
            continue;
        };
        let matches = |pattern: &str, name: &str| pattern.trim() == "*" || pattern.trim() == name;
        if matches(entry_stream, stream)
            && matches(entry_topic, topic)
            && let Some(entry_mode) = AckMode::parse(entry_mode)
        {
            return Some(DetectedAckMode {
                mode: entry_mode,
                source: format!("ack_mode_overrides entry \"{entry}\""),
            });
        }
    }
    Some(DetectedAckMode { mode, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let status = "Name:\tiggy-server\nVmPeak:\t  99999 kB\nVmRSS:\t   23456 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss_kib(status), Some(23456));
        assert_eq!(parse_vm_rss_kib("Name: x\n"), None);
        let stat = "1234 (iggy server) S 1 1234 1234 0 -1 4194560 500 0 0 0 777 333 0 0 20 0 3 0";
        assert_eq!(parse_cpu_ticks(stat), Some((777, 333)));
        assert_eq!(parse_cpu_ticks("garbage"), None);
    }

    #[test]
    fn usage_summarises_the_measured_window() {
        let reading = |time_s, rss_mib, cpu| ProcessSample {
            time_s,
            rss_mib,
            cpu_user_s: cpu,
            cpu_system_s: 0.0,
        };
        let idle = reading(0.0, 20.0, 1.0);
        let samples = vec![
            idle,
            reading(1.0, 40.0, 1.5),
            reading(2.0, 50.0, 3.5),
            reading(3.0, 40.0, 5.5),
        ];
        let usage = ServerUsage::from_samples(7, idle, samples, 1.0);
        assert_eq!(usage.rss_start_mib, 20.0);
        assert_eq!(usage.rss_max_mib, 50.0);
        assert_eq!(usage.rss_end_mib, 40.0);
        assert!((usage.rss_spread_percent - 25.0).abs() < 1e-9);
        assert!((usage.cpu_user_s - 4.5).abs() < 1e-9);
        // 4 CPU seconds over 2 s measured.
        assert!((usage.cpu_cores_avg - 2.0).abs() < 1e-9);
    }

    #[test]
    fn ack_mode_follows_the_servers_precedence() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let default = resolve_ack_mode(&[], None, "bench-stream-1", "topic-1").unwrap();
        assert_eq!(default.mode, AckMode::Written);
        let config = "[system.partition]\nack_mode = \"fsync\"\n";
        let from_file = resolve_ack_mode(&[], Some(config), "s", "t").unwrap();
        assert_eq!(from_file.mode, AckMode::Fsync);
        let from_env = resolve_ack_mode(
            &env(&[("IGGY_SYSTEM_PARTITION_ACK_MODE", "memory")]),
            Some(config),
            "s",
            "t",
        )
        .unwrap();
        assert_eq!(from_env.mode, AckMode::Memory);
        assert_eq!(from_env.source, "IGGY_SYSTEM_PARTITION_ACK_MODE");
        let overridden = resolve_ack_mode(
            &env(&[(
                "IGGY_SYSTEM_PARTITION_ACK_MODE_OVERRIDES",
                "orders/x=fsync, bench-stream-1/*=memory",
            )]),
            None,
            "bench-stream-1",
            "topic-1",
        )
        .unwrap();
        assert_eq!(overridden.mode, AckMode::Memory);
        let config_override = "[system.partition]\nack_mode_overrides = [\"*/topic-1=fsync\"]\n";
        let from_file_override =
            resolve_ack_mode(&[], Some(config_override), "bench-stream-2", "topic-1").unwrap();
        assert_eq!(from_file_override.mode, AckMode::Fsync);
        assert!(
            config_path(
                &["iggy-server".into(), "--config=a.toml".into()],
                Path::new("/x")
            )
            .is_some_and(|path| path == Path::new("/x/a.toml"))
        );
    }
}
