use super::*;
use proptest::prelude::*;
use rill_core::message::MessageIter;

fn send(text: &str) -> Result<SendMessages, Reply> {
    let body: Send = json(&Bytes::copy_from_slice(text.as_bytes()))?;
    body.request(Identifier::numeric(1), Identifier::numeric(2))
}

#[test]
fn the_sdk_send_body_becomes_the_messages_it_describes() {
    let request = send(
        r#"{"partitioning":{"kind":"partition_id","value":"AQAAAA=="},
            "messages":[
              {"id":1,"payload":"aGVsbG8=","user_headers":[
                {"key":{"kind":"string","value":"a2V5MQ=="},"value":{"kind":"uint32","value":"KgAAAA=="}}]},
              {"id":"340282366920938463463374607431768211455","payload":"d29ybGQ="},
              {"id":"0123456789abcdef-0123456789abcdef","payload":"eA==","user_headers":null}]}"#,
    )
    .unwrap_or_else(|reply| panic!("{}", String::from_utf8_lossy(&reply.body)));
    assert_eq!(request.partitioning, Partitioning::PartitionId(1));
    let messages: Vec<_> = MessageIter::new(request.batch.as_bytes())
        .map(Result::unwrap)
        .collect();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        (messages[0].id(), messages[0].payload()),
        (1, &b"hello"[..])
    );
    let headers = user_headers::parse(messages[0].user_headers()).unwrap();
    assert_eq!(headers[0].0, HeaderField::string("key1"));
    assert_eq!(headers[0].1.value, 42u32.to_le_bytes());
    assert_eq!(messages[1].id(), u128::MAX);
    assert_eq!(messages[2].id(), 0x0123456789abcdef0123456789abcdef);
    assert!(messages[2].user_headers().is_empty());
}

#[test]
fn bad_send_bodies_are_refused_with_the_code_upstream_gives() {
    let code = |text: &str| match send(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(reply) => {
            let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
            (reply.status, body["id"].as_u64().unwrap())
        }
    };
    let ok = r#""messages":[{"payload":"eA=="}]"#;
    assert_eq!(code("not json").1, 4);
    assert_eq!(
        code(&format!(
            r#"{{"partitioning":{{"kind":"balanced","value":""}},{ok},"extra":1}}"#
        ))
        .1,
        4
    );
    assert_eq!(
        code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[]}"#).1,
        4009
    );
    assert_eq!(
        code(&format!(
            r#"{{"partitioning":{{"kind":"partition_id","value":"AQ=="}},{ok}}}"#
        ))
        .1,
        4028
    );
    assert_eq!(
        code(&format!(
            r#"{{"partitioning":{{"kind":"messages_key","value":""}},{ok}}}"#
        ))
        .1,
        4028
    );
    assert_eq!(
        code(&format!(
            r#"{{"partitioning":{{"kind":"sideways","value":""}},{ok}}}"#
        ))
        .1,
        4
    );
    assert_eq!(
        code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":""}]}"#).1,
        4024
    );
    assert_eq!(
        code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"!!"}]}"#).1,
        4
    );
    assert_eq!(code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"id":-1,"payload":"eA=="}]}"#).1, 4);
    assert_eq!(
        code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA==","user_headers":[{"key":{"kind":"string","value":""},"value":{"kind":"bool","value":"AQ=="}}]}]}"#).1,
        4018
    );
    assert_eq!(
        code(r#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA==","user_headers":[{"key":{"kind":"weird","value":"eA=="},"value":{"kind":"bool","value":"AQ=="}}]}]}"#).1,
        4040
    );
    assert!(code("[]").0 == StatusCode::BAD_REQUEST);
}

#[test]
fn identifiers_queries_and_escapes() {
    assert_eq!(identifier("7").unwrap(), Identifier::numeric(7));
    assert_eq!(
        identifier("orders").unwrap(),
        Identifier::named("orders").unwrap()
    );
    assert!(identifier(&"x".repeat(256)).is_err());
    assert_eq!(decode("a%20b%2Fc%zz%4"), "a b/c%zz%4");
    let uri: hyper::Uri = "/x?consumer_id=a+b&count=5&flag".parse().unwrap();
    let query = query(&uri);
    assert_eq!(query_value(&query, "consumer_id"), Some("a b"));
    assert_eq!(query_number::<u32>(&query, "count").unwrap(), Some(5));
    assert_eq!(query_value(&query, "flag"), Some(""));
    assert!(query_number::<u32>(&query, "consumer_id").is_err());
    assert_eq!(query_number::<u32>(&query, "absent").unwrap(), None);
}

#[test]
fn snapshot_names_are_upstreams() {
    let snapshot: Snapshot = json(&Bytes::from_static(
        br#"{"compression":"Deflated","snapshot_types":["ServerConfig","ProcessList"]}"#,
    ))
    .unwrap();
    let request = snapshot.request().unwrap();
    assert_eq!((request.compression, request.types), (2, vec![6, 2]));
    let all: Snapshot = json(&Bytes::from_static(
        br#"{"compression":"Zstd","snapshot_types":["All","Test"]}"#,
    ))
    .unwrap();
    assert!(all.request().is_err());
}

proptest! {
    /// Whatever arrives as a send body, the answer is a request or a 400, never a panic.
    #[test]
    fn arbitrary_send_bodies_never_panic(text in ".{0,300}") {
        let _ = send(&text);
    }

    #[test]
    fn arbitrary_messages_round_trip(
        messages in proptest::collection::vec(
            (any::<u64>(), proptest::collection::vec(any::<u8>(), 1..64)),
            1..8,
        ),
        partition in any::<u32>(),
    ) {
        let body = serde_json::json!({
            "partitioning": {"kind": "partition_id", "value": STANDARD.encode(partition.to_le_bytes())},
            "messages": messages.iter().map(|(id, payload)| serde_json::json!({
                "id": id, "payload": STANDARD.encode(payload),
            })).collect::<Vec<_>>(),
        });
        let request = send(&body.to_string()).map_err(|reply| {
            TestCaseError::fail(String::from_utf8_lossy(&reply.body).into_owned())
        })?;
        prop_assert_eq!(request.partitioning, Partitioning::PartitionId(partition));
        let stored: Vec<(u128, Vec<u8>)> = MessageIter::new(request.batch.as_bytes())
            .map(|message| message.map(|m| (m.id(), m.payload().to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        let sent: Vec<(u128, Vec<u8>)> = messages
            .into_iter()
            .map(|(id, payload)| (u128::from(id), payload))
            .collect();
        prop_assert_eq!(stored, sent);
    }
}

#[test]
fn the_fuzzing_entry_parses_what_the_sdk_sends() {
    let send =
        br#"{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA=="}]}"#;
    assert!(
        parse_everything(
            send,
            "/streams/s/topics/t/messages?consumer_id=a%20b&value=3"
        ) >= 1
    );
    assert_eq!(parse_everything(b"\xff\xfe not json", "%%%?&&=="), 0);
}
