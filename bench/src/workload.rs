//! Running one benchmark: set the server up, start the actors together, collect their results.
//!
//! ```text
//! control connection: log in → GetStats → (delete) create bench-stream-N / topic-1 / cg-G
//!                     → fill streams for consumer-only workloads (not measured)
//! actor threads:      connect + log in + build frames → barrier → warm-up → measure → result
//! main thread:        progress bar, /proc sampler → join actors → GetTopic counts → Report
//! ```
//!
//! Actors are OS threads with blocking sockets (one connection each); nothing is shared while
//! they measure except relaxed atomic counters (progress, and how much each stream has received
//! so that consumers following producers know when they are done).

use crate::actors::{self, ActorContext, ConsumerTarget, StreamState};
use crate::args::OutputArgs;
use crate::client::{Connection, Endpoint, is_already_exists};
use crate::error::{Error, Result};
use crate::procfs::{self, AckMode, DetectedAckMode, Sampler, ServerUsage};
use crate::report::{Report, ServerInfo, StreamCount};
use crate::stats::{ActorKind, ActorResult, GroupSummary};
use crate::units::{ByteSize, NumericParam};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rill_core::primitives::Identifier;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Name of the topic in every bench stream.
pub const TOPIC_NAME: &str = "topic-1";
/// Batches per stream written before a consumer-only workload that runs for a duration.
const DURATION_PREFILL_BATCHES: u64 = 100;
/// How often the server process is sampled.
const SAMPLER_INTERVAL: Duration = Duration::from_millis(100);

pub fn stream_name(stream: u32) -> String {
    format!("bench-stream-{stream}")
}

pub fn group_name(group: u32) -> String {
    format!("cg-{group}")
}

/// The benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    PinnedProducer,
    PinnedConsumer,
    PinnedProducerAndConsumer,
    BalancedProducer,
    BalancedConsumerGroup,
    BalancedProducerAndConsumerGroup,
    EndToEndProducingConsumer,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 7] = [
        WorkloadKind::PinnedProducer,
        WorkloadKind::PinnedConsumer,
        WorkloadKind::PinnedProducerAndConsumer,
        WorkloadKind::BalancedProducer,
        WorkloadKind::BalancedConsumerGroup,
        WorkloadKind::BalancedProducerAndConsumerGroup,
        WorkloadKind::EndToEndProducingConsumer,
    ];

    /// The subcommand name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::PinnedProducer => "pinned-producer",
            WorkloadKind::PinnedConsumer => "pinned-consumer",
            WorkloadKind::PinnedProducerAndConsumer => "pinned-producer-and-consumer",
            WorkloadKind::BalancedProducer => "balanced-producer",
            WorkloadKind::BalancedConsumerGroup => "balanced-consumer-group",
            WorkloadKind::BalancedProducerAndConsumerGroup => {
                "balanced-producer-and-consumer-group"
            }
            WorkloadKind::EndToEndProducingConsumer => "end-to-end-producing-consumer",
        }
    }

    /// Upstream's short alias.
    pub fn alias(self) -> &'static str {
        match self {
            WorkloadKind::PinnedProducer => "pp",
            WorkloadKind::PinnedConsumer => "pc",
            WorkloadKind::PinnedProducerAndConsumer => "ppc",
            WorkloadKind::BalancedProducer => "bp",
            WorkloadKind::BalancedConsumerGroup => "bcg",
            WorkloadKind::BalancedProducerAndConsumerGroup => "bpcg",
            WorkloadKind::EndToEndProducingConsumer => "e2e",
        }
    }

    pub fn has_producers(self) -> bool {
        !matches!(
            self,
            WorkloadKind::PinnedConsumer | WorkloadKind::BalancedConsumerGroup
        )
    }

    pub fn has_consumers(self) -> bool {
        matches!(
            self,
            WorkloadKind::PinnedConsumer
                | WorkloadKind::PinnedProducerAndConsumer
                | WorkloadKind::BalancedConsumerGroup
                | WorkloadKind::BalancedProducerAndConsumerGroup
        )
    }

    pub fn is_pinned(self) -> bool {
        matches!(
            self,
            WorkloadKind::PinnedProducer
                | WorkloadKind::PinnedConsumer
                | WorkloadKind::PinnedProducerAndConsumer
                | WorkloadKind::EndToEndProducingConsumer
        )
    }

    pub fn uses_groups(self) -> bool {
        matches!(
            self,
            WorkloadKind::BalancedConsumerGroup | WorkloadKind::BalancedProducerAndConsumerGroup
        )
    }

    /// Whether consumers read data written before the run rather than by the run's producers.
    pub fn is_consumer_only(self) -> bool {
        self.has_consumers() && !self.has_producers()
    }

    /// The actors a `-T` total is split between.
    pub fn quota_actors(self, producers: u32, consumers: u32) -> u32 {
        if self.is_consumer_only() {
            consumers.max(1)
        } else {
            producers.max(1)
        }
    }
}

