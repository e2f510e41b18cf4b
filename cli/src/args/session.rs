//! `iggy login` (`iggy logout` takes no arguments).

use clap::Args;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Login session expiry time in human-readable format (default 15minutes; "none" = never)
    pub expiry: Vec<String>,
}
