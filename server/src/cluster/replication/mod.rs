//! The cluster thread's part of partition replication (the partitions' own part is
//! `shard/partitions/replica.rs`). For every partition this node holds it runs one task whose
//! kind follows the partition's leadership, as the metadata leader assigned it
//! (`control/leadership.rs`; the epoch of an assignment is the partition's term T):
//!
//! * **follow** (another node leads, term T): stop leading the partition, then fetch from
//!   the leader what follows this log's end, store it, and ask again; each fetch tells the
//!   leader how far this log reaches, which is what the leader's commit counts. The leader
//!   holds a fetch while it has nothing new, so a batch travels as soon as it is written.
//! * **take over** (this node leads, term T): ask the partition's other replicas for their
//!   logs' states, and once a majority of the replicas (this node included) has answered, copy
//!   the most complete log among them (the highest generation, then the highest last epoch,
//!   then the longest), cutting first what this log holds that that one does not. Then lead in
//!   term T. Whatever a majority held is in that log, so nothing acknowledged is lost (Raft's
//!   election argument, with the epochs in place of log terms).
//! * **idle** (no leader known): stop leading; appends wait for a leader.
//!
//! Each task has a replica connection of its own (a fetch may wait on the leader).

pub mod codec;

use super::network::{CallError, FETCH, Peer, Peers, REPLICA_STATE};
use super::types::NodeId;
use crate::http::bridge::Bridge;
use crate::metadata::Leadership;
use crate::shard::partitions::LocalPartition;
use crate::shard::partitions::replica::{FetchRequest, Fetched, ReplicaState};
use crate::shard::table::PartitionKey;
use openraft::BasicNode;
use rill_core::ErrorCode;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Messages one fetch may carry.
const FETCH_MESSAGES: u32 = 2048;
/// How long the leader may hold a fetch while it has nothing new.
const FETCH_WAIT: Duration = Duration::from_millis(500);
/// The pause before a failed fetch or takeover step is tried again.
const RETRY: Duration = Duration::from_millis(100);
/// How long a takeover waits for the peers beyond the first majority to describe their logs.
const TAKEOVER_GRACE: Duration = Duration::from_millis(200);

type PartitionWork<T> = Box<
    dyn FnOnce(Rc<LocalPartition>) -> Pin<Box<dyn Future<Output = Result<T, ErrorCode>>>> + Send,
>;

/// What the replication tasks share: the way to the peers and to the shards.
pub struct Replicator {
    pub peers: Peers,
    pub members: BTreeMap<NodeId, BasicNode>,
    pub bridge: Arc<Bridge>,
}

/// What this node does for a partition, from its assigned leadership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Lead { term: u64 },
    Follow { leader: NodeId, term: u64 },
    Idle,
}

impl Replicator {
    /// The nodes holding a partition: its replicas, as the metadata says.
    fn replicas(&self, key: &PartitionKey) -> Vec<NodeId> {
        self.peers
            .view
            .replicas(key)
            .unwrap_or_else(|| self.members.keys().copied().collect())
    }

    fn peer(&self, id: NodeId) -> Option<Peer> {
        let node = self.members.get(&id)?;
        Some(Peer::new(self.peers.clone(), id, node.addr.clone()))
    }

