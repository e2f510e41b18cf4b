//! The high-level consumer: an async [`Stream`] of [`Message`]s.
//!
//! A consumer is either a single consumer (an id; one partition, 0 unless given) or a member
//! of a consumer group (by name; created and joined when the consumer is built, re-joined by
//! the client after every reconnection). It polls `batch_size` messages at a time and hands
//! them out one by one; each [`Message`] shares the poll's response buffer.
//!
//! Delivery rules:
//! * The consumer remembers the offset of the last message it delivered per partition and
//!   never delivers an offset at or below it again, so a reconnection, a re-poll with `Next`
//!   before a commit, or a rebalance cannot repeat messages within one consumer.
//! * With [`AutoCommit::Manual`] the application commits ([`Consumer::commit`]) after it has
//!   processed a message; the stored offset is where a restarted consumer, or another member
//!   taking over the partition, resumes (`Next`). Committing every processed message gives
//!   exactly-once delivery of processed messages across members and restarts.
//! * [`AutoCommit::AfterPoll`] lets the server store the offset when it answers a poll
//!   (at-most-once); [`AutoCommit::Interval`] stores the last delivered offsets periodically
//!   (at-least-once).

use crate::client::{Client, IntoIdentifier};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::producer::ensure_topic;
use futures_core::Stream;
use rill_core::primitives::{Consumer as WireConsumer, Identifier, PollingStrategy};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tracing::debug;

/// When offsets are stored on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoCommit {
    /// Only when the application calls [`Consumer::commit`] or [`Consumer::commit_offset`].
    Manual,
    /// The server stores the last returned offset with every poll (`auto_commit` flag).
    AfterPoll,
    /// The consumer stores the last delivered offsets at most this often.
    Interval(Duration),
}

/// Who consumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerIdentity {
    /// A single consumer with this id, reading one partition (0 unless set).
    Single {
        /// The consumer id.
        id: Identifier,
        /// The partition read.
        partition: Option<u32>,
    },
    /// A member of this consumer group (name or id).
    Group(Identifier),
}

/// Consumer settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Who consumes.
    pub identity: ConsumerIdentity,
    /// Where to start (the default `Next` resumes after the stored offset).
    pub strategy: PollingStrategy,
    /// Messages per poll.
    pub batch_size: u32,
    /// Wait after a poll that returned nothing.
    pub poll_interval: Duration,
    /// Offset commits.
    pub auto_commit: AutoCommit,
    /// Create the group when it does not exist (groups given by name only).
    pub create_group_if_missing: bool,
    /// Consecutive transient poll failures tolerated before the stream yields the error.
    pub max_consecutive_errors: u32,
    /// Group members only: before handing out each buffered message, check that its
    /// partition is still assigned to this member, and drop buffered messages of partitions
    /// a rebalance moved away (another member continues them from the committed offset).
    /// Costs one GetConsumerGroup per message; irrelevant with [`AutoCommit::AfterPoll`].
    pub verify_assignment: bool,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            identity: ConsumerIdentity::Single {
                id: Identifier::numeric(0),
                partition: None,
            },
            strategy: PollingStrategy::next(),
            batch_size: 100,
            poll_interval: Duration::from_millis(100),
            auto_commit: AutoCommit::Manual,
            create_group_if_missing: true,
            max_consecutive_errors: 20,
            verify_assignment: true,
        }
    }
}

/// Builds a [`Consumer`].
#[derive(Debug)]
pub struct ConsumerBuilder {
    client: Client,
    stream: Result<Identifier>,
    topic: Result<Identifier>,
    config: ConsumerConfig,
    create_topic: Option<u32>,
}

impl ConsumerBuilder {
    /// Consume as a single consumer with this id, from `partition` (0 when `None`).
    pub fn single(mut self, id: impl IntoIdentifier, partition: Option<u32>) -> Self {
        self.config.identity = match id.into_identifier() {
            Ok(id) => ConsumerIdentity::Single { id, partition },
            Err(error) => {
                self.stream = Err(error);
                return self;
            }
        };
        self
    }

    /// Consume as a member of this group (created if missing, then joined).
    pub fn group(mut self, group: impl IntoIdentifier) -> Self {
        match group.into_identifier() {
            Ok(group) => self.config.identity = ConsumerIdentity::Group(group),
            Err(error) => self.stream = Err(error),
        }
        self
    }