/// When an actor stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// This many batches per actor (consumers: the same number of messages' worth).
    Batches(u64),
    /// Measure for this long.
    #[serde(serialize_with = "serialize_seconds")]
    Duration(Duration),
}

fn serialize_seconds<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// A validated benchmark.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: WorkloadKind,
    pub endpoint: Endpoint,
    pub producers: u32,
    pub consumers: u32,
    pub streams: u32,
    pub partitions: u32,
    /// Consumer groups per stream.
    pub groups: u32,
    pub message_size: NumericParam,
    pub messages_per_batch: NumericParam,
    pub finish: Finish,
    pub total_data: Option<ByteSize>,
    pub warmup: Duration,
    pub sampling: Duration,
    pub moving_average_window: u32,
    pub rate_limit_bytes_per_second: Option<u64>,
    pub reuse_streams: bool,
    pub max_topic_size_bytes: u64,
    pub message_expiry_micros: u64,
    pub required_ack_mode: Option<AckMode>,
    pub server_pid: Option<u32>,
    pub progress: bool,
    pub output: OutputArgs,
}

impl Plan {
    /// The actors' stream (1-based) for actor `index` (0-based) of a kind.
    pub fn stream_of(&self, index: u32) -> u32 {
        index % self.streams + 1
    }

    /// The (stream, group) of consumer `index` in group workloads: consumers are dealt round
    /// robin over streams, then over the groups of that stream.
    pub fn group_of(&self, index: u32) -> (u32, u32) {
        let stream = index % self.streams + 1;
        let group = (index / self.streams) % self.groups + 1;
        (stream, group)
    }

    /// Producers writing to `stream`.
    pub fn producers_on(&self, stream: u32) -> u32 {
        (0..self.producers)
            .filter(|&index| self.stream_of(index) == stream)
            .count() as u32
    }

    /// How many consumers are in (stream, group).
    pub fn members_of(&self, stream: u32, group: u32) -> u32 {
        (0..self.consumers)
            .filter(|&index| self.group_of(index) == (stream, group))
            .count() as u32
    }

    /// Messages one consumer of a consumer-only workload reads (its batches' worth).
    pub fn consumer_quota_messages(&self) -> u64 {
        let batches = match self.finish {
            Finish::Batches(batches) => batches,
            Finish::Duration(_) => DURATION_PREFILL_BATCHES,
        };
        (batches as f64 * self.messages_per_batch.mean()).ceil() as u64
    }

    /// Messages a consumer-only workload needs in `stream` before it starts.
    pub fn prefill_messages(&self, stream: u32) -> u64 {
        let per_actor = self.consumer_quota_messages();
        let readers = if self.kind.uses_groups() {
            (1..=self.groups)
                .map(|group| self.members_of(stream, group))
                .max()
                .unwrap_or(0)
        } else {
            // Each pinned consumer reads the stream from the start: it needs its own quota.
            1
        };
        per_actor * u64::from(readers)
    }

    /// A rough length of the run, for sizing buffers and the progress bar.
    pub fn expected_messages(&self) -> Option<u64> {
        let Finish::Batches(batches) = self.finish else {
            return None;
        };
        let per_actor = (batches as f64 * self.messages_per_batch.mean()) as u64;
        let actors = match self.kind {
            kind if kind.is_consumer_only() => self.consumers,
            WorkloadKind::PinnedProducerAndConsumer
            | WorkloadKind::BalancedProducerAndConsumerGroup => self.producers * 2,
            _ => self.producers,
        };
        Some(per_actor * u64::from(actors))
    }
}

