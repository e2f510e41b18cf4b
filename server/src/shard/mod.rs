//! Shards: one OS thread per shard, pinned to a CPU, running its own compio (io_uring) runtime.
//!
//! A shard accepts TCP connections on the shared port (SO_REUSEPORT), owns the partitions the
//! placement rule gives it ([`table::PartitionKey::owner`]), and reads metadata through its own
//! left-right `ReadHandle`. Requests for a partition owned elsewhere go to the owner's inbox
//! over `flume`; metadata changes go to shard 0's control lane. Nothing on the request path
//! takes a lock: the shards table is a sharded `DashMap`, metadata reads are wait-free.

pub mod allocation;
pub mod dedup;
pub mod message;
pub mod partitions;
pub mod routing;
pub mod table;

use crate::clients::ClientRegistry;
use crate::config::Config;
use crate::metadata::{Metadata, Topic};
use crate::metrics::{Metrics, ShardMetricsHandle};
use crate::storage::{BufferPool, PartitionConfig};
use dashmap::DashMap;
use dedup::Deduplicator;
use message::{ControlCommand, ControlRequest, ShardMessage, ShardWork, reply_channel};
use partitions::LocalPartition;
use rill_core::ErrorCode;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use table::{PartitionKey, PartitionState, ShardsTable};

/// State every shard shares (Send + Sync).
pub struct SharedState {
    pub config: Config,
    pub shard_count: u16,
    pub shards_table: ShardsTable,
    pub clients: ClientRegistry,
    pub inboxes: Vec<flume::Sender<ShardMessage>>,
    pub control: flume::Sender<ControlRequest>,
    pub metadata: left_right::ReadHandleFactory<Metadata>,
    /// Consumer group membership (runtime state, shared by all shards).
    pub groups: crate::groups::ConsumerGroups,
    /// Per-topic round-robin counters for balanced partitioning.
    pub balanced: DashMap<(u32, u32), AtomicU64>,
    pub started_at_micros: u64,
    /// Shards that have opened their partitions; listeners start when all have, so no client
    /// reaches a partition that is still being opened at boot.
    pub shards_started: std::sync::atomic::AtomicU16,
    /// The TCP address shard 0 bound (resolves port 0 for the other shards).
    pub tcp_address: OnceLock<SocketAddr>,
    /// The QUIC address the shards' sockets are bound to (port 0 resolved), when QUIC is on.
    pub quic_address: Option<SocketAddr>,
    /// Limits concurrent Argon2id password checks (logins).
    pub password_checks: crate::auth::PasswordChecks,
    /// Connection slots, the request-body budget and failed-login throttling (`[limits]`).
    pub admission: crate::admission::Admission,
    /// The I/O driver every shard's runtime is built on (`system.io_driver`), decided at start.
    pub io_plan: crate::io_driver::Plan,
    /// `[system.read_cache] size`, resolved at start, shared by the shards' caches.
    pub read_cache: Arc<crate::storage::CacheBudget>,
    /// `[system.read_cache] read_ahead`, resolved at start, split evenly between the shards.
    pub read_ahead_bytes: u64,
    /// What the write-ahead logs held at boot (scanned before the shards start), taken by the
    /// partitions as they open.
    pub wal_recovery: Arc<crate::storage::WalRecovery>,
    /// Partitions that could not be opened at boot: their records were not replayed, so the
    /// logs are set aside rather than written over.
    pub partitions_not_opened: std::sync::atomic::AtomicU32,
    /// The driver the shards actually run on, once one has started.
    pub io_driver: OnceLock<crate::io_driver::IoDriver>,
    /// TLS for the TCP port, when `[tcp.tls]` is on.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The address the HTTP endpoint bound, once it listens.
    pub http_address: OnceLock<SocketAddr>,
    /// The WebSocket address shard 0 bound (port 0 resolved), once it listens.
    pub websocket_address: OnceLock<SocketAddr>,
    /// TLS under the WebSocket port, when `[websocket.tls]` is on.
    pub websocket_tls: Option<Arc<rustls::ServerConfig>>,
    /// Every shard's metric cells (each written only by its shard), read by the scraper.
    pub metrics: Arc<Metrics>,
    /// `[system.encryption]`'s key, when encryption at rest is on.
    pub encryption: Option<crate::encryption::MasterKey>,
    /// The cluster as this node sees it (roster, leader, peers' health), in cluster mode.
    pub cluster: Option<crate::cluster::link::ClusterHandle>,
}

impl SharedState {
    /// A topic's segment size in bytes: its own, or `system.segment.size` where it has none (0).
    pub fn segment_size(&self, topic_segment_size: u64) -> u64 {
        match topic_segment_size {
            0 => self.config.system.segment.size.0,
            own => own,
        }
    }

