//! `iggy`: the operators' command-line tool. Its command tree arrives with the SDK issue.

use clap::Parser;
use std::process::ExitCode;

/// Command-line client for the broker (and any Iggy 0.8.0 server).
#[derive(Debug, Parser)]
#[command(name = "iggy", version, about)]
struct Args {}

fn main() -> ExitCode {
    let _ = Args::parse();
    eprintln!("iggy: no commands yet; the CLI is still being built");
    ExitCode::from(2)
}
