//! [`TestServer`]: one `iggy-server` process on 127.0.0.1 with its own port and data directory.
//!
//! The process is configured only through environment variables (protocol and config names as
//! upstream): `IGGY_TCP_ADDRESS`, `IGGY_SYSTEM_PATH`, `IGGY_SYSTEM_SHARDING_CPU_ALLOCATION`,
//! `IGGY_ROOT_USERNAME`/`IGGY_ROOT_PASSWORD` (iggy/iggy), plus whatever a test adds. Any `IGGY_*`
//! variable inherited from the environment running the tests is removed first, so a developer's
//! shell cannot change what a test sees. stdout and stderr go to `server.log` in the temporary
//! directory; the log is appended to across restarts and printed when a test fails (or always,
//! with `IGGY_TEST_SHOW_LOG=1`).
//!
//! Directory layout (removed when the [`TestServer`] is dropped):
//!
//! ```text
//! <tmp>/rill-it-XXXX/
//!     data/         IGGY_SYSTEM_PATH: everything the server persists
//!     server.log    stdout + stderr of every run, each run introduced by a marker line
//! ```

use crate::binary::server_binary;
use crate::slots::{self, Slot};
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Root credentials every test server is started with.
pub const ROOT_USERNAME: &str = "iggy";
/// Root password every test server is started with.
pub const ROOT_PASSWORD: &str = "iggy";

/// How long a starting server may take before it accepts TCP connections.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a server may take to exit after SIGTERM (flush, sync, close).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for a process to disappear after SIGKILL.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);
/// Set this environment variable to see the server log of passing tests too.
pub const SHOW_LOG_ENV: &str = "IGGY_TEST_SHOW_LOG";

/// Runs every test server on this `system.io_driver` (`auto`, `io_uring` or `polling`).
pub const IO_DRIVER_ENV: &str = "RILL_TEST_IO_DRIVER";
/// Lines of the server log shown in failure messages.
const LOG_TAIL_LINES: usize = 60;

/// How to start a [`TestServer`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Value of `[system.sharding] cpu_allocation` (a shard count such as "2" or "4").
    pub cpu_allocation: String,
    /// Extra environment variables, applied after the harness's own.
    pub env: Vec<(String, String)>,
    /// Extra command-line arguments (e.g. `--replica-id 1`).
    pub args: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            cpu_allocation: "2".to_string(),
            env: Vec::new(),
            args: Vec::new(),
        }
    }
}

impl ServerOptions {
    /// Two shards and no extra environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `count` shards (a count larger than the CPU count is allowed).
    pub fn shards(mut self, count: u32) -> Self {
        self.cpu_allocation = count.to_string();
        self
    }

    /// Adds a command-line argument.
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_string());
        self
    }

    /// Sets an extra environment variable, e.g. `IGGY_SYSTEM_SEGMENT_SIZE`.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
}

/// A running (or stopped, between [`TestServer::kill`] and [`TestServer::start_again`])
/// `iggy-server` process. Dropping it kills the process and deletes its directory.
#[derive(Debug)]
pub struct TestServer {
    child: Option<Child>,
    options: ServerOptions,
    address: SocketAddr,
    quic_address: SocketAddr,
    websocket_address: SocketAddr,
    binary: PathBuf,
    starts: u32,
    // Declared after `child` so the directory outlives the process in drop order; the Drop impl
    // kills the process first anyway.
    root: TempDir,
    /// None for the nodes of a [`crate::TestCluster`], which holds the slots of all of them.
    _slot: Option<Slot>,
}

impl TestServer {
    /// Builds the binary if needed, waits for a free server slot, then starts a server on a free
    /// port with an empty data directory and waits until it accepts TCP connections.
    pub fn start(options: ServerOptions) -> TestServer {
        Self::start_in(options, Some(slots::acquire()))
    }

    /// Starts a server that holds `slot` (none: its caller holds one for it).
    pub(crate) fn start_in(options: ServerOptions, slot: Option<Slot>) -> TestServer {
        let binary = server_binary();
        let root = tempfile::Builder::new()
            .prefix("rill-it-")
            .tempdir()
            .expect("create temporary directory");
        std::fs::create_dir_all(root.path().join("data")).expect("create data directory");
        let mut server = TestServer {
            child: None,
            options,
            // Port 0 on the first start: the server binds what the OS hands it and logs it, so no
            // other process can take a port between our choice and its bind. Restarts reuse it.
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            quic_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            websocket_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            binary,
            starts: 0,
            root,
            _slot: slot,
        };
        server.start_again();
        server
    }

