//! Reads one partition with a single consumer, committing after each message.
//!
//! Run a server and the `producer` example, then:
//! `cargo run -p rill-sdk --example consumer -- [partition]`.
//! Stops after 5 seconds without new messages. Run it again: it resumes after the last
//! committed offset.

use futures_util::StreamExt;
use rill_sdk::Client;
use rill_sdk::consumer::{AutoCommit, Consumer};
use std::time::Duration;

#[tokio::main]
async fn main() -> rill_sdk::Result<()> {
    let connection = std::env::var("IGGY_CONNECTION_STRING")
        .unwrap_or_else(|_| "iggy://iggy:iggy@127.0.0.1:8090".to_owned());
    let partition: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);

    let client = Client::from_connection_string(&connection)?;
    client.connect().await?;
    let mut consumer = Consumer::builder(&client, "example", "orders")
        .single(1, Some(partition))
        .batch_size(100)
        .auto_commit(AutoCommit::Manual)
        .build()
        .await?;
    let mut received = 0;
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_secs(5), consumer.next()).await
    {
        let message = message?;
        println!(
            "partition {} offset {}: {}",
            message.partition_id(),
            message.offset(),
            String::from_utf8_lossy(&message.payload())
        );
        consumer.commit(&message).await?;
        received += 1;
    }
    println!("received {received} messages");
    consumer.close().await
}
