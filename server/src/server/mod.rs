//! Boot and shutdown: recover metadata, start one thread per shard, wait for a signal, stop.

use crate::config::Config;
use crate::control::{ControlPlane, RootCredentials};
use crate::metadata::log::{self, MetadataLog, Recovered};
use crate::metadata::{Metadata, MetadataOp};
use crate::shard::allocation::{CpuAllocation, ShardPlacement, allowed_cpus, pin_current_thread};
use crate::shard::message::{ControlRequest, ShardMessage};
use crate::shard::table::ShardsTable;
use crate::shard::{Shard, SharedState};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

mod listeners;

use listeners::{Frontends, bind_websocket};

/// Capacity of each shard's inbox: a full inbox makes senders wait (backpressure), never grow.
const INBOX_CAPACITY: usize = 4096;
const CONTROL_CAPACITY: usize = 1024;
/// How often expired personal access tokens are deleted.
const TOKEN_CLEANUP_INTERVAL: Duration = Duration::from_secs(60);

/// What shard threads tell the main thread.
enum Event {
    Listening(u16, SocketAddr),
    Failed(u16, String),
    Exited(u16),
    Signal(i32),
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Runs the server until SIGINT or SIGTERM. Returns an error message for a failed start.
pub fn run(mut config: Config, root: RootCredentials) -> Result<(), String> {
    crate::storage::huge_pages::set_enabled(config.system.buffers.huge_pages);
    let (recovered, encryption) = open_data_directory(&mut config)?;

    let allocation: CpuAllocation = config
        .system
        .sharding
        .cpu_allocation
        .parse()
        .map_err(|error| format!("system.sharding.cpu_allocation: {error}"))?;
    let placements = allocation
        .resolve(&allowed_cpus())
        .map_err(|error| format!("system.sharding.cpu_allocation: {error}"))?;
    let shard_count = u16::try_from(placements.len()).map_err(|_| "too many shards".to_string())?;
    let io_plan = crate::io_driver::plan(config.system.io_driver)?;
    if let Some(warning) = &io_plan.fallback {
        tracing::warn!("{warning}");
    }

    let shards_table = ShardsTable::new();
    for key in crate::cluster::link::held_partition_keys(&recovered.metadata, &config.cluster) {
        shards_table.insert_creating(key, key.owner(shard_count));
    }
    let groups = crate::groups::ConsumerGroups::new(config.consumer_group.rebalancing_timeout.0);
    for stream in recovered.metadata.streams.values() {
        for topic in stream.topics.values() {
            for group in topic.groups.values() {
                let key = crate::groups::GroupKey {
                    stream_id: stream.id,
                    topic_id: topic.id,
                    group_id: group.id,
                };
                groups.register(key, topic.partitions.len() as u32);
            }
        }
    }
    let (writer, reader) =
        left_right::new_from_empty::<Metadata, MetadataOp>(recovered.metadata.clone());
    let (control_sender, control_receiver) = flume::bounded(CONTROL_CAPACITY);
    // Commands of the HTTP API (and, in a cluster, followers' relayed requests) reach each
    // shard on a channel of their own.
    let (http_senders, http_receivers) = crate::http::task_channels(shard_count);
    let cluster = match config.cluster.replica_id {
        Some(replica_id) if config.cluster.enabled => {
            let applied = recovered
                .metadata
                .replicated
                .map(|id| (id.term, id.leader, id.index));
            Some(crate::cluster::start(
                &config,
                replica_id,
                &config.system.path,
                applied,
                control_sender.clone(),
                crate::http::bridge::Bridge::new(http_senders.clone()),
            )?)
        }
        _ => None,
    };
    let frontends = Frontends::prepare(&config, usize::from(shard_count))?;
    let (inbox_senders, inbox_receivers): (Vec<_>, Vec<_>) = (0..shard_count)
        .map(|_| flume::bounded(INBOX_CAPACITY))
        .unzip();
    let admission = crate::admission::Admission::new(config.limits.clone());
    let io_driver = io_plan.driver;
    let memory_limit = crate::system_info::memory_limit_bytes();
    let read_cache_bytes = config.system.read_cache.size.resolve(memory_limit);
    let read_ahead_bytes = config.system.read_cache.read_ahead_bytes(memory_limit);
    tracing::info!(
        budget = %rill_core::units::format_size(read_cache_bytes),
        share_per_shard = %rill_core::units::format_size(read_cache_bytes / u64::from(shard_count)),
        read_ahead = %rill_core::units::format_size(read_ahead_bytes),
        "read cache"
    );
    let wal_recovery = crate::storage::WalRecovery::scan(&config.system.path)
        .map_err(|error| format!("cannot read the write-ahead logs: {error}"))?;
    let shared = Arc::new(SharedState {
        config,
        shard_count,
        shards_table,
        clients: Default::default(),
        inboxes: inbox_senders,
        control: control_sender,
        metadata: reader.factory(),
        groups,
        balanced: Default::default(),
        started_at_micros: crate::time::now_micros(),
        shards_started: Default::default(),
        tcp_address: OnceLock::new(),
        quic_address: frontends.quic_address,
        tls: frontends.tls,
        password_checks: crate::auth::PasswordChecks::new(usize::from(shard_count)),
        admission,
        io_plan,
        read_cache: crate::storage::CacheBudget::new(read_cache_bytes),
        read_ahead_bytes,
        wal_recovery,
        partitions_not_opened: Default::default(),
        io_driver: OnceLock::new(),
        http_address: OnceLock::new(),
        websocket_address: OnceLock::new(),
        websocket_tls: frontends.websocket_tls,
        metrics: Arc::new(crate::metrics::Metrics::new(shard_count)),
        encryption,
        cluster: cluster
            .as_ref()
            .map(|link| crate::cluster::link::ClusterHandle {
                view: link.view.clone(),
                relay: link.relay.clone(),
            }),
    });
    drop(reader);

    // Signals are taken by one thread with sigwait; every other thread inherits the mask.
    let signals = block_termination_signals()?;
    // After the mask is set, so the HTTP threads inherit it.
    if shared.config.http.enabled {
        // Not fatal: the broker's job is the binary protocol; a taken metrics port is an
        // operator's problem to fix, loudly reported, not a reason to refuse producers.
        match crate::http::start(shared.clone(), http_senders) {
            Ok(address) => {
                tracing::info!(%address, tls = shared.config.http.tls.enabled, "HTTP API listening (REST, /metrics, /ping, /stats)")
            }
            Err(error) => tracing::error!(%error, "the HTTP API is not available"),
        }
    }
    let (events, event_receiver) = mpsc::channel();
    let control = (writer, control_receiver, recovered, root, cluster);
    let quic = (frontends.quic_sockets, frontends.quic_config);
    let inboxes = inbox_receivers.into_iter().zip(http_receivers).collect();
    let threads = start_shards(&shared, placements, inboxes, quic, control, &events)?;
    {
        let events = events.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Ok(signal) = signals.wait() {
                    let _ = events.send(Event::Signal(signal as i32));
                }
            })
            .map_err(|error| format!("cannot start signal thread: {error}"))?;
    }
    drop(events);

    let (failure, exited) = serve_until_stop(&shared, &event_receiver, io_driver);
    stop_shards(&shared, &event_receiver, exited);
    for thread in threads {
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
    match failure {
        Some(error) => Err(error),
        None => {
            tracing::info!("iggy-server stopped");
            Ok(())
        }
    }
}

