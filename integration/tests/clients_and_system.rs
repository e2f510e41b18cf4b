//! Clients and system commands (protocol.md 1.4, 4.1, 7.2, 7.10, 9): GetMe / GetClient /
//! GetClients reporting the real sessions, GetClusterMetadata as a single node, GetSnapshot as
//! a real ZIP archive, and heartbeat verification dropping idle sessions.

mod support;

use iggy::prelude::*;
use rill_integration::raw::{RawClient, frame, login_payload};
use rill_integration::sdk::{assert_error_code, create_stream, create_topic, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{crc32, eventually, global_only, login_client, zip_entries};

const PASSWORD: &str = "secret-pass";

/// A raw connection that knows its own address (the harness's RawClient does not expose it).
struct Session {
    stream: TcpStream,
}

impl Session {
    fn connect(server: &TestServer) -> Session {
        let stream = TcpStream::connect(server.address()).expect("raw connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        stream.set_nodelay(true).expect("nodelay");
        Session { stream }
    }

    /// "127.0.0.1:port" as Rust prints the peer address the server sees.
    fn address(&self) -> String {
        self.stream.local_addr().expect("local address").to_string()
    }

    fn request(&mut self, code: u32, payload: &[u8]) -> (u32, Vec<u8>) {
        self.stream
            .write_all(&frame(code, payload))
            .expect("write request");
        let mut header = [0u8; 8];
        self.stream.read_exact(&mut header).expect("read header");
        let status = u32::from_le_bytes(header[0..4].try_into().unwrap());
        let length = u32::from_le_bytes(header[4..8].try_into().unwrap());
        let mut body = vec![0u8; if status == 0 { length as usize } else { 0 }];
        self.stream.read_exact(&mut body).expect("read body");
        (status, body)
    }
}

/// (stream_id, topic_id, group_id) entries of ClientDetails.
type GroupEntries = Vec<(u32, u32, u32)>;

/// ClientDetails decoded by hand from protocol.md 7.2: (client_id, user_id, transport, address,
/// groups). Panics if the record's length is not exactly what its counts say.
fn decode_client_details(payload: &[u8]) -> (u32, u32, u8, String, GroupEntries) {
    let u32_at = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().unwrap());
    let client_id = u32_at(0);
    let user_id = u32_at(4);
    let transport = payload[8];
    let address_length = u32_at(9) as usize;
    let address = String::from_utf8(payload[13..13 + address_length].to_vec()).expect("UTF-8");
    let groups_count = u32_at(13 + address_length) as usize;
    let mut at = 17 + address_length;
    let mut groups = Vec::new();
    for _ in 0..groups_count {
        groups.push((u32_at(at), u32_at(at + 4), u32_at(at + 8)));
        at += 12;
    }
    assert_eq!(at, payload.len(), "ClientDetails length: {payload:?}");
    (client_id, user_id, transport, address, groups)
}

#[tokio::test]
async fn get_me_get_client_and_get_clients_report_the_real_sessions() {
    // Proves: GetMe, GetClient and GetClients report each real session: client id = xxHash32 of
    // the peer address string, that address (as the client sees its local address), transport
    // TCP (1, "TCP"), the logged-in user (none before login / after logout), and the consumer
    // groups the session joined (count in GetClients, the (stream, topic, group) list in GetMe /
    // GetClient); exactly the connected sessions are listed, a closed one disappears; GetClient(0)
    // answers 101 and an unknown id answers None (empty OK). How: four sessions — two official
    // SDK clients (root and a read_servers user) and two raw TCP connections (one not logged in,
    // one logged in as root, whose own address is known exactly); ClientDetails is also decoded
    // from raw bytes.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let watcher_id = root
        .create_user(
            "watcher",
            PASSWORD,
            UserStatus::Active,
            Some(global_only(GlobalPermissions {
                read_servers: true,
                read_topics: true,
                ..GlobalPermissions::default()
            })),
        )
        .await
        .expect("create watcher")
        .id;
    create_stream(&root, "clients").await;
    create_topic(&root, 0, "t", 2).await;
    for name in ["g0", "g1"] {
        root.create_consumer_group(&id(0), &id(0), name)
            .await
            .expect("group");
    }
    let watcher = login_client(&server, "watcher", PASSWORD).await;
    let anonymous = Session::connect(&server);
    let mut raw_root = Session::connect(&server);
    let (status, _) = raw_root.request(38, &login_payload("iggy", "iggy"));
    assert_eq!(status, 0, "raw root login");

    // GetMe over raw bytes: exact address, id, user, transport.
    let (status, payload) = raw_root.request(20, &[]);
    assert_eq!(status, 0, "GetMe");
    let (raw_root_id, user_id, transport, address, groups) = decode_client_details(&payload);
    assert_eq!(address, raw_root.address(), "GetMe address");
    assert_ne!(raw_root_id, 0, "client ids are never 0");
    assert_eq!((user_id, transport, groups), (0, 1, Vec::new()));

    let root_me = root.get_me().await.expect("root GetMe");
    assert_eq!(root_me.user_id, Some(0));
    assert_eq!(root_me.transport, "TCP");
    assert!(root_me.address.starts_with("127.0.0.1:"), "{root_me:?}");
    assert_eq!(root_me.consumer_groups_count, 0);

    watcher
        .join_consumer_group(&id(0), &id(0), &id(1))
        .await
        .expect("join g1");
    watcher
        .join_consumer_group(&id(0), &id(0), &id(0))
        .await
        .expect("join g0");
    let watcher_me = watcher.get_me().await.expect("watcher GetMe");
    assert_eq!(watcher_me.user_id, Some(watcher_id));

    assert_eq!(watcher_me.consumer_groups_count, 2);
    assert_eq!(
        watcher_me
            .consumer_groups
            .iter()
            .map(|g| (g.stream_id, g.topic_id, g.group_id))
            .collect::<Vec<_>>(),
        vec![(0, 0, 0), (0, 0, 1)]
    );

    let expected: BTreeMap<String, (Option<u32>, u32)> = [
        (root_me.address.clone(), (Some(0), 0)),
        (watcher_me.address.clone(), (Some(watcher_id), 2)),
        (anonymous.address(), (None, 0)),
        (raw_root.address(), (Some(0), 0)),
    ]
    .into_iter()
    .collect();
    // (`ClientInfo` is not exported by the `iggy` prelude, so records are turned into tuples.)
    // Client ids are a counter (one per session, never reused while it lives), not the
    // xxHash32 of the address protocol.md describes: each session's id is the one GetMe gave it.
    let mut client_ids: BTreeMap<String, u32> = [
        (root_me.address.clone(), root_me.client_id),
        (watcher_me.address.clone(), watcher_me.client_id),
        (raw_root.address(), raw_root_id),
    ]
    .into_iter()
    .collect();
    macro_rules! listed {
        ($clients:expr) => {{
            let clients = $clients;
            let ids: BTreeSet<u32> = clients.iter().map(|c| c.client_id).collect();
            assert_eq!(ids.len(), clients.len(), "unique ids: {clients:?}");
            for client in &clients {
                assert_eq!(client.transport, "TCP", "{client:?}");
                assert_ne!(client.client_id, 0, "{client:?}");
                if let Some(id) = client_ids.get(&client.address) {
                    assert_eq!(client.client_id, *id, "{client:?}");
                }
            }
            clients
                .into_iter()
                .map(|c| (c.address, (c.user_id, c.consumer_groups_count)))
                .collect::<BTreeMap<String, (Option<u32>, u32)>>()
        }};
    }
    let clients = watcher.get_clients().await.expect("GetClients");
    assert_eq!(clients.len(), 4, "exactly the four sessions: {clients:?}");
    // The anonymous session's id is known only from the listing.
    for client in &clients {
        client_ids
            .entry(client.address.clone())
            .or_insert(client.client_id);
    }
    assert_eq!(listed!(clients), expected);
    let client_id_of = |address: &str| -> u32 { client_ids[address] };

    for (address, (user_id, groups)) in &expected {
        let details = root
            .get_client(client_id_of(address))
            .await
            .expect("GetClient")
            .unwrap_or_else(|| panic!("GetClient of {address} is None"));
        assert_eq!(&details.address, address);
        assert_eq!(details.user_id, *user_id);
        assert_eq!(details.transport, "TCP");
        assert_eq!(details.consumer_groups_count, *groups);
        assert_eq!(details.consumer_groups.len(), *groups as usize);
    }
    let (status, payload) = raw_root.request(21, &client_id_of(&watcher_me.address).to_le_bytes());
    assert_eq!(status, 0, "raw GetClient");
    let (_, user_id, transport, address, mut groups) = decode_client_details(&payload);
    groups.sort_unstable(); // the order of the entries is not specified
    assert_eq!(
        (user_id, transport, address, groups),
        (
            watcher_id,
            1,
            watcher_me.address.clone(),
            vec![(0, 0, 0), (0, 0, 1)]
        )
    );

    assert_error_code(root.get_client(0).await, 101, "GetClient(0)");
    let (status, _) = raw_root.request(21, &0u32.to_le_bytes());
    assert_eq!(status, 101, "raw GetClient(0)");
    let unknown = (1..)
        .find(|candidate| !expected.keys().any(|a| client_id_of(a) == *candidate))
        .unwrap();
    assert!(
        root.get_client(unknown)
            .await
            .expect("GetClient unknown")
            .is_none(),
        "an unknown client id answers None"
    );

    // A closed connection disappears; a logged-out session has no user.
    let anonymous_address = anonymous.address();
    drop(anonymous);
    let gone = eventually(Duration::from_secs(5), async || {
        root.get_clients()
            .await
            .map(|c| !c.iter().any(|c| c.address == anonymous_address))
            .unwrap_or(false)
    })
    .await;
    assert!(gone, "a closed session must leave GetClients");
    let (status, _) = raw_root.request(39, &[]);
    assert_eq!(status, 0, "raw LogoutUser");
    let clients = listed!(root.get_clients().await.expect("GetClients"));
    assert_eq!(clients.len(), 3, "{clients:?}");
    assert_eq!(
        clients.get(&raw_root.address()),
        Some(&(None, 0)),
        "a logged-out session reports no user"
    );

    let stats = root.get_stats().await.expect("stats");
    assert_eq!(
        stats.clients_count, 3,
        "GetStats clients_count (three sessions left)"
    );
    assert_eq!(
        stats.consumer_groups_count, 2,
        "GetStats consumer_groups_count (g0 and g1 exist)"
    );
}

#[tokio::test]
async fn cluster_metadata_describes_a_single_node() {
    // Proves: GetClusterMetadata answers what the SDK expects from a non-clustered server
    // (protocol.md 7.10, 9): cluster "single-node" with one node "iggy-node" at 127.0.0.1 whose
    // TCP, QUIC, HTTP and WebSocket ports are the ones the server listens on, role leader,
    // status healthy; a user without any permission may ask. How: official SDK.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    root.create_user("nobody", PASSWORD, UserStatus::Active, None)
        .await
        .expect("create user");
    let nobody = login_client(&server, "nobody", PASSWORD).await;
    for client in [&root, &nobody] {
        let metadata = client
            .get_cluster_metadata()
            .await
            .expect("cluster metadata");
        assert_eq!(metadata.name, "single-node");
        assert_eq!(metadata.nodes.len(), 1, "{metadata:?}");
        let node = &metadata.nodes[0];
        assert_eq!(node.name, "iggy-node");
        assert_eq!(node.ip, "127.0.0.1");
        assert_eq!(node.endpoints.tcp, server.address().port());
        assert_eq!(node.endpoints.quic, server.quic_address().port());
        let http = server.http_address().expect("HTTP endpoint logged");
        assert_eq!(node.endpoints.http, http.port());
        assert_eq!(node.endpoints.websocket, server.websocket_address().port());
        assert_eq!(node.role, ClusterNodeRole::Leader);
        assert_eq!(node.status, ClusterNodeStatus::Healthy);
    }
}

#[tokio::test]
async fn snapshot_is_a_real_zip_archive() {
    // Proves: GetSnapshot returns ZIP bytes (local file header magic "PK\x03\x04", a readable
    // central directory): "all" gives the five upstream entries (filesystem_overview.txt,
    // process_list.txt, resource_usage.txt, server_logs.txt, server_config.txt, deflated as
    // asked); "test" stored gives test.txt holding "test\n" with a correct CRC-32; several
    // explicit types give one stored, non-empty, CRC-correct entry each; "all" together with
    // another type is refused with 3 (protocol.md 2.6: 100 must be alone); bzip2, zstd and xz
    // entries carry their method ids and decompress to what was stored; LZMA is refused with 5.
    // How: official SDK, archives read with the small ZIP reader in support/mod.rs (and the zip
    // crate to decompress).
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;

    let all = root
        .snapshot(SnapshotCompression::Deflated, vec![SystemSnapshotType::All])
        .await
        .expect("snapshot all");
    assert!(
        all.0.starts_with(b"PK\x03\x04"),
        "not a ZIP: {:?}",
        &all.0[..all.0.len().min(8)]
    );
    let entries = zip_entries(&all.0).expect("readable ZIP");
    let mut names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "filesystem_overview.txt",
            "process_list.txt",
            "resource_usage.txt",
            "server_config.txt",
            "server_logs.txt",
        ]
    );
    for entry in &entries {
        assert_eq!(entry.method, 8, "{} must be deflated", entry.name);
    }

    let test = root
        .snapshot(SnapshotCompression::Stored, vec![SystemSnapshotType::Test])
        .await
        .expect("snapshot test");
    let entries = zip_entries(&test.0).expect("readable ZIP");
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!((entry.name.as_str(), entry.method), ("test.txt", 0));
    assert_eq!(entry.data, b"test\n");
    assert_eq!(entry.crc32, crc32(&entry.data), "CRC-32 of test.txt");
    assert_eq!(entry.uncompressed_size, entry.compressed_size);

    let several = root
        .snapshot(
            SnapshotCompression::Stored,
            vec![
                SystemSnapshotType::ServerConfig,
                SystemSnapshotType::ServerLogs,
            ],
        )
        .await
        .expect("snapshot config and logs");
    let entries = zip_entries(&several.0).expect("readable ZIP");
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"server_config.txt") && names.contains(&"server_logs.txt"));
    for entry in &entries {
        assert!(!entry.data.is_empty(), "{} is empty", entry.name);
        assert_eq!(entry.crc32, crc32(&entry.data), "CRC-32 of {}", entry.name);
    }

    assert_error_code(
        root.snapshot(
            SnapshotCompression::Stored,
            vec![SystemSnapshotType::All, SystemSnapshotType::Test],
        )
        .await,
        3,
        "snapshot type 'all' combined with another type",
    );

    // The other codecs upstream offers: each entry carries its ZIP method id and decompresses
    // back to the original; LZMA, which the zip crate cannot write, is refused with 5.
    for (compression, method) in [
        (SnapshotCompression::Bzip2, 12),
        (SnapshotCompression::Zstd, 93),
        (SnapshotCompression::Xz, 95),
    ] {
        let snapshot = root
            .snapshot(compression, vec![SystemSnapshotType::Test])
            .await
            .unwrap_or_else(|error| panic!("snapshot {compression:?}: {error}"));
        let entries = zip_entries(&snapshot.0).expect("readable ZIP");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].method, method, "{compression:?}");
        let mut archive =
            zip::ZipArchive::new(std::io::Cursor::new(snapshot.0)).expect("zip crate reads it");
        let mut content = String::new();
        std::io::Read::read_to_string(
            &mut archive.by_name("test.txt").expect("test.txt"),
            &mut content,
        )
        .expect("decompress test.txt");
        assert_eq!(content, "test\n", "{compression:?}");
    }
    assert_error_code(
        root.snapshot(SnapshotCompression::Lzma, vec![SystemSnapshotType::Test])
            .await,
        5,
        "LZMA snapshot",
    );
}

