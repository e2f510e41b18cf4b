//! The server itself: `iggy ping`, `stats`, `snapshot`, `client` and `cluster`.

use super::shared::ListArgs;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct PingArgs {
    /// Stop after sending count Ping packets
    #[arg(short, long, default_value_t = 1)]
    pub count: u32,
}

/// Stats output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsOutput {
    /// A table.
    Table,
    /// `|`-separated lines.
    List,
    /// JSON.
    Json,
    /// TOML.
    Toml,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// List mode (table, list, JSON, TOML)
    #[arg(short, long, value_enum, default_value_t = StatsOutput::Table)]
    pub output: StatsOutput,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Specify snapshot compression method (stored, deflated, bzip2, zstd, lzma, xz)
    #[arg(short, long)]
    pub compression: Option<String>,
    /// Specify types of snapshots to include (filesystem_overview, process_list,
    /// resource_usage, test, server_logs, server_config, all)
    #[arg(short, long, num_args = 1..)]
    pub snapshot_types: Option<Vec<String>>,
    /// Define the output directory for the snapshot file.
    #[arg(short, long)]
    pub out_dir: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ClientAction {
    /// Get details of a single client with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Client ID to get
        client_id: u32,
    },
    /// List all currently connected clients to iggy server
    #[command(visible_alias = "l")]
    List(ListArgs),
}

#[derive(Debug, Subcommand)]
pub enum ClusterAction {
    /// Get cluster metadata
    #[command(visible_alias = "m")]
    Metadata(ListArgs),
}