    /// Sets an environment variable for the next starts (after [`Self::stop`] or
    /// [`Self::kill`]): a later value of the same name wins.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.options.env.push((key.to_string(), value.to_string()));
    }

    /// Starts with two shards and no extra settings.
    pub fn start_default() -> TestServer {
        Self::start(ServerOptions::default())
    }

    /// Starts with extra environment variables (`IGGY_*` settings) on top of the defaults.
    pub fn start_with(env: &[(&str, &str)]) -> TestServer {
        let options = env
            .iter()
            .fold(ServerOptions::new(), |options, (key, value)| {
                options.env(key, value)
            });
        Self::start(options)
    }

    /// The root user's connection string (rill's SDK and CLI, the official SDKs).
    pub fn connection_string(&self) -> String {
        format!("iggy://{ROOT_USERNAME}:{ROOT_PASSWORD}@{}", self.address)
    }

    /// The HTTP endpoint's address as this run of the server logged it (set `IGGY_HTTP_ADDRESS`
    /// to `127.0.0.1:0` for a port of its own), if it listens.
    pub fn http_address(&self) -> Option<SocketAddr> {
        logged_address(&self.log(), "HTTP API listening")
    }

    /// The server's TCP address (127.0.0.1 and the port chosen at start).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The server's QUIC (UDP) address: 127.0.0.1 and a port chosen at start. Every test server
    /// gets its own, since QUIC is on by default and the shards' sockets share their port.
    pub fn quic_address(&self) -> SocketAddr {
        self.quic_address
    }

    /// The server's WebSocket address: 127.0.0.1 and a port chosen at start (WebSocket is on by
    /// default, as upstream; `IGGY_WEBSOCKET_ENABLED=false` turns it off).
    pub fn websocket_address(&self) -> SocketAddr {
        self.websocket_address
    }

    /// The server's TCP address as `"127.0.0.1:port"`.
    pub fn tcp_address(&self) -> String {
        self.address.to_string()
    }

    /// The data directory (`IGGY_SYSTEM_PATH`).
    pub fn data_path(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The file holding the server's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.root.path().join("server.log")
    }

    /// Everything the server has printed so far, over all runs.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last lines of the log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let start = lines.len().saturating_sub(LOG_TAIL_LINES);
        lines[start..].join("\n")
    }

    /// Process id of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running (it may have crashed).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Starts the server again on the same data directory and port (after [`Self::kill`] or
    /// [`Self::stop`], or the first time from [`Self::start`]) and waits until it accepts TCP
    /// connections. Panics with the log if it exits or does not listen in time.
    pub fn start_again(&mut self) {
        assert!(
            self.child.is_none(),
            "start_again: the server is still running"
        );
        self.starts += 1;
        let log_path = self.log_path();
        let mut log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("open server log");
        writeln!(
            log,
            "===== rill-integration: start #{} of {} on {} =====",
            self.starts,
            self.binary.display(),
            self.address
        )
        .expect("write server log");
        let stderr = log.try_clone().expect("clone log handle");
        let log_start = log.metadata().expect("server log size").len();
        // A restart keeps the HTTP port too, like the others: were it to bind port 0 again, the
        // kernel could hand it the port the WebSocket listener is about to take back (seen in
        // CI: "cannot listen on ... (WebSocket): Address already in use").
        let http_address = self
            .http_address()
            .map_or_else(|| "127.0.0.1:0".to_string(), |address| address.to_string());

        let mut command = Command::new(&self.binary);
        command.args(&self.options.args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IGGY_") {
                command.env_remove(key);
            }
        }
        command
            .current_dir(self.root.path())
            .env("IGGY_TCP_ADDRESS", self.address.to_string())
            .env("IGGY_QUIC_ADDRESS", self.quic_address.to_string())
            .env("IGGY_WEBSOCKET_ADDRESS", self.websocket_address.to_string())
            // A port of its own, so parallel servers do not fight over the default 3000
            // (see `http_address`).
            .env("IGGY_HTTP_ADDRESS", &http_address)
            .env("IGGY_SYSTEM_PATH", self.data_path())
            .env(
                "IGGY_SYSTEM_SHARDING_CPU_ALLOCATION",
                &self.options.cpu_allocation,
            )
            .env("IGGY_ROOT_USERNAME", ROOT_USERNAME)
            .env("IGGY_ROOT_PASSWORD", ROOT_PASSWORD)
            // The whole suite, or part of it, on another I/O driver (scripts/test.sh runs the
            // storage, front-end and shutdown tests again with "polling").
            .envs(
                std::env::var(IO_DRIVER_ENV)
                    .ok()
                    .map(|driver| ("IGGY_SYSTEM_IO_DRIVER", driver)),
            )
            .envs(
                self.options
                    .env
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr));
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", self.binary.display()));
        self.child = Some(child);
        self.wait_until_listening(log_start);
    }

    /// Waits for this start's "listening for TCP connections" log line (the server's last start-up
    /// line, written once every shard listens) and takes the bound addresses from it. A connect
    /// probe could not tell our server from another process listening on the same port.
    fn wait_until_listening(&mut self, log_start: u64) {
        let started = Instant::now();
        loop {
            let child = self.child.as_mut().expect("server process");
            if let Some(status) = child.try_wait().expect("poll server process") {
                self.child = None;
                panic!(
                    "iggy-server exited with {} before accepting connections on {}; log:\n{}",
                    describe(status),
                    self.address,
                    self.log_tail()
                );
            }
            let log = std::fs::read(self.log_path()).unwrap_or_default();
            let log = String::from_utf8_lossy(log.get(log_start as usize..).unwrap_or_default());
            if let Some(tcp) = logged_address(&log, "listening for TCP connections") {
                self.address = tcp;
                if let Some(quic) = logged_address(&log, "listening for QUIC connections") {
                    self.quic_address = quic;
                }
                if let Some(websocket) = logged_address(&log, "listening for WebSocket connections")
                {
                    self.websocket_address = websocket;
                }
                return;
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                self.kill();
                panic!(
                    "iggy-server did not accept connections on {} within {STARTUP_TIMEOUT:?}; log:\n{}",
                    self.address,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Sends SIGTERM and waits (bounded) for the process to exit; returns its exit status.
    /// Panics if it does not exit in time (after killing it).
    pub fn stop(&mut self) -> ExitStatus {
        self.stop_within(SHUTDOWN_TIMEOUT)
    }

    /// [`Self::stop`] with its own time limit, for servers with much to close (thousands of
    /// partitions are flushed and synced one by one at shutdown).
    pub fn stop_within(&mut self, limit: Duration) -> ExitStatus {
        let pid = self.pid().expect("stop: the server is not running");
        send_signal(pid, libc::SIGTERM);
        match self.wait_for_exit(limit) {
            Some(status) => status,
            None => {
                self.kill();
                panic!(
                    "iggy-server did not exit within {limit:?} after SIGTERM; log:\n{}",
                    self.log_tail()
                );
            }
        }
    }

    /// Graceful restart: SIGTERM, require exit status 0, then start again on the same data
    /// directory and port.
    pub fn restart(&mut self) {
        let status = self.stop();
        assert!(
            status.success(),
            "iggy-server exited with {} after SIGTERM (expected 0); log:\n{}",
            describe(status),
            self.log_tail()
        );
        self.start_again();
    }

    /// SIGKILL, as a crash would: nothing is flushed. Waits for the process to disappear.
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid() {
            send_signal(pid, libc::SIGKILL);
            let _ = self.wait_for_exit(KILL_TIMEOUT);
        }
        self.child = None;
    }

    /// Waits up to `limit` for the process to exit; `None` if it is still running.
    fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let started = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Some(status) = child.try_wait().expect("poll server process") {
                self.child = None;
                return Some(status);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() || std::env::var_os(SHOW_LOG_ENV).is_some() {
            eprintln!(
                "----- iggy-server log ({}), last {LOG_TAIL_LINES} lines -----\n{}\n----- end of server log -----",
                self.log_path().display(),
                self.log_tail()
            );
        }
    }
}

/// The address in the last log line containing `marker` (such as "listening for TCP
/// connections"), in the text (`address=...`) or JSON (`"address":"..."`) log format.
pub fn logged_address(log: &str, marker: &str) -> Option<SocketAddr> {
    let line = log.lines().rev().find(|line| line.contains(marker))?;
    let value = match line.split_once("address=") {
        Some((_, rest)) => rest.split_whitespace().next()?,
        None => line.split_once("\"address\":\"")?.1.split('"').next()?,
    };
    value.parse().ok()
}

fn send_signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("pid fits pid_t");
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own child, which has not
    // been reaped yet (we only reap it in wait_for_exit), so the id cannot have been reused.
    let result = unsafe { libc::kill(pid, signal) };
    assert!(
        result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH),
        "kill({pid}, {signal}) failed: {}",
        std::io::Error::last_os_error()
    );
}

/// "exit code N" or "signal N".
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}
