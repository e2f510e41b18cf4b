//! Streams, topics, partitions and segments; consumer groups and consumer offsets.

use crate::env::Env;

#[test]
fn streams_topics_partitions_and_segments() {
    let env = Env::new();
    let created = env.run(&["stream", "create", "orders"]);
    assert!(
        created.contains("Stream with name: orders and ID: 0 created"),
        "{created}"
    );
    assert!(
        env.fails(&["stream", "create", "orders"], 1)
            .contains("1012")
    );
    let table = env.run(&["stream", "list"]);
    assert!(table.contains("| orders"), "{table}");
    let list = env.run(&["stream", "list", "-l", "list"]);
    assert!(
        list.lines()
            .any(|line| line.starts_with("0|") && line.contains("|orders|")),
        "{list}"
    );
    // Quiet mode prints nothing, as the official CLI.
    assert!(env.run(&["-q", "stream", "list"]).is_empty());
    let streams = env.json(&["stream", "list"]);
    assert_eq!(streams[0]["name"], "orders");
    env.run(&["stream", "update", "orders", "orders2"]);
    assert_eq!(env.json(&["stream", "get", "0"])["name"], "orders2");
    assert!(
        env.fails(&["stream", "get", "nope"], 5)
            .contains("was not found")
    );

    env.run(&[
        "topic", "create", "orders2", "events", "2", "none", "1day", "1h",
    ]);
    let topic = env.json(&["topic", "get", "orders2", "events"]);
    assert_eq!(topic["partitions_count"], 2);
    assert_eq!(topic["message_expiry"], 90_000_000_000u64);
    assert_eq!(topic["partitions"].as_array().unwrap().len(), 2);
    env.run(&[
        "topic",
        "update",
        "orders2",
        "events",
        "events2",
        "gzip",
        "unlimited",
    ]);
    let topics = env.json(&["topic", "list", "orders2"]);
    assert_eq!(topics[0]["name"], "events2");
    assert_eq!(topics[0]["compression_algorithm"], "gzip");
    assert!(env.run(&["topic", "list", "orders2"]).contains("events2"));

    env.run(&["partition", "create", "orders2", "events2", "3"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["partitions_count"],
        5
    );
    env.run(&["partition", "delete", "orders2", "events2", "4"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["partitions_count"],
        1
    );
    env.run(&["segment", "delete", "orders2", "events2", "0", "1"]);

    env.run(&["message", "send", "-p", "0", "orders2", "events2", "x"]);
    env.run(&["topic", "purge", "orders2", "events2"]);
    env.run(&["stream", "purge", "orders2"]);
    assert_eq!(
        env.json(&["topic", "get", "orders2", "events2"])["messages_count"],
        0
    );
    env.run(&["topic", "delete", "orders2", "events2"]);
    assert!(
        env.fails(&["topic", "get", "orders2", "events2"], 5)
            .contains("not found")
    );
    env.run(&["stream", "delete", "orders2"]);
    assert!(
        env.fails(&["stream", "delete", "orders2"], 5)
            .contains("1009")
    );
}

#[test]
fn consumer_groups_and_offsets() {
    let env = Env::new();
    env.run(&["stream", "create", "s"]);
    env.run(&["topic", "create", "s", "t", "3", "none"]);
    let out = env.run(&["consumer-group", "create", "s", "t", "workers"]);
    assert!(
        out.contains("Consumer group with ID: 0, name: workers created"),
        "{out}"
    );
    assert!(
        env.fails(&["consumer-group", "create", "s", "t", "workers"], 1)
            .contains("5004")
    );
    let group = env.json(&["consumer-group", "get", "s", "t", "workers"]);
    assert_eq!(group["partitions_count"], 3);
    assert_eq!(group["members"].as_array().unwrap().len(), 0);
    assert_eq!(
        env.json(&["consumer-group", "list", "s", "t"])[0]["name"],
        "workers"
    );
    assert!(
        env.run(&["consumer-group", "list", "-l", "list", "s", "t"])
            .contains("0|workers|3|0")
    );

    env.run(&["message", "send", "-p", "2", "s", "t", "a", "b", "c"]);
    env.run(&["consumer-offset", "set", "7", "s", "t", "2", "1"]);
    let offset = env.json(&["consumer-offset", "get", "7", "s", "t", "2"]);
    assert_eq!(offset["stored_offset"], 1);
    assert_eq!(offset["current_offset"], 2);
    assert!(
        env.run(&["consumer-offset", "get", "7", "s", "t", "2"])
            .contains("Stored offset")
    );
    env.fails(&["consumer-offset", "get", "8", "s", "t", "2"], 5);
    env.fails(
        &[
            "consumer-offset",
            "get",
            "--kind",
            "consumer-group",
            "workers",
            "s",
            "t",
            "1",
        ],
        5,
    );

    env.run(&["consumer-group", "delete", "s", "t", "workers"]);
    env.fails(&["consumer-group", "get", "s", "t", "workers"], 5);
}
