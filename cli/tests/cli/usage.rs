//! Usage without a server: help, shell completions and usage errors.

use assert_cmd::Command;

#[test]
fn help_and_completions_need_no_server() {
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for command in [
        "stream",
        "topic",
        "partition",
        "segment",
        "ping",
        "me",
        "stats",
        "snapshot",
        "pat",
        "user",
        "client",
        "cluster",
        "consumer-group",
        "consumer-offset",
        "message",
        "context",
        "login",
        "logout",
        "--tcp-server-address",
        "--quic-server-address",
        "--transport",
        "--username",
        "--password",
        "--token",
        "Exit codes",
    ] {
        assert!(help.contains(command), "help lacks {command}");
    }
    for shell in ["bash", "zsh", "fish"] {
        let output = Command::cargo_bin("iggy")
            .unwrap()
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(output.status.success());
        assert!(String::from_utf8_lossy(&output.stdout).contains("iggy"));
    }
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .args(["--generate", "bash"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("complete"));
    // Usage errors exit with 2.
    let output = Command::cargo_bin("iggy")
        .unwrap()
        .args(["stream", "frobnicate"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
