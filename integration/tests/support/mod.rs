//! Helpers shared by the issue-5 test files (users, tokens, groups, offsets, clients, CLI), kept
//! here rather than in `integration/src` so those files can be changed independently:
//!
//! - logging in official SDK clients as a given user, and permission builders;
//! - raw request payloads for all 47 command codes of protocol.md section 3, encoded from the
//!   document (not from the server's codec), for sweeps with the harness's raw TCP client;
//! - a tiny ZIP reader (central directory walk + CRC-32 check of stored entries) for GetSnapshot;
//! - a polling helper for conditions that become true asynchronously (disconnects).
//!
//! Each test file uses only part of this module.
#![allow(dead_code)]

use iggy::prelude::*;
use rill_integration::TestServer;
use rill_integration::raw::{login_payload, name, numeric_identifier};
use rill_integration::sdk::anonymous_client;
use std::future::Future;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// SDK helpers
// ---------------------------------------------------------------------------------------------

/// A new session (official SDK client) logged in explicitly as `username`/`password`.
pub async fn login_client(server: &TestServer, username: &str, password: &str) -> IggyClient {
    let client = anonymous_client(server).await;
    client
        .login_user(username, password)
        .await
        .unwrap_or_else(|error| panic!("login as {username:?}: {error}"));
    client
}

/// Global permissions with every flag off.
pub fn no_global() -> GlobalPermissions {
    GlobalPermissions::default()
}

/// Permissions with only global flags (no stream entries).
pub fn global_only(global: GlobalPermissions) -> Permissions {
    Permissions {
        global,
        streams: None,
    }
}

/// Every global flag on (what root has).
pub fn all_global() -> GlobalPermissions {
    GlobalPermissions {
        manage_servers: true,
        read_servers: true,
        manage_users: true,
        read_users: true,
        manage_streams: true,
        read_streams: true,
        manage_topics: true,
        read_topics: true,
        poll_messages: true,
        send_messages: true,
    }
}

/// The status code of a result: 0 for Ok, the wire code otherwise.
pub fn code_of<T>(result: &Result<T, IggyError>) -> u32 {
    match result {
        Ok(_) => 0,
        Err(error) => error.as_code(),
    }
}

