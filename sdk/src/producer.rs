//! The high-level producer: batches messages in the background and sends them.
//!
//! ```text
//! send() ──► bounded queue (queue_capacity messages) ──► background task
//!                                                         │ accumulates per partitioning
//!                                                         │ until batch_max_messages,
//!                                                         │ batch_max_bytes or linger
//!                                                         ▼
//!                                                  SendMessages, retried on transient
//!                                                  errors with exponential backoff
//! ```
//! [`Producer::send`] waits only when the queue is full (backpressure, bounded memory). Every
//! message gets a random UUIDv4-like id on the client unless it has one, so a batch that is
//! retried after a lost acknowledgement carries the same ids and can be deduplicated (by the
//! server's optional deduplication or by consumers). [`Producer::flush`] waits until everything
//! queued so far was sent and reports the first failure since the previous flush.

use crate::client::{Client, IntoIdentifier, TopicOptions};
use crate::error::{Error, Result};
use crate::message::{SendMessage, random_message_id};
use rill_core::message::OutgoingMessage;
use rill_core::primitives::{Identifier, Partitioning};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, warn};

/// How the producer chooses partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionStrategy {
    /// Server-side round robin.
    Balanced,
    /// Always this partition.
    Partition(u32),
    /// Always this key (the server hashes it to a partition).
    Key(Vec<u8>),
    /// Each message's own key ([`SendMessage::with_key`]); messages without a key are balanced.
    MessageKey,
}

/// Producer settings. Every queue and batch has a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Partition choice.
    pub partitioning: PartitionStrategy,
    /// A batch is sent once it holds this many messages.
    pub batch_max_messages: usize,
    /// A batch is sent before it would exceed this many bytes (a single larger message is
    /// sent alone).
    pub batch_max_bytes: usize,
    /// A non-full batch is sent this long after its first message arrived.
    pub linger: Duration,
    /// Messages that may wait in the queue before [`Producer::send`] blocks.
    pub queue_capacity: usize,
    /// Retries of a batch that failed with a transient error.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further retry.
    pub retry_backoff: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            partitioning: PartitionStrategy::Balanced,
            batch_max_messages: 1000,
            batch_max_bytes: 1024 * 1024,
            linger: Duration::from_millis(5),
            queue_capacity: 10_000,
            max_retries: 5,
            retry_backoff: Duration::from_millis(100),
        }
    }
}

/// Batches ready to send, grouped by partitioning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadyBatch {
    pub partitioning: Partitioning,
    pub messages: Vec<OutgoingMessage>,
}

#[derive(Debug)]
struct PendingBatch {
    messages: Vec<OutgoingMessage>,
    bytes: usize,
    started: Instant,
}

/// The batching logic, free of I/O so it can be tested on its own.
#[derive(Debug)]
pub(crate) struct Accumulator {
    max_messages: usize,
    max_bytes: usize,
    linger: Duration,
    /// Insertion-ordered, so batches leave in the order they were started.
    pending: Vec<(Partitioning, PendingBatch)>,
}

impl Accumulator {
    pub fn new(max_messages: usize, max_bytes: usize, linger: Duration) -> Self {
        assert!(max_messages > 0, "batch_max_messages must be positive");
        assert!(max_bytes > 0, "batch_max_bytes must be positive");
        Accumulator {
            max_messages,
            max_bytes,
            linger,
            pending: Vec::new(),
        }
    }

    /// Adds a message; returns the batches that became ready (at most two: the previous batch
    /// when this message would overflow it, and this one when it is full).
    pub fn push(
        &mut self,
        partitioning: Partitioning,
        message: OutgoingMessage,
        now: Instant,
    ) -> Vec<ReadyBatch> {
        let mut ready = Vec::new();
        let size = message.size();
        let index = match self.pending.iter().position(|(p, _)| *p == partitioning) {
            Some(index) => {
                if self.pending[index].1.bytes + size > self.max_bytes {
                    let (full, batch) = self.pending.remove(index);
                    ready.push(ReadyBatch {
                        partitioning: full,
                        messages: batch.messages,
                    });
                    self.start(partitioning, now)
                } else {
                    index
                }
            }
            None => self.start(partitioning, now),
        };
        let batch = &mut self.pending[index].1;
        batch.messages.push(message);
        batch.bytes += size;
        if batch.messages.len() >= self.max_messages || batch.bytes >= self.max_bytes {
            let (partitioning, batch) = self.pending.remove(index);
            ready.push(ReadyBatch {
                partitioning,
                messages: batch.messages,
            });
        }
        ready
    }

