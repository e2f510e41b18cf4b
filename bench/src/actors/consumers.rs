//! The reading actors: the consumer (pinned, by offset), the group consumer (Next +
//! auto-commit) and the producing consumer (send a batch, read it back).

use super::*;

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