/// Starts one pinned thread per shard; shard 0 takes the control lane's parts.
fn start_shards(
    shared: &Arc<SharedState>,
    placements: Vec<ShardPlacement>,
    inboxes: Vec<Inboxes>,
    (quic_sockets, quic_config): (Vec<std::net::UdpSocket>, Option<compio_quic::ServerConfig>),
    control: ControlParts,
    events: &mpsc::Sender<Event>,
) -> Result<Vec<std::thread::JoinHandle<()>>, String> {
    let mut control = Some(control);
    let mut threads = Vec::new();
    let mut quic_sockets = quic_sockets.into_iter();
    for (id, (placement, inbox)) in placements.into_iter().zip(inboxes).enumerate() {
        let id = id as u16;
        let quic = quic_sockets.next().zip(quic_config.clone());
        let shared = shared.clone();
        let events = events.clone();
        let control = if id == 0 { control.take() } else { None };
        let thread = std::thread::Builder::new()
            .name(format!("shard-{id}"))
            .spawn(move || {
                crate::logging::set_shard(id);
                if let Err(error) = shard_main(id, placement, shared, inbox, control, quic, &events)
                {
                    let _ = events.send(Event::Failed(id, error));
                }
                let _ = events.send(Event::Exited(id));
            })
            .map_err(|error| format!("cannot start shard thread: {error}"))?;
        threads.push(thread);
    }
    Ok(threads)
}