/// Counters the progress bar reads.
#[derive(Debug, Default)]
pub struct Progress {
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
}

/// Runs a plan and returns its report (not yet written anywhere).
pub fn run(plan: &Plan, ceilings: Option<crate::baseline::Baseline>) -> Result<Report> {
    let started_at = SystemTime::now();
    let mut control = Connection::open(&plan.endpoint)?;
    let server_info = control.get_stats().ok().map(ServerInfo::from_stats);

    let detected_ack_mode = plan
        .server_pid
        .and_then(|pid| procfs::detect_ack_mode(pid, &stream_name(1), TOPIC_NAME));
    check_ack_mode(plan.required_ack_mode, detected_ack_mode.as_ref())?;

    let sampler = match plan.server_pid {
        Some(pid) => Some(Sampler::start(pid, SAMPLER_INTERVAL).ok_or_else(|| {
            Error::Usage(format!("cannot read /proc/{pid}: is --server-pid right?"))
        })?),
        None => None,
    };
    let sampler_started = Instant::now();

    let streams = setup_streams(&mut control, plan)?;
    if plan.kind.is_consumer_only() {
        prefill(plan, &streams)?;
    }
    let initial_counts = message_counts(&mut control, &streams)?;

    let progress = Arc::new(Progress::default());
    let abort = Arc::new(AtomicBool::new(false));
    let base = Arc::new(OnceLock::new());
    let actors_count = plan.producers + plan.consumers;
    let barrier = Arc::new(Barrier::new(actors_count as usize + 1));
    let stream_states: Arc<Vec<StreamState>> = Arc::new(
        streams
            .iter()
            .map(|stream| {
                StreamState::new(
                    stream.clone(),
                    plan.producers_on(stream.number),
                    initial_counts[stream.number as usize - 1],
                )
            })
            .collect(),
    );
    let group_counters: Arc<Vec<AtomicU64>> = Arc::new(
        (0..plan.streams * plan.groups)
            .map(|_| AtomicU64::new(0))
            .collect(),
    );

    let mut handles = Vec::new();
    let spawn = |name: String, job: Box<dyn FnOnce() -> Result<ActorResult> + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(job)
            .expect("spawn actor thread")
    };
    for index in 0..plan.producers {
        let context = ActorContext {
            plan: plan.clone(),
            barrier: barrier.clone(),
            base: base.clone(),
            abort: abort.clone(),
            progress: progress.clone(),
            streams: stream_states.clone(),
            groups: group_counters.clone(),
        };
        let stream = plan.stream_of(index);
        let job: Box<dyn FnOnce() -> Result<ActorResult> + Send> =
            if plan.kind == WorkloadKind::EndToEndProducingConsumer {
                Box::new(move || actors::producing_consumer(context, index + 1, stream))
            } else {
                Box::new(move || actors::producer(context, index + 1, stream))
            };
        handles.push(spawn(format!("producer-{}", index + 1), job));
    }
    for index in 0..plan.consumers {
        let context = ActorContext {
            plan: plan.clone(),
            barrier: barrier.clone(),
            base: base.clone(),
            abort: abort.clone(),
            progress: progress.clone(),
            streams: stream_states.clone(),
            groups: group_counters.clone(),
        };
        let job: Box<dyn FnOnce() -> Result<ActorResult> + Send> = if plan.kind.uses_groups() {
            let (stream, group) = plan.group_of(index);
            let target = match (plan.kind.is_consumer_only(), plan.finish) {
                (true, Finish::Batches(_)) => ConsumerTarget::Fixed(
                    plan.consumer_quota_messages() * u64::from(plan.members_of(stream, group)),
                ),
                (true, Finish::Duration(_)) => {
                    ConsumerTarget::Fixed(initial_counts[stream as usize - 1])
                }
                (false, _) => ConsumerTarget::FollowProducers,
            };
            Box::new(move || actors::group_consumer(context, index + 1, stream, group, target))
        } else {
            let stream = plan.stream_of(index);
            let target = match (plan.kind.is_consumer_only(), plan.finish) {
                (true, Finish::Batches(_)) => ConsumerTarget::Fixed(plan.consumer_quota_messages()),
                (true, Finish::Duration(_)) => {
                    ConsumerTarget::Wrapping(initial_counts[stream as usize - 1])
                }
                (false, _) => ConsumerTarget::FollowProducers,
            };
            Box::new(move || actors::consumer(context, index + 1, stream, target))
        };
        handles.push(spawn(format!("consumer-{}", index + 1), job));
    }

    // Every actor is connected once it reaches the barrier; the clock starts when all have.
    barrier.wait();
    let start = Instant::now();
    base.set(start).expect("base is set once");
    let measured_from = start + plan.warmup;
    let client_cpu_before = procfs::own_cpu_seconds();
    let bar = plan
        .progress
        .then(|| progress_bar(plan, progress.clone(), abort.clone(), measured_from));

    let mut results = Vec::new();
    let mut failure = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(result)) => results.push(result),
            Ok(Err(error)) => {
                abort.store(true, Ordering::Relaxed);
                // Keep the first real cause, not the "aborted" of the actors it stopped.
                if failure.is_none() || matches!(failure, Some(Error::Aborted)) {
                    failure = Some(error);
                }
            }
            Err(_) => {
                abort.store(true, Ordering::Relaxed);
                failure.get_or_insert(Error::Protocol("an actor thread panicked".into()));
            }
        }
    }
    if let Some((bar, thread)) = bar {
        abort.store(true, Ordering::Relaxed);
        let _ = thread.join();
        bar.finish_and_clear();
    }
    let usage = sampler.map(|(sampler, idle)| {
        let samples = sampler.stop();
        ServerUsage::from_samples(
            plan.server_pid.expect("sampler implies a pid"),
            idle,
            samples,
            measured_from
                .saturating_duration_since(sampler_started)
                .as_secs_f64(),
        )
    });
    if let Some(error) = failure {
        return Err(error);
    }
    let client_cpu_s = procfs::own_cpu_seconds() - client_cpu_before;
    let client_wall_s = start.elapsed().as_secs_f64();
    let final_counts = message_counts(&mut control, &streams)?;
    results.sort_by_key(|result| (result.kind, result.id));
    let mut groups = Vec::new();
    for kind in [
        ActorKind::Producer,
        ActorKind::Consumer,
        ActorKind::ProducingConsumer,
    ] {
        let of_kind: Vec<&ActorResult> = results.iter().filter(|r| r.kind == kind).collect();
        if !of_kind.is_empty() {
            groups.push(GroupSummary::from_actors(kind, &of_kind));
        }
    }
    let stream_counts = streams
        .iter()
        .map(|stream| StreamCount {
            stream: stream.name.clone(),
            messages_before: initial_counts[stream.number as usize - 1],
            messages_after: final_counts[stream.number as usize - 1],
        })
        .collect();
    let mut report = Report::new(
        plan,
        started_at,
        server_info,
        detected_ack_mode,
        results,
        groups,
        stream_counts,
        usage,
        ceilings,
    );
    report.client_cpu_cores = if client_wall_s > 0.0 {
        client_cpu_s / client_wall_s
    } else {
        0.0
    };
    Ok(report)
}

