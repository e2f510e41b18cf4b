//! Users, personal access tokens, login and contexts.

use crate::env::Env;
use assert_cmd::Command;
use serde_json::Value;

#[test]
fn users_tokens_login_and_contexts() {
    let env = Env::new();
    env.run(&[
        "user",
        "create",
        "alice",
        "secret1",
        "-g",
        "r_str,read_topics",
        "-s",
        "0:p_msg#0:s_msg",
    ]);
    let user = env.json(&["user", "get", "alice"]);
    assert_eq!(user["status"], "active");
    assert_eq!(user["permissions"]["global"]["read_streams"], true);
    assert_eq!(user["permissions"]["global"]["manage_users"], false);
    assert_eq!(
        user["permissions"]["streams"][0]["topics"][0]["send_messages"],
        true
    );
    assert_eq!(env.json(&["user", "list"]).as_array().unwrap().len(), 2);
    env.run(&["user", "name", "alice", "alicia"]);
    env.run(&["user", "status", "alicia", "inactive"]);
    assert_eq!(env.json(&["user", "get", "alicia"])["status"], "inactive");
    env.run(&["user", "status", "alicia", "active"]);
    env.run(&["user", "permissions", "alicia", "-g", "m_str"]);
    assert_eq!(
        env.json(&["user", "get", "alicia"])["permissions"]["global"]["manage_streams"],
        true
    );
    env.run(&["user", "password", "alicia", "secret1", "secret2"]);

    // The new password works, the old one does not (exit 4 names code 42).
    env.anonymous()
        .args(["-u", "alicia", "-p", "secret2", "me"])
        .assert()
        .success();
    let output = env
        .anonymous()
        .args(["-u", "alicia", "-p", "secret1", "me"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&output.stderr).contains("42"));
    // No password on the command line: it is read (here from standard input, not a terminal).
    env.anonymous()
        .args(["-u", "alicia", "me"])
        .write_stdin("secret2\n")
        .assert()
        .success();
    // No credentials at all.
    assert_eq!(
        env.anonymous()
            .args(["stream", "list"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(4)
    );

    // Personal access tokens.
    let token = env.json(&["pat", "create", "ci-token"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(env.json(&["pat", "list"])[0]["name"], "ci-token");
    env.anonymous()
        .args(["-t", &token, "stream", "list"])
        .assert()
        .success();
    env.run(&["pat", "create", "--store-token", "stored"]);
    env.anonymous()
        .args(["-n", "stored", "me"])
        .assert()
        .success();
    env.run(&["pat", "delete", "ci-token"]);
    assert_eq!(
        env.anonymous()
            .args(["-t", &token, "me"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(5)
    );

    // login stores a session used by later commands; logout removes it.
    env.run(&["login", "1h"]);
    env.anonymous().args(["stream", "list"]).assert().success();
    assert!(
        env.json(&["pat", "list"])
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "iggy-cli-session")
    );
    env.anonymous().arg("logout").assert().success();
    assert_eq!(
        env.anonymous()
            .args(["stream", "list"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(4)
    );

    // Contexts supply the server address and credentials.
    Command::cargo_bin("iggy")
        .unwrap()
        .env("IGGY_HOME", env.home.path())
        .args([
            "context",
            "create",
            "local",
            "--tcp-server-address",
            &env.server.tcp_address(),
            "-u",
            "iggy",
            "-p",
            "iggy",
        ])
        .assert()
        .success();
    let in_home = || {
        let mut command = Command::cargo_bin("iggy").unwrap();
        command.env("IGGY_HOME", env.home.path());
        command
    };
    in_home()
        .args(["context", "use", "local"])
        .assert()
        .success();
    let contexts = in_home()
        .args(["--json", "context", "list"])
        .output()
        .unwrap();
    let contexts: Value = serde_json::from_slice(&contexts.stdout).unwrap();
    assert!(
        contexts
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "local" && c["active"] == true)
    );
    in_home().args(["me"]).assert().success();
    in_home()
        .args(["context", "delete", "local"])
        .assert()
        .success();
    assert_eq!(
        in_home()
            .args(["context", "use", "missing"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(5)
    );

    env.run(&["user", "delete", "alicia"]);
    assert!(env.fails(&["user", "delete", "iggy"], 1).contains("48"));
}
