//! GetSnapshot: a ZIP archive of diagnostics (protocol.md 4.1): the configuration, recent
//! server logs, a resource report, the process list and a filesystem overview of the data
//! directory.

use super::access::check;
use super::response::{HandlerResult, Response};
use crate::permissions::Action;
use crate::shard::Shard;
use rill_core::ErrorCode;
use rill_core::requests::GetSnapshot;
use std::io::Write;
use std::path::Path;

const FILESYSTEM_OVERVIEW: u8 = 1;
const PROCESS_LIST: u8 = 2;
const RESOURCE_USAGE: u8 = 3;
const TEST: u8 = 4;
const SERVER_LOGS: u8 = 5;
const SERVER_CONFIG: u8 = 6;
const ALL: u8 = 100;

/// A snapshot shows the host's processes, data paths, recent log lines and the configuration:
/// it needs a server-read permission (upstream 0.8 lets any logged-in user take one).
pub async fn snapshot(shard: &Shard, user_id: u32, request: GetSnapshot) -> HandlerResult {
    shard.metadata(|metadata| check(metadata, user_id, Action::ReadServers))??;
    let method = match request.compression {
        1 => zip::CompressionMethod::Stored,
        2 => zip::CompressionMethod::Deflated,
        3 => zip::CompressionMethod::Bzip2,
        4 => zip::CompressionMethod::Zstd,
        // The zip crate reads LZMA entries but cannot write them.
        5 => return Err(ErrorCode::FeatureUnavailable),
        6 => zip::CompressionMethod::Xz,
        _ => return Err(ErrorCode::InvalidCommand),
    };
    let types: Vec<u8> = if request.types.is_empty() || request.types.contains(&ALL) {
        vec![
            FILESYSTEM_OVERVIEW,
            PROCESS_LIST,
            RESOURCE_USAGE,
            SERVER_LOGS,
            SERVER_CONFIG,
        ]
    } else {
        request.types.clone()
    };
    let data_dir = shard.shared.config.system.path.clone();
    let config = format!("{:#?}\n", shard.shared.config);
    let partitions = shard.shared.shards_table.len();
    // Walking directories and compressing are blocking work: off the shard's event loop.
    compio::runtime::spawn_blocking(move || {
        build_archive(&types, method, &data_dir, &config, partitions)
    })
    .await
    .map_err(|_| ErrorCode::Error)?
    .map(Response::Bytes)
    .map_err(|error| {
        tracing::error!(%error, "cannot build snapshot");
        ErrorCode::SnapshotFileCompletionFailed
    })
}

fn build_archive(
    types: &[u8],
    method: zip::CompressionMethod,
    data_dir: &Path,
    config: &str,
    partitions: usize,
) -> zip::result::ZipResult<Vec<u8>> {
    let mut archive = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    for &kind in types {
        let (name, content) = match kind {
            FILESYSTEM_OVERVIEW => ("filesystem_overview.txt", filesystem_overview(data_dir)),
            PROCESS_LIST => ("process_list.txt", process_list()),
            RESOURCE_USAGE => ("resource_usage.txt", resource_usage(data_dir, partitions)),
            TEST => ("test.txt", "test\n".to_string()),
            SERVER_LOGS => (
                "server_logs.txt",
                crate::logging::recent_lines().join("\n") + "\n",
            ),
            SERVER_CONFIG => ("server_config.txt", config.to_string()),
            _ => continue,
        };
        archive.start_file(name, options)?;
        archive.write_all(content.as_bytes())?;
    }
    Ok(archive.finish()?.into_inner())
}

#[allow(
    clippy::disallowed_methods,
    reason = "runs on the blocking pool (spawn_blocking above)"
)]
fn filesystem_overview(data_dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![data_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.metadata() {
                Ok(metadata) if metadata.is_dir() => stack.push(path),
                Ok(metadata) => {
                    out.push_str(&format!("{:>14} {}\n", metadata.len(), path.display()))
                }
                Err(_) => {}
            }
        }
    }
    out
}

#[allow(
    clippy::disallowed_methods,
    reason = "runs on the blocking pool (spawn_blocking above)"
)]
fn process_list() -> String {
    let mut out = String::from("pid command\n");
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let command = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            out.push_str(&format!("{pid} {}\n", command.trim()));
        }
    }
    out
}

fn resource_usage(data_dir: &Path, partitions: usize) -> String {
    let process = crate::system_info::process();
    let machine = crate::system_info::machine(data_dir);
    format!("{process:#?}\n{machine:#?}\npartitions: {partitions}\n")
}