fn check_ack_mode(required: Option<AckMode>, detected: Option<&DetectedAckMode>) -> Result<()> {
    match (required, detected) {
        (Some(required), Some(detected)) if required != detected.mode => {
            Err(Error::Usage(format!(
                "--ack-mode {} was required but the server gives the bench topics '{}' (from {}). \
             Restart the server with IGGY_SYSTEM_PARTITION_ACK_MODE={} (or an ack_mode_overrides \
             entry such as \"*/{TOPIC_NAME}={}\")",
                required.name(),
                detected.mode.name(),
                detected.source,
                required.name(),
                required.name(),
            )))
        }
        _ => Ok(()),
    }
}

/// A bench stream as the server numbers it.
#[derive(Debug, Clone)]
pub struct BenchStream {
    /// 1-based, as in `bench-stream-N`.
    pub number: u32,
    pub name: String,
    /// Numeric identifiers resolved once (the hot path sends no names).
    pub stream_id: Identifier,
    pub topic_id: Identifier,
    /// Server ids of the consumer groups cg-1..cg-G.
    pub group_ids: Vec<Identifier>,
}

/// Creates (or, without --reuse-streams, recreates) the streams, topics and groups.
fn setup_streams(control: &mut Connection, plan: &Plan) -> Result<Vec<BenchStream>> {
    let mut streams = Vec::new();
    for number in 1..=plan.streams {
        let name = stream_name(number);
        let by_name = Identifier::named(&name).expect("valid name");
        let topic_by_name = Identifier::named(TOPIC_NAME).expect("valid name");
        if !plan.reuse_streams && control.get_stream(&by_name)?.is_some() {
            control.delete_stream(&by_name)?;
        }
        if control.get_stream(&by_name)?.is_none() {
            ignore_exists(control.create_stream(&name))?;
        }
        if control.get_topic(&by_name, &topic_by_name)?.is_none() {
            ignore_exists(control.create_topic(
                &by_name,
                TOPIC_NAME,
                plan.partitions,
                plan.message_expiry_micros,
                plan.max_topic_size_bytes,
            ))?;
        }
        let stream = control
            .get_stream(&by_name)?
            .ok_or_else(|| Error::Protocol(format!("stream {name} vanished after creation")))?;
        let topic = control
            .get_topic(&by_name, &topic_by_name)?
            .ok_or_else(|| Error::Protocol(format!("topic {name}/{TOPIC_NAME} vanished")))?;
        if topic.partitions.len() as u32 != plan.partitions {
            return Err(Error::Usage(format!(
                "{name}/{TOPIC_NAME} has {} partitions but -a {} was asked; run without --reuse-streams",
                topic.partitions.len(),
                plan.partitions
            )));
        }
        let stream_id = Identifier::numeric(stream.stream.id);
        let topic_id = Identifier::numeric(topic.topic.id);
        let mut group_ids = Vec::new();
        for group in 1..=plan.groups {
            let group_name = group_name(group);
            let group_by_name = Identifier::named(&group_name).expect("valid name");
            // Start every run's groups from scratch: stored group offsets would skip messages.
            let _ = control.delete_consumer_group(&stream_id, &topic_id, &group_by_name);
            control.create_consumer_group(&stream_id, &topic_id, &group_name)?;
            let details: rill_core::responses::ConsumerGroupDetails = control
                .call_optional(
                    rill_core::requests::GetConsumerGroup {
                        stream_id: stream_id.clone(),
                        topic_id: topic_id.clone(),
                        group_id: group_by_name,
                    }
                    .into(),
                    "get a consumer group",
                )?
                .ok_or_else(|| Error::Protocol(format!("group {group_name} vanished")))?;
            group_ids.push(Identifier::numeric(details.group.id));
        }
        streams.push(BenchStream {
            number,
            name,
            stream_id,
            topic_id,
            group_ids,
        });
    }
    Ok(streams)
}

