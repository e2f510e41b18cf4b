//! The actors: producer, consumer (pinned, by offset), group consumer (Next + auto-commit) and
//! producing consumer (send a batch, read it back).
//!
//! Each runs on its own thread with its own connection. Setup (connect, log in, join, build
//! frames) happens before the shared barrier; every actor reaches the barrier exactly once, even
//! when its setup failed, so a failure cannot leave the others waiting. After the barrier the
//! actor warms up until `base + warmup`, then measures until its quota or deadline.
//!
//! What a latency sample is:
//! * producer: SendMessages written → OK read (`written` ack mode: after the O_DIRECT write);
//! * consumer: PollMessages written → response read, for polls that returned messages;
//! * producing consumer: SendMessages written → the last message of that batch polled back.

use crate::client::{Connection, PollSummary, PreparedBatch, prepare_batch};
use crate::error::{Error, Result};
use crate::plan::{BenchStream, Finish, Plan, Progress, WorkloadKind};
use crate::stats::{ActorInfo, ActorKind, ActorResult, Recorder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rill_core::primitives::{
    Consumer, Identifier, OptionalPartition, Partitioning, PollingStrategy,
};
use rill_core::requests::PollMessages;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

/// Distinct batches an actor cycles through when sizes are ranges (each built once).
const BATCH_VARIANTS: usize = 32;
/// Pause after a poll that returned nothing, so waiting consumers leave the CPU to the server.
const EMPTY_POLL_PAUSE: Duration = Duration::from_micros(200);

/// What a run's actors share.
#[derive(Clone)]
pub struct ActorContext {
    pub plan: Plan,
    pub barrier: Arc<Barrier>,
    /// Set by the main thread right after the barrier: the run's time origin.
    pub base: Arc<OnceLock<Instant>>,
    pub abort: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
    pub streams: Arc<Vec<StreamState>>,
    /// Messages consumed per (stream, group), index `(stream - 1) * groups + group - 1`.
    pub groups: Arc<Vec<AtomicU64>>,
}

impl ActorContext {
    /// Waits at the barrier, then returns the setup's outcome and the time origin.
    fn start<T>(&self, setup: Result<T>) -> Result<(T, Instant)> {
        if setup.is_err() {
            self.abort.store(true, Ordering::SeqCst);
        }
        self.barrier.wait();
        let base = *self.base.wait();
        let value = setup?;
        self.check_abort()?;
        Ok((value, base))
    }

    fn check_abort(&self) -> Result<()> {
        if self.abort.load(Ordering::Relaxed) {
            Err(Error::Aborted)
        } else {
            Ok(())
        }
    }

    fn fail<T>(&self, error: Error) -> Result<T> {
        self.abort.store(true, Ordering::SeqCst);
        Err(error)
    }

    fn count_progress(&self, messages: u64, bytes: u64) {
        self.progress
            .messages
            .fetch_add(messages, Ordering::Relaxed);
        self.progress.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn recorder(&self, measured_from: Instant) -> Recorder {
        let expected = match self.plan.finish {
            Finish::Duration(duration) => duration,
            Finish::Batches(_) => Duration::from_secs(60),
        };
        Recorder::new(measured_from, self.plan.sampling, expected)
    }

    fn deadline(&self, measured_from: Instant) -> Option<Instant> {
        match self.plan.finish {
            Finish::Duration(duration) => Some(measured_from + duration),
            Finish::Batches(_) => None,
        }
    }

    fn batch_quota(&self) -> Option<u64> {
        match self.plan.finish {
            Finish::Batches(batches) => Some(batches),
            Finish::Duration(_) => None,
        }
    }

    /// A producer's share of `--rate-limit` (payload bytes per second): the limit is split
    /// between the sending actors, which pace the whole run (consumers read what they send).
    fn pacer(&self) -> Option<Pacer> {
        let senders = self.plan.producers.max(1);
        self.plan
            .rate_limit_bytes_per_second
            .map(|rate| Pacer::new(rate as f64 / f64::from(senders)))
    }
}

/// How much of a stream there is, for consumers that follow producers.
#[derive(Debug)]
pub struct StreamState {
    pub stream: BenchStream,
    /// Messages in the stream before the run.
    pub initial: u64,
    /// Messages sent to the stream since the run began (warm-up included).
    pub produced: AtomicU64,
    /// Producers still sending to the stream.
    pub producers_left: AtomicU32,
}

impl StreamState {
    pub fn new(stream: BenchStream, producers: u32, initial: u64) -> Self {
        StreamState {
            stream,
            initial,
            produced: AtomicU64::new(0),
            producers_left: AtomicU32::new(producers),
        }
    }

    /// Whether every producer is done and `consumed` covers all they sent.
    fn drained(&self, consumed: u64) -> bool {
        self.producers_left.load(Ordering::SeqCst) == 0
            && consumed >= self.produced.load(Ordering::SeqCst)
    }
}

/// Tells the stream a producer has finished, however it finished.
struct ProducerDone<'a>(&'a StreamState);

impl Drop for ProducerDone<'_> {
    fn drop(&mut self) {
        self.0.producers_left.fetch_sub(1, Ordering::SeqCst);
    }
}

