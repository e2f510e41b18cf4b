//! Client behaviour against a scripted fake server (no real broker needed): request timeouts,
//! requests abandoned mid-flight, and the retry-once on status 8 (Disconnected).

use rill_sdk::{Client, Error, ReconnectPolicy};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const OK_EMPTY: [u8; 8] = [0; 8];
const DISCONNECTED: [u8; 8] = [8, 0, 0, 0, 0, 0, 0, 0];

/// Serves connections in order; `script(connection_index, request_index)` says how long to
/// wait before answering and what to answer (`None` = never answer).
async fn fake_server(
    script: impl Fn(usize, usize) -> Option<(Duration, [u8; 8])> + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    let script = Arc::new(script);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let index = counter.fetch_add(1, Ordering::SeqCst);
            let script = script.clone();
            tokio::spawn(async move {
                let mut request = 0;
                loop {
                    let mut header = [0u8; 8];
                    if socket.read_exact(&mut header).await.is_err() {
                        return;
                    }
                    let length = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
                    let mut payload = vec![0u8; length - 4];
                    if socket.read_exact(&mut payload).await.is_err() {
                        return;
                    }
                    match script(index, request) {
                        Some((delay, response)) => {
                            tokio::time::sleep(delay).await;
                            if socket.write_all(&response).await.is_err() {
                                return;
                            }
                        }
                        None => std::future::pending::<()>().await,
                    }
                    request += 1;
                }
            });
        }
    });
    (address, connections)
}

fn connect_to(address: &str, timeout: Duration) -> Client {
    Client::builder()
        .address(address)
        .request_timeout(timeout)
        .heartbeat_interval(None)
        .reconnect(ReconnectPolicy {
            enabled: true,
            max_attempts: Some(3),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(10),
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_request_without_answer_times_out_and_the_next_one_reconnects() {
    // The first connection never answers; later ones answer at once.
    let (address, connections) =
        fake_server(|connection, _| (connection > 0).then_some((Duration::ZERO, OK_EMPTY))).await;
    let client = connect_to(&address, Duration::from_millis(100));
    let error = client.ping().await.unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    client.ping().await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_abandoned_request_does_not_leave_its_response_for_the_next_one() {
    // The first answer on the first connection is late. The caller gives up before it
    // arrives; the next request must not read that stale answer, so it uses a new connection.
    let (address, connections) = fake_server(|connection, request| {
        let delay = if connection == 0 && request == 0 {
            Duration::from_millis(200)
        } else {
            Duration::ZERO
        };
        Some((delay, OK_EMPTY))
    })
    .await;
    let client = connect_to(&address, Duration::from_secs(5));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), client.ping())
            .await
            .is_err()
    );
    client.ping().await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 2, "a fresh connection");
}

#[tokio::test]
async fn heartbeats_ping_on_an_interval_while_connected() {
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = requests.clone();
    let (address, _) = fake_server(move |_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        Some((Duration::ZERO, OK_EMPTY))
    })
    .await;
    let client = Client::builder()
        .address(&address)
        .heartbeat_interval(Some(Duration::from_millis(20)))
        .build()
        .unwrap();
    client.connect().await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let pings = requests.load(Ordering::SeqCst);
    assert!(pings >= 5, "only {pings} heartbeats");
    client.shutdown().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after = requests.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        requests.load(Ordering::SeqCst),
        after,
        "no heartbeats after shutdown"
    );
}

#[tokio::test]
async fn status_8_reconnects_and_retries_once() {
    // The first connection answers Disconnected (8); the retry on a new connection succeeds.
    let (address, connections) = fake_server(|connection, _| {
        Some((
            Duration::ZERO,
            if connection == 0 {
                DISCONNECTED
            } else {
                OK_EMPTY
            },
        ))
    })
    .await;
    let client = connect_to(&address, Duration::from_secs(5));
    client.ping().await.unwrap();
    assert_eq!(connections.load(Ordering::SeqCst), 2);

    // A server that always answers 8: retried once, then the error names the code.
    let (address, connections) = fake_server(|_, _| Some((Duration::ZERO, DISCONNECTED))).await;
    let client = connect_to(&address, Duration::from_secs(5));
    let error = client.ping().await.unwrap_err();
    assert_eq!(error.code_number(), 8);
    assert!(error.to_string().contains("Disconnected"), "{error}");
    assert_eq!(connections.load(Ordering::SeqCst), 2, "exactly one retry");
}