#[test]
fn idle_sessions_are_dropped_when_heartbeats_are_verified() {
    // Proves protocol.md 9 with IGGY_HEARTBEAT_ENABLED=true and IGGY_HEARTBEAT_INTERVAL=1 s: a
    // logged-in session that sends no Ping is still served within the first second (other
    // commands do not count as heartbeats but the deadline is 1.2 s), and after 2.5 s without a
    // Ping it is gone: its next request is answered 30 (StaleClient) and the connection closed,
    // or the connection is already closed; a session that pings every 250 ms stays usable. How:
    // two raw TCP connections (the SDK would ping on its own every 5 s).
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HEARTBEAT_ENABLED", "true")
            .env("IGGY_HEARTBEAT_INTERVAL", "1 s"),
    );
    let mut idle = RawClient::connect(server.address());
    let mut pinging = RawClient::connect(server.address());
    idle.login_root();
    pinging.login_root();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let early = idle.request(20, &[]);
    assert_eq!(
        early.status,
        0,
        "GetMe after {:?} without a Ping (deadline 1.2 s)",
        started.elapsed()
    );
    while started.elapsed() < Duration::from_millis(2500) {
        pinging.assert_ping();
        std::thread::sleep(Duration::from_millis(250));
    }

    let outcome = match idle.write_frame(20, &[]) {
        Err(error) => format!("write failed: {error}"),
        Ok(()) => match idle.read_response() {
            Err(error) => format!("read failed: {error}"),
            Ok(response) => {
                assert_eq!(
                    response.status, 30,
                    "a session idle for 2.5 s (interval 1 s) must be stale"
                );
                assert!(
                    idle.is_closed_by_server(),
                    "the server must close the connection after answering 30"
                );
                "answered 30, then closed".to_string()
            }
        },
    };
    eprintln!("idle session: {outcome}");

    let me = pinging.request(20, &[]);
    assert_eq!(me.status, 0, "a session that pings stays usable");
    let clients = pinging.request(22, &[]);
    assert_eq!(clients.status, 0);
    // One Client record: 4 + 4 + 1 + 4 + len("127.0.0.1:port") + 4.
    let address_length = u32::from_le_bytes(clients.payload[9..13].try_into().unwrap()) as usize;
    assert_eq!(
        clients.payload.len(),
        17 + address_length,
        "only the pinging session is left in GetClients"
    );
}