    fn start(&mut self, partitioning: Partitioning, now: Instant) -> usize {
        self.pending.push((
            partitioning,
            PendingBatch {
                messages: Vec::new(),
                bytes: 0,
                started: now,
            },
        ));
        self.pending.len() - 1
    }

    /// Batches whose linger time has passed.
    pub fn expired(&mut self, now: Instant) -> Vec<ReadyBatch> {
        let linger = self.linger;
        let mut ready = Vec::new();
        self.pending.retain_mut(|(partitioning, batch)| {
            if now.duration_since(batch.started) >= linger {
                ready.push(ReadyBatch {
                    partitioning: partitioning.clone(),
                    messages: std::mem::take(&mut batch.messages),
                });
                false
            } else {
                true
            }
        });
        ready
    }

    /// Everything pending, in order.
    pub fn drain(&mut self) -> Vec<ReadyBatch> {
        self.pending
            .drain(..)
            .map(|(partitioning, batch)| ReadyBatch {
                partitioning,
                messages: batch.messages,
            })
            .collect()
    }

    /// When the oldest pending batch must leave.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending
            .iter()
            .map(|(_, batch)| batch.started + self.linger)
            .min()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

enum Request {
    Message(Partitioning, OutgoingMessage),
    Flush(oneshot::Sender<Result<()>>),
}

/// Counters of what the producer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Messages acknowledged by the server.
    pub sent_messages: u64,
    /// Batches sent.
    pub sent_batches: u64,
    /// Retries made.
    pub retries: u64,
    /// Messages given up on after a permanent error or exhausted retries.
    pub failed_messages: u64,
}

/// Builds a [`Producer`].
#[derive(Debug)]
pub struct ProducerBuilder {
    client: Client,
    stream: Result<Identifier>,
    topic: Result<Identifier>,
    config: ProducerConfig,
    create_topic: Option<u32>,
}

impl ProducerBuilder {
    /// Partition choice.
    pub fn partitioning(mut self, strategy: PartitionStrategy) -> Self {
        self.config.partitioning = strategy;
        self
    }

    /// Messages per batch.
    pub fn batch_max_messages(mut self, count: usize) -> Self {
        self.config.batch_max_messages = count;
        self
    }

    /// Bytes per batch.
    pub fn batch_max_bytes(mut self, bytes: usize) -> Self {
        self.config.batch_max_bytes = bytes;
        self
    }

    /// Longest wait of a non-full batch.
    pub fn linger(mut self, linger: Duration) -> Self {
        self.config.linger = linger;
        self
    }

    /// Bound of the send queue, in messages.
    pub fn queue_capacity(mut self, messages: usize) -> Self {
        self.config.queue_capacity = messages;
        self
    }

    /// Retries of transient failures and the initial backoff.
    pub fn retries(mut self, max_retries: u32, backoff: Duration) -> Self {
        self.config.max_retries = max_retries;
        self.config.retry_backoff = backoff;
        self
    }

    /// The whole configuration.
    pub fn config(mut self, config: ProducerConfig) -> Self {
        self.config = config;
        self
    }

    /// Creates the stream and topic (with this many partitions) when they do not exist.
    /// Only works when both are given by name.
    pub fn create_topic_if_missing(mut self, partitions: u32) -> Self {
        self.create_topic = Some(partitions);
        self
    }

    /// Checks (or creates) the topic and starts the background sender.
    pub async fn build(self) -> Result<Producer> {
        let stream = self.stream?;
        let topic = self.topic?;
        if self.config.queue_capacity == 0 {
            return Err(Error::invalid("queue_capacity must be positive"));
        }
        if self.config.batch_max_messages == 0 || self.config.batch_max_bytes == 0 {
            return Err(Error::invalid("batch limits must be positive"));
        }
        if let PartitionStrategy::Key(key) = &self.config.partitioning {
            Partitioning::key(key.clone())?;
        }
        ensure_topic(&self.client, &stream, &topic, self.create_topic).await?;
        Ok(Producer::start(self.client, stream, topic, self.config))
    }
}

