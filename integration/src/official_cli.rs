//! The official CLI (`iggy`) as a test tool: finding the binary of each client generation and
//! running it against a [`TestServer`] over TCP, QUIC or HTTP, bounded in time, with its output
//! kept for assertions.
//!
//! Two generations are tested: iggy-cli 0.13.0 (SDK 0.10.0, the 0.8 protocol) and iggy-cli 0.14.0
//! (SDK 0.11.0, the 0.9 protocol). Neither is built by this workspace: `scripts/install-iggy-cli.sh`
//! installs 0.13.0 into `$CARGO_HOME/bin` and 0.14.0 into `$CARGO_HOME/iggy-cli-0.14.0/bin` (CI
//! runs it before the tests). `IGGY_CLI_BIN` and `IGGY_CLI_V014_BIN` override the paths. If one is
//! missing, the tests that need it fail and say so, rather than pass without testing.

use crate::server::TestServer;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Upper bound for one CLI invocation (the SDK inside would otherwise retry a dead server).
pub const CLI_TIMEOUT: Duration = Duration::from_secs(30);

/// A generation of the official CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliGeneration {
    /// iggy-cli 0.13.0: the 0.8 protocol.
    V013,
    /// iggy-cli 0.14.0: the 0.9 protocol (256-byte headers, LoginRegister).
    V014,
}

impl CliGeneration {
    pub fn version(self) -> &'static str {
        match self {
            CliGeneration::V013 => "0.13.0",
            CliGeneration::V014 => "0.14.0",
        }
    }

    fn override_variable(self) -> &'static str {
        match self {
            CliGeneration::V013 => "IGGY_CLI_BIN",
            CliGeneration::V014 => "IGGY_CLI_V014_BIN",
        }
    }

    /// Where `scripts/install-iggy-cli.sh` puts it.
    fn installed_path(self) -> PathBuf {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
            .expect("CARGO_HOME or HOME is set");
        match self {
            CliGeneration::V013 => cargo_home.join("bin").join("iggy"),
            CliGeneration::V014 => cargo_home.join("iggy-cli-0.14.0").join("bin").join("iggy"),
        }
    }
}

/// Runs each named test, an `async fn(CliGeneration)` of the calling file, once per CLI
/// generation: as `cli_0_13::<name>` and `cli_0_14::<name>`.
#[macro_export]
macro_rules! for_each_cli_generation {
    ($($test:ident),* $(,)?) => {
        mod cli_0_13 {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test($crate::official_cli::CliGeneration::V013).await
                }
            )*
        }
        mod cli_0_14 {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test($crate::official_cli::CliGeneration::V014).await
                }
            )*
        }
    };
}

/// The 0.13.0 CLI binary; see [`cli_binary_of`].
pub fn cli_binary() -> PathBuf {
    cli_binary_of(CliGeneration::V013)
}

/// The CLI binary of `generation`: its override variable, else where the install script puts
/// it; panics with installation instructions when it is missing or the wrong version.
pub fn cli_binary_of(generation: CliGeneration) -> PathBuf {
    let version = generation.version();
    let path = std::env::var_os(generation.override_variable())
        .map(PathBuf::from)
        .unwrap_or_else(|| generation.installed_path());
    assert!(
        path.is_file(),
        "the official Iggy CLI {version} is not installed at {}: run scripts/install-iggy-cli.sh, \
         or set {}",
        path.display(),
        generation.override_variable()
    );
    let output = Command::new(&path)
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {} --version: {error}", path.display()));
    let reported = String::from_utf8_lossy(&output.stdout);
    assert!(
        reported.split_whitespace().any(|word| word == version),
        "{} reports {reported:?}, expected iggy-cli {version}",
        path.display()
    );
    path
}

/// A CLI of one generation with its own context directory (`IGGY_HOME`), removed on drop.
pub struct CliHome {
    dir: tempfile::TempDir,
    binary: PathBuf,
    generation: CliGeneration,
}

impl CliHome {
    /// iggy-cli 0.13.0.
    pub fn new() -> Self {
        Self::of(CliGeneration::V013)
    }

    pub fn of(generation: CliGeneration) -> Self {
        CliHome {
            dir: tempfile::tempdir().expect("CLI home"),
            binary: cli_binary_of(generation),
            generation,
        }
    }

    pub fn generation(&self) -> CliGeneration {
        self.generation
    }
}

impl Default for CliHome {
    fn default() -> Self {
        Self::new()
    }
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
    home: &CliHome,
    auth: Auth,
    args: &[&str],
) -> Run {
    let binary = &home.binary;
    let mut command = Command::new(binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("IGGY_") {
            command.env_remove(key);
        }
    }
    command.env("IGGY_HOME", home.dir.path());
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
pub fn iggy_as(server: &TestServer, home: &CliHome, auth: Auth, args: &[&str]) -> Run {
    iggy_via(server, Transport::Tcp, home, auth, args)
}

/// [`iggy_as`] as root.
pub fn iggy(server: &TestServer, home: &CliHome, args: &[&str]) -> Run {
    iggy_as(server, home, Auth::Credentials("iggy", "iggy"), args)
}
