//! Value parsers and option types shared by several commands: `--protocol`, `--list-mode`.

use clap::{Args, ValueEnum};

pub(super) fn parse_protocol(text: &str) -> Result<rill_sdk::Protocol, String> {
    text.parse()
}

/// List output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ListMode {
    /// A table.
    #[default]
    Table,
    /// One `|`-separated line per item.
    List,
    /// JSON (addition to the official CLI).
    Json,
}

/// A list-mode option shared by list commands.
#[derive(Debug, Args, Clone)]
pub struct ListArgs {
    /// List mode (table or list)
    #[arg(short, long, value_enum, default_value_t = ListMode::Table)]
    pub list_mode: ListMode,
}