/// Polls `condition` every 50 ms until it returns true or `limit` passes; returns whether it
/// became true.
pub async fn eventually<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        if condition().await {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Raw payloads for every command (protocol.md sections 2-4 and 6.4)
// ---------------------------------------------------------------------------------------------

/// One request of the command sweep.
#[derive(Debug, Clone)]
pub struct RawCommand {
    pub code: u32,
    pub name: &'static str,
    pub payload: Vec<u8>,
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// `Consumer`: kind 1 (consumer) or 2 (group) + numeric Identifier.
pub fn raw_consumer(kind: u8, value: u32) -> Vec<u8> {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(&numeric_identifier(value));
    bytes
}

/// `OptPartition`: flag 1 + u32.
pub fn raw_partition(partition_id: u32) -> Vec<u8> {
    let mut bytes = vec![1];
    bytes.extend_from_slice(&partition_id.to_le_bytes());
    bytes
}

/// u8 length + bytes (passwords).
pub fn raw_short_string(value: &str) -> Vec<u8> {
    let mut bytes = vec![u8::try_from(value.len()).expect("short string")];
    bytes.extend_from_slice(value.as_bytes());
    bytes
}

/// A SendMessages (101) body with one message (id 1, payload "hello") for partition 0 of
/// stream 0 / topic 0 (protocol.md 6.4 and 10.5).
pub fn raw_send_messages_body() -> Vec<u8> {
    rill_integration::raw::send_one_message(0, 0, 0, 1, b"hello")
}

/// Well-formed requests for all 47 command codes of protocol.md section 3, aimed at stream 0,
/// topic 0, partition 0, group 0, user 1 (none of which need to exist). `LoginUser` carries a
/// wrong root password and `LoginWithPersonalAccessToken` an unknown token, so neither can
/// change a session's state; `ChangePassword` carries a wrong current password.
pub fn every_command() -> Vec<RawCommand> {
    let id0 = numeric_identifier(0);
    let id1 = numeric_identifier(1);
    let st = cat(&[&id0, &id0]); // stream 0, topic 0
    let stg = cat(&[&id0, &id0, &id0]); // stream 0, topic 0, group 0
    let offset_prefix = cat(&[&raw_consumer(1, 1), &st, &raw_partition(0)]);
    let topic_tail = |with_partitions: bool| {
        let mut bytes = Vec::new();
        if with_partitions {
            bytes.extend_from_slice(&1u32.to_le_bytes());
        }
        bytes.push(1); // compression none
        bytes.extend_from_slice(&0u64.to_le_bytes()); // expiry: server default
        bytes.extend_from_slice(&0u64.to_le_bytes()); // max size: server default
        bytes.push(0); // replication factor
        bytes.extend_from_slice(&name("sweep-topic"));
        bytes
    };
    let command = |code: u32, name: &'static str, payload: Vec<u8>| RawCommand {
        code,
        name,
        payload,
    };
    vec![
        command(1, "Ping", Vec::new()),
        command(10, "GetStats", Vec::new()),
        command(11, "GetSnapshot", vec![1, 1, 4]),
        command(12, "GetClusterMetadata", Vec::new()),
        command(20, "GetMe", Vec::new()),
        command(21, "GetClient", 1u32.to_le_bytes().to_vec()),
        command(22, "GetClients", Vec::new()),
        command(31, "GetUser", id0.clone()),
        command(32, "GetUsers", Vec::new()),
        command(
            33,
            "CreateUser",
            cat(&[
                &name("sweep-user"),
                &raw_short_string("sweep-pass"),
                &[1, 0],
            ]),
        ),
        command(34, "DeleteUser", id1.clone()),
        command(
            35,
            "UpdateUser",
            cat(&[&id1, &[1], &name("sweep-renamed"), &[0]]),
        ),
        command(36, "UpdatePermissions", cat(&[&id1, &[0]])),
        command(
            37,
            "ChangePassword",
            cat(&[
                &id0,
                &raw_short_string("not-the-password"),
                &raw_short_string("sweep-new-pass"),
            ]),
        ),
        command(38, "LoginUser", login_payload("iggy", "not-the-password")),
        command(39, "LogoutUser", Vec::new()),
        command(41, "GetPersonalAccessTokens", Vec::new()),
        command(
            42,
            "CreatePersonalAccessToken",
            cat(&[&name("sweep-token"), &0u64.to_le_bytes()]),
        ),
        command(43, "DeletePersonalAccessToken", name("sweep-token")),
        command(
            44,
            "LoginWithPersonalAccessToken",
            name("no-such-token-0123456789abcdef"),
        ),
        command(
            100,
            "PollMessages",
            cat(&[
                &raw_consumer(1, 1),
                &st,
                &raw_partition(0),
                &[1],
                &0u64.to_le_bytes(),
                &10u32.to_le_bytes(),
                &[0],
            ]),
        ),
        command(101, "SendMessages", raw_send_messages_body()),
        command(
            102,
            "FlushUnsavedBuffer",
            cat(&[&st, &0u32.to_le_bytes(), &[0]]),
        ),
        command(120, "GetConsumerOffset", offset_prefix.clone()),
        command(
            121,
            "StoreConsumerOffset",
            cat(&[&offset_prefix, &0u64.to_le_bytes()]),
        ),
        command(122, "DeleteConsumerOffset", offset_prefix.clone()),
        command(200, "GetStream", id0.clone()),
        command(201, "GetStreams", Vec::new()),
        command(202, "CreateStream", name("sweep-stream")),
        command(203, "DeleteStream", id0.clone()),
        command(204, "UpdateStream", cat(&[&id0, &name("sweep-renamed")])),
        command(205, "PurgeStream", id0.clone()),
        command(300, "GetTopic", st.clone()),
        command(301, "GetTopics", id0.clone()),
        command(302, "CreateTopic", cat(&[&id0, &topic_tail(true)])),
        command(303, "DeleteTopic", st.clone()),
        command(304, "UpdateTopic", cat(&[&st, &topic_tail(false)])),
        command(305, "PurgeTopic", st.clone()),
        command(402, "CreatePartitions", cat(&[&st, &1u32.to_le_bytes()])),
        command(403, "DeletePartitions", cat(&[&st, &1u32.to_le_bytes()])),
        command(
            503,
            "DeleteSegments",
            cat(&[&st, &0u32.to_le_bytes(), &1u32.to_le_bytes()]),
        ),
        command(600, "GetConsumerGroup", stg.clone()),
        command(601, "GetConsumerGroups", st.clone()),
        command(
            602,
            "CreateConsumerGroup",
            cat(&[&st, &name("sweep-group")]),
        ),
        command(603, "DeleteConsumerGroup", stg.clone()),
        command(604, "JoinConsumerGroup", stg.clone()),
        command(605, "LeaveConsumerGroup", stg),
    ]
}

// ---------------------------------------------------------------------------------------------
// ZIP reading (enough for GetSnapshot checks)
// ---------------------------------------------------------------------------------------------

/// One entry of a ZIP archive's central directory.
#[derive(Debug, Clone)]
pub struct ZipEntry {
    pub name: String,
    /// 0 = stored, 8 = deflated.
    pub method: u16,
    pub crc32: u32,
    pub compressed_size: u32,
    pub uncompressed_size: u32,
    /// The entry's bytes as stored in the archive (decompressed only when `method` is 0).
    pub data: Vec<u8>,
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16, String> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| format!("truncated at {at}"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, String> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("truncated at {at}"))
}

/// Reads the central directory of a ZIP archive (no ZIP64, no multi-disk) and each entry's
/// stored bytes via its local header.
pub fn zip_entries(archive: &[u8]) -> Result<Vec<ZipEntry>, String> {
    const EOCD: u32 = 0x0605_4b50;
    const CENTRAL: u32 = 0x0201_4b50;
    const LOCAL: u32 = 0x0403_4b50;
    if archive.len() < 22 {
        return Err(format!("{} bytes is too short for a ZIP", archive.len()));
    }
    let eocd = (0..=archive.len() - 22)
        .rev()
        .find(|&at| u32_at(archive, at) == Ok(EOCD))
        .ok_or("no end-of-central-directory record")?;
    let entries = u16_at(archive, eocd + 10)? as usize;
    let mut at = u32_at(archive, eocd + 16)? as usize;
    let mut result = Vec::with_capacity(entries);
    for index in 0..entries {
        if u32_at(archive, at)? != CENTRAL {
            return Err(format!(
                "central directory entry {index} has a bad signature"
            ));
        }
        let method = u16_at(archive, at + 10)?;
        let crc32 = u32_at(archive, at + 16)?;
        let compressed_size = u32_at(archive, at + 20)?;
        let uncompressed_size = u32_at(archive, at + 24)?;
        let name_length = u16_at(archive, at + 28)? as usize;
        let extra_length = u16_at(archive, at + 30)? as usize;
        let comment_length = u16_at(archive, at + 32)? as usize;
        let local = u32_at(archive, at + 42)? as usize;
        let name = archive
            .get(at + 46..at + 46 + name_length)
            .ok_or("truncated entry name")?;
        let name = String::from_utf8(name.to_vec()).map_err(|e| e.to_string())?;
        if u32_at(archive, local)? != LOCAL {
            return Err(format!("local header of {name:?} has a bad signature"));
        }
        let data_start = local
            + 30
            + u16_at(archive, local + 26)? as usize
            + u16_at(archive, local + 28)? as usize;
        let data = archive
            .get(data_start..data_start + compressed_size as usize)
            .ok_or_else(|| format!("data of {name:?} runs past the archive"))?
            .to_vec();
        result.push(ZipEntry {
            name,
            method,
            crc32,
            compressed_size,
            uncompressed_size,
            data,
        });
        at += 46 + name_length + extra_length + comment_length;
    }
    Ok(result)
}

/// CRC-32 (IEEE, reflected, as ZIP uses).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in bytes {
        crc ^= byte as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}