/// When a consumer is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerTarget {
    /// After this many messages (for a group: the whole group's).
    Fixed(u64),
    /// Reads `available` messages over and over until the deadline.
    Wrapping(u64),
    /// Until the stream's producers are done and everything they sent has been read.
    FollowProducers,
}

/// Spaces batches so an actor stays under its share of `--rate-limit`.
struct Pacer {
    bytes_per_second: f64,
    start: Instant,
    bytes: u64,
}

impl Pacer {
    fn new(bytes_per_second: f64) -> Self {
        Pacer {
            bytes_per_second,
            start: Instant::now(),
            bytes: 0,
        }
    }

    fn pace(&mut self, bytes: u64) {
        self.bytes += bytes;
        let due = self.start + Duration::from_secs_f64(self.bytes as f64 / self.bytes_per_second);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

/// The SendMessages frames an actor cycles through: one when sizes are fixed, otherwise
/// [`BATCH_VARIANTS`] drawn from the ranges with a seeded generator (runs are repeatable).
pub fn prepare_batches(
    plan: &Plan,
    stream: &BenchStream,
    partitioning: &Partitioning,
    seed: u64,
) -> Vec<PreparedBatch> {
    let fixed = plan.message_size.is_fixed() && plan.messages_per_batch.is_fixed();
    let variants = if fixed { 1 } else { BATCH_VARIANTS };
    let mut rng = StdRng::seed_from_u64(seed);
    (0..variants)
        .map(|_| {
            let count = rng.random_range(plan.messages_per_batch.min..=plan.messages_per_batch.max);
            let sizes: Vec<u32> = (0..count)
                .map(|_| rng.random_range(plan.message_size.min..=plan.message_size.max))
                .collect();
            prepare_batch(
                &stream.stream_id,
                &stream.topic_id,
                partitioning,
                &sizes,
                plan.endpoint.protocol,
            )
        })
        .collect()
}

fn partitioning_for(kind: WorkloadKind) -> Partitioning {
    if kind.is_pinned() {
        Partitioning::PartitionId(0)
    } else {
        Partitioning::Balanced
    }
}

/// Sends batches to one stream.
pub fn producer(context: ActorContext, id: u32, stream_number: u32) -> Result<ActorResult> {
    let state = &context.streams[stream_number as usize - 1];
    let _done = ProducerDone(state);
    let setup = Connection::open(&context.plan.endpoint).map(|connection| {
        let partitioning = partitioning_for(context.plan.kind);
        let batches = prepare_batches(&context.plan, &state.stream, &partitioning, u64::from(id));
        (connection, batches)
    });
    let ((mut connection, batches), base) = context.start(setup)?;
    let measured_from = base + context.plan.warmup;
    let deadline = context.deadline(measured_from);
    let quota = context.batch_quota();
    let mut warmup_messages = 0u64;
    let mut next = 0usize;
    // One pacer for warm-up and measurement: a rate-limited run is rate-limited throughout.
    let mut pacer = context.pacer();
    let mut send = |connection: &mut Connection| -> Result<&PreparedBatch> {
        let batch = &batches[next % batches.len()];
        next += 1;
        if let Err(error) = connection.send_frame(&batch.frame, "send messages") {
            return context.fail(error);
        }
        state
            .produced
            .fetch_add(u64::from(batch.messages), Ordering::SeqCst);
        context.count_progress(u64::from(batch.messages), batch.bytes);
        Ok(batch)
    };
    while Instant::now() < measured_from {
        context.check_abort()?;
        let batch = send(&mut connection)?;
        warmup_messages += u64::from(batch.messages);
        if let Some(pacer) = pacer.as_mut() {
            pacer.pace(batch.payload_bytes);
        }
    }
    let mut recorder = context.recorder(measured_from);
    loop {
        if quota.is_some_and(|quota| recorder.batches() >= quota)
            || deadline.is_some_and(|deadline| Instant::now() >= deadline)
        {
            break;
        }
        context.check_abort()?;
        let sent_at = Instant::now();
        let batch = send(&mut connection)?;
        let done = Instant::now();
        recorder.record(
            done,
            done - sent_at,
            u64::from(batch.messages),
            batch.bytes,
            batch.payload_bytes,
        );
        if let Some(pacer) = pacer.as_mut() {
            pacer.pace(batch.payload_bytes);
        }
    }
    Ok(recorder.finish(
        ActorInfo {
            kind: ActorKind::Producer,
            id,
            stream: stream_number,
        },
        warmup_messages,
    ))
}

fn poll_request(
    consumer: &Consumer,
    stream: &BenchStream,
    partition: Option<u32>,
    strategy: PollingStrategy,
    count: u32,
    auto_commit: bool,
) -> PollMessages {
    PollMessages {
        consumer: consumer.clone(),
        stream_id: stream.stream_id.clone(),
        topic_id: stream.topic_id.clone(),
        partition_id: OptionalPartition(partition),
        strategy,
        count,
        auto_commit,
    }
}

fn poll(
    context: &ActorContext,
    connection: &mut Connection,
    request: PollMessages,
) -> Result<PollSummary> {
    match connection.poll(request) {
        Ok(summary) => Ok(summary),
        Err(error) => context.fail(error),
    }
}

/// Reads one stream's partition 0 by offset, as a plain consumer with its own id.
pub fn consumer(
    context: ActorContext,
    id: u32,
    stream_number: u32,
    target: ConsumerTarget,
) -> Result<ActorResult> {
    let state = &context.streams[stream_number as usize - 1];
    let stream = &state.stream;
    let setup = Connection::open(&context.plan.endpoint);
    let (mut connection, base) = context.start(setup)?;
    let me = Consumer::new(Identifier::numeric(id));
    let count = context.plan.messages_per_batch.max;
    let measured_from = base + context.plan.warmup;
    let deadline = context.deadline(measured_from);
    let follows = target == ConsumerTarget::FollowProducers;
    // Consumers of data written before the run warm up on it and then start again from 0;
    // followers keep reading from where the run's producers started.
    let first_offset = if follows { state.initial } else { 0 };
    let available = match target {
        ConsumerTarget::Fixed(messages) | ConsumerTarget::Wrapping(messages) => messages,
        ConsumerTarget::FollowProducers => u64::MAX,
    };
    let mut offset = first_offset;
    let mut consumed = 0u64;
    let mut warmup_messages = 0u64;
    while Instant::now() < measured_from {
        context.check_abort()?;
        let request = poll_request(
            &me,
            stream,
            Some(0),
            PollingStrategy::offset(offset),
            count,
            false,
        );
        let summary = poll(&context, &mut connection, request)?;
        match summary.last_offset {
            Some(last) => {
                offset = last + 1;
                warmup_messages += u64::from(summary.messages);
                if follows {
                    consumed += u64::from(summary.messages);
                }
                context.count_progress(u64::from(summary.messages), summary.bytes);
            }
            None if !follows => offset = first_offset,
            None => std::thread::sleep(EMPTY_POLL_PAUSE),
        }
        if !follows && offset - first_offset >= available {
            offset = first_offset;
        }
    }
    if !follows {
        offset = first_offset;
    }
    let mut recorder = context.recorder(measured_from);
    loop {
        let done = match target {
            ConsumerTarget::Fixed(messages) => recorder.messages() >= messages,
            ConsumerTarget::Wrapping(_) => false,
            ConsumerTarget::FollowProducers => state.drained(consumed),
        };
        if done || deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            break;
        }
        context.check_abort()?;
        let wanted = match target {
            ConsumerTarget::Fixed(messages) => {
                count.min((messages - recorder.messages()).min(u64::from(u32::MAX)) as u32)
            }
            _ => count,
        };
        let request = poll_request(
            &me,
            stream,
            Some(0),
            PollingStrategy::offset(offset),
            wanted,
            false,
        );
        let sent_at = Instant::now();
        let summary = poll(&context, &mut connection, request)?;
        let received = Instant::now();
        let Some(last) = summary.last_offset else {
            match target {
                ConsumerTarget::Wrapping(_) => offset = first_offset,
                ConsumerTarget::Fixed(messages) => {
                    return context.fail(Error::Protocol(format!(
                        "consumer {id}: {} holds fewer messages than the {messages} to read (stopped at offset {offset})",
                        stream.name
                    )));
                }
                ConsumerTarget::FollowProducers => std::thread::sleep(EMPTY_POLL_PAUSE),
            }
            continue;
        };
        recorder.record(
            received,
            received - sent_at,
            u64::from(summary.messages),
            summary.bytes,
            summary.payload_bytes,
        );
        context.count_progress(u64::from(summary.messages), summary.bytes);
        consumed += u64::from(summary.messages);
        offset = last + 1;
        if let ConsumerTarget::Wrapping(available) = target
            && offset - first_offset >= available
        {
            offset = first_offset;
        }
    }
    Ok(recorder.finish(
        ActorInfo {
            kind: ActorKind::Consumer,
            id,
            stream: stream_number,
        },
        warmup_messages,
    ))
}

/// A member of consumer group `group` of one stream, polling `Next` with auto-commit (the
/// server assigns its partitions and stores the group's offsets).
pub fn group_consumer(
    context: ActorContext,
    id: u32,
    stream_number: u32,
    group: u32,
    target: ConsumerTarget,
) -> Result<ActorResult> {
    let state = &context.streams[stream_number as usize - 1];
    let stream = &state.stream;
    let group_id = stream.group_ids[group as usize - 1].clone();
    let group_consumed =
        &context.groups[((stream_number - 1) * context.plan.groups + group - 1) as usize];
    let setup = Connection::open(&context.plan.endpoint).and_then(|mut connection| {
        connection.join_consumer_group(&stream.stream_id, &stream.topic_id, &group_id)?;
        Ok(connection)
    });
    let (mut connection, base) = context.start(setup)?;
    let me = Consumer::group(group_id);
    let count = context.plan.messages_per_batch.max;
    let measured_from = base + context.plan.warmup;
    let deadline = context.deadline(measured_from);
    let mut warmup_messages = 0u64;
    // Warm-up reads from offset 0 without committing, so the group's position is untouched.
    while Instant::now() < measured_from {
        context.check_abort()?;
        let request = poll_request(&me, stream, None, PollingStrategy::offset(0), count, false);
        let summary = poll(&context, &mut connection, request)?;
        if summary.messages == 0 {
            std::thread::sleep(EMPTY_POLL_PAUSE);
        }
        warmup_messages += u64::from(summary.messages);
        context.count_progress(u64::from(summary.messages), summary.bytes);
    }
    let mut recorder = context.recorder(measured_from);
    loop {
        let consumed = group_consumed.load(Ordering::SeqCst);
        let done = match target {
            ConsumerTarget::Fixed(messages) | ConsumerTarget::Wrapping(messages) => {
                consumed >= messages
            }
            ConsumerTarget::FollowProducers => state.drained(consumed),
        };
        if done || deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            break;
        }
        context.check_abort()?;
        let request = poll_request(&me, stream, None, PollingStrategy::next(), count, true);
        let sent_at = Instant::now();
        let summary = poll(&context, &mut connection, request)?;
        let received = Instant::now();
        if summary.messages == 0 {
            std::thread::sleep(EMPTY_POLL_PAUSE);
            continue;
        }
        recorder.record(
            received,
            received - sent_at,
            u64::from(summary.messages),
            summary.bytes,
            summary.payload_bytes,
        );
        group_consumed.fetch_add(u64::from(summary.messages), Ordering::SeqCst);
        context.count_progress(u64::from(summary.messages), summary.bytes);
    }
    Ok(recorder.finish(
        ActorInfo {
            kind: ActorKind::Consumer,
            id,
            stream: stream_number,
        },
        warmup_messages,
    ))
}

