//! `iggy pat`: personal access tokens.

use super::shared::ListArgs;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum PatAction {
    /// Create personal access token
    #[command(visible_alias = "c")]
    Create {
        /// Store token in the iggy home directory, usable later with -n/--token-name
        #[arg(short, long)]
        store_token: bool,
        /// Name of the personal access token
        name: String,
        /// Personal access token expiry time in human-readable format ("none" = never)
        expiry: Vec<String>,
    },
    /// Delete personal access token
    #[command(visible_alias = "d")]
    Delete {
        /// Personal access token name to delete
        name: String,
    },
    /// List all personal access tokens
    #[command(visible_alias = "l")]
    List(ListArgs),
}
