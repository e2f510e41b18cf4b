//! The checks after each restart (see the module documentation of `crash_cycles`): every
//! partition read whole and compared with what was acknowledged and shown, then the metadata.

use super::model::*;
use crate::server::ROOT_USERNAME;
use bytes::Bytes;
use iggy::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// Reads a whole partition: (offset, id, payload) in order, dense from the first stored
/// offset. A read that a concurrent retention cut (a gap appears) is started again.
pub(super) async fn read_partition(
    client: &IggyClient,
    topic: &str,
    partition: u32,
) -> Result<Vec<(u64, u128, Bytes)>, String> {
    let (stream, topic_id) = (ident(STREAM), ident(topic));
    let consumer = Consumer::new(numeric(9_999));
    let mut last_problem = String::new();
    for _attempt in 0..3 {
        let mut messages: Vec<(u64, u128, Bytes)> = Vec::new();
        let mut offset = 0;
        let mut gap = false;
        loop {
            let polled = client
                .poll_messages(
                    &stream,
                    &topic_id,
                    Some(partition),
                    &consumer,
                    &PollingStrategy::offset(offset),
                    1000,
                    false,
                )
                .await
                .map_err(|error| format!("poll {topic}/{partition} at {offset}: {error}"))?;
            if polled.messages.is_empty() {
                break;
            }
            for message in polled.messages {
                if let Some((previous, _, _)) = messages.last()
                    && message.header.offset != previous + 1
                {
                    gap = true;
                    last_problem = format!(
                        "{topic}/{partition}: offset {} follows {previous}",
                        message.header.offset
                    );
                }
                offset = message.header.offset + 1;
                messages.push((message.header.offset, message.header.id, message.payload));
            }
            if gap {
                break;
            }
        }
        if !gap {
            return Ok(messages);
        }
    }
    Err(last_problem)
}

pub(super) async fn check_partition(
    client: &IggyClient,
    model: &mut PartitionModel,
    cycle: u64,
    tally: &mut Tally,
) {
    let name = format!("cycle {cycle}, {}/{}", model.topic, model.partition);
    let stored = match read_partition(client, &model.topic, model.partition).await {
        Ok(stored) => stored,
        Err(problem) => {
            tally.corrupt += 1;
            tally.problem(format!("{name}: {problem}"));
            return;
        }
    };
    tally.acked_messages += model.acked.len() as u64;
    tally.unacked_messages += model.unacked.len() as u64;
    tally.shown_messages += model.shown.len() as u64;
    let first = stored.first().map_or(model.end, |(offset, _, _)| *offset);
    let end = stored.last().map_or(first, |(offset, _, _)| offset + 1);
    // Sequence at each stored offset; checks ids, payloads and order.
    let mut at_offset: HashMap<u64, u64> = HashMap::with_capacity(stored.len());
    let mut seen: HashMap<u64, u64> = HashMap::with_capacity(stored.len());
    let mut previous_sequence: Option<u64> = None;
    let mut unacked_stored = 0;
    for (offset, id, payload) in &stored {
        let tag = ((id >> 64) as u32).wrapping_sub(1);
        let sequence = *id as u64;
        if tag != model.tag || payload.as_ref() != self::payload(tag, sequence).as_ref() {
            tally.corrupt += 1;
            tally.problem(format!(
                "{name}: offset {offset} holds id {id:#x} with a payload of {} bytes that does not match",
                payload.len()
            ));
            continue;
        }
        if let Some(previous) = seen.insert(sequence, *offset) {
            tally.duplicated += 1;
            tally.problem(format!(
                "{name}: sequence {sequence} stored at offsets {previous} and {offset}"
            ));
        } else if previous_sequence.is_some_and(|previous| sequence < previous) {
            tally.corrupt += 1;
            tally.problem(format!(
                "{name}: sequence {sequence} at offset {offset} comes after a later one"
            ));
        }
        previous_sequence = Some(sequence);
        at_offset.insert(*offset, sequence);
        if *offset >= model.end {
            if let Some(expected) = model.acked.get(&sequence) {
                if *expected != checksum(payload) {
                    tally.corrupt += 1;
                }
            } else if model.unacked.contains_key(&sequence) {
                unacked_stored += 1;
            } else {
                tally.corrupt += 1;
                tally.problem(format!(
                    "{name}: offset {offset} holds sequence {sequence}, which was not sent this cycle"
                ));
            }
        }
    }
    tally.unacked_stored += unacked_stored;
    // Messages found at earlier checks.
    for &(offset, sequence) in &model.known {
        if offset < first {
            tally.retained += 1;
            continue;
        }
        match at_offset.get(&offset) {
            Some(&found) if found == sequence => {}
            Some(&found) => {
                tally.corrupt += 1;
                tally.problem(format!(
                    "{name}: offset {offset} held sequence {sequence} and now holds {found}"
                ));
            }
            None => {
                tally.lost += 1;
                tally.problem(format!(
                    "{name}: offset {offset} (sequence {sequence}, stored before) is missing"
                ));
            }
        }
    }
    // Messages acknowledged this cycle. Those before the first stored message can only have
    // been deleted by the retention, and only as many as offsets it deleted past the old end.
    let first_sequence = stored
        .first()
        .map(|(_, id, _)| *id as u64)
        .unwrap_or(u64::MAX);
    let mut retention_allowance = first.saturating_sub(model.end);
    for &sequence in model.acked.keys() {
        if seen.contains_key(&sequence) {
            continue;
        }
        if sequence < first_sequence && retention_allowance > 0 {
            retention_allowance -= 1;
            tally.retained += 1;
            continue;
        }
        tally.lost += 1;
        tally.problem(format!(
            "{name}: acknowledged sequence {sequence} is missing (stored offsets {first}..{end})"
        ));
    }
    // What the consumer was shown.
    for &(offset, id) in &model.shown {
        if offset < first {
            continue;
        }
        if at_offset
            .get(&offset)
            .map(|&sequence| message_id(model.tag, sequence))
            != Some(id)
        {
            tally.shown_missing += 1;
            tally.problem(format!(
                "{name}: the consumer was shown id {id:#x} at offset {offset}, now gone"
            ));
        }
    }
    // The consumer's stored offset.
    let consumer = Consumer::new(numeric(model.consumer_id));
    let offset_info = client
        .get_consumer_offset(
            &consumer,
            &ident(STREAM),
            &ident(&model.topic),
            Some(model.partition),
        )
        .await;
    let stored_offset = match offset_info {
        Ok(info) => info.map(|info| info.stored_offset),
        Err(error) => {
            tally.offsets_ahead += 1;
            tally.problem(format!("{name}: get_consumer_offset failed: {error}"));
            None
        }
    };
    if let Some(stored_offset) = stored_offset
        && (stored.is_empty() || stored_offset >= end)
    {
        tally.offsets_ahead += 1;
        tally.problem(format!(
            "{name}: stored consumer offset {stored_offset} is past the data (end {end})"
        ));
    }
    let floor = model.store_acked.or(model.stored_offset);
    if let Some(floor) = floor
        && stored_offset.is_none_or(|stored| stored < floor)
    {
        tally.offsets_regressed += 1;
        tally.problem(format!(
            "{name}: stored consumer offset {stored_offset:?} is below the acknowledged {floor}"
        ));
    }
    model.known = stored
        .iter()
        .map(|(offset, id, _)| (*offset, *id as u64))
        .collect();
    model.first = first;
    model.end = end;
    model.stored_offset = stored_offset;
    model.acked.clear();
    model.unacked.clear();
    model.shown.clear();
    model.store_acked = None;
}

