//! File-system calls compio has no asynchronous operation for (listing and removing directory
//! trees, existence checks, reading small control files) run on the runtime's blocking pool, so
//! a shard's event loop never waits on the disk for them. With boot code (explicitly allowed),
//! this is the only place that calls `std::fs`: clippy's `disallowed-methods`
//! (server/clippy.toml) refuses it anywhere else.
#![allow(clippy::disallowed_methods)]

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// Runs `work` on the blocking pool and waits for it.
pub async fn run<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    compio::runtime::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| Err(io::Error::other("a blocking file-system task panicked")))
}

/// The names of the entries of `dir`.
pub async fn read_dir_names(dir: &Path) -> io::Result<Vec<OsString>> {
    let dir = dir.to_path_buf();
    run(move || {
        std::fs::read_dir(dir)?
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect()
    })
    .await
}

/// Removes a directory and everything in it.
pub async fn remove_dir_all(dir: &Path) -> io::Result<()> {
    let dir = dir.to_path_buf();
    run(move || std::fs::remove_dir_all(dir)).await
}

/// Whether `path` exists.
pub async fn exists(path: &Path) -> io::Result<bool> {
    let path = path.to_path_buf();
    run(move || std::fs::exists(path)).await
}

/// The whole content of a small file.
pub async fn read(path: &Path) -> io::Result<Vec<u8>> {
    let path: PathBuf = path.to_path_buf();
    run(move || std::fs::read(path)).await
}

/// Cuts (or extends with zeros) the file at `path` to `len` bytes and makes that durable.
pub async fn set_len(path: &Path, len: u64) -> io::Result<()> {
    let path = path.to_path_buf();
    run(move || {
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        file.set_len(len)?;
        file.sync_all()
    })
    .await
}

/// Replaces the small file at `path` with `bytes` so that a crash leaves the old content or
/// the new, never a mix: a temporary file beside it, fsynced, renamed over it, the directory
/// fsynced.
pub async fn replace_file(path: &Path, bytes: Vec<u8>) -> io::Result<()> {
    let path = path.to_path_buf();
    run(move || {
        use std::io::Write;
        let temporary = path.with_extension("tmp");
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })
    .await
}
