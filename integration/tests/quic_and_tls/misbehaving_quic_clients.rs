//! QUIC clients that misbehave (abandoned, reset and huge streams, vanishing) while others work.

use crate::helpers::{connect, quic_connection_string};
use crate::raw_quic;
use iggy::prelude::*;
use rill_integration::fixtures::{message_id, test_messages};
use rill_integration::sdk::{create_stream, create_topic, id};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_quic_clients_do_not_disturb_others() {
    // Proves: QUIC clients that open hundreds of streams and abandon them mid-frame, reset
    // streams, declare huge lengths or vanish without closing cost only themselves: official
    // clients over QUIC and TCP keep sending and polling without a single error meanwhile, a
    // connection whose stream was reset or refused goes on serving its next streams, and the
    // server is healthy afterwards.
    const PING: u32 = 1;
    let server = TestServer::start(ServerOptions::new().env("IGGY_TCP_READ_TIMEOUT", "2 s"));
    let quic_client = connect(&quic_connection_string(&server)).await;
    let stream = create_stream(&quic_client, "steady").await;
    create_topic(&quic_client, stream, "t", 1).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let steady = {
        let stop = stop.clone();
        let tcp = rill_integration::sdk::root_client(&server).await;
        tokio::spawn(async move {
            let mut rounds = 0u64;
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for client in [&quic_client, &tcp] {
                    let mut batch = test_messages(9, sent, 10);
                    client
                        .send_messages(&id(0), &id(0), &Partitioning::partition_id(0), &mut batch)
                        .await
                        .unwrap_or_else(|error| panic!("steady send in round {rounds}: {error}"));
                    sent += 10;
                    let polled = client
                        .poll_messages(
                            &id(0),
                            &id(0),
                            Some(0),
                            &Consumer::new(id(1)),
                            &PollingStrategy::offset(sent - 10),
                            10,
                            false,
                        )
                        .await
                        .unwrap_or_else(|error| panic!("steady poll in round {rounds}: {error}"));
                    assert_eq!(polled.messages.len(), 10, "round {rounds}");
                    assert_eq!(polled.messages[0].header.id, message_id(9, sent - 10));
                }
                rounds += 1;
            }
            (rounds, quic_client)
        })
    };

    // 1. Hundreds of streams, each abandoned mid-frame, then the client vanishes without a close.
    {
        let (endpoint, connection) = raw_quic::connect(&server).await;
        let mut streams = Vec::new();
        for _ in 0..300 {
            let (mut send, recv) = connection.open_bi().await.expect("open stream");
            // Declares 1000 payload bytes, sends 10.
            let mut partial = 1004u32.to_le_bytes().to_vec();
            partial.extend_from_slice(&201u32.to_le_bytes());
            partial.extend_from_slice(&[7u8; 10]);
            send.write_all(&partial).await.expect("write partial frame");
            streams.push((send, recv));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // No CONNECTION_CLOSE: the server only learns by its idle timeout.
        drop(streams);
        drop(connection);
        drop(endpoint);
    }

    // 2. Reset streams, a huge declared length and a short frame: each answered or dropped on
    //    its own, and the same connection keeps serving.
    let (_endpoint, connection) = raw_quic::connect(&server).await;
    for _ in 0..50 {
        let (mut send, _recv) = connection.open_bi().await.expect("open stream");
        send.write_all(&raw_quic::frame(PING, b"")[..6])
            .await
            .expect("write");
        send.reset(0u32.into()).expect("reset");
    }
    let huge = {
        let mut frame = u32::MAX.to_le_bytes().to_vec();
        frame.extend_from_slice(&PING.to_le_bytes());
        raw_quic::request(&connection, &frame).await
    };
    assert_ne!(
        raw_quic::status(&huge),
        0,
        "a huge declared length is refused"
    );
    let short = raw_quic::request(&connection, &[1, 0, 0, 0, 1, 0, 0, 0]).await;
    assert_ne!(raw_quic::status(&short), 0, "a length below 4 is refused");
    // After the bad streams, the connection still works (a Ping needs no login).
    let pong = raw_quic::request(&connection, &raw_quic::frame(PING, b"")).await;
    assert_eq!(raw_quic::status(&pong), 0, "ping after bad streams");
    // A request that needs a login is refused with 40, not served.
    let streams = raw_quic::request(&connection, &raw_quic::frame(201, b"")).await;
    assert_eq!(raw_quic::status(&streams), 40);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (rounds, quic_client) = steady.await.expect("steady clients saw no error");
    assert!(rounds > 0, "the steady clients made progress");
    assert_eq!(
        quic_client
            .get_streams()
            .await
            .expect("server healthy")
            .len(),
        1
    );
}
