//! The official 0.9-generation clients against a [`TestServer`]: the Rust SDK `iggy` 0.11.0
//! (imported as `iggy_v011`) and the Python client apache-iggy 0.9.0.

use crate::TestServer;
use bytes::Bytes;
use iggy_v011::prelude::{
    Client as _, HeaderKey, HeaderValue, Identifier, IggyClient, IggyError, IggyMessage,
    MessageClient as _, Partitioning,
};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;

/// A 0.11.0 client logged in as root over TCP.
pub async fn root_client(server: &TestServer) -> IggyClient {
    client_as(server, "iggy", "iggy").await
}

/// A 0.11.0 client logged in as `username` over TCP.
pub async fn client_as(server: &TestServer, username: &str, password: &str) -> IggyClient {
    let connection = format!("iggy://{username}:{password}@{}", server.address());
    let client = IggyClient::from_connection_string(&connection).expect("connection string");
    client
        .connect()
        .await
        .unwrap_or_else(|error| panic!("0.11 client connects as {username}: {error}"));
    client
}

pub fn id(value: u32) -> Identifier {
    Identifier::numeric(value).expect("numeric identifier")
}

pub fn named(value: &str) -> Identifier {
    Identifier::named(value).expect("named identifier")
}

/// A message with `id` and `payload`, and a user header `origin` = `header` when given.
pub fn message(id: u128, payload: &str, header: Option<&str>) -> IggyMessage {
    let builder = IggyMessage::builder()
        .id(id)
        .payload(Bytes::copy_from_slice(payload.as_bytes()));
    match header {
        Some(value) => {
            let mut headers = BTreeMap::new();
            headers.insert(
                HeaderKey::from_str("origin").expect("header key"),
                HeaderValue::from_str(value).expect("header value"),
            );
            builder.user_headers(headers).build()
        }
        None => builder.build(),
    }
    .expect("valid message")
}

/// Sends `batches` batches of 256 messages of 1000 bytes each (about 266 KB a batch) to
/// partition 0 of `topic`: filler for tests about segment sizes.
pub async fn send_filler(
    client: &IggyClient,
    stream: &Identifier,
    topic: &Identifier,
    batches: usize,
) {
    for _ in 0..batches {
        let mut batch: Vec<IggyMessage> = (0..256)
            .map(|_| {
                IggyMessage::builder()
                    .payload(Bytes::from(vec![7u8; 1000]))
                    .build()
                    .expect("message")
            })
            .collect();
        client
            .send_messages(stream, topic, &Partitioning::partition_id(0), &mut batch)
            .await
            .expect("send");
    }
}

/// Asserts that `result` failed with status `code`.
#[track_caller]
pub fn assert_code<T: Debug>(result: Result<T, IggyError>, code: u32, what: &str) {
    match result {
        Err(error) => assert_eq!(error.as_code(), code, "{what}: {error}"),
        Ok(value) => panic!("{what}: expected error {code}, got {value:?}"),
    }
}

/// A Python with the official apache-iggy 0.9.0 installed: `RILL_PYTHON_V09` if set (as
/// scripts/test.sh sets it), else a virtual environment under the target directory, created on
/// first use with pip from PyPI.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("RILL_PYTHON_V09") {
        return python.into();
    }
    let venv = crate::binary::target_dir().join("py-clients/apache-iggy-0.9.0");
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args(["-c", "import apache_iggy"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !ready {
        let run = |program: &std::path::Path, args: &[&str]| {
            let output = Command::new(program)
                .args(args)
                .output()
                .unwrap_or_else(|error| panic!("run {}: {error}", program.display()));
            assert!(
                output.status.success(),
                "{} {args:?} failed:\n{}",
                program.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        };
        run(
            "python3".as_ref(),
            &["-m", "venv", venv.to_str().expect("utf-8 path")],
        );
        run(
            &python,
            &["-m", "pip", "install", "-q", "apache-iggy==0.9.0"],
        );
    }
    python
}

/// Runs `integration/python/<script>` with [`python`] and returns its stdout, trimmed
/// (the script's result); any failure panics with the exit status, stderr, stdout and what
/// `context` gives then (say, the server's log tail). The status and stdout are in the message because one CI run
/// saw a failure with an empty stderr.
pub fn run_python(script: &str, args: &[&str], context: impl FnOnce() -> String) -> Vec<u8> {
    let path = crate::binary::workspace_root()
        .join("integration/python")
        .join(script);
    let output = Command::new(python())
        .arg(&path)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("run {}: {error}", path.display()));
    assert!(
        output.status.success(),
        "apache-iggy 0.9.0 ({script}) failed ({}):\nstderr: {}\nstdout: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout),
        context()
    );
    output.stdout.trim_ascii().to_vec()
}
