//! `iggy completion`: shell completion scripts.

use clap::Args;
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}
