//! Process and machine figures for GetStats, read from /proc and statvfs.

use std::path::Path;

#[derive(Debug, Default)]
pub struct ProcessInfo {
    pub resident_bytes: u64,
    pub threads: u32,
    pub read_bytes: u64,
    pub written_bytes: u64,
    /// Average CPU use since the process started, in percent of one core.
    pub cpu_usage_percent: f32,
    /// User plus system CPU time since the process started.
    pub cpu_seconds: f64,
    pub virtual_bytes: u64,
}

#[derive(Debug, Default)]
pub struct MachineInfo {
    pub hostname: String,
    pub os_name: String,
    pub os_version: String,
    pub kernel_version: String,
    pub total_memory_bytes: u64,
    pub available_memory_bytes: u64,
    pub free_disk_bytes: u64,
    pub total_disk_bytes: u64,
    /// Share of all CPUs busy since boot, in percent.
    pub cpu_usage_percent: f32,
}

/// Reads a /proc file. Callers run off the shards' event loops: at boot, on the blocking pool
/// (GetStats, GetSnapshot) or on the HTTP endpoint's thread.
#[allow(
    clippy::disallowed_methods,
    reason = "never called on a shard's event loop"
)]
fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn field_kib(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(0)
}

fn ticks_per_second() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |ticks| ticks as f64)
}

pub fn process() -> ProcessInfo {
    let status = read("/proc/self/status");
    let io = read("/proc/self/io");
    let io_field = |name| {
        io.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let stat = read("/proc/self/stat");
    // Fields after the parenthesised command name: utime is 14th, stime 15th, starttime 22nd.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |index: usize| {
        fields
            .get(index - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let ticks = ticks_per_second();
    let cpu_seconds = (field(14) + field(15)) / ticks;
    let uptime: f64 = read("/proc/uptime")
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let alive_seconds = (uptime - field(22) / ticks).max(1e-3);
    ProcessInfo {
        resident_bytes: field_kib(&status, "VmRSS:") * 1024,
        threads: field_kib(&status, "Threads:") as u32,
        read_bytes: io_field("read_bytes:"),
        written_bytes: io_field("write_bytes:"),
        cpu_usage_percent: (100.0 * cpu_seconds / alive_seconds) as f32,
        cpu_seconds,
        virtual_bytes: field_kib(&status, "VmSize:") * 1024,
    }
}

/// The memory this process may use: its cgroup's limit (v2, else v1) when one is set and
/// smaller than the machine's RAM, else the RAM.
pub fn memory_limit_bytes() -> u64 {
    let ram = field_kib(&read("/proc/meminfo"), "MemTotal:") * 1024;
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|path| read(path).trim().parse::<u64>().ok());
    match cgroup {
        Some(limit) if ram == 0 || limit < ram => limit,
        _ => ram,
    }
}

pub fn machine(data_dir: &Path) -> MachineInfo {
    let meminfo = read("/proc/meminfo");
    let os_release = read("/etc/os-release");
    let os_field = |name: &str| {
        os_release
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|value| value.trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let (free_disk_bytes, total_disk_bytes) = nix::sys::statvfs::statvfs(data_dir)
        .map(|stat| {
            let block = stat.fragment_size();
            (stat.blocks_available() * block, stat.blocks() * block)
        })
        .unwrap_or((0, 0));
    let cpu_line = read("/proc/stat");
    let totals: Vec<f64> = cpu_line
        .lines()
        .next()
        .map(|line| {
            line.split_whitespace()
                .skip(1)
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let cpu_usage_percent = if totals.len() >= 4 {
        let total: f64 = totals.iter().sum();
        let idle = totals[3] + totals.get(4).copied().unwrap_or(0.0);
        (100.0 * (total - idle) / total.max(1.0)) as f32
    } else {
        0.0
    };
    MachineInfo {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        os_name: os_field("NAME="),
        os_version: os_field("VERSION_ID="),
        kernel_version: read("/proc/sys/kernel/osrelease").trim().to_string(),
        total_memory_bytes: field_kib(&meminfo, "MemTotal:") * 1024,
        available_memory_bytes: field_kib(&meminfo, "MemAvailable:") * 1024,
        free_disk_bytes,
        total_disk_bytes,
        cpu_usage_percent,
    }
}
