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

mod consumers;
pub use consumers::{consumer, group_consumer, producing_consumer};

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
