//! The unauthenticated sweep: every command code before login.

use crate::support::every_command;
use rill_integration::raw::{RawClient, status};
use rill_integration::{ServerOptions, TestServer};
use std::collections::BTreeSet;

#[test]
fn every_command_before_login_answers_40_except_ping_and_the_logins() {
    // Proves: on a session that has not logged in, every one of the 47 command codes of
    // protocol.md section 3 answers 40 (Unauthenticated) with an empty error frame, except Ping
    // (OK), LoginUser (here with a wrong password: 42) and LoginWithPersonalAccessToken (here
    // with an unknown token: 20); nothing is changed by the refused requests; and the same
    // well-formed requests are accepted for decoding once logged in (no 3/4/40 answers), so the
    // 40s are not decode failures in disguise. How: the harness's raw TCP client (the SDK refuses
    // to send most of these before login), requests built from protocol.md in support/mod.rs;
    // all mismatches are collected and reported together.
    let server = TestServer::start(ServerOptions::new());
    let commands = every_command();
    let codes: BTreeSet<u32> = commands.iter().map(|c| c.code).collect();
    assert_eq!(codes.len(), 47, "the sweep covers 47 distinct codes");

    let mut raw = RawClient::connect(server.address());
    let mut mismatches = Vec::new();
    for command in &commands {
        let response = raw.request(command.code, &command.payload);
        let expected = match command.code {
            1 => status::OK,
            38 => status::INVALID_CREDENTIALS,
            44 => 20,
            _ => status::UNAUTHENTICATED,
        };
        if response.status != expected {
            mismatches.push(format!(
                "{} ({}) before login: expected {expected}, got {}",
                command.name, command.code, response.status
            ));
        }
    }
    raw.assert_ping();

    // Nothing happened: root's password is unchanged, no stream, user or token was created.
    raw.login_root();
    let streams = raw.request(201, &[]);
    assert_eq!(streams.status, status::OK);
    assert!(
        streams.payload.is_empty(),
        "a stream was created before login"
    );
    let users = raw.request(32, &[]);
    assert_eq!(users.status, status::OK);
    assert_eq!(
        users.payload.len(),
        14 + 4,
        "GetUsers must hold only root (one 14 + 4 byte record): {:?}",
        users.payload
    );
    let tokens = raw.request(41, &[]);
    assert_eq!(tokens.status, status::OK);
    assert!(
        tokens.payload.is_empty(),
        "a token was created before login"
    );

    // The same requests decode once logged in (LogoutUser is sent last).
    for command in commands.iter().filter(|c| c.code != 39) {
        let response = raw.request(command.code, &command.payload);
        if [status::INVALID_COMMAND, status::INVALID_FORMAT, 40].contains(&response.status) {
            mismatches.push(format!(
                "{} ({}) as root: got {}, which means the request was not accepted",
                command.name, command.code, response.status
            ));
        }
    }
    let logout = raw.request(39, &[]);
    assert_eq!(logout.status, status::OK, "LogoutUser as root");
    let after_logout = raw.request(20, &[]);
    assert_eq!(after_logout.status, 40, "GetMe after LogoutUser");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
