//! The sessions connected to any shard, for GetMe/GetClient/GetClients and GetStats, and the
//! handle the control lane uses to end a user's sessions. One entry per session, keyed by a
//! client id that no other live session has (a counter: upstream hashes the peer address,
//! which lets a QUIC and a TCP session from one ip:port share an id).

use dashmap::DashMap;
use rill_core::primitives::Transport;
use rill_core::responses::{ClientDetails, ClientGroup, ClientInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[derive(Debug, Clone)]
pub struct ClientEntry {
    pub client_id: u32,
    pub address: String,
    pub transport: Transport,
    pub user_id: Option<u32>,
    /// (stream, topic, group) memberships.
    pub groups: Vec<(u32, u32, u32)>,
    pub shard: u16,
    /// The session's revocation flag (see `Session::revocation`).
    pub revoked: Arc<AtomicBool>,
}

/// Not logged in, as the protocol reports it.
pub const NO_USER: u32 = u32::MAX;

impl ClientEntry {
    pub fn info(&self) -> ClientInfo {
        ClientInfo {
            client_id: self.client_id,
            user_id: self.user_id.unwrap_or(NO_USER),
            transport: self.transport,
            address: self.address.clone(),
            consumer_groups_count: self.groups.len() as u32,
        }
    }

    pub fn details(&self) -> ClientDetails {
        ClientDetails {
            client_id: self.client_id,
            user_id: self.user_id.unwrap_or(NO_USER),
            transport: self.transport,
            address: self.address.clone(),
            consumer_groups: self
                .groups
                .iter()
                .map(|&(stream_id, topic_id, group_id)| ClientGroup {
                    stream_id,
                    topic_id,
                    group_id,
                })
                .collect(),
        }
    }
}

#[derive(Debug, Default)]
pub struct ClientRegistry {
    entries: DashMap<u32, ClientEntry>,
    last_id: AtomicU32,
}

impl ClientRegistry {
    /// A client id no live session has (never 0, which the protocol reserves).
    pub fn next_id(&self) -> u32 {
        loop {
            let id = self.last_id.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 && !self.entries.contains_key(&id) {
                return id;
            }
        }
    }

    /// Ends the sessions of `user_id` (but `except`, the session that asked): they are shown as
    /// logged out at once and refused at their next request. Returns how many.
    pub fn revoke_user(&self, user_id: u32, except: Option<u32>) -> usize {
        let mut revoked = 0;
        for mut entry in self.entries.iter_mut() {
            if entry.user_id == Some(user_id) && Some(entry.client_id) != except {
                entry.revoked.store(true, Ordering::Release);
                entry.user_id = None;
                revoked += 1;
            }
        }
        revoked
    }

    /// How many sessions are logged in as `user_id`.
    pub fn sessions_of(&self, user_id: u32) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.user_id == Some(user_id))
            .count()
    }

    /// Whether the client is a member of any consumer group.
    pub fn in_any_group(&self, client_id: u32) -> bool {
        self.entries
            .get(&client_id)
            .is_some_and(|entry| !entry.groups.is_empty())
    }

    pub fn register(&self, entry: ClientEntry) {
        self.entries.insert(entry.client_id, entry);
    }

    pub fn remove(&self, client_id: u32) {
        self.entries.remove(&client_id);
    }

    /// Records that the client's connection is now served by `shard`.
    pub fn set_shard(&self, client_id: u32, shard: u16) {
        if let Some(mut entry) = self.entries.get_mut(&client_id) {
            entry.shard = shard;
        }
    }

    pub fn set_user(&self, client_id: u32, user_id: Option<u32>) {
        if let Some(mut entry) = self.entries.get_mut(&client_id) {
            entry.user_id = user_id;
        }
    }

    pub fn join_group(&self, client_id: u32, group: (u32, u32, u32)) {
        if let Some(mut entry) = self.entries.get_mut(&client_id)
            && !entry.groups.contains(&group)
        {
            entry.groups.push(group);
        }
    }

    pub fn leave_group(&self, client_id: u32, group: (u32, u32, u32)) {
        if let Some(mut entry) = self.entries.get_mut(&client_id) {
            entry.groups.retain(|joined| *joined != group);
        }
    }

    pub fn get(&self, client_id: u32) -> Option<ClientEntry> {
        self.entries.get(&client_id).map(|entry| entry.clone())
    }

    pub fn all(&self) -> Vec<ClientEntry> {
        let mut all: Vec<_> = self.entries.iter().map(|entry| entry.clone()).collect();
        all.sort_by_key(|entry| entry.client_id);
        all
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
