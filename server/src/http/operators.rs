//! The operators' endpoints: `GET /metrics` (Prometheus text, no authentication, as upstream's),
//! `GET /ping`, and `GET /stats` for operators who hold no token (HTTP Basic credentials or a
//! personal access token as a Bearer token, or nothing with `http.public_stats`).
//!
//! A scrape walks every shard's cells, the shards table and /proc without touching the shards'
//! threads: the cells are written with relaxed stores and read here, on the HTTP thread.

use crate::metadata::Metadata;
use crate::metrics::exposition::{self, IoUringTracker, Scrape};
use crate::shard::SharedState;
use std::sync::{Arc, Mutex};

pub struct Endpoint {
    shared: Arc<SharedState>,
    rings: Mutex<IoUringTracker>,
}

impl Endpoint {
    pub fn new(shared: Arc<SharedState>) -> Endpoint {
        Endpoint {
            shared,
            rings: Mutex::new(IoUringTracker::default()),
        }
    }

    /// The GetStats figures; None once the metadata is gone (shutdown).
    pub fn stats(&self) -> Option<rill_core::responses::Stats> {
        current_stats(&self.shared)
    }

    /// The I/O driver the shards run on.
    pub fn io_driver(&self) -> &'static str {
        io_driver(&self.shared)
    }
}

/// Whether the request's `Authorization` header names a user allowed to read server figures:
/// HTTP Basic (username and password, checked like a login) or a personal access token as a
/// Bearer token.
pub fn may_read_stats(endpoint: &Endpoint, authorization: Option<&str>) -> bool {
    use base64::Engine;
    let Some(value) = authorization.map(str::trim) else {
        return false;
    };
    let metadata: left_right::ReadHandle<Metadata> = endpoint.shared.metadata.handle();
    let allowed = |user: &crate::metadata::User| {
        user.status == rill_core::primitives::UserStatus::Active
            && crate::permissions::allowed(user, crate::permissions::Action::ReadServers)
    };
    if let Some(token) = value.strip_prefix("Bearer ") {
        let hash = crate::auth::token_hash(token.trim());
        let now = crate::time::now_micros();
        return metadata.enter().is_some_and(|metadata| {
            metadata.tokens.get(&hash).is_some_and(|token| {
                token.expiry_at.is_none_or(|expiry| expiry > now)
                    && metadata.users.get(&token.user_id).is_some_and(allowed)
            })
        });
    }
    let Some(encoded) = value.strip_prefix("Basic ") else {
        return false;
    };
    let Some(credentials) = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
    else {
        return false;
    };
    let Some((username, password)) = credentials.split_once(':') else {
        return false;
    };
    let user = metadata.enter().and_then(|metadata| {
        metadata
            .users
            .values()
            .find(|user| user.username == username)
            .cloned()
    });
    // An unknown user costs a password check too, as a binary login does.
    let hash = user
        .as_ref()
        .map_or(crate::auth::dummy_password_hash(), |user| {
            user.password_hash.as_str()
        });
    crate::auth::verify_password(password, hash) && user.as_ref().is_some_and(allowed)
}

/// GetStats as shard connections answer it (without the permission check: the endpoint is
/// for operators, as upstream's /metrics). None once the metadata is gone (shutdown).
fn current_stats(shared: &SharedState) -> Option<rill_core::responses::Stats> {
    let metadata: left_right::ReadHandle<Metadata> = shared.metadata.handle();
    let counts = crate::stats::metadata_counts(&*metadata.enter()?);
    Some(crate::stats::server_stats(shared, counts))
}

pub fn metrics_page(endpoint: &Endpoint) -> String {
    let shared = &endpoint.shared;
    let Some(stats) = current_stats(shared) else {
        return prometheus_client_eof();
    };
    let metrics = shared.metrics.snapshot();
    let ring_fds: Vec<i32> = metrics.shards.iter().map(|shard| shard.ring_fd).collect();
    let rings = endpoint
        .rings
        .lock()
        .map(|mut tracker| tracker.read(&ring_fds))
        .unwrap_or_default();
    let (storage, top_partitions) =
        exposition::gather_partitions(shared, shared.config.http.metrics_top_partitions);
    exposition::encode(Scrape {
        metrics,
        stats,
        storage,
        top_partitions,
        rings,
        process: exposition::process_figures(shared.started_at_micros),
        io_driver: io_driver(shared),
    })
}

/// The driver the shards run on (the planned one until a shard has started).
fn io_driver(shared: &SharedState) -> &'static str {
    shared
        .io_driver
        .get()
        .copied()
        .unwrap_or(shared.io_plan.driver)
        .name()
}

fn prometheus_client_eof() -> String {
    "# EOF\n".to_string()
}