/// Reports when every shard listens, and waits for a signal or a shard's failure. Returns the
/// failure (if any) and how many shards have exited already.
fn serve_until_stop(
    shared: &SharedState,
    event_receiver: &mpsc::Receiver<Event>,
    io_driver: crate::io_driver::IoDriver,
) -> (Option<String>, usize) {
    let shard_count = shared.shard_count;
    let mut listening = 0;
    let mut failure = None;
    let mut exited = 0;
    for event in event_receiver {
        match event {
            Event::Listening(id, address) => {
                listening += 1;
                tracing::debug!(shard = id, %address, "shard listening");
                if listening == shard_count {
                    // The TCP line comes last: harnesses and scripts take it to mean "ready" and
                    // read both bound addresses (port 0 resolved) from the log up to it.
                    if let Some(quic) = shared.quic_address {
                        tracing::info!(address = %quic, shards = shard_count, "iggy-server is listening for QUIC connections");
                    }
                    if let Some(websocket) = shared.websocket_address.get() {
                        tracing::info!(address = %websocket, tls = shared.websocket_tls.is_some(), shards = shard_count, "iggy-server is listening for WebSocket connections");
                    }
                    let io_driver = shared.io_driver.get().copied().unwrap_or(io_driver);
                    tracing::info!(%address, tls = shared.tls.is_some(), shards = shard_count, %io_driver, "iggy-server is listening for TCP connections");
                }
            }
            Event::Failed(id, error) => {
                tracing::error!(shard = id, %error, "shard failed");
                failure.get_or_insert(format!("shard {id}: {error}"));
                break;
            }
            Event::Exited(id) => {
                exited += 1;
                failure.get_or_insert(format!("shard {id} stopped unexpectedly"));
                break;
            }
            Event::Signal(signal) => {
                tracing::info!(signal, "stop signal received; shutting down");
                break;
            }
        }
    }

    (failure, exited)
}