    /// Starting strategy.
    pub fn strategy(mut self, strategy: PollingStrategy) -> Self {
        self.config.strategy = strategy;
        self
    }

    /// Messages per poll.
    pub fn batch_size(mut self, count: u32) -> Self {
        self.config.batch_size = count;
        self
    }

    /// Wait after an empty poll.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.config.poll_interval = interval;
        self
    }

    /// Offset commits.
    pub fn auto_commit(mut self, mode: AutoCommit) -> Self {
        self.config.auto_commit = mode;
        self
    }

    /// Whether a group member re-checks its partition assignment before each message
    /// (default on; see [`ConsumerConfig::verify_assignment`]).
    pub fn verify_assignment(mut self, verify: bool) -> Self {
        self.config.verify_assignment = verify;
        self
    }

    /// The whole configuration.
    pub fn config(mut self, config: ConsumerConfig) -> Self {
        self.config = config;
        self
    }

    /// Creates the stream and topic (with this many partitions) when missing (names only).
    pub fn create_topic_if_missing(mut self, partitions: u32) -> Self {
        self.create_topic = Some(partitions);
        self
    }

    /// Checks the topic, creates and joins the group if needed.
    pub async fn build(self) -> Result<Consumer> {
        let stream = self.stream?;
        let topic = self.topic?;
        if self.config.batch_size == 0 {
            return Err(Error::invalid("batch_size must be positive"));
        }
        ensure_topic(&self.client, &stream, &topic, self.create_topic).await?;
        let wire_consumer = match &self.config.identity {
            ConsumerIdentity::Single { id, .. } => WireConsumer::new(id.clone()),
            ConsumerIdentity::Group(group) => {
                if self
                    .client
                    .get_consumer_group(&stream, &topic, group)
                    .await?
                    .is_none()
                {
                    match group {
                        Identifier::String(name) if self.config.create_group_if_missing => {
                            if let Err(error) = self
                                .client
                                .create_consumer_group(&stream, &topic, name.as_str())
                                .await
                                && error.server_code()
                                    != Some(rill_core::ErrorCode::ConsumerGroupNameAlreadyExists)
                            {
                                return Err(error);
                            }
                        }
                        _ => {
                            return Err(Error::Server {
                                command: rill_core::CommandCode::GetConsumerGroup,
                                code: rill_core::ErrorCode::ConsumerGroupIdNotFound,
                            });
                        }
                    }
                }
                self.client
                    .join_consumer_group(&stream, &topic, group)
                    .await?;
                WireConsumer::group(group.clone())
            }
        };
        let state = State {
            client: self.client,
            stream,
            topic,
            wire_consumer,
            strategy: self.config.strategy,
            config: self.config,
            buffer: VecDeque::new(),
            delivered: HashMap::new(),
            uncommitted: HashMap::new(),
            last_commit: Instant::now(),
            consecutive_errors: 0,
            closed: false,
            member: None,
        };
        Ok(Consumer {
            state: Arc::new(Mutex::new(state)),
            pending: None,
        })
    }
}

struct State {
    client: Client,
    stream: Identifier,
    topic: Identifier,
    wire_consumer: WireConsumer,
    config: ConsumerConfig,
    /// The strategy of the next poll of a single consumer.
    strategy: PollingStrategy,
    buffer: VecDeque<Message>,
    /// Offset of the last message delivered, per partition.
    delivered: HashMap<u32, u64>,
    /// Delivered but not yet stored offsets (interval mode).
    uncommitted: HashMap<u32, u64>,
    last_commit: Instant,
    consecutive_errors: u32,
    closed: bool,
    /// This session's member id (its client id) and the connection epoch it belongs to.
    member: Option<(u64, u32)>,
}

impl State {
    fn is_group(&self) -> bool {
        matches!(self.config.identity, ConsumerIdentity::Group(_))
    }

    fn server_commits(&self) -> bool {
        self.config.auto_commit == AutoCommit::AfterPoll
    }

    /// The partitions currently assigned to this member.
    async fn assigned_partitions(&mut self) -> Result<Vec<u32>> {
        let ConsumerIdentity::Group(group) = &self.config.identity else {
            return Ok(Vec::new());
        };
        let epoch = self.client.connection_epoch();
        let member_id = match self.member {
            Some((known_epoch, id)) if known_epoch == epoch => id,
            _ => {
                let id = self.client.get_me().await?.client_id;
                self.member = Some((self.client.connection_epoch(), id));
                id
            }
        };
        let details = self
            .client
            .get_consumer_group(&self.stream, &self.topic, group)
            .await?;
        Ok(details
            .and_then(|details| details.members.into_iter().find(|m| m.id == member_id))
            .map(|member| member.partitions)
            .unwrap_or_default())
    }