    /// Runs `work` on the partition, on the shard that owns it.
    async fn on_partition<T: Send + 'static>(
        &self,
        key: PartitionKey,
        work: PartitionWork<T>,
    ) -> Result<T, ErrorCode> {
        let owner = self
            .bridge
            .call_on(0, move |shard| {
                Box::pin(async move { shard.shared.shards_table.ready_owner(&key) })
            })
            .await
            .flatten()
            .ok_or(ErrorCode::PartitionNotFound)?;
        self.bridge
            .call_on(usize::from(owner), move |shard| {
                Box::pin(async move {
                    match shard.local_partition(&key) {
                        Some(partition) => work(partition).await,
                        None => Err(ErrorCode::PartitionNotFound),
                    }
                })
            })
            .await
            .unwrap_or(Err(ErrorCode::ShardCommunicationError))
    }

    async fn state(&self, key: PartitionKey) -> Result<ReplicaState, ErrorCode> {
        self.on_partition(
            key,
            Box::new(|partition| Box::pin(async move { partition.replica_state() })),
        )
        .await
    }

    /// This replica's state, told to a node taking over in `term`: from then on it copies
    /// nothing of an older term and leads in none (`LocalPartition::promise`).
    async fn promised_state(
        &self,
        key: PartitionKey,
        term: u64,
    ) -> Result<ReplicaState, ErrorCode> {
        self.on_partition(
            key,
            Box::new(move |partition| Box::pin(async move { partition.promise(term) })),
        )
        .await
    }

    async fn store(
        &self,
        key: PartitionKey,
        fetched: Fetched,
        asked: ReplicaState,
        term: u64,
    ) -> Result<ReplicaState, ErrorCode> {
        self.on_partition(
            key,
            Box::new(move |partition| {
                Box::pin(async move { partition.store_fetched(fetched, &asked, term).await })
            }),
        )
        .await
    }

    async fn catch_up_deletion(&self, key: PartitionKey, through: u64) -> Result<(), ErrorCode> {
        self.on_partition(
            key,
            Box::new(move |partition| {
                Box::pin(async move { partition.catch_up_deletion(through).await })
            }),
        )
        .await
    }

    async fn lead(&self, key: PartitionKey, term: Option<u64>) -> Result<(), ErrorCode> {
        self.on_partition(
            key,
            Box::new(move |partition| Box::pin(async move { partition.lead(term).await })),
        )
        .await
    }

    async fn partition_keys(&self) -> Vec<PartitionKey> {
        self.bridge
            .call_on(0, |shard| {
                Box::pin(async move { shard.shared.shards_table.keys() })
            })
            .await
            .unwrap_or_default()
    }

    /// The STATE request of a peer taking over: this replica's state of one partition.
    pub async fn serve_state(&self, body: &[u8]) -> Vec<u8> {
        let answer = match codec::decode_state_request(body) {
            Some((key, term)) => self
                .promised_state(key, term)
                .await
                .map_err(ErrorCode::code),
            None => Err(ErrorCode::InvalidCommand.code()),
        };
        codec::encode_state_answer(&answer)
    }

    /// A follower's (or a recovering leader's) FETCH.
    pub async fn serve_fetch(&self, body: &[u8]) -> Vec<u8> {
        let answer = match codec::decode_fetch_request(body) {
            // Only a replica's fetch may count towards the commit.
            Some((key, request)) if !self.replicas(&key).contains(&request.follower) => {
                Err(ErrorCode::PartitionNotFound.code())
            }
            Some((key, request)) => self
                .on_partition(
                    key,
                    Box::new(|partition| {
                        Box::pin(async move { partition.serve_fetch(request).await })
                    }),
                )
                .await
                .map_err(ErrorCode::code),
            None => Err(ErrorCode::InvalidCommand.code()),
        };
        codec::encode_fetch_answer(&answer)
    }
}

/// What this node does for a partition led as `leadership` says.
fn role_of(me: NodeId, leadership: Option<Leadership>) -> Role {
    match leadership {
        Some(leadership) if leadership.node == me => Role::Lead {
            term: leadership.epoch,
        },
        Some(leadership) => Role::Follow {
            leader: leadership.node,
            term: leadership.epoch,
        },
        None => Role::Idle,
    }
}

/// Keeps one task per partition, of the kind its leadership asks for, for as long as this
/// node runs. `tick` bounds how late a new partition gets its task.
pub async fn run(replicator: Arc<Replicator>, tick: Duration) {
    let me = replicator.peers.me;
    let view = replicator.peers.view.clone();
    let mut tasks: HashMap<PartitionKey, (Role, tokio::task::JoinHandle<()>)> = HashMap::new();
    loop {
        let roles: HashMap<PartitionKey, Role> = replicator
            .partition_keys()
            .await
            .into_iter()
            .map(|key| (key, role_of(me, view.leadership(&key))))
            .collect();
        tasks.retain(|key, (was, task)| {
            let keep = roles.get(key) == Some(was);
            if !keep {
                task.abort();
            }
            keep
        });
        for (key, role) in roles {
            tasks.entry(key).or_insert_with(|| {
                let replicator = replicator.clone();
                let task = match role {
                    Role::Lead { term } => tokio::spawn(take_over(replicator, key, term)),
                    Role::Follow { leader, term } => {
                        tokio::spawn(follow(replicator, key, leader, term))
                    }
                    Role::Idle => tokio::spawn(async move {
                        let _ = replicator.lead(key, None).await;
                    }),
                };
                (role, task)
            });
        }
        tokio::select! {
            () = view.leaders_changed() => {}
            () = tokio::time::sleep(tick) => {}
        }
    }
}

