//! Locating the `iggy-server` binary under test.
//!
//! Cargo exposes `CARGO_BIN_EXE_<name>` only to tests of the package that owns the binary, so this
//! crate finds it in the workspace's target directory instead, after building it once per test
//! process. The build is cheap when the binary is already up to date.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Environment variable naming a prebuilt server binary; when set, nothing is built.
pub const SERVER_BIN_ENV: &str = "IGGY_SERVER_BIN";

/// The workspace root (this crate lives in `integration/testkit`).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .expect("integration/testkit lives inside the workspace")
        .to_path_buf()
}

/// The target directory cargo builds into: `CARGO_TARGET_DIR` if set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR")
        .or_else(|| std::env::var_os("CARGO_BUILD_TARGET_DIR"))
    {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// Path of the server binary, building it first (once per process) unless `IGGY_SERVER_BIN` is
/// set. Panics with cargo's output when the build fails, so every test reports the same cause.
pub fn server_binary() -> PathBuf {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BINARY
        .get_or_init(locate_or_build)
        .clone()
        .unwrap_or_else(|error| panic!("{error}"))
}

fn locate_or_build() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(SERVER_BIN_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{SERVER_BIN_ENV}={} is not a file", path.display()))
        };
    }
    build_server()?;
    let path = target_dir().join("debug").join("iggy-server");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "cargo built rill-server but {} does not exist",
            path.display()
        ))
    }
}

/// Runs `cargo build -p rill-server --bin iggy-server --features fault-injection` in the
/// workspace root: the tests' server can be made to fail its writes (`RILL_STORAGE_FAULT_FILE`),
/// which a release build cannot.
fn build_server() -> Result<(), String> {
    // `CARGO` is set by cargo for the processes it runs (tests included); fall back to PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    // Cargo gives a test process its package's CARGO_MANIFEST_DIR, CARGO_PKG_* and the like.
    // Build scripts (ring's) declare rerun-if-env-changed on those names, so a build started
    // with them differs from one started in a shell: each would rebuild ring and everything
    // above it (over a minute) for the other. Start the build as a shell would.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || name.starts_with("CARGO_BIN_")
            || matches!(
                name.as_ref(),
                "CARGO_CRATE_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
            )
        {
            command.env_remove(name.as_ref());
        }
    }
    let output = command
        .args([
            "build",
            "-p",
            "rill-server",
            "--bin",
            "iggy-server",
            "--features",
            "fault-injection",
        ])
        .current_dir(workspace_root())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", Path::new(&cargo).display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build -p rill-server --bin iggy-server --features fault-injection` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Runs the server binary to its exit, for starts that must be refused: working directory
/// `dir`, data in `dir/data`, loopback ports of its own, root iggy/iggy, then `env` on top, and
/// none of the test process's own `IGGY_*` variables. Returns whether it exited successfully
/// and everything it printed (stdout, then stderr).
pub fn run_to_exit(dir: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let mut command = Command::new(server_binary());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IGGY_") {
            command.env_remove(key);
        }
    }
    let output = command
        .current_dir(dir)
        .env("IGGY_SYSTEM_PATH", dir.join("data"))
        .env("IGGY_TCP_ADDRESS", "127.0.0.1:0")
        .env("IGGY_QUIC_ADDRESS", "127.0.0.1:0")
        .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
        .env("IGGY_ROOT_USERNAME", "iggy")
        .env("IGGY_ROOT_PASSWORD", "iggy")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run iggy-server");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}