/// Asks every shard to stop and waits (bounded) until they have drained their connections and
/// closed their partitions.
fn stop_shards(shared: &SharedState, event_receiver: &mpsc::Receiver<Event>, mut exited: usize) {
    let shard_count = shared.shard_count;
    for inbox in &shared.inboxes {
        let _ = inbox.send(ShardMessage::Stop);
    }
    // Each shard drains its connections (bounded) and closes its partitions.
    let deadline =
        std::time::Instant::now() + crate::frontend::DRAIN_TIMEOUT + Duration::from_secs(20);
    while exited < shard_count as usize {
        let remaining = deadline.saturating_duration_since(std::time::Instant::now());
        match event_receiver.recv_timeout(remaining) {
            Ok(Event::Exited(_)) => exited += 1,
            Ok(Event::Failed(id, error)) => {
                tracing::error!(shard = id, %error, "shard failed during shutdown")
            }
            Ok(_) => {}
            Err(_) => {
                tracing::error!("shards did not stop in time; exiting anyway");
                break;
            }
        }
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Prepares the data directory (created, private), checks it against the encryption key and
/// recovers the metadata. Returns the metadata and the key (taken out of `config`).
fn open_data_directory(
    config: &mut Config,
) -> Result<(Recovered, Option<crate::encryption::MasterKey>), String> {
    let data_dir = config.system.path.clone();
    std::fs::create_dir_all(data_dir.join("streams")).map_err(|error| {
        format!(
            "cannot create data directory {}: {error}",
            data_dir.display()
        )
    })?;
    // A data directory made by an older version, or by hand, may be open to others: close it
    // (what is inside is then unreachable for them whatever its own mode). A directory owned by
    // another user (a bind mount) cannot be changed: say so, and go on.
    {
        use std::os::unix::fs::PermissionsExt;
        if let Err(error) =
            std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o700))
        {
            tracing::warn!(path = %data_dir.display(), %error, "cannot make the data directory private (mode 0700)");
        }
    }

    let state_dir = data_dir.join("state");
    let encryption = config.system.encryption.master_key()?;
    // Only the derived keys are needed from here on: the configuration the server keeps (and a
    // snapshot could show) no longer holds the key text. The freed memory is not scrubbed.
    config.system.encryption.key = Default::default();
    let has_metadata = [log::LOG_FILE, log::SNAPSHOT_FILE].iter().any(|file| {
        std::fs::metadata(state_dir.join(file)).is_ok_and(|metadata| metadata.len() > 0)
    });
    crate::encryption::check_data_dir(&state_dir, encryption.as_ref(), has_metadata)?;
    if encryption.is_some() {
        tracing::info!("encryption at rest is on (AES-256-GCM)");
    }
    let recovered = log::recover(
        &state_dir,
        encryption.as_ref().map(|key| key.metadata_log()).as_ref(),
    )
    .map_err(|error| format!("cannot recover metadata: {error}"))?;
    tracing::info!(
        streams = recovered.metadata.streams.len(),
        users = recovered.metadata.users.len(),
        replayed = recovered.replayed_records,
        truncated_bytes = recovered.truncated_bytes,
        "metadata recovered"
    );
    if recovered.truncated_bytes > 0 {
        tracing::warn!(
            bytes = recovered.truncated_bytes,
            "truncated a torn tail of the metadata log"
        );
    }
    remove_orphaned_directories(&data_dir, &recovered.metadata);
    Ok((recovered, encryption))
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot: runs before any shard serves"
)]
/// Deletes stream, topic and partition directories the metadata does not know: what a crash
/// between a delete's log append and its file removal leaves behind.
fn remove_orphaned_directories(data_dir: &Path, metadata: &Metadata) {
    let numbered = |dir: &Path| -> Vec<(u32, std::path::PathBuf)> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|entry| {
                        Some((entry.file_name().to_str()?.parse().ok()?, entry.path()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let remove = |path: &Path| {
        tracing::warn!(path = %path.display(), "removing directory not present in metadata");
        let _ = std::fs::remove_dir_all(path);
    };
    for (stream_id, stream_path) in numbered(&data_dir.join("streams")) {
        let Some(stream) = metadata.streams.get(&stream_id) else {
            remove(&stream_path);
            continue;
        };
        for (topic_id, topic_path) in numbered(&stream_path.join("topics")) {
            let Some(topic) = stream.topics.get(&topic_id) else {
                remove(&topic_path);
                continue;
            };
            let known: BTreeSet<u32> = topic.partitions.iter().map(|p| p.id).collect();
            for (partition_id, partition_path) in numbered(&topic_path.join("partitions")) {
                if !known.contains(&partition_id) {
                    remove(&partition_path);
                }
            }
        }
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards, so that
/// only the signal thread's sigwait takes them. main calls it before any thread exists (the
/// telemetry exporters start with logging): a thread started earlier would take SIGTERM with
/// its default action and end the process without a shutdown. Idempotent.
pub fn block_termination_signals() -> Result<nix::sys::signal::SigSet, String> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|error| format!("cannot block signals: {error}"))?;
    Ok(set)
}

type ControlParts = (
    left_right::WriteHandle<Metadata, MetadataOp>,
    flume::Receiver<ControlRequest>,
    Recovered,
    RootCredentials,
    Option<crate::cluster::link::Link>,
);

/// Takes the shard's inbox messages: work for the shard (each as its own task), connections
/// for the front-end to adopt, and the stop signal.
async fn serve_inbox(shard: Rc<Shard>, inbox: flume::Receiver<ShardMessage>) {
    while let Ok(message) = inbox.recv_async().await {
        shard.metrics.inbox_messages.inc();
        match message {
            ShardMessage::Work(work) => {
                compio::runtime::spawn(shard.clone().handle_work(work)).detach()
            }
            ShardMessage::AdoptConnection { socket, session } => {
                compio::runtime::spawn(crate::frontend::tcp::adopt(shard.clone(), socket, session))
                    .detach()
            }
            ShardMessage::Stop => shard.begin_shutdown(),
        }
    }
}

/// A shard's inbox, and the channel of the HTTP API's commands for it.
type Inboxes = (
    flume::Receiver<ShardMessage>,
    flume::Receiver<crate::http::ShardTask>,
);

fn shard_main(
    id: u16,
    placement: ShardPlacement,
    shared: Arc<SharedState>,
    (inbox, http_tasks): Inboxes,
    control: Option<ControlParts>,
    quic: Option<(std::net::UdpSocket, compio_quic::ServerConfig)>,
    events: &mpsc::Sender<Event>,
) -> Result<(), String> {
    pin_current_thread(placement).map_err(|error| format!("cannot pin shard {id}: {error}"))?;
    let runtime = crate::io_driver::build_runtime(&shared.io_plan)?;
    let driver = crate::io_driver::driver_of(&runtime);
    if driver != shared.io_plan.driver {
        // compio's own check: the kernel's io_uring lacks an operation it needs.
        tracing::warn!(shard = id, planned = %shared.io_plan.driver, %driver, "the shard runs on another I/O driver than planned");
    }
    let _ = shared.io_driver.set(driver);
    if driver == crate::io_driver::IoDriver::IoUring {
        // The ring's fd lets the scraper read its submission and completion counters (fdinfo);
        // the readiness driver's fd is an epoll instance, which has none.
        shared.metrics.shards[id as usize].ring_fd.store(
            std::os::fd::AsRawFd::as_raw_fd(&runtime),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    runtime.block_on(async move {
        let shard = Rc::new(Shard::new(id, shared.clone()));
        compio::runtime::spawn(serve_inbox(shard.clone(), inbox)).detach();
        compio::runtime::spawn(crate::http::serve_tasks(shard.clone(), http_tasks)).detach();

        if let Some((writer, requests, recovered, root, cluster)) = control {
            let state_dir = shared.config.system.path.join("state");
            let cipher = shared.encryption.as_ref().map(|key| key.metadata_log());
            let log = MetadataLog::open(&state_dir, &recovered, shared.config.system.state.snapshot_threshold.0, cipher)
                .await
                .map_err(|error| format!("cannot open the metadata log: {error}"))?;
            let clustered = cluster.is_some();
            let mut control = ControlPlane::new(shard.clone(), writer, log, cluster);
            // A cluster's root user is created once, by its first leader (ControlPlane::run).
            let root = if clustered {
                Some(root)
            } else {
                control.ensure_root(&root).await.map_err(|code| format!("cannot create the root user: {code}"))?;
                None
            };
            compio::runtime::spawn(control.run(requests, TOKEN_CLEANUP_INTERVAL, root)).detach();
        }

        let owned: Vec<_> = shared
            .shards_table
            .keys()
            .into_iter()
            .filter(|key| key.owner(shared.shard_count) == id)
            .collect();
        let opened = owned.len();
        for key in owned {
            if let Err(code) = shard.open_partition(key).await {
                shared.partitions_not_opened.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                tracing::error!(partition = %key, %code, "cannot open partition; it stays unavailable");
            }
        }
        tracing::info!(shard = id, cpu = placement.cpu, partitions = opened, "shard started");
        crate::maintenance::spawn_periodic_tasks(&shard);
        crate::maintenance::spawn_metrics_publisher(&shard);
        shared.shards_started.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        while shared.shards_started.load(std::sync::atomic::Ordering::Acquire) < shared.shard_count {
            compio::time::sleep(Duration::from_millis(5)).await;
        }
        // Every partition has replayed its records: the logs may be written again, unless a
        // partition could not be opened (its records are kept for the next start).
        shared.wal_recovery.forget_the_rest();
        let keep_logs = shared.partitions_not_opened.load(std::sync::atomic::Ordering::Acquire) > 0;
        if let Some(wal) = shard.wal() {
            wal.start(keep_logs).await;
        }
        if id == 0 && !keep_logs {
            crate::storage::wal::remove_spent(&shared.config.system.path, shared.shard_count).await;
        }

        let quic = match quic {
            Some((socket, config)) => {
                let endpoint = crate::frontend::quic::endpoint(socket, config)
                    .map_err(|error| format!("cannot start the QUIC endpoint: {error}"))?;
                Some(compio::runtime::spawn(crate::frontend::quic::accept_loop(shard.clone(), endpoint)))
            }
            None => None,
        };
        // Bound before the TCP listener, whose readiness line is the last start-up line.
        let websocket = if shared.config.websocket.enabled {
            let listener = bind_websocket(id, &shared).await?;
            Some(compio::runtime::spawn(crate::frontend::websocket::accept_loop(shard.clone(), listener)))
        } else {
            None
        };
        if shared.config.tcp.enabled {
            let address = if id == 0 {
                shared.config.tcp.address
            } else {
                // Wait for shard 0 to resolve the address (port 0 becomes a real port).
                loop {
                    if let Some(address) = shared.tcp_address.get() {
                        break *address;
                    }
                    compio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            let listener = crate::frontend::tcp::bind(address, &shared.config.tcp.socket)
                .await
                .map_err(|error| format!("cannot listen on {address}: {error}"))?;
            let bound = listener.local_addr().map_err(|error| error.to_string())?;
            if id == 0 {
                let _ = shared.tcp_address.set(bound);
            }
            let _ = events.send(Event::Listening(id, bound));
            crate::frontend::tcp::accept_loop(shard.clone(), listener).await;
        } else {
            let _ = events.send(Event::Listening(id, shared.config.tcp.address));
            let _ = shard.shutdown_signal.recv_async().await;
        }

        if let Some(quic) = quic {
            // It drains its own connections and closes the endpoint.
            let _ = quic.await;
        }
        if let Some(websocket) = websocket {
            let _ = websocket.await;
        }
        // Shutdown: let connections finish their current request, then close partitions.
        let drain_until = std::time::Instant::now() + crate::frontend::DRAIN_TIMEOUT;
        while shard.connections.get() > 0 && std::time::Instant::now() < drain_until {
            compio::time::sleep(Duration::from_millis(10)).await;
        }
        let partitions = shard.local_partitions();
        let count = partitions.len();
        for partition in partitions {
            if let Err(error) = partition.close().await {
                tracing::error!(partition = %partition.key, %error, "cannot flush partition at shutdown");
            }
        }
        tracing::info!(shard = id, partitions = count, open_connections = shard.connections.get(), "shard stopped");
        Ok(())
    })
}
