//! `iggy context`: named sets of connection settings.

use super::shared::ListArgs;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ContextAction {
    /// List all contexts
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Set the active context
    #[command(visible_alias = "u")]
    Use {
        /// Name of the context to use
        context_name: String,
    },
    /// Create a new context
    #[command(visible_alias = "c")]
    Create(ContextCreateArgs),
    /// Delete an existing context
    #[command(visible_alias = "d")]
    Delete {
        /// Name of the context to delete
        context_name: String,
    },
}

#[derive(Debug, Args)]
pub struct ContextCreateArgs {
    /// Name of the context to create
    pub context_name: String,
    /// The transport to use
    #[arg(long)]
    pub transport: Option<String>,
    /// The server address for the TCP transport
    #[arg(long)]
    pub tcp_server_address: Option<String>,
    /// The API URL for the HTTP transport
    #[arg(long)]
    pub http_api_url: Option<String>,
    /// The server address for the QUIC transport
    #[arg(long)]
    pub quic_server_address: Option<String>,
    /// Flag to enable TLS for the TCP transport
    #[arg(long)]
    pub tcp_tls_enabled: Option<bool>,
    /// Iggy server username
    #[arg(short, long)]
    pub username: Option<String>,
    /// Iggy server password
    #[arg(short, long)]
    pub password: Option<String>,
    /// Iggy server personal access token
    #[arg(short, long)]
    pub token: Option<String>,
    /// Iggy server personal access token name
    #[arg(short = 'n', long)]
    pub token_name: Option<String>,
}
