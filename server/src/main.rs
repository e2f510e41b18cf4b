//! `iggy-server`: the broker daemon.

use clap::Parser;
use rill_server::auth::{PASSWORD_LENGTH, USERNAME_LENGTH, generate_password};
use rill_server::config::Config;
use rill_server::control::RootCredentials;
use std::path::PathBuf;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Message-streaming broker, wire-compatible with Apache Iggy 0.8.0.
///
/// Configuration: the embedded default (configs/server.toml), then --config FILE (or, without
/// it, upstream's core/server/config.toml when found in the working directory or a parent), then
/// IGGY_* environment variables (e.g. IGGY_TCP_ADDRESS=0.0.0.0:8090, IGGY_SYSTEM_PATH=/data),
/// which may come from IGGY_ENV_PATH or a .env file. An upstream Iggy 0.8 configuration is
/// accepted (README, "Upstream configuration"). IGGY_DISPLAY_CONFIG=0 hides the configuration
/// logged at start.
/// The root user is created on first start from IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD, or
/// iggy/iggy with --with-default-root-credentials, or else with a random password printed once.
#[derive(Debug, Parser)]
#[command(name = "iggy-server", version, about, long_about)]
struct Args {
    /// TOML configuration file, applied over the embedded default.
    #[arg(long, short = 'c', value_name = "FILE", env = "IGGY_CONFIG_PATH")]
    config: Option<PathBuf>,
    /// On first start, create the root user as iggy/iggy instead of a random password.
    #[arg(long)]
    with_default_root_credentials: bool,
    /// Print the embedded default configuration and exit.
    #[arg(long)]
    print_default_config: bool,
    /// Delete everything in the data directory (system.path) before starting, as upstream's
    /// flag of the same name does. All streams, messages, users and offsets are lost.
    #[arg(long)]
    fresh: bool,
    /// This node's replica_id in the [[cluster.nodes]] roster (cluster.enabled = true): which
    /// roster entry is this process.
    #[arg(long, value_name = "N")]
    replica_id: Option<u64>,
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Empties the data directory for `--fresh`, refusing paths that cannot be a data directory.
fn wipe_data_directory(path: &std::path::Path) -> Result<(), String> {
    let absolute =
        std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))?;
    if absolute.parent().is_none() || absolute.file_name().is_none() {
        return Err(format!("--fresh refuses to delete {}", absolute.display()));
    }
    match std::fs::remove_dir_all(&absolute) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(format!(
            "--fresh cannot delete {}: {error}",
            absolute.display()
        )),
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Loads `IGGY_ENV_PATH` (which must be readable), or else the first `.env` found in the working
/// directory or one of its parents, as upstream does. Variables already set are not replaced.
/// Returns the file loaded.
fn load_env_file() -> Result<Option<PathBuf>, String> {
    if let Some(path) = std::env::var_os("IGGY_ENV_PATH").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        dotenvy::from_path(&path)
            .map_err(|error| format!("IGGY_ENV_PATH {}: {error}", path.display()))?;
        return Ok(Some(path));
    }
    match dotenvy::dotenv() {
        Ok(path) => Ok(Some(path)),
        Err(error) if error.not_found() => Ok(None),
        Err(error) => Err(format!(".env: {error}")),
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Without --config or IGGY_CONFIG_PATH, upstream's default file `core/server/config.toml`,
/// looked up from the working directory towards the root, as upstream looks it up; none found
/// means the embedded default.
fn upstream_default_config() -> Option<PathBuf> {
    let start = std::env::current_dir().ok()?;
    start
        .ancestors()
        .map(|dir| dir.join("core").join("server").join("config.toml"))
        .find(|path| path.is_file())
}

/// `IGGY_DISPLAY_CONFIG`: the configuration in force is logged at start unless it is set to
/// something other than `1` or `true`, as upstream prints it.
fn display_config() -> bool {
    std::env::var("IGGY_DISPLAY_CONFIG").map_or(true, |value| {
        matches!(value.trim().to_ascii_lowercase().as_str(), "1" | "true")
    })
}

fn root_credentials(with_default: bool) -> Result<RootCredentials, String> {
    let username = std::env::var("IGGY_ROOT_USERNAME").ok();
    let password = std::env::var("IGGY_ROOT_PASSWORD").ok();
    match (username, password) {
        (Some(username), Some(password)) => {
            if !USERNAME_LENGTH.contains(&username.len()) {
                return Err("IGGY_ROOT_USERNAME must be 3 to 50 bytes".into());
            }
            if !PASSWORD_LENGTH.contains(&password.len()) {
                return Err("IGGY_ROOT_PASSWORD must be 3 to 100 bytes".into());
            }
            Ok(RootCredentials {
                username,
                password,
                generated: false,
            })
        }
        (None, None) if with_default => Ok(RootCredentials {
            username: "iggy".into(),
            password: "iggy".into(),
            generated: false,
        }),
        (None, None) => Ok(RootCredentials {
            username: "iggy".into(),
            password: generate_password(),
            generated: true,
        }),
        _ => Err("set both IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD, or neither".into()),
    }
}

fn main() -> ExitCode {
    // Everything the server creates is private: files 0600, directories 0700. The metadata log
    // holds every password hash and token hash.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    // Transparent huge pages for the I/O buffers only, never the heap (see the function).
    let huge_pages = rill_server::storage::huge_pages::confine_to_io_buffers();

    // Before the arguments: an env file may set IGGY_CONFIG_PATH, as upstream's may.
    let env_file = match load_env_file() {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("iggy-server: {error}");
            return ExitCode::from(2);
        }
    };
    let args = Args::parse();
    if args.print_default_config {
        print!("{}", rill_server::config::DEFAULT_CONFIG_TOML);
        return ExitCode::SUCCESS;
    }
    let config_file = args.config.clone().or_else(upstream_default_config);
    let loaded = match Config::load(config_file.as_deref(), std::env::vars()) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("iggy-server: {error}");
            return ExitCode::from(2);
        }
    };
    let (mut config, warnings) = (loaded.config, loaded.warnings);
    if let Err(error) = config.join_cluster(args.replica_id) {
        eprintln!("iggy-server: {error}");
        return ExitCode::from(2);
    }
    if args.fresh
        && let Err(error) = wipe_data_directory(&config.system.path)
    {
        eprintln!("iggy-server: {error}");
        return ExitCode::from(2);
    }
    if let Err(error) = rill_server::server::block_termination_signals() {
        eprintln!("iggy-server: {error}");
        return ExitCode::from(2);
    }
    if let Err(error) =
        rill_server::logging::init(&config.logging, &config.system.path, &config.telemetry)
    {
        eprintln!("iggy-server: {error}");
        return ExitCode::from(2);
    }
    if let Some(path) = env_file {
        tracing::info!(file = %path.display(), "loaded environment variables");
    }
    match (&args.config, &config_file) {
        (None, Some(path)) => tracing::info!(
            file = %path.display(),
            "using the configuration file found at upstream's default location"
        ),
        (Some(path), _) => tracing::info!(file = %path.display(), "using the configuration file"),
        _ => {}
    }
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    if display_config() {
        tracing::info!("configuration in force:\n{}", loaded.resolved);
    }
    let root = match root_credentials(args.with_default_root_credentials) {
        Ok(root) => root,
        Err(error) => {
            tracing::error!("{error}");
            rill_server::telemetry::shutdown();
            return ExitCode::from(2);
        }
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), data = %config.system.path.display(), "starting iggy-server");
    if config.system.buffers.huge_pages {
        tracing::info!("transparent huge pages: {huge_pages}");
    }
    // Before any socket or file is opened: 1,000 connections or thousands of partition files
    // need more than the usual soft limit of 1024 descriptors.
    rill_server::limits::raise_and_log_nofile_limit();
    let outcome = rill_server::server::run(config, root);
    if let Err(error) = &outcome {
        tracing::error!("{error}");
        eprintln!("iggy-server: {error}");
    }
    // What the OpenTelemetry exporters still hold, the last lines above included.
    rill_server::telemetry::shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