/// Follows the leader of term `term` for one partition, for as long as the task lives.
async fn follow(replicator: Arc<Replicator>, key: PartitionKey, leader: NodeId, term: u64) {
    let Some(mut client) = replicator.peer(leader) else {
        return;
    };
    // Nothing copied yet: the first answer carries the leader's offsets.
    let mut offsets_version = (u64::MAX, u64::MAX);
    let mut state = loop {
        let stopped = replicator.lead(key, None).await;
        match (stopped, replicator.state(key).await) {
            (Ok(()), Ok(state)) => break state,
            _ => tokio::time::sleep(RETRY).await,
        }
    };
    loop {
        let request = FetchRequest {
            follower: replicator.peers.me,
            epoch: term,
            recover: false,
            state: state.clone(),
            max_messages: FETCH_MESSAGES,
            wait: FETCH_WAIT,
            offsets_version,
        };
        let body = codec::encode_fetch_request(&key, &request);
        let answer = client
            .call_raw(FETCH, &body, FETCH_WAIT + Duration::from_secs(10))
            .await;
        let fetched = match answer {
            Ok(bytes) => codec::decode_fetch_answer(bytes),
            Err(CallError::Unreachable(_) | CallError::Network(_)) => None,
        };
        match fetched {
            Some(Ok(fetched)) => {
                let version = match &fetched {
                    Fetched::Messages {
                        offsets: Some(copy),
                        ..
                    } => Some(copy.version),
                    _ => None,
                };
                match replicator.store(key, fetched, request.state, term).await {
                    Ok(now) => {
                        state = now;
                        offsets_version = version.unwrap_or(offsets_version);
                    }
                    Err(code) => {
                        tracing::warn!(partition = %key, ?code, "cannot store what the leader sent");
                        tokio::time::sleep(RETRY).await;
                        if let Ok(now) = replicator.state(key).await {
                            state = now;
                        }
                    }
                }
            }
            // The leader is still taking over, or does not hold the partition yet.
            Some(Err(_)) | None => tokio::time::sleep(RETRY).await,
        }
    }
}

