//! A run's results directory: report.json and the SVG charts, under `--output-dir`.

use crate::error::Result;
use crate::plan::OutputArgs;
use crate::report::Report;
use std::path::{Path, PathBuf};

/// Writes report.json and the charts into a new results directory under `output`.
pub fn write(report: &Report, output: &OutputArgs) -> Result<PathBuf> {
    let dir = unique_dir(&output.output_dir, &report.directory_name())?;
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(report).expect("report serialises"),
    )?;
    crate::charts::write_all(report, &dir)?;
    Ok(dir)
}

/// Creates `parent/name`, or `parent/name-2`, `-3`... if it exists.
fn unique_dir(parent: &Path, name: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(parent)?;
    for attempt in 1.. {
        let candidate = if attempt == 1 {
            parent.join(name)
        } else {
            parent.join(format!("{name}-{attempt}"))
        };
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error.into()),
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_unique() {
        let parent = tempfile::tempdir().unwrap();
        let first = unique_dir(parent.path(), "pp_1").unwrap();
        let second = unique_dir(parent.path(), "pp_1").unwrap();
        assert_eq!(first.file_name().unwrap(), "pp_1");
        assert_eq!(second.file_name().unwrap(), "pp_1-2");
    }
}