    /// The storage settings for a partition of the given topic.
    pub fn partition_config(&self, stream: &str, topic: &Topic) -> PartitionConfig {
        let system = &self.config.system;
        let (message_expiry, max_topic_size) = (topic.message_expiry, topic.max_topic_size);
        PartitionConfig {
            segment_size_bytes: self.segment_size(topic.segment_size),
            ack_mode: system.partition.ack_mode_for(stream, &topic.name),
            memory_flush_messages: system.partition.messages_required_to_save,
            memory_flush_bytes: system.partition.size_of_messages_required_to_save.0,
            message_expiry: (message_expiry != u64::MAX)
                .then(|| std::time::Duration::from_micros(message_expiry)),
            max_size_bytes: (max_topic_size != u64::MAX).then_some(max_topic_size),
            checksum_reads: system.partition.verify_checksums_on_read,
            ..PartitionConfig::default()
        }
    }

    /// The next partition for a balanced send to a topic.
    pub fn next_balanced(&self, stream_id: u32, topic_id: u32, partitions_count: u32) -> u32 {
        let counter = self
            .balanced
            .entry((stream_id, topic_id))
            .or_insert_with(|| AtomicU64::new(0));
        (counter.fetch_add(1, Ordering::Relaxed) % u64::from(partitions_count)) as u32
    }
}

/// One shard, shared by the tasks of its thread.
pub struct Shard {
    pub id: u16,
    pub shared: Arc<SharedState>,
    metadata: left_right::ReadHandle<Metadata>,
    partitions: RefCell<HashMap<PartitionKey, Rc<LocalPartition>>>,
    pool: Rc<BufferPool>,
    /// This shard's write-ahead log, given to the partitions it opens.
    wal_link: crate::storage::WalLink,
    /// This shard's metric cells.
    pub metrics: ShardMetricsHandle,
    pub connections: Cell<usize>,
    /// Dropped on shutdown, which wakes every connection waiting on its receiver.
    shutdown: RefCell<Option<flume::Sender<()>>>,
    pub shutdown_signal: flume::Receiver<()>,
}

impl Shard {
    pub fn new(id: u16, shared: Arc<SharedState>) -> Shard {
        let metadata = shared.metadata.handle();
        let (shutdown, shutdown_signal) = flume::bounded(1);
        let metrics = ShardMetricsHandle::new(shared.metrics.clone(), id);
        let cache = crate::storage::ReadCache::sharing(
            shared.read_cache.clone(),
            shared.read_cache.total() / u64::from(shared.shard_count),
        )
        .with_read_ahead(shared.read_ahead_bytes / u64::from(shared.shard_count));
        // Not in a cluster yet: a node may open a partition long after boot (when it becomes a
        // replica), after its log was written again.
        let wal = shared
            .config
            .system
            .wal
            .storage()
            .filter(|_| shared.cluster.is_none())
            .map(|config| crate::storage::Wal::new(&shared.config.system.path, id, config));
        let pool = BufferPool::new().with_read_cache(cache);
        let wal_link = crate::storage::WalLink {
            wal,
            recovery: Some(shared.wal_recovery.clone()),
        };
        Shard {
            id,
            shared,
            metadata,
            partitions: RefCell::new(HashMap::new()),
            pool: Rc::new(pool),
            wal_link,
            metrics,
            connections: Cell::new(0),
            shutdown: RefCell::new(Some(shutdown)),
            shutdown_signal,
        }
    }

    /// Reads the metadata. The guard lives only inside `read`, never across an await.
    pub fn metadata<R>(&self, read: impl FnOnce(&Metadata) -> R) -> Result<R, ErrorCode> {
        let guard = self.metadata.enter().ok_or(ErrorCode::Disconnected)?;
        Ok(read(&guard))
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.borrow().is_none()
    }

    pub fn begin_shutdown(&self) {
        self.shutdown.borrow_mut().take();
    }

    pub fn pool(&self) -> &Rc<BufferPool> {
        &self.pool
    }

    /// The shard's write-ahead log, when `[system.wal]` is on.
    pub fn wal(&self) -> Option<&Rc<crate::storage::Wal>> {
        self.wal_link.wal.as_ref()
    }

    /// A partition this shard serves, if it does.
    pub fn local_partition(&self, key: &PartitionKey) -> Option<Rc<LocalPartition>> {
        self.partitions.borrow().get(key).cloned()
    }

    /// Sends a metadata change to shard 0's control lane and waits for the encoded response.
    pub async fn control(
        &self,
        command: ControlCommand,
        session: &crate::session::Session,
    ) -> Result<Vec<u8>, ErrorCode> {
        self.metrics.control_forwards.inc();
        let (reply, response) = reply_channel();
        self.shared
            .control
            .send_async(ControlRequest {
                command,
                user_id: session.user_id.ok_or(ErrorCode::Unauthenticated)?,
                client_id: session.client_id,
                revoked: session.revocation(),
                forwarded: false,
                reply,
            })
            .await
            .map_err(|_| ErrorCode::ShardCommunicationError)?;
        response
            .recv_async()
            .await
            .map_err(|_| ErrorCode::ShardCommunicationError)?
    }

