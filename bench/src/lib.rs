//! `iggy-bench`: throughput and latency of a whole system speaking the Iggy 0.8.0 protocol
//! (rill's `iggy-server`, or upstream Apache Iggy 0.8.0), side by side with the machine's
//! physical ceilings.
//!
//! Code map:
//! - [`args`]: the command line (upstream `iggy-bench` 0.5.0 names and flags) → [`plan::Plan`].
//! - [`plan`]: what a benchmark is (workload, actors, streams, finish, output settings).
//! - [`client`]: a lean blocking TCP client; every frame is encoded and decoded by `rill_core`.
//! - [`workload`]: server setup, actor threads, collection → [`report::Report`].
//! - [`actors`]: producer, consumer, group consumer, producing consumer loops.
//! - [`stats`]: per-actor HDR histograms and time series, and how they add up.
//! - [`report`], [`charts`], [`results`]: the report and its terminal table, SVG charts, the
//!   results directory they are written to.
//! - [`baseline`]: O_DIRECT disk and loopback TCP ceilings.
//! - [`compare`]: A/B runs against two servers.
//! - [`procfs`]: the server's RSS, CPU time and ack mode from /proc.
//! - [`units`]: sizes, durations, ranges, timestamps.
//!
//! Invariants: the hot path allocates nothing per batch (frames are built once; receive buffers
//! are reused); actors share only relaxed counters while measuring; nothing here encodes a
//! protocol structure by hand.

pub mod actors;
pub mod args;
pub mod baseline;
pub mod charts;
pub mod client;
pub mod compare;
pub mod error;
pub mod plan;
pub mod procfs;
pub mod report;
pub mod results;
pub mod stats;
pub mod units;
pub mod workload;

pub use rill_core as protocol;

use args::{Cli, Command};
use baseline::{Baseline, BaselineOptions};
use error::{Error, Result};
use std::path::{Path, PathBuf};

/// Runs a command line (program name first) and returns the process exit code: 0 on success,
/// 1 when the benchmark failed, 2 for a bad command line.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::parse_from_args(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { 2 } else { 0 };
        }
    };
    match run_cli(&cli) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("iggy-bench: {error}");
            match error {
                Error::Usage(_) | Error::Unsupported(_) => 2,
                _ => 1,
            }
        }
    }
}

/// Executes a parsed command line.
pub fn run_cli(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Examples => {
            print!("{}", args::EXAMPLES);
            Ok(())
        }
        Command::LoopbackSink(sink) => baseline::loopback_sink(&sink.connect, sink.connections),
        Command::Baseline(options) => {
            let baseline = baseline::measure(
                &BaselineOptions {
                    dir: options.dir.clone(),
                    disk_bytes: options.disk_size.0,
                    block_size: options.block_size.0,
                    loopback_bytes: options.loopback_size.0,
                    sink_program: std::env::current_exe()?,
                },
                !options.no_disk,
                !options.no_loopback,
            )?;
            let path = options
                .save
                .clone()
                .unwrap_or_else(|| options.output_dir.join("baseline.json"));
            baseline.save(&path)?;
            println!("{}", baseline.summary());
            println!("saved to {}", path.display());
            Ok(())
        }
        Command::Compare(compare) => {
            let baseline = load_baseline(cli, &compare.output_dir)?;
            let comparison = compare::run(compare, baseline)?;
            print!("{}", compare::table(&comparison));
            Ok(())
        }
        _ => {
            let plan = cli.into_plan()?;
            let baseline = load_baseline(cli, &plan.output.output_dir)?;
            let report = workload::run(&plan, baseline)?;
            let dir = results::write(&report, &plan.output)?;
            print!("{}", report.table());
            println!("results: {}", dir.display());
            Ok(())
        }
    }
}

/// The ceilings for a run: measured now (`--baseline`), read from `--baseline-file`, or read
/// from `<output dir>/baseline.json` when a previous `iggy-bench baseline` saved one there.
fn load_baseline(cli: &Cli, output_dir: &Path) -> Result<Option<Baseline>> {
    let global = &cli.global;
    if global.baseline {
        eprintln!("measuring the machine's ceilings (--baseline)...");
        let baseline = baseline::measure(
            &BaselineOptions {
                dir: global.data_dir.clone(),
                disk_bytes: 1 << 30,
                block_size: 1 << 20,
                loopback_bytes: 2 << 30,
                sink_program: std::env::current_exe()?,
            },
            true,
            true,
        )?;
        eprintln!("{}", baseline.summary());
        return Ok(Some(baseline));
    }
    if let Some(path) = &global.baseline_file {
        return Baseline::load(path).map(Some);
    }
    let default: PathBuf = output_dir.join("baseline.json");
    if default.is_file() {
        return Baseline::load(&default).map(Some);
    }
    Ok(None)
}