/// Sends a batch to partition 0 of its stream, then polls until every message of it is back.
pub fn producing_consumer(
    context: ActorContext,
    id: u32,
    stream_number: u32,
) -> Result<ActorResult> {
    let state = &context.streams[stream_number as usize - 1];
    let _done = ProducerDone(state);
    let stream = &state.stream;
    let setup = Connection::open(&context.plan.endpoint).map(|connection| {
        let batches = prepare_batches(
            &context.plan,
            stream,
            &Partitioning::PartitionId(0),
            u64::from(id),
        );
        (connection, batches)
    });
    let ((mut connection, batches), base) = context.start(setup)?;
    let me = Consumer::new(Identifier::numeric(id));
    let measured_from = base + context.plan.warmup;
    let deadline = context.deadline(measured_from);
    let quota = context.batch_quota();
    let mut offset = state.initial;
    let mut next = 0usize;
    let mut warmup_messages = 0u64;
    let mut recorder = context.recorder(measured_from);
    loop {
        let warming = Instant::now() < measured_from;
        if !warming
            && (quota.is_some_and(|quota| recorder.batches() >= quota)
                || deadline.is_some_and(|deadline| Instant::now() >= deadline))
        {
            break;
        }
        context.check_abort()?;
        let batch = &batches[next % batches.len()];
        next += 1;
        let sent_at = Instant::now();
        if let Err(error) = connection.send_frame(&batch.frame, "send messages") {
            return context.fail(error);
        }
        state
            .produced
            .fetch_add(u64::from(batch.messages), Ordering::SeqCst);
        let mut received = 0u32;
        while received < batch.messages {
            context.check_abort()?;
            let request = poll_request(
                &me,
                stream,
                Some(0),
                PollingStrategy::offset(offset),
                batch.messages - received,
                false,
            );
            let summary = poll(&context, &mut connection, request)?;
            if let Some(last) = summary.last_offset {
                received += summary.messages;
                offset = last + 1;
            }
        }
        let done = Instant::now();
        context.count_progress(u64::from(batch.messages), batch.bytes);
        if warming {
            warmup_messages += u64::from(batch.messages);
        } else {
            recorder.record(
                done,
                done - sent_at,
                u64::from(batch.messages),
                batch.bytes,
                batch.payload_bytes,
            );
        }
    }
    Ok(recorder.finish(
        ActorInfo {
            kind: ActorKind::ProducingConsumer,
            id,
            stream: stream_number,
        },
        warmup_messages,
    ))
}

/// Writes batches to `stream` until it holds what the plan's consumers will read.
pub fn fill_stream(plan: &Plan, stream: &BenchStream) -> Result<()> {
    let needed = plan.prefill_messages(stream.number);
    let mut connection = Connection::open(&plan.endpoint)?;
    let mut stored = connection
        .get_topic(&stream.stream_id, &stream.topic_id)?
        .map_or(0, |topic| topic.topic.messages_count);
    if stored >= needed {
        return Ok(());
    }
    let batches = prepare_batches(
        plan,
        stream,
        &partitioning_for(plan.kind),
        u64::from(stream.number) << 32,
    );
    let mut next = 0usize;
    while stored < needed {
        let batch = &batches[next % batches.len()];
        next += 1;
        connection.send_frame(&batch.frame, "send messages (filling the stream)")?;
        stored += u64::from(batch.messages);
    }
    Ok(())
}
