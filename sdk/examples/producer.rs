//! Sends messages with the high-level producer.
//!
//! Run a server, then: `cargo run -p rill-sdk --example producer -- [count]`.
//! The server address and credentials come from `IGGY_CONNECTION_STRING`
//! (default `iggy://iggy:iggy@127.0.0.1:8090`). Creates stream `example`, topic `orders`
//! (3 partitions) if missing, and sends `count` messages keyed by customer.

use bytes::Bytes;
use rill_sdk::producer::{PartitionStrategy, Producer};
use rill_sdk::{Client, HeaderValue, SendMessage};
use std::time::Duration;

#[tokio::main]
async fn main() -> rill_sdk::Result<()> {
    let connection = std::env::var("IGGY_CONNECTION_STRING")
        .unwrap_or_else(|_| "iggy://iggy:iggy@127.0.0.1:8090".to_owned());
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);

    let client = Client::from_connection_string(&connection)?;
    client.connect().await?;
    let producer = Producer::builder(&client, "example", "orders")
        .create_topic_if_missing(3)
        .partitioning(PartitionStrategy::MessageKey)
        .batch_max_messages(100)
        .linger(Duration::from_millis(5))
        .queue_capacity(1_000)
        .build()
        .await?;
    for n in 0..count {
        let customer = format!("customer-{}", n % 10);
        let message = SendMessage::new(Bytes::from(format!("order {n}")))
            .with_key(Bytes::from(customer.clone()))
            .with_header("customer", HeaderValue::String(customer));
        producer.send(message).await?;
    }
    let stats = producer.close().await?;
    println!(
        "sent {} messages in {} batches ({} retries)",
        stats.sent_messages, stats.sent_batches, stats.retries
    );
    Ok(())
}
