//! The shared helper: a test environment of one server, an isolated `IGGY_HOME`, and `iggy`
//! commands aimed at both.

use assert_cmd::Command;
use rill_testkit::TestServer;
use serde_json::Value;

pub(crate) struct Env {
    pub(crate) server: TestServer,
    pub(crate) home: tempfile::TempDir,
}

impl Env {
    pub(crate) fn new() -> Env {
        Env {
            server: TestServer::start_default(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// `iggy` with root credentials for this server.
    pub(crate) fn iggy(&self) -> Command {
        let mut command = self.anonymous();
        command.args(["-u", "iggy", "-p", "iggy"]);
        command
    }

    /// `iggy` pointed at this server without credentials.
    pub(crate) fn anonymous(&self) -> Command {
        let mut command = Command::cargo_bin("iggy").unwrap();
        command
            .env("IGGY_HOME", self.home.path())
            .env_remove("IGGY_USERNAME")
            .env_remove("IGGY_PASSWORD")
            .args(["--tcp-server-address", &self.server.tcp_address()]);
        command
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let output = self.iggy().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "iggy {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.run(&all)).unwrap()
    }

    /// Runs and expects the given exit code; returns stderr.
    pub(crate) fn fails(&self, args: &[&str], code: i32) -> String {
        let output = self.iggy().args(args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(code),
            "iggy {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stderr).unwrap()
    }
}
