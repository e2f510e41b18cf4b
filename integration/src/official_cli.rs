//! The official CLI (`iggy` from crate iggy-cli 0.13.0) as a test tool: finding the binary and
//! running it against a [`TestServer`] over TCP or QUIC, bounded in time, with its output kept
//! for assertions.
//!
//! The CLI is not built by this workspace: `scripts/install-iggy-cli.sh` installs it into
//! `$CARGO_HOME/bin` (CI runs it before the tests). Set `IGGY_CLI_BIN` to use another binary.
//! If it is missing, the tests that need it fail and say so, rather than pass without testing.

use crate::server::TestServer;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const CLI_VERSION: &str = "0.13.0";
/// Upper bound for one CLI invocation (the SDK inside would otherwise retry a dead server).
pub const CLI_TIMEOUT: Duration = Duration::from_secs(30);

/// The CLI binary: `IGGY_CLI_BIN`, else `$CARGO_HOME/bin/iggy`; panics with installation
/// instructions when it is missing or the wrong version.
pub fn cli_binary() -> PathBuf {
    let path = match std::env::var_os("IGGY_CLI_BIN") {
        Some(path) => PathBuf::from(path),
        None => std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
            .expect("CARGO_HOME or HOME is set")
            .join("bin")
            .join("iggy"),
    };
    assert!(
        path.is_file(),
        "the official Iggy CLI is not installed at {}: run scripts/install-iggy-cli.sh \
         (cargo install iggy-cli --version {CLI_VERSION} --locked), or set IGGY_CLI_BIN",
        path.display()
    );
    let output = Command::new(&path)
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {} --version: {error}", path.display()));
    let version = String::from_utf8_lossy(&output.stdout);
    assert!(
        version.split_whitespace().any(|word| word == CLI_VERSION),
        "{} reports {version:?}, expected iggy-cli {CLI_VERSION}",
        path.display()
    );
    path
}

/// One CLI run.
pub struct Run {
    pub args: String,
    pub output: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn describe(&self) -> String {
        format!(
            "`iggy {}` exited with {}\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.output.status,
            self.stdout(),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }

    /// Asserts exit code 0 and that stdout contains every one of `needles`; returns stdout.
    #[track_caller]
    pub fn success(&self, needles: &[&str]) -> String {
        assert!(self.output.status.success(), "{}", self.describe());
        let stdout = self.stdout();
        for needle in needles {
            assert!(
                stdout.contains(needle),
                "missing {needle:?} in output of {}",
                self.describe()
            );
        }
        stdout
    }

    /// Asserts a non-zero exit code.
    #[track_caller]
    pub fn failure(&self) {
        assert!(
            !self.output.status.success(),
            "expected failure: {}",
            self.describe()
        );
    }
}

/// How the CLI authenticates.
pub enum Auth<'a> {
    Credentials(&'a str, &'a str),
    Token(&'a str),
}

/// Which transport the CLI uses to reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    /// QUIC with the official defaults (server name "localhost", no certificate validation).
    Quic,
    /// The HTTP REST API (`--http-api-url`), no retries.
    Http,
}

/// Runs the CLI against `server` over `transport`, with its context directory in a temporary
/// `IGGY_HOME` and no inherited `IGGY_*` settings, bounded by [`CLI_TIMEOUT`].
pub fn iggy_via(
    server: &TestServer,
    transport: Transport,
    home: &tempfile::TempDir,
    auth: Auth,
    args: &[&str],
) -> Run {
    let binary = cli_binary();
    let mut command = Command::new(&binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IGGY_") {
            command.env_remove(key);
        }
    }
    command.env("IGGY_HOME", home.path());
    match transport {
        Transport::Tcp => command.args([
            "--transport",
            "tcp",
            "--tcp-server-address",
            &server.tcp_address(),
        ]),
        Transport::Quic => command.args([
            "--transport",
            "quic",
            "--quic-server-address",
            &server.quic_address().to_string(),
        ]),
        Transport::Http => command.args([
            "--transport",
            "http",
            "--http-api-url",
            &format!(
                "http://{}",
                server.http_address().expect("the HTTP API listens")
            ),
            "--http-retries",
            "0",
        ]),
    };
    match auth {
        Auth::Credentials(username, password) => {
            command.args(["--username", username, "--password", password]);
        }
        Auth::Token(token) => {
            command.args(["--token", token]);
        }
    }
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("run {}: {error}", binary.display()));
    let started = Instant::now();
    while child.try_wait().expect("poll CLI").is_none() {
        if started.elapsed() > CLI_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect CLI output");
            panic!(
                "`iggy {}` did not finish within {CLI_TIMEOUT:?}\nstdout:\n{}\nstderr:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Run {
        args: args.join(" "),
        output: child.wait_with_output().expect("collect CLI output"),
    }
}

/// [`iggy_via`] over TCP.
pub fn iggy_as(server: &TestServer, home: &tempfile::TempDir, auth: Auth, args: &[&str]) -> Run {
    iggy_via(server, Transport::Tcp, home, auth, args)
}

/// [`iggy_as`] as root.
pub fn iggy(server: &TestServer, home: &tempfile::TempDir, args: &[&str]) -> Run {
    iggy_as(server, home, Auth::Credentials("iggy", "iggy"), args)
}