    fn verifies_assignment(&self) -> bool {
        self.is_group() && self.config.verify_assignment && !self.server_commits()
    }

    async fn next_message(&mut self) -> Option<Result<Message>> {
        loop {
            if self.verifies_assignment()
                && let Some(partition) = self.buffer.front().map(Message::partition_id)
            {
                match self.assigned_partitions().await {
                    Ok(assigned) if assigned.contains(&partition) => {}
                    Ok(_) => {
                        debug!(
                            partition,
                            "partition reassigned; dropping its buffered messages"
                        );
                        self.buffer.retain(|m| m.partition_id() != partition);
                        continue;
                    }
                    Err(error) if error.is_transient() => {
                        debug!(%error, "assignment check failed; retrying");
                        tokio::time::sleep(self.config.poll_interval).await;
                        continue;
                    }
                    Err(error) => return Some(Err(error)),
                }
            }
            if let Some(message) = self.buffer.pop_front() {
                let partition = message.partition_id();
                self.delivered.insert(partition, message.offset());
                if let AutoCommit::Interval(_) = self.config.auto_commit {
                    self.uncommitted.insert(partition, message.offset());
                }
                return Some(Ok(message));
            }
            if self.closed {
                return None;
            }
            if let AutoCommit::Interval(interval) = self.config.auto_commit
                && self.last_commit.elapsed() >= interval
                && let Err(error) = self.commit_uncommitted().await
            {
                debug!(%error, "interval commit failed; will retry");
            }
            match self.fetch().await {
                Ok(0) => tokio::time::sleep(self.config.poll_interval).await,
                Ok(_) => {}
                Err(error) if error.is_transient() => {
                    self.consecutive_errors += 1;
                    if self.consecutive_errors > self.config.max_consecutive_errors {
                        self.consecutive_errors = 0;
                        return Some(Err(error));
                    }
                    debug!(%error, "poll failed; retrying");
                    tokio::time::sleep(self.config.poll_interval).await;
                }
                Err(error) => return Some(Err(error)),
            }
        }
    }

    async fn poll_once(
        &self,
        partition: Option<u32>,
        strategy: PollingStrategy,
    ) -> Result<Vec<Message>> {
        let polled = self
            .client
            .poll_messages(
                &self.stream,
                &self.topic,
                partition,
                &self.wire_consumer,
                strategy,
                self.config.batch_size,
                self.server_commits(),
            )
            .await?;
        Ok(Message::from_polled(&polled).collect())
    }

    /// Polls once and buffers what was not delivered yet. Returns how many were buffered.
    async fn fetch(&mut self) -> Result<usize> {
        let (partition, strategy) = match &self.config.identity {
            ConsumerIdentity::Single { partition, .. } => {
                (Some(partition.unwrap_or(0)), self.strategy)
            }
            // The server picks one of this member's partitions per poll.
            ConsumerIdentity::Group(_) => (None, self.config.strategy),
        };
        let mut messages = self.poll_once(partition, strategy).await?;
        self.consecutive_errors = 0;
        let polled_any = !messages.is_empty();
        let partition_read = messages.first().map(Message::partition_id);
        messages.retain(|m| {
            self.delivered
                .get(&m.partition_id())
                .is_none_or(|&last| m.offset() > last)
        });
        if messages.is_empty()
            && polled_any
            && self.is_group()
            && let Some(partition) = partition_read
        {
            // The stored offset lags what this member already delivered (nothing committed
            // yet): continue this partition from the last delivered offset instead.
            let next = self.delivered[&partition] + 1;
            messages = self
                .poll_once(Some(partition), PollingStrategy::offset(next))
                .await?;
            messages.retain(|m| {
                self.delivered
                    .get(&m.partition_id())
                    .is_none_or(|&last| m.offset() > last)
            });
        }
        if let (ConsumerIdentity::Single { .. }, Some(last)) =
            (&self.config.identity, messages.last())
        {
            // Continue after what was read, whatever the initial strategy was.
            self.strategy = PollingStrategy::offset(last.offset() + 1);
        }
        let count = messages.len();
        self.buffer.extend(messages);
        Ok(count)
    }