fn ignore_exists(result: Result<()>) -> Result<()> {
    match result {
        Err(error) if is_already_exists(&error) => Ok(()),
        other => other,
    }
}

/// Messages stored in each stream's topic (GetTopic `messages_count`).
fn message_counts(control: &mut Connection, streams: &[BenchStream]) -> Result<Vec<u64>> {
    streams
        .iter()
        .map(|stream| {
            control
                .get_topic(&stream.stream_id, &stream.topic_id)?
                .map(|topic| topic.topic.messages_count)
                .ok_or_else(|| Error::Protocol(format!("topic of {} vanished", stream.name)))
        })
        .collect()
}

/// Tops every stream up to what a consumer-only workload reads (one thread per stream; not
/// measured).
fn prefill(plan: &Plan, streams: &[BenchStream]) -> Result<()> {
    let threads: Vec<_> = streams
        .iter()
        .map(|stream| {
            let plan = plan.clone();
            let stream = stream.clone();
            std::thread::spawn(move || actors::fill_stream(&plan, &stream))
        })
        .collect();
    for thread in threads {
        thread
            .join()
            .map_err(|_| Error::Protocol("a prefill thread panicked".into()))??;
    }
    Ok(())
}

fn progress_bar(
    plan: &Plan,
    progress: Arc<Progress>,
    stop: Arc<AtomicBool>,
    measured_from: Instant,
) -> (ProgressBar, std::thread::JoinHandle<()>) {
    let bar = match (plan.finish, plan.expected_messages()) {
        (Finish::Duration(duration), _) => {
            let bar = ProgressBar::new((plan.warmup + duration).as_millis() as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {msg}")
                    .expect("valid template"),
            );
            bar
        }
        (_, Some(total)) => {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} msgs (eta {eta}) {msg}",
                )
                .expect("valid template"),
            );
            bar
        }
        _ => ProgressBar::new_spinner(),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
    let by_time = matches!(plan.finish, Finish::Duration(_));
    let thread_bar = bar.clone();
    let thread = std::thread::spawn(move || {
        let started = Instant::now();
        let mut last = (Instant::now(), 0u64);
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
            let messages = progress.messages.load(Ordering::Relaxed);
            let bytes = progress.bytes.load(Ordering::Relaxed);
            let now = Instant::now();
            let rate = (bytes - last.1) as f64 / now.duration_since(last.0).as_secs_f64() / 1e6;
            last = (now, bytes);
            let phase = if now < measured_from { "warm-up " } else { "" };
            if by_time {
                thread_bar.set_position(started.elapsed().as_millis() as u64);
            } else {
                thread_bar.set_position(messages);
            }
            thread_bar.set_message(format!("{phase}{messages} msgs, {rate:.0} MB/s"));
        }
    });
    (bar, thread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Cli;

    fn plan(args: &str) -> Plan {
        Cli::parse_from_args(std::iter::once("iggy-bench").chain(args.split_whitespace()))
            .unwrap()
            .into_plan()
            .unwrap()
    }

    #[test]
    fn consumers_are_dealt_over_streams_then_groups() {
        let plan = plan("bcg -s 2 -g 2 -c 5 -a 3 tcp");
        let assignments: Vec<_> = (0..5).map(|index| plan.group_of(index)).collect();
        assert_eq!(assignments, [(1, 1), (2, 1), (1, 2), (2, 2), (1, 1)]);
        assert_eq!(plan.members_of(1, 1), 2);
        assert_eq!(plan.members_of(2, 2), 1);
    }

    #[test]
    fn prefill_covers_what_consumers_read() {
        // 2 members in group 1 of stream 1 each read 10 batches of 100 messages.
        let groups = plan("-b 10 -P 100 bcg -s 2 -g 2 -c 5 -a 3 tcp");
        assert_eq!(groups.prefill_messages(1), 2000);
        assert_eq!(groups.prefill_messages(2), 1000);
        let pinned = plan("-b 10 -P 100 pc -c 2 tcp");
        assert_eq!(pinned.prefill_messages(1), 1000);
        let timed = plan("-d 1s -P 10 pc -c 1 tcp");
        assert_eq!(timed.prefill_messages(1), DURATION_PREFILL_BATCHES * 10);
    }

    #[test]
    fn producers_are_counted_per_stream() {
        let plan = plan("bp -p 5 -s 2 tcp");
        assert_eq!(plan.producers_on(1), 3);
        assert_eq!(plan.producers_on(2), 2);
        assert_eq!(plan.expected_messages(), Some(5 * 1000 * 1000));
    }

    #[test]
    fn a_mismatched_ack_mode_is_refused() {
        let detected = DetectedAckMode {
            mode: AckMode::Written,
            source: "server default".into(),
        };
        assert!(check_ack_mode(Some(AckMode::Written), Some(&detected)).is_ok());
        assert!(check_ack_mode(None, Some(&detected)).is_ok());
        assert!(check_ack_mode(Some(AckMode::Memory), None).is_ok());
        let error = check_ack_mode(Some(AckMode::Memory), Some(&detected)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("IGGY_SYSTEM_PARTITION_ACK_MODE=memory")
        );
    }
}
