//! Where results go: tables (comfy-table) by default, `|`-separated lines in list mode, JSON on
//! request; informational lines ("Executing ...") only when not quiet and not in JSON mode.

use crate::args::ListMode;
use comfy_table::{Table, presets::ASCII_FULL};
use serde_json::Value;

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub quiet: bool,
    pub json: bool,
}

impl Printer {
    /// A human-oriented status line.
    pub fn info(&self, text: impl AsRef<str>) {
        if !self.quiet && !self.json {
            println!("{}", text.as_ref());
        }
    }

    /// A machine-readable result (printed even in quiet mode: it is the command's output).
    pub fn json(&self, value: &Value) {
        println!(
            "{}",
            serde_json::to_string_pretty(value).expect("JSON values serialise")
        );
    }

    /// The effective list mode: `--json` overrides the per-command option.
    pub fn mode(&self, mode: ListMode) -> ListMode {
        if self.json { ListMode::Json } else { mode }
    }

    /// Prints rows as a table, as `|` lines, or the given JSON.
    pub fn rows(&self, mode: ListMode, header: &[&str], rows: Vec<Vec<String>>, json: Value) {
        match self.mode(mode) {
            ListMode::Json => self.json(&json),
            ListMode::List => {
                if !self.quiet {
                    for row in rows {
                        println!("{}", row.join("|"));
                    }
                }
            }
            ListMode::Table => {
                if !self.quiet {
                    println!("{}", table(header, rows));
                }
            }
        }
    }

    /// A two-column property/value table, or the JSON.
    pub fn properties(&self, rows: Vec<(&str, String)>, json: Value) {
        if self.json {
            self.json(&json);
        } else if !self.quiet {
            let rows = rows
                .into_iter()
                .map(|(name, value)| vec![name.to_owned(), value])
                .collect();
            println!("{}", table(&["Property", "Value"], rows));
        }
    }
}

pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> Table {
    let mut table = Table::new();
    table.load_preset(ASCII_FULL);
    table.set_header(header.to_vec());
    for row in rows {
        table.add_row(row);
    }
    table
}
