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
use crate::client::{Connection, is_already_exists};
use crate::error::{Error, Result};
use crate::plan::{
    BenchStream, Finish, Plan, Progress, TOPIC_NAME, WorkloadKind, group_name, stream_name,
};
use crate::procfs::{self, AckMode, DetectedAckMode, Sampler, ServerUsage};
use crate::report::{Report, ServerInfo, StreamCount};
use crate::stats::{ActorKind, ActorResult, GroupSummary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rill_core::primitives::Identifier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// How often the server process is sampled.
const SAMPLER_INTERVAL: Duration = Duration::from_millis(100);

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
    let shared = ActorContext {
        plan: plan.clone(),
        barrier: barrier.clone(),
        base: base.clone(),
        abort: abort.clone(),
        progress: progress.clone(),
        streams: stream_states,
        groups: group_counters,
    };
    for index in 0..plan.producers {
        let context = shared.clone();
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
        let context = shared.clone();
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
    // Only the actors hold the run's shared state from here, as each was given its own copy.
    drop(shared);

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
