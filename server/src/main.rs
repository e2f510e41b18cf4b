//! `iggy-server`: the broker daemon.
//!
//! The daemon is being built issue by issue; until the server core lands this binary parses its
//! flags and says plainly that it cannot serve yet, rather than pretending to.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Message-streaming broker, wire-compatible with Apache Iggy 0.8.0.
#[derive(Debug, Parser)]
#[command(name = "iggy-server", version, about)]
struct Args {
    /// Path to the TOML configuration file; without it the embedded default (configs/server.toml) is used.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Create the root user as iggy/iggy on first start instead of a random password.
    #[arg(long)]
    with_default_root_credentials: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    eprintln!(
        "iggy-server: not yet able to serve (config: {}); the server core is still being built",
        args.config
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "embedded default".into())
    );
    ExitCode::from(2)
}