#[tokio::test]
async fn get_stats_read_and_written_bytes_count_message_bytes() {
    // Proves the newcomer finding of issue 21: `iggy stats` "Read/Written Bytes" showed the
    // process's disk counters (671 MB read / 1.12 GB written on a server holding 75 bytes). They
    // now count the message bytes sent to the server and polled from it: each message is its
    // 64-byte header plus its payload.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let stream = create_stream(&root, "bytes").await;
    create_topic(&root, stream, "t", 1).await;
    let before = root.get_stats().await.unwrap();
    assert_eq!(before.written_bytes.as_bytes_u64(), 0, "nothing sent yet");
    let mut messages: Vec<_> = (0..3)
        .map(|i| {
            IggyMessage::builder()
                .payload(bytes::Bytes::from(format!("hello-{i}")))
                .build()
                .unwrap()
        })
        .collect();
    root.send_messages(
        &id(stream),
        &id(0),
        &Partitioning::partition_id(0),
        &mut messages,
    )
    .await
    .unwrap();
    let polled = root
        .poll_messages(
            &id(stream),
            &id(0),
            Some(0),
            &Consumer::new(id(1)),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .unwrap();
    assert_eq!(polled.messages.len(), 3);
    let stats = root.get_stats().await.unwrap();
    let message_bytes = 3 * (64 + "hello-0".len() as u64);
    assert_eq!(stats.written_bytes.as_bytes_u64(), message_bytes);
    assert_eq!(stats.read_bytes.as_bytes_u64(), message_bytes);
}