/// Makes this node's log of one partition the most complete of a majority, then leads it.
async fn take_over(replicator: Arc<Replicator>, key: PartitionKey, term: u64) {
    let me = replicator.peers.me;
    loop {
        let Ok(mine) = replicator.promised_state(key, term).await else {
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let replicas = replicator.replicas(&key);
        let majority = replicas.len() / 2 + 1;
        let mut states = vec![(me, mine)];
        let mut asking = tokio::task::JoinSet::new();
        for &id in replicas.iter().filter(|&&id| id != me) {
            let Some(mut client) = replicator.peer(id) else {
                continue;
            };
            let body = codec::encode_state_request(&key, term);
            asking.spawn(async move {
                let answer = client
                    .call_raw(REPLICA_STATE, &body, Duration::from_secs(2))
                    .await;
                (
                    id,
                    answer
                        .ok()
                        .and_then(|bytes| codec::decode_state_answer(&bytes)),
                )
            });
        }
        // Any majority holds everything committed, so once one has answered the others get a
        // moment more, not the full call timeout (a vanished peer's address may never refuse).
        let mut enough_at: Option<tokio::time::Instant> = None;
        loop {
            let joined = match enough_at {
                None => asking.join_next().await,
                Some(at) => tokio::select! {
                    joined = asking.join_next() => joined,
                    () = tokio::time::sleep_until(at) => break,
                },
            };
            let Some(joined) = joined else {
                break;
            };
            match joined {
                Ok((id, Some(Ok(state)))) => states.push((id, state)),
                // A peer that has not opened the partition holds nothing of it.
                Ok((id, Some(Err(code)))) if code == ErrorCode::PartitionNotFound.code() => {
                    states.push((id, ReplicaState::default()))
                }
                _ => {}
            }
            if enough_at.is_none() && states.len() >= majority {
                enough_at = Some(tokio::time::Instant::now() + TAKEOVER_GRACE);
            }
        }
        asking.abort_all();
        if states.len() < majority {
            tracing::debug!(partition = %key, answered = states.len(), "a majority has not answered the takeover yet");
            tokio::time::sleep(RETRY).await;
            continue;
        }
        let (best, target) = states
            .iter()
            .max_by_key(|(id, state)| {
                (
                    state.epochs.generation,
                    state.epochs.last(),
                    state.end,
                    *id == me,
                )
            })
            .cloned()
            .expect("this node's own state is there");
        if best != me {
            tracing::info!(partition = %key, from = best, end = target.end, "copying the most complete log before leading");
            if copy_from(&replicator, key, best, term, &target)
                .await
                .is_err()
            {
                tokio::time::sleep(RETRY).await;
                continue;
            }
        }
        let deleted = deletion_to_adopt(&states, &target);
        if replicator.catch_up_deletion(key, deleted).await.is_err() {
            tokio::time::sleep(RETRY).await;
            continue;
        }
        match replicator.lead(key, Some(term)).await {
            Ok(()) => {
                tracing::info!(partition = %key, epoch = term, replicas = ?replicas, "leading the partition");
                return;
            }
            Err(_) => tokio::time::sleep(RETRY).await,
        }
    }
}

/// How far a node taking over with `target`'s log deletes: a deletion a majority followed was
/// answered, so whoever of them deleted furthest says how far, counting only replicas whose
/// log is the chosen one up to there (a purge restarts offsets; a deleted segment of a log the
/// chosen one parted from held other messages).
fn deletion_to_adopt(states: &[(NodeId, ReplicaState)], target: &ReplicaState) -> u64 {
    states
        .iter()
        .filter(|(_, state)| {
            state
                .epochs
                .common_end(state.end, &target.epochs, target.end)
                >= state.deleted_through
        })
        .map(|(_, state)| state.deleted_through)
        .max()
        .unwrap_or(0)
}

/// Copies `source`'s log of one partition up to `target`'s end into this node's.
async fn copy_from(
    replicator: &Replicator,
    key: PartitionKey,
    source: NodeId,
    term: u64,
    target: &ReplicaState,
) -> Result<(), ()> {
    let mut client = replicator.peer(source).ok_or(())?;
    let mut state = replicator.state(key).await.map_err(|_| ())?;
    while state.end < target.end
        || state
            .epochs
            .common_end(state.end, &target.epochs, target.end)
            < state.end
    {
        let request = FetchRequest {
            follower: replicator.peers.me,
            epoch: term,
            recover: true,
            state: state.clone(),
            max_messages: FETCH_MESSAGES,
            wait: Duration::ZERO,
            offsets_version: (u64::MAX, u64::MAX),
        };
        let body = codec::encode_fetch_request(&key, &request);
        let answer = client
            .call_raw(FETCH, &body, Duration::from_secs(10))
            .await
            .map_err(|_| ())?;
        let fetched = match codec::decode_fetch_answer(answer) {
            Some(Ok(fetched)) => fetched,
            _ => return Err(()),
        };
        let nothing = matches!(&fetched, Fetched::Messages { messages, .. } if messages.is_empty());
        state = replicator
            .store(key, fetched, request.state, term)
            .await
            .map_err(|_| ())?;
        if nothing {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::partitions::epochs::Epochs;

    fn state(generation: u64, starts: &[(u64, u64)], end: u64, deleted: u64) -> ReplicaState {
        ReplicaState {
            epochs: Epochs {
                generation,
                starts: starts.to_vec(),
            },
            end,
            deleted_through: deleted,
        }
    }

    #[test]
    fn a_takeover_adopts_the_furthest_deletion_of_the_logs_it_shares() {
        let target = state(0, &[(1, 0), (3, 90)], 100, 20);
        let states = vec![
            (0, target.clone()),
            // Same history up to 60, deleted below 50: adopted.
            (1, state(0, &[(1, 0)], 60, 50)),
            // Deleted below 95 in a term the chosen log parted from at 90: not adopted.
            (2, state(0, &[(1, 0), (2, 80)], 120, 95)),
            // Another generation (before a purge): not adopted.
            (3, state(1, &[(1, 0)], 80, 70)),
        ];
        assert_eq!(deletion_to_adopt(&states, &target), 50);
        assert_eq!(deletion_to_adopt(&states[..1], &target), 20);
    }
}
