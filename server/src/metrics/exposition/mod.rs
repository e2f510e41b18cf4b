//! The `/metrics` page: a [`Scrape`] (everything gathered at one instant, plain data) encoded
//! by `prometheus-client`'s text encoder (OpenMetrics text, which Prometheus reads) through its
//! `Collector` interface, so values come from our per-shard cells instead of the crate's own
//! metric types, whose shared atomics every shard would contend on.
//!
//! Metric names are listed in ARCHITECTURE.md ("Observability"); `series` holds them as tables
//! (name, kind, help, value) and encodes them.

use super::MetricsSnapshot;
use crate::shard::SharedState;
use crate::shard::table::PartitionKey;

mod encode;
mod series;
use prometheus_client::registry::Registry;
use rill_core::responses::Stats;

/// Storage figures of the partitions one shard owns (from the shards table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardStorage {
    pub partitions: u64,
    pub segments: u64,
    pub messages: u64,
    pub size_bytes: u64,
}

/// Activity of one partition since its owner opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionActivity {
    pub key: PartitionKey,
    pub appends: u64,
    pub appended_messages: u64,
    pub deduplicated_messages: u64,
    pub polls: u64,
    pub polled_messages: u64,
}

impl PartitionActivity {
    fn weight(&self) -> (u64, u64) {
        (
            self.appended_messages + self.polled_messages,
            self.appends + self.polls,
        )
    }
}

/// The `n` most active partitions (messages appended plus polled, then operations), busiest
/// first; ties broken by key so the selection is stable between scrapes.
pub fn top_partitions(mut all: Vec<PartitionActivity>, n: usize) -> Vec<PartitionActivity> {
    all.retain(|partition| partition.weight() != (0, 0));
    let order = |a: &PartitionActivity, b: &PartitionActivity| {
        b.weight().cmp(&a.weight()).then(a.key.cmp(&b.key))
    };
    if all.len() > n && n > 0 {
        all.select_nth_unstable_by(n - 1, order);
    }
    all.truncate(n);
    all.sort_by(order);
    all
}

/// Process figures from /proc.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessFigures {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub threads: u64,
    pub open_fds: u64,
    pub start_time_seconds: f64,
    /// Huge pages mapped for I/O buffers, and the bytes of buffers handed out of them.
    pub huge_page_mapped_bytes: u64,
    pub huge_page_in_use_bytes: u64,
}

/// io_uring counters of one shard's ring, from /proc/self/fdinfo (kernel counters, extended
/// past their 32-bit wrap by [`IoUringTracker`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingCounters {
    pub submissions: u64,
    pub completions: u64,
}

/// Everything one scrape shows, gathered first and encoded afterwards.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub metrics: MetricsSnapshot,
    pub stats: Stats,
    pub storage: Vec<ShardStorage>,
    pub top_partitions: Vec<PartitionActivity>,
    /// Per shard; None where the kernel does not report ring heads and tails.
    pub rings: Vec<Option<RingCounters>>,
    pub process: ProcessFigures,
    /// The shards' I/O driver (`io_uring` or `polling`).
    pub io_driver: &'static str,
}

/// Reads the shards table: per-shard storage figures and the most active partitions.
pub fn gather_partitions(
    shared: &SharedState,
    top: usize,
) -> (Vec<ShardStorage>, Vec<PartitionActivity>) {
    let mut storage = vec![ShardStorage::default(); shared.shard_count as usize];
    let mut activity = Vec::new();
    shared.shards_table.for_each(|key, shard, counters| {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(figures) = storage.get_mut(shard as usize) {
            figures.partitions += 1;
            figures.segments += u64::from(counters.segments_count.load(Relaxed));
            figures.messages += counters.messages_count.load(Relaxed);
            figures.size_bytes += counters.size_bytes.load(Relaxed);
        }
        activity.push(PartitionActivity {
            key: *key,
            appends: counters.appends.get(),
            appended_messages: counters.appended_messages.get(),
            deduplicated_messages: counters.deduplicated_messages.get(),
            polls: counters.polls.get(),
            polled_messages: counters.polled_messages.get(),
        });
    });
    (storage, top_partitions(activity, top))
}