pub(super) async fn check_metadata(
    client: &IggyClient,
    topics: &[&str],
    expected: &mut BTreeMap<(Kind, String), Expect>,
    cycle: u64,
    tally: &mut Tally,
) {
    let mut actual: Vec<(Kind, String)> = Vec::new();
    match client.get_streams().await {
        Ok(streams) => actual.extend(
            streams
                .into_iter()
                .filter(|stream| stream.name != STREAM)
                .map(|stream| (Kind::Stream, stream.name)),
        ),
        Err(error) => tally.problem(format!("cycle {cycle}: get_streams: {error}")),
    }
    match client.get_topics(&ident(STREAM)).await {
        Ok(found) => {
            for topic in topics {
                if !found.iter().any(|t| t.name == *topic) {
                    tally.metadata_mismatches += 1;
                    tally.problem(format!("cycle {cycle}: topic {topic} is missing"));
                }
            }
            actual.extend(
                found
                    .into_iter()
                    .filter(|topic| !topics.contains(&topic.name.as_str()))
                    .map(|topic| (Kind::Topic, topic.name)),
            )
        }
        Err(error) => tally.problem(format!("cycle {cycle}: get_topics: {error}")),
    }
    match client.get_users().await {
        Ok(users) => actual.extend(
            users
                .into_iter()
                .filter(|user| user.username != ROOT_USERNAME)
                .map(|user| (Kind::User, user.username)),
        ),
        Err(error) => tally.problem(format!("cycle {cycle}: get_users: {error}")),
    }
    match client
        .get_consumer_groups(&ident(STREAM), &ident(topics[0]))
        .await
    {
        Ok(groups) => actual.extend(groups.into_iter().map(|group| (Kind::Group, group.name))),
        Err(error) => tally.problem(format!("cycle {cycle}: get_consumer_groups: {error}")),
    }
    for key in &actual {
        match expected.get(key) {
            Some(Expect::Present) | Some(Expect::Either) => {}
            Some(Expect::Absent) | None => {
                tally.metadata_mismatches += 1;
                tally.problem(format!(
                    "cycle {cycle}: {:?} {:?} exists but its deletion was acknowledged (or it was never created)",
                    key.0, key.1
                ));
            }
        }
    }
    for (key, expect) in expected.iter_mut() {
        let exists = actual.contains(key);
        match *expect {
            Expect::Present if !exists => {
                tally.metadata_mismatches += 1;
                tally.problem(format!(
                    "cycle {cycle}: {:?} {:?} was created (acknowledged) but is missing",
                    key.0, key.1
                ));
            }
            Expect::Either => {
                *expect = if exists {
                    Expect::Present
                } else {
                    Expect::Absent
                };
            }
            _ => {}
        }
    }
    // Absent entries need no further tracking.
    expected.retain(|_, expect| *expect != Expect::Absent);
}
