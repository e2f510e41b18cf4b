//! Starts the real `iggy-server` binary for integration tests: built once per test binary, one
//! server per test on a free loopback port with its own temporary data directory.
//! (Also used by the CLI's tests through `#[path]`.)

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
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
            .args(["build", "-p", "rill-server", "--bin", "iggy-server"])
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// A running server; killed when dropped.
pub struct TestServer {
    child: Option<Child>,
    pub port: u16,
    pub address: String,
    pub data_dir: tempfile::TempDir,
}

impl TestServer {
    pub fn start() -> TestServer {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut server = TestServer {
            child: None,
            port,
            address: format!("127.0.0.1:{port}"),
            data_dir,
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
        let child = Command::new(server_binary())
            .env("IGGY_TCP_ADDRESS", &self.address)
            .env("IGGY_SYSTEM_PATH", self.data_dir.path().join("data"))
            .env("IGGY_ROOT_USERNAME", "iggy")
            .env("IGGY_ROOT_PASSWORD", "iggy")
            .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "2")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&self.address).is_err() {
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