#[allow(
    clippy::disallowed_methods,
    reason = "the HTTP endpoint's thread, never a shard"
)]
/// Reads the process's figures from /proc.
pub fn process_figures(started_at_micros: u64) -> ProcessFigures {
    let info = crate::system_info::process();
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |entries| entries.count() as u64);
    let huge_pages = crate::storage::huge_pages::stats();
    ProcessFigures {
        cpu_seconds: info.cpu_seconds,
        resident_bytes: info.resident_bytes,
        virtual_bytes: info.virtual_bytes,
        threads: u64::from(info.threads),
        open_fds,
        start_time_seconds: started_at_micros as f64 / 1e6,
        huge_page_mapped_bytes: huge_pages.mapped,
        huge_page_in_use_bytes: huge_pages.in_use,
    }
}

/// Keeps each ring's counters monotonic across the kernel's u32 wrap. Lives on the scraping
/// thread; a wrap is detected as long as scrapes are less than 2^32 operations apart.
#[derive(Debug, Default)]
pub struct IoUringTracker {
    last: Vec<(i32, u32, u32)>,
    totals: Vec<RingCounters>,
}

impl IoUringTracker {
    #[allow(
        clippy::disallowed_methods,
        reason = "the HTTP endpoint's thread, never a shard"
    )]
    /// Reads every shard's ring (by its fd) and returns the extended counters.
    pub fn read(&mut self, ring_fds: &[i32]) -> Vec<Option<RingCounters>> {
        ring_fds
            .iter()
            .enumerate()
            .map(|(shard, &fd)| {
                if fd < 0 {
                    return None;
                }
                let reading = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
                    .ok()
                    .and_then(|text| parse_ring_fdinfo(&text));
                match reading {
                    Some((submitted, completed)) => {
                        Some(self.update(shard, fd, submitted, completed))
                    }
                    // A read that fails once (seen under load) keeps the ring's last figures,
                    // so its counter series neither vanish nor go back between scrapes.
                    None => self
                        .last
                        .get(shard)
                        .filter(|(last_fd, _, _)| *last_fd == fd)
                        .map(|_| self.totals[shard]),
                }
            })
            .collect()
    }

    fn update(&mut self, shard: usize, fd: i32, submitted: u32, completed: u32) -> RingCounters {
        if self.last.len() <= shard {
            self.last.resize(shard + 1, (-1, 0, 0));
            self.totals.resize(shard + 1, RingCounters::default());
        }
        let (last_fd, last_submitted, last_completed) = self.last[shard];
        let (base_submitted, base_completed) = if last_fd == fd {
            (last_submitted, last_completed)
        } else {
            // A ring counts from 0 when it is created.
            self.totals[shard] = RingCounters::default();
            (0, 0)
        };
        let totals = &mut self.totals[shard];
        totals.submissions += u64::from(submitted.wrapping_sub(base_submitted));
        totals.completions += u64::from(completed.wrapping_sub(base_completed));
        self.last[shard] = (fd, submitted, completed);
        *totals
    }
}

/// (SQEs consumed by the kernel, CQEs posted) from an io_uring fdinfo: `SqHead` and `CqTail`,
/// printed by Linux 5.18 and later. None for anything else (another kind of fd, older kernels).
pub fn parse_ring_fdinfo(text: &str) -> Option<(u32, u32)> {
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().parse::<u32>().ok())?
        })
    };
    Some((field("SqHead")?, field("CqTail")?))
}

/// Encodes a scrape in the text exposition format (ends with `# EOF`).
pub fn encode(scrape: Scrape) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut text = String::with_capacity(64 * 1024);
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("writing to a String cannot fail");
    text
}

#[cfg(test)]
mod tests;
