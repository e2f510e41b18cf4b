//! Three members of one consumer group share a topic's partitions.
//!
//! Run a server and the `producer` example, then:
//! `cargo run -p rill-sdk --example consumer_group`.
//! Each member has its own connection (membership belongs to a session), commits every
//! message after printing it, and stops after 5 seconds without new messages.

use futures_util::StreamExt;
use rill_sdk::Client;
use rill_sdk::consumer::{AutoCommit, Consumer};
use std::time::Duration;

#[tokio::main]
async fn main() -> rill_sdk::Result<()> {
    let connection = std::env::var("IGGY_CONNECTION_STRING")
        .unwrap_or_else(|_| "iggy://iggy:iggy@127.0.0.1:8090".to_owned());
    let mut members = Vec::new();
    for member in 0..3 {
        let client = Client::from_connection_string(&connection)?;
        client.connect().await?;
        let mut consumer = Consumer::builder(&client, "example", "orders")
            .group("example-group")
            .batch_size(50)
            .auto_commit(AutoCommit::Manual)
            .build()
            .await?;
        members.push(tokio::spawn(async move {
            let mut received = 0u64;
            while let Ok(Some(message)) =
                tokio::time::timeout(Duration::from_secs(5), consumer.next()).await
            {
                let message = message?;
                println!(
                    "member {member}: partition {} offset {}: {}",
                    message.partition_id(),
                    message.offset(),
                    String::from_utf8_lossy(&message.payload())
                );
                consumer.commit(&message).await?;
                received += 1;
            }
            consumer.close().await?;
            Ok::<_, rill_sdk::Error>(received)
        }));
    }
    for (member, task) in members.into_iter().enumerate() {
        let received = task.await.expect("member task")?;
        println!("member {member} received {received} messages");
    }
    Ok(())
}