    /// Opens (or creates) a partition this shard owns and marks it ready.
    pub async fn open_partition(&self, key: PartitionKey) -> Result<(), ErrorCode> {
        let config = self
            .metadata(|metadata| {
                let stream = metadata.streams.get(&key.stream_id)?;
                let topic = stream.topics.get(&key.topic_id)?;
                Some(self.shared.partition_config(&stream.name, topic))
            })?
            .ok_or(ErrorCode::TopicIdNotFound)?;
        let counters = self
            .shared
            .shards_table
            .counters(&key)
            .ok_or(ErrorCode::PartitionNotFound)?;
        let dedup = &self.shared.config.system.message_deduplication;
        let extras = partitions::Extras {
            dedup: dedup
                .enabled
                .then(|| Deduplicator::new(dedup.max_entries, dedup.expiry.0)),
            cipher: self
                .shared
                .encryption
                .as_ref()
                .map(|master| master.partition(key.stream_id, key.topic_id, key.partition_id)),
            // In a cluster of several nodes: the partition's replicas, a majority of which
            // commits (one alone commits what it holds).
            replicas: self
                .shared
                .cluster
                .as_ref()
                .filter(|cluster| cluster.view.nodes.len() > 1)
                .map(|cluster| {
                    let factor = self
                        .metadata(|metadata| {
                            metadata
                                .topic_by_ids(key.stream_id, key.topic_id)
                                .map(|topic| topic.replication_factor)
                        })
                        .ok()
                        .flatten()
                        .unwrap_or(u8::MAX);
                    let factor =
                        crate::cluster::link::effective_factor(factor, cluster.view.default_factor);
                    crate::cluster::link::replicas(&cluster.view.roster(), &key, factor).len()
                }),
            wal: self.wal_link.clone(),
        };
        let partition = LocalPartition::open(
            &self.shared.config.system.path,
            key,
            config,
            self.pool.clone(),
            counters,
            self.metrics.clone(),
            extras,
        )
        .await?;
        if self.shared.config.system.partition.verify_checksums_at_boot {
            partition.scan_checksums().await;
        }
        self.partitions.borrow_mut().insert(key, Rc::new(partition));
        self.shared
            .shards_table
            .set_state(&key, PartitionState::Ready);
        Ok(())
    }

    /// Stops serving a partition (and deletes its files when asked). In-flight operations
    /// holding the partition finish first; new ones are already refused by the table state.
    pub async fn close_partition(&self, key: PartitionKey, delete: bool) -> Result<(), ErrorCode> {
        let partition = self.partitions.borrow_mut().remove(&key);
        if let Some(partition) = partition
            && let Err(error) = partition.close().await
        {
            tracing::warn!(partition = %key, %error, "error closing partition");
        }
        if delete {
            let dir = partitions::partition_dir(&self.shared.config.system.path, &key);
            if let Err(error) = crate::storage::blocking::remove_dir_all(&dir).await
                && error.kind() != std::io::ErrorKind::NotFound
            {
                tracing::error!(partition = %key, %error, "cannot delete partition directory");
                return Err(ErrorCode::CannotDeletePartitionDirectory);
            }
        }
        Ok(())
    }

    /// Copies what only this thread can read (the buffer pool, the storage writers' counters)
    /// into the shard's metric cells.
    pub fn publish_metrics(&self) {
        self.metrics.publish_pool(self.pool.stats());
        // A shard above its share sheds it here even when it writes nothing (see ReadCache).
        self.pool.read_cache().trim();
        self.metrics
            .publish_read_cache(self.pool.read_cache().stats());
        if let Some(wal) = self.wal() {
            self.metrics.publish_wal(wal.stats());
        }
        for partition in self.partitions.borrow().values() {
            partition.publish_write_counters();
        }
    }

    /// Partitions this shard owns, for periodic tasks and shutdown.
    pub fn local_partitions(&self) -> Vec<Rc<LocalPartition>> {
        self.partitions.borrow().values().cloned().collect()
    }

    /// Does work another shard (or shard 0's control lane) sent. Each runs as its own task, so
    /// a poll never waits behind another request's I/O.
    pub async fn handle_work(self: Rc<Self>, work: ShardWork) {
        match work {
            ShardWork::Partition { key, call, span } => match self.local_partition(&key) {
                Some(partition) => {
                    tracing::Instrument::instrument(partition.serve(call), span).await
                }
                None => call.refuse(ErrorCode::PartitionNotFound),
            },
            ShardWork::OpenPartition { key, reply } => {
                let _ = reply.send(self.open_partition(key).await);
            }
            ShardWork::ClosePartition { key, delete, reply } => {
                let _ = reply.send(self.close_partition(key, delete).await);
            }
        }
    }
}
