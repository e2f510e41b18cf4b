//! Messages: send, poll, flush and follow.

use crate::env::Env;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn messages_send_poll_flush_and_follow() {
    let env = Env::new();
    env.run(&["stream", "create", "s"]);
    env.run(&["topic", "create", "s", "t", "2", "none"]);

    // Arguments, with headers, to an explicit partition.
    env.run(&[
        "message",
        "send",
        "-p",
        "1",
        "-H",
        "k:string:v,n:uint32:7",
        "s",
        "t",
        "hello",
        "world",
    ]);
    let polled = env.json(&["message", "poll", "--first", "-m", "10", "s", "t", "1"]);
    let messages = polled.as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["payload"], "hello");
    assert_eq!(messages[1]["offset"], 1);
    assert_eq!(messages[0]["headers"][0]["key"], "k");
    assert_eq!(messages[0]["headers"][1]["value"], "7");
    let table = env.run(&[
        "message", "poll", "--offset", "0", "-m", "2", "-s", "s", "t", "1",
    ]);
    assert!(
        table.contains("hello") && table.contains("Header: k"),
        "{table}"
    );
    let hex = env.run(&[
        "message", "poll", "--first", "--format", "hex", "s", "t", "1",
    ]);
    assert!(hex.contains("68656c6c6f"), "{hex}");

    // Standard input, one message per line, with a key.
    env.iggy()
        .args(["message", "send", "-m", "key-1", "s", "t"])
        .write_stdin("one\ntwo\nthree\n")
        .assert()
        .success();
    let total: u64 = (0..2)
        .map(|p| {
            env.json(&["topic", "get", "s", "t"])["partitions"][p]["messages_count"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(total, 5);

    // A whole file as one message, then a binary dump and replay.
    let payload = env.home.path().join("payload.bin");
    std::fs::write(&payload, [0u8, 1, 2, 255]).unwrap();
    env.run(&[
        "message",
        "send",
        "-p",
        "0",
        "--payload-file",
        payload.to_str().unwrap(),
        "s",
        "t",
    ]);
    let dump = env.home.path().join("dump.bin");
    env.run(&[
        "message",
        "poll",
        "--first",
        "-m",
        "100",
        "--output-file",
        dump.to_str().unwrap(),
        "s",
        "t",
        "0",
    ]);
    assert!(std::fs::metadata(&dump).unwrap().len() > 64);
    env.run(&["stream", "create", "copy"]);
    env.run(&["topic", "create", "copy", "t", "1", "none"]);
    env.run(&[
        "message",
        "send",
        "--input-file",
        dump.to_str().unwrap(),
        "copy",
        "t",
    ]);
    let original = env.json(&["message", "poll", "--first", "-m", "100", "s", "t", "0"]);
    let replayed = env.json(&["message", "poll", "--first", "-m", "100", "copy", "t", "0"]);
    let payloads = |value: &Value| {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["payload"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(payloads(&original), payloads(&replayed));
    assert_eq!(original[0]["id"], replayed[0]["id"]);

    env.run(&["message", "flush", "s", "t", "0"]);
    env.run(&["message", "flush", "--fsync", "s", "t", "1"]);
    assert!(
        env.fails(&["message", "flush", "s", "t", "9"], 5)
            .contains("3007")
    );

    // --next with auto-commit moves the consumer's offset.
    env.run(&["message", "poll", "--next", "-a", "-c", "5", "s", "t", "1"]);
    let offset = env.json(&["consumer-offset", "get", "5", "s", "t", "1"]);
    assert_eq!(offset["stored_offset"], 0);

    // --follow prints messages sent after it started, like tail -f.
    let mut follower = std::process::Command::new(assert_cmd::cargo::cargo_bin("iggy"))
        .env("IGGY_HOME", env.home.path())
        .args([
            "--tcp-server-address",
            &env.server.tcp_address(),
            "-u",
            "iggy",
            "-p",
            "iggy",
            "--json",
        ])
        .args([
            "message",
            "poll",
            "--last",
            "--follow",
            "--follow-interval",
            "50ms",
            "s",
            "t",
            "1",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = follower.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines_tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The follower is running once it has printed the partition's last message; what is sent
    // after that must be followed.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = vec![
        lines_rx
            .recv_timeout(Duration::from_secs(15))
            .expect("follow prints the last stored message first"),
    ];
    env.run(&[
        "message",
        "send",
        "-p",
        "1",
        "s",
        "t",
        "followed-1",
        "followed-2",
    ]);
    while !seen.iter().any(|line: &String| line.contains("followed-2")) {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(remaining) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("follow did not print the new messages: {seen:?}"),
        }
    }
    follower.kill().unwrap();
    let _ = follower.wait();
    assert!(
        seen.iter().any(|line| line.contains("followed-1")),
        "{seen:?}"
    );
}