    async fn store(&self, partition: u32, offset: u64) -> Result<()> {
        self.client
            .store_consumer_offset(
                &self.wire_consumer,
                &self.stream,
                &self.topic,
                Some(partition),
                offset,
            )
            .await
    }

    async fn commit_uncommitted(&mut self) -> Result<()> {
        let pending: Vec<_> = self.uncommitted.iter().map(|(&p, &o)| (p, o)).collect();
        for (partition, offset) in pending {
            self.store(partition, offset).await?;
            if self.uncommitted.get(&partition) == Some(&offset) {
                self.uncommitted.remove(&partition);
            }
        }
        self.last_commit = Instant::now();
        Ok(())
    }
}

type NextFuture = Pin<Box<dyn Future<Output = Option<Result<Message>>> + Send>>;

/// The high-level consumer. Use it as a [`Stream`] (`consumer.next().await` with
/// `futures_util::StreamExt`) or through [`Consumer::next_message`].
///
/// Waiting for the next message can be abandoned at any time (for example with
/// `tokio::time::timeout`): a poll cut short is simply made again, except with
/// [`AutoCommit::AfterPoll`], where the server may already have committed what it returned.
pub struct Consumer {
    state: Arc<Mutex<State>>,
    /// The poll started by [`Stream::poll_next`], if it has not finished.
    pending: Option<NextFuture>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").finish_non_exhaustive()
    }
}

impl Consumer {
    /// A builder for a consumer of `stream`/`topic` (ids or names).
    pub fn builder(
        client: &Client,
        stream: impl IntoIdentifier,
        topic: impl IntoIdentifier,
    ) -> ConsumerBuilder {
        ConsumerBuilder {
            client: client.clone(),
            stream: stream.into_identifier(),
            topic: topic.into_identifier(),
            config: ConsumerConfig::default(),
            create_topic: None,
        }
    }

    /// The state, after abandoning an unfinished poll of the stream.
    async fn state(&mut self) -> tokio::sync::MutexGuard<'_, State> {
        self.pending = None;
        self.state.lock().await
    }

    /// The next message (`None` once closed).
    pub async fn next_message(&mut self) -> Option<Result<Message>> {
        self.state().await.next_message().await
    }

    /// Stores `message`'s offset as consumed (the next `Next` poll starts after it).
    pub async fn commit(&mut self, message: &Message) -> Result<()> {
        self.commit_offset(message.partition_id(), message.offset())
            .await
    }

    /// Stores `offset` as the consumed offset of `partition`.
    pub async fn commit_offset(&mut self, partition: u32, offset: u64) -> Result<()> {
        let mut state = self.state().await;
        state.store(partition, offset).await?;
        if state.uncommitted.get(&partition) == Some(&offset) {
            state.uncommitted.remove(&partition);
        }
        Ok(())
    }

    /// Stores the offsets of everything delivered so far.
    pub async fn commit_delivered(&mut self) -> Result<()> {
        let mut state = self.state().await;
        let delivered: Vec<_> = state.delivered.iter().map(|(&p, &o)| (p, o)).collect();
        for (partition, offset) in delivered {
            state.store(partition, offset).await?;
        }
        state.uncommitted.clear();
        Ok(())
    }

    /// The offset of the last delivered message per partition.
    pub async fn delivered_offsets(&mut self) -> HashMap<u32, u64> {
        self.state().await.delivered.clone()
    }

    /// Ends the stream: commits pending offsets (interval mode) and leaves the group. Messages
    /// already buffered but not delivered are dropped; with manual commits another member (or
    /// a restarted consumer) receives them.
    pub async fn close(&mut self) -> Result<()> {
        let mut state = self.state().await;
        if state.closed {
            return Ok(());
        }
        state.closed = true;
        state.buffer.clear();
        if let AutoCommit::Interval(_) = state.config.auto_commit {
            state.commit_uncommitted().await?;
        }
        if let ConsumerIdentity::Group(group) = &state.config.identity {
            state
                .client
                .leave_consumer_group(&state.stream, &state.topic, group)
                .await?;
        }
        Ok(())
    }
}

impl Stream for Consumer {
    type Item = Result<Message>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let pending = this.pending.get_or_insert_with(|| {
            let state = this.state.clone();
            Box::pin(async move { state.lock().await.next_message().await })
        });
        match pending.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(result) => {
                this.pending = None;
                Poll::Ready(result)
            }
        }
    }
}
