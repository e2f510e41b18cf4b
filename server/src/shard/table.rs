//! The shards table: which shard owns each partition, whether the partition can be used yet,
//! and its live counters. Shared by every shard (a `DashMap`, sharded internally), written only
//! by shard 0's control lane and by owners marking their partitions ready.

use crate::metadata::{Stream, Topic};
use crate::metrics::Counter;
use dashmap::DashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A partition's place in the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionKey {
    pub stream_id: u32,
    pub topic_id: u32,
    pub partition_id: u32,
}

impl PartitionKey {
    pub fn new(stream_id: u32, topic_id: u32, partition_id: u32) -> Self {
        PartitionKey {
            stream_id,
            topic_id,
            partition_id,
        }
    }

    /// The keys of every partition of a topic.
    pub fn of_topic(stream_id: u32, topic: &Topic) -> Vec<PartitionKey> {
        topic
            .partitions
            .iter()
            .map(|p| PartitionKey::new(stream_id, topic.id, p.id))
            .collect()
    }

    /// The keys of every partition of every topic of a stream.
    pub fn of_stream(stream: &Stream) -> Vec<PartitionKey> {
        stream
            .topics
            .values()
            .flat_map(|topic| PartitionKey::of_topic(stream.id, topic))
            .collect()
    }

    /// The owning shard: the sum of the three ids modulo the shard count. Consecutive ids go
    /// to consecutive shards, so a topic's partitions, and the one-partition streams a
    /// benchmark or a small deployment creates in turn, spread evenly: a hash left two such
    /// partitions on one shard half the time, and with them every connection that uses them
    /// (connections move to the shard owning their partition), one core doing all the work.
    /// Stable across restarts with the same shard count; ownership may move when the count
    /// changes, which is safe because any shard can open any partition directory.
    pub fn owner(&self, shard_count: u16) -> u16 {
        let sum =
            u64::from(self.stream_id) + u64::from(self.topic_id) + u64::from(self.partition_id);
        (sum % u64::from(shard_count.max(1))) as u16
    }
}

impl std::fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}",
            self.stream_id, self.topic_id, self.partition_id
        )
    }
}

/// Where a partition is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionState {
    /// Being created or opened by its owner: not usable yet.
    Creating,
    Ready,
    /// Being deleted: no new request may touch it.
    Deleting,
}

/// Live figures of a partition, updated by its owner after each change and read by any shard
/// answering GetStream/GetTopic/GetStats.
#[derive(Debug, Default)]
pub struct PartitionCounters {
    pub messages_count: AtomicU64,
    pub size_bytes: AtomicU64,
    /// Offset of the last visible message + 1 (0 = empty).
    pub next_offset: AtomicU64,
    pub segments_count: AtomicU32,
    /// Activity since the owner opened the partition (metrics; written by the owner only).
    pub appends: Counter,
    pub appended_messages: Counter,
    pub deduplicated_messages: Counter,
    pub polls: Counter,
    pub polled_messages: Counter,
}

impl PartitionCounters {
    /// Offset of the last visible message, 0 when empty (the protocol's `current_offset`).
    pub fn current_offset(&self) -> u64 {
        self.next_offset.load(Ordering::Relaxed).saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.next_offset.load(Ordering::Relaxed) == 0
    }
}

#[derive(Debug, Clone)]
pub struct PartitionSlot {
    pub shard: u16,
    pub state: PartitionState,
    pub counters: Arc<PartitionCounters>,
}

#[derive(Debug, Default)]
pub struct ShardsTable {
    slots: DashMap<PartitionKey, PartitionSlot>,
}

impl ShardsTable {
    pub fn new() -> Self {
        ShardsTable::default()
    }

    /// Registers a partition as being created on `shard`.
    pub fn insert_creating(&self, key: PartitionKey, shard: u16) -> Arc<PartitionCounters> {
        let counters = Arc::new(PartitionCounters::default());
        self.slots.insert(
            key,
            PartitionSlot {
                shard,
                state: PartitionState::Creating,
                counters: counters.clone(),
            },
        );
        counters
    }

    pub fn set_state(&self, key: &PartitionKey, state: PartitionState) {
        if let Some(mut slot) = self.slots.get_mut(key) {
            slot.state = state;
        }
    }

    pub fn remove(&self, key: &PartitionKey) {
        self.slots.remove(key);
    }

    pub fn get(&self, key: &PartitionKey) -> Option<PartitionSlot> {
        self.slots.get(key).map(|slot| slot.clone())
    }

    /// The owner of a ready partition; `None` if it is missing, being created or being deleted.
    pub fn ready_owner(&self, key: &PartitionKey) -> Option<u16> {
        self.slots
            .get(key)
            .filter(|slot| slot.state == PartitionState::Ready)
            .map(|slot| slot.shard)
    }

    pub fn counters(&self, key: &PartitionKey) -> Option<Arc<PartitionCounters>> {
        self.slots.get(key).map(|slot| slot.counters.clone())
    }

    pub fn keys(&self) -> Vec<PartitionKey> {
        self.slots.iter().map(|entry| *entry.key()).collect()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Visits every partition: key, owning shard, counters.
    pub fn for_each(&self, mut visit: impl FnMut(&PartitionKey, u16, &PartitionCounters)) {
        for entry in self.slots.iter() {
            visit(entry.key(), entry.shard, &entry.counters);
        }
    }

    /// Sums counters over every partition matching `filter`.
    pub fn totals(&self, filter: impl Fn(&PartitionKey) -> bool) -> (u64, u64, u32) {
        let (mut messages, mut bytes, mut segments) = (0, 0, 0);
        for entry in self.slots.iter() {
            if filter(entry.key()) {
                messages += entry.counters.messages_count.load(Ordering::Relaxed);
                bytes += entry.counters.size_bytes.load(Ordering::Relaxed);
                segments += entry.counters.segments_count.load(Ordering::Relaxed);
            }
        }
        (messages, bytes, segments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_is_stable_and_spreads_partitions() {
        for shards in 1..=8u16 {
            let mut per_shard = vec![0u32; usize::from(shards)];
            for partition in 1..=u32::from(shards) * 10 {
                let key = PartitionKey::new(3, 1, partition);
                assert_eq!(key.owner(shards), key.owner(shards));
                per_shard[usize::from(key.owner(shards))] += 1;
            }
            assert!(per_shard.iter().all(|&count| count == 10), "{per_shard:?}");
        }
        // One-partition streams created one after another (iggy-bench's pinned actors).
        let owners: Vec<u16> = (1..=4)
            .map(|stream| PartitionKey::new(stream, 1, 1).owner(2))
            .collect();
        assert_eq!(owners, [1, 0, 1, 0]);
        assert_eq!(PartitionKey::new(1, 2, 3).owner(1), 0);
        assert_eq!(PartitionKey::new(u32::MAX, u32::MAX, u32::MAX).owner(0), 0);
    }

    #[test]
    fn only_ready_partitions_route() {
        let table = ShardsTable::new();
        let key = PartitionKey::new(0, 0, 0);
        table.insert_creating(key, 1);
        assert_eq!(table.ready_owner(&key), None);
        table.set_state(&key, PartitionState::Ready);
        assert_eq!(table.ready_owner(&key), Some(1));
        table.set_state(&key, PartitionState::Deleting);
        assert_eq!(table.ready_owner(&key), None);
    }
}
