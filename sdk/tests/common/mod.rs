//! Starts the real `iggy-server` binary for integration tests: built once per test binary, one
//! server per test on a loopback port of its own with its own temporary data directory.
//! (Also used by the CLI's and the bench's tests through `#[path]`.)

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

static BUILD: Once = Once::new();

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate inside the workspace")
        .to_path_buf()
}

/// Builds the server binary once and returns its path.
pub fn server_binary() -> PathBuf {
    let root = workspace_root();
    BUILD.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            // The same build as the integration harness's, so the two never replace each
            // other's binary.
            .args([
                "build",
                "-p",
                "rill-server",
                "--bin",
                "iggy-server",
                "--features",
                "fault-injection",
            ])
            .current_dir(&root)
            .stdout(Stdio::null())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building iggy-server failed");
    });
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    target.join("debug").join("iggy-server")
}

/// A port nothing listens on right now, never the same twice in this test process (for tests of
/// unreachable servers; servers themselves bind port 0, see [`TestServer::start`]).
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("address")
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// The address in the server's "iggy-server is listening for `transport` connections" log line
/// (text log format: `address=...`).
pub fn logged_address(log: &str, transport: &str) -> Option<SocketAddr> {
    let marker = format!("iggy-server is listening for {transport} connections");
    let line = log.lines().rev().find(|line| line.contains(&marker))?;
    line.split_once("address=")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A running server; killed when dropped.
pub struct TestServer {
    child: Option<Child>,
    /// The TCP address, `127.0.0.1:PORT`.
    pub address: String,
    pub data_dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    /// Starts with extra `IGGY_*` settings. The first start binds port 0 and reads the port from
    /// the log, so no other process can take it between our choice and the server's bind;
    /// restarts reuse it.
    pub fn start_with(env: &[(&str, &str)]) -> TestServer {
        let mut server = TestServer {
            child: None,
            address: "127.0.0.1:0".to_owned(),
            data_dir: tempfile::tempdir().expect("temp dir"),
            env: env
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
        };
        server.spawn();
        server
    }

    /// The connection string for root.
    pub fn connection_string(&self) -> String {
        format!("iggy://iggy:iggy@{}", self.address)
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.path().join("server.log"))
            .expect("log file");
        let log_start = log.metadata().expect("log size").len() as usize;
        let mut command = Command::new(server_binary());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IGGY_") {
                command.env_remove(key);
            }
        }
        let child = command
            .env("IGGY_TCP_ADDRESS", &self.address)
            // QUIC is on by default at 127.0.0.1:8080: an ephemeral port keeps test servers apart.
            .env("IGGY_QUIC_ADDRESS", "127.0.0.1:0")
            .env("IGGY_HTTP_ADDRESS", "127.0.0.1:0")
            .env("IGGY_SYSTEM_PATH", self.data_dir.path().join("data"))
            .env("IGGY_ROOT_USERNAME", "iggy")
            .env("IGGY_ROOT_PASSWORD", "iggy")
            .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "2")
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("server starts");
        self.child = Some(child);
        // The TCP line is the server's last start-up line, written once every shard listens; a
        // connect probe could not tell our server from another process on the same port.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(address) = self
                .log()
                .get(log_start..)
                .and_then(|log| logged_address(log, "TCP"))
            {
                self.address = address.to_string();
                break;
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("server exited early with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "server did not listen: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.path().join("server.log")).unwrap_or_default()
    }

    /// SIGTERM and wait for the process to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Starts again on the same port and data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
