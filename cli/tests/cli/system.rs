//! System commands: ping, me, stats, clients, cluster metadata and snapshots.

use crate::env::Env;

#[test]
fn system_commands() {
    let env = Env::new();
    let ping = env.anonymous().args(["ping", "-c", "2"]).output().unwrap();
    assert!(ping.status.success());
    assert!(String::from_utf8_lossy(&ping.stdout).contains("Ping statistics for 2"));
    let me = env.json(&["me"]);
    assert_eq!(me["user_id"], 0);
    assert_eq!(me["transport"], "TCP");
    let stats = env.json(&["stats"]);
    assert!(stats["process_id"].as_u64().unwrap() > 0);
    assert!(
        env.run(&["stats", "-o", "toml"])
            .contains("streams_count = 0")
    );
    assert!(
        env.run(&["stats", "-o", "list"])
            .contains("Streams Count|0")
    );
    // An open (unauthenticated) connection is a client that outlives the CLI's own sessions.
    let _session = std::net::TcpStream::connect(env.server.address()).unwrap();
    let clients = env.json(&["client", "list"]);
    let idle = clients
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["user_id"].is_null())
        .unwrap_or_else(|| panic!("no unauthenticated client in {clients}"));
    let client_id = idle["client_id"].as_u64().unwrap().to_string();
    assert_eq!(
        env.json(&["client", "get", &client_id])["client_id"].to_string(),
        client_id
    );
    env.fails(&["client", "get", "1"], 5);
    assert!(
        !env.json(&["cluster", "metadata"])["nodes"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let out_dir = env.home.path().join("snapshots");
    env.run(&["snapshot", "-s", "test", "-o", out_dir.to_str().unwrap()]);
    let snapshot = std::fs::read_dir(&out_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(&std::fs::read(snapshot.path()).unwrap()[..2], b"PK");
}