/// Makes sure the stream and topic exist, creating them if asked.
pub(crate) async fn ensure_topic(
    client: &Client,
    stream: &Identifier,
    topic: &Identifier,
    create_partitions: Option<u32>,
) -> Result<()> {
    if client.get_stream(stream).await?.is_none() {
        match (create_partitions, stream) {
            (Some(_), Identifier::String(name)) => {
                if let Err(error) = client.create_stream(name.as_str()).await
                    && error.server_code() != Some(rill_core::ErrorCode::StreamNameAlreadyExists)
                {
                    return Err(error);
                }
            }
            _ => {
                return Err(Error::Server {
                    command: rill_core::CommandCode::GetStream,
                    code: rill_core::ErrorCode::StreamIdNotFound,
                });
            }
        }
    }
    if client.get_topic(stream, topic).await?.is_none() {
        match (create_partitions, topic) {
            (Some(partitions), Identifier::String(name)) => {
                if let Err(error) = client
                    .create_topic(stream, name.as_str(), partitions, TopicOptions::default())
                    .await
                    && error.server_code() != Some(rill_core::ErrorCode::TopicNameAlreadyExists)
                {
                    return Err(error);
                }
            }
            _ => {
                return Err(Error::Server {
                    command: rill_core::CommandCode::GetTopic,
                    code: rill_core::ErrorCode::TopicIdNotFound,
                });
            }
        }
    }
    Ok(())
}

/// The high-level producer. See the module documentation.
#[derive(Debug)]
pub struct Producer {
    queue: mpsc::Sender<Request>,
    task: Option<JoinHandle<ProducerStats>>,
    partitioning: PartitionStrategy,
}

impl Producer {
    /// A builder for a producer to `stream`/`topic` (ids or names).
    pub fn builder(
        client: &Client,
        stream: impl IntoIdentifier,
        topic: impl IntoIdentifier,
    ) -> ProducerBuilder {
        ProducerBuilder {
            client: client.clone(),
            stream: stream.into_identifier(),
            topic: topic.into_identifier(),
            config: ProducerConfig::default(),
            create_topic: None,
        }
    }

    fn start(
        client: Client,
        stream: Identifier,
        topic: Identifier,
        config: ProducerConfig,
    ) -> Self {
        let (queue, receiver) = mpsc::channel(config.queue_capacity);
        let partitioning = config.partitioning.clone();
        let task = tokio::spawn(run_sender(client, stream, topic, config, receiver));
        Producer {
            queue,
            task: Some(task),
            partitioning,
        }
    }

    fn partitioning_for(&self, message: &SendMessage) -> Result<Partitioning> {
        Ok(match &self.partitioning {
            PartitionStrategy::Balanced => Partitioning::Balanced,
            PartitionStrategy::Partition(id) => Partitioning::PartitionId(*id),
            PartitionStrategy::Key(key) => Partitioning::key(key.clone())?,
            PartitionStrategy::MessageKey => match &message.key {
                Some(key) => Partitioning::key(key.to_vec())?,
                None => Partitioning::Balanced,
            },
        })
    }

    /// Queues a message, waiting while the queue is full. The message is sent in the
    /// background; use [`Producer::flush`] to learn whether it arrived.
    pub async fn send(&self, message: impl Into<SendMessage>) -> Result<()> {
        let mut message = message.into();
        let partitioning = self.partitioning_for(&message)?;
        if message.id.is_none() {
            message.id = Some(random_message_id());
        }
        let outgoing = message.into_outgoing()?;
        self.queue
            .send(Request::Message(partitioning, outgoing))
            .await
            .map_err(|_| Error::Closed)
    }

