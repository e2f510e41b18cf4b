//! `crash-cycles`: kill -9 the real server under load, again and again, and check that nothing
//! it acknowledged was lost, duplicated or damaged (see `rill_integration::crash_cycles`).
//!
//! ```text
//! cargo run -p rill-integration --bin crash-cycles -- --cycles 100 --ack-mode both --seed 7
//! ```
//! Options: `--cycles N` (default 10), `--ack-mode written|fsync|both` (default both),
//! `--seed S` (default: from the clock, printed), `--partitions P` per topic (default 2),
//! `--kill-after MIN..MAX` milliseconds (default 150..900), `--quiet`. The server binary is
//! built as for the tests, or taken from `IGGY_SERVER_BIN`. Exits 1 if anything was lost,
//! duplicated or corrupt.

use rill_integration::crash_cycles::{CrashConfig, run};
use std::process::ExitCode;
use std::time::Instant;

fn parse_args() -> Result<CrashConfig, String> {
    let mut config = CrashConfig {
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or(1),
        ..CrashConfig::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--cycles" => {
                config.cycles = value("--cycles")?
                    .parse()
                    .map_err(|e| format!("--cycles: {e}"))?
            }
            "--ack-mode" => config.ack_modes = value("--ack-mode")?.parse()?,
            "--seed" => {
                config.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--partitions" => {
                config.partitions = value("--partitions")?
                    .parse()
                    .map_err(|e| format!("--partitions: {e}"))?
            }
            "--kill-after" => {
                let text = value("--kill-after")?;
                let (lo, hi) = text
                    .split_once("..")
                    .ok_or("--kill-after takes MIN..MAX milliseconds")?;
                let lo: u64 = lo.parse().map_err(|e| format!("--kill-after: {e}"))?;
                let hi: u64 = hi.parse().map_err(|e| format!("--kill-after: {e}"))?;
                if lo > hi {
                    return Err("--kill-after: MIN is above MAX".into());
                }
                config.kill_after_ms = (lo, hi);
            }
            "--quiet" => config.verbose = false,
            "-h" | "--help" => {
                return Err("usage: crash-cycles [--cycles N] [--ack-mode written|fsync|both] [--seed S] [--partitions P] [--kill-after MIN..MAX] [--quiet]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if config.partitions == 0 {
        return Err("--partitions must be at least 1".into());
    }
    Ok(config)
}

fn main() -> ExitCode {
    let config = match parse_args() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    println!(
        "crash-cycles: {} cycles, ack mode {:?}, seed {}, {} partitions per topic, kill after {}..{} ms",
        config.cycles,
        config.ack_modes,
        config.seed,
        config.partitions,
        config.kill_after_ms.0,
        config.kill_after_ms.1
    );
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let tally = runtime.block_on(run(&config));
    println!("{tally}");
    println!(
        "wall time: {:.1} s, seed {}",
        started.elapsed().as_secs_f64(),
        config.seed
    );
    if tally.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