    /// Queues several messages.
    pub async fn send_all<I, M>(&self, messages: I) -> Result<()>
    where
        I: IntoIterator<Item = M>,
        M: Into<SendMessage>,
    {
        for message in messages {
            self.send(message).await?;
        }
        Ok(())
    }

    /// Sends everything queued so far; returns the first failure since the previous flush.
    pub async fn flush(&self) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Request::Flush(reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// Flushes, stops the background task and returns its counters.
    pub async fn close(mut self) -> Result<ProducerStats> {
        let flushed = self.flush().await;
        let Some(task) = self.task.take() else {
            return Err(Error::Closed);
        };
        drop(self);
        let stats = task.await.map_err(|_| Error::Closed)?;
        flushed.map(|()| stats)
    }
}

async fn run_sender(
    client: Client,
    stream: Identifier,
    topic: Identifier,
    config: ProducerConfig,
    mut receiver: mpsc::Receiver<Request>,
) -> ProducerStats {
    let mut accumulator = Accumulator::new(
        config.batch_max_messages,
        config.batch_max_bytes,
        config.linger,
    );
    let mut stats = ProducerStats::default();
    let mut first_error: Option<Error> = None;
    loop {
        let deadline = accumulator.next_deadline();
        let request = tokio::select! {
            request = receiver.recv() => request,
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                for batch in accumulator.expired(Instant::now()) {
                    send_batch(&client, &stream, &topic, &config, batch, &mut stats, &mut first_error).await;
                }
                continue;
            }
        };
        match request {
            Some(Request::Message(partitioning, message)) => {
                for batch in accumulator.push(partitioning, message, Instant::now()) {
                    send_batch(
                        &client,
                        &stream,
                        &topic,
                        &config,
                        batch,
                        &mut stats,
                        &mut first_error,
                    )
                    .await;
                }
            }
            Some(Request::Flush(reply)) => {
                for batch in accumulator.drain() {
                    send_batch(
                        &client,
                        &stream,
                        &topic,
                        &config,
                        batch,
                        &mut stats,
                        &mut first_error,
                    )
                    .await;
                }
                let _ = reply.send(first_error.take().map_or(Ok(()), Err));
            }
            None => {
                for batch in accumulator.drain() {
                    send_batch(
                        &client,
                        &stream,
                        &topic,
                        &config,
                        batch,
                        &mut stats,
                        &mut first_error,
                    )
                    .await;
                }
                if let Some(error) = first_error {
                    warn!(%error, "producer closed after an unreported failure");
                }
                return stats;
            }
        }
    }
}

async fn send_batch(
    client: &Client,
    stream: &Identifier,
    topic: &Identifier,
    config: &ProducerConfig,
    batch: ReadyBatch,
    stats: &mut ProducerStats,
    first_error: &mut Option<Error>,
) {
    if batch.messages.is_empty() {
        return;
    }
    let mut attempt = 0u32;
    loop {
        match client
            .send_messages(stream, topic, batch.partitioning.clone(), &batch.messages)
            .await
        {
            Ok(()) => {
                stats.sent_batches += 1;
                stats.sent_messages += batch.messages.len() as u64;
                return;
            }
            Err(error) if error.is_transient() && attempt < config.max_retries => {
                attempt += 1;
                stats.retries += 1;
                let wait = config
                    .retry_backoff
                    .checked_mul(1 << (attempt - 1).min(16))
                    .unwrap_or(Duration::from_secs(60));
                debug!(%error, attempt, ?wait, "retrying batch");
                tokio::time::sleep(wait).await;
            }
            Err(error) => {
                warn!(%error, messages = batch.messages.len(), "giving up on batch");
                stats.failed_messages += batch.messages.len() as u64;
                first_error.get_or_insert(error);
                return;
            }
        }
    }
}

/// Identifies the producer's partition keys in tests and logs.
impl std::fmt::Display for PartitionStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartitionStrategy::Balanced => f.write_str("balanced"),
            PartitionStrategy::Partition(id) => write!(f, "partition {id}"),
            PartitionStrategy::Key(key) => write!(f, "key {}", String::from_utf8_lossy(key)),
            PartitionStrategy::MessageKey => f.write_str("per-message key"),
        }
    }
}

#[cfg(test)]
mod tests;
