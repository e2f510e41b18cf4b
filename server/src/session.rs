//! One connection's session (one client, protocol.md 1.4), and the connection-move policy: when
//! a plain TCP connection should be handed to the shard that owns the partitions it uses.

use bytes::Bytes;
use rill_core::primitives::Transport;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Session {
    pub client_id: u32,
    pub address: SocketAddr,
    pub transport: Transport,
    pub user_id: Option<u32>,
    /// When the session last sent a heartbeat: a Ping for 0.8, any request for 0.9.
    pub last_heartbeat: Instant,
    /// Which shard this session's data requests go to (see [`Affinity`]).
    pub affinity: Affinity,
    /// Whether its polls keep finding a partition's tail empty (see [`TailPolls`]).
    pub tail_polls: TailPolls,
    /// Set by the control lane (through the clients registry, which shares it) when the
    /// logged-in user's authority ends: deleted, deactivated, or its password changed by
    /// another session. The session is then logged out at its next request.
    revoked: Arc<AtomicBool>,
    /// Failed logins on this connection so far.
    pub login_failures: u32,
    /// The transport closes the connection once the current response is written.
    pub close_requested: bool,
    /// The protocol generation the connection speaks, decided by its first bytes.
    pub generation: Generation,
    /// Boxed: most sessions speak 0.8 and a session moves between shards by value.
    pub v09: Box<V09State>,
}

/// Which protocol generation a connection speaks (protocol-0.9.md 1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generation {
    #[default]
    Undecided,
    V08,
    V09,
}

/// How many replies to replicated metadata requests a 0.9 session keeps for re-sending, as
/// upstream does (protocol-0.9.md 3.6).
pub const V09_REPLY_RING: usize = 5;

/// A 0.9 session: its number, bound at login, and the replies to its latest replicated
/// metadata requests, so that a repeated request is answered again instead of applied twice.
#[derive(Debug, Clone, Default)]
pub struct V09State {
    /// 0 until a login binds one.
    pub session: u64,
    /// The highest request number applied.
    pub highest: u64,
    /// (request number, request checksum, reply frame), oldest first.
    pub replies: VecDeque<(u64, u128, Vec<Bytes>)>,
}

impl V09State {
    /// The reply to an earlier request with this number, if it is still kept and the checksums
    /// agree (0 agrees with anything).
    pub fn cached(&self, request: u64, checksum: u128) -> Option<&Vec<Bytes>> {
        self.replies
            .iter()
            .find(|(number, sum, _)| {
                *number == request && (checksum == 0 || *sum == 0 || *sum == checksum)
            })
            .map(|(_, _, reply)| reply)
    }

    pub fn remember(&mut self, request: u64, checksum: u128, reply: Vec<Bytes>) {
        self.highest = self.highest.max(request);
        if self.replies.len() == V09_REPLY_RING {
            self.replies.pop_front();
        }
        self.replies.push_back((request, checksum, reply));
    }

    /// A new login or a logout starts over.
    pub fn reset(&mut self) {
        *self = V09State::default();
    }
}

impl Session {
    pub fn new(client_id: u32, address: SocketAddr, transport: Transport) -> Self {
        Session {
            client_id,
            address,
            transport,
            user_id: None,
            last_heartbeat: Instant::now(),
            affinity: Affinity::default(),
            tail_polls: TailPolls::default(),
            revoked: Arc::new(AtomicBool::new(false)),
            login_failures: 0,
            close_requested: false,
            generation: Generation::Undecided,
            v09: Box::default(),
        }
    }

    /// The flag the clients registry holds to revoke this session.
    pub fn revocation(&self) -> Arc<AtomicBool> {
        self.revoked.clone()
    }

    /// The session now acts as `user_id`. Clears an earlier revocation: the caller checks,
    /// after registering the login, that the user it verified is still the one in the metadata.
    pub fn log_in(&mut self, user_id: u32) {
        self.revoked.store(false, Ordering::Release);
        self.user_id = Some(user_id);
        self.login_failures = 0;
    }

    pub fn log_out(&mut self) {
        self.user_id = None;
    }

    /// Whether a logged-in session's authority has ended (see `revoked`).
    pub fn is_revoked(&self) -> bool {
        self.user_id.is_some() && self.revoked.load(Ordering::Acquire)
    }
}

/// A plain TCP session whose last this many small data requests in a row went to the same
/// other shard moves to that shard. Each forwarded request costs two cross-core wake-ups (there
/// and back): a 1-message producer forwarded this way made 9.3-10.5 k msgs/s on this 2-core VM,
/// 15.8-16.6 k when served by the owner. A run of several keeps a client that alternates between
/// shards' partitions from bouncing.
const MOVE_AFTER_REMOTE_REQUESTS: u32 = 4;

/// Requests whose body is at least this large do not count towards a move, and reset the
/// count: for a large send the hop is small next to the copying, and the shard that accepted
/// the connection copying the socket's bytes while the owner stamps, stages and writes them
/// spreads a session over two cores, which matters when several busy partitions hash to one
/// shard. Large replies (polls) do count: their socket copy runs on the connection's shard
/// wherever the partition is, so a consumer left on the shard it was accepted by puts its sends
/// on whichever core the kernel's hash chose, and two consumers of partitions on different
/// shards could both land on one core; on its partition's owner the consumer's copy runs where
/// its data is. Two pinned consumers of upstream's iggy-bench polling 1 MB batches from the read
/// cache, 6 runs each: 2.33 GB/s median and 0.64-1.07 s of server CPU per 2 GB before, 2.87 GB/s
/// and 0.48-0.83 s with consumers moving.
const SMALL_REQUEST_BYTES: usize = 64 * 1024;

/// The connection-move policy, all of it: the other shard that owned the partitions of this
/// session's latest data requests and how many in a row, none with a large body, went there. Handlers note
/// owners, the TCP front-end notes sizes and asks for a [`destination`](Affinity::destination)
/// between requests, when nothing is in flight on the socket.
#[derive(Debug, Clone, Default)]
pub struct Affinity {
    remote: Option<(u16, u32)>,
}

impl Affinity {
    /// A data request went to a partition owned by `owner`; the session is served by `here`.
    pub fn note_owner(&mut self, owner: u16, here: u16) {
        self.remote = match self.remote {
            _ if owner == here => None,
            Some((shard, count)) if shard == owner => Some((shard, count.saturating_add(1))),
            _ => Some((owner, 1)),
        };
    }

    /// A request's body was `bytes` long: large ones break the run.
    pub fn note_request_bytes(&mut self, bytes: usize) {
        if bytes >= SMALL_REQUEST_BYTES {
            self.remote = None;
        }
    }

    /// The shard this session should move to now, if any.
    pub fn destination(&self) -> Option<u16> {
        self.remote
            .filter(|&(_, count)| count >= MOVE_AFTER_REMOTE_REQUESTS)
            .map(|(shard, _)| shard)
    }

    /// Starts counting afresh (after a move, or a move that could not be made).
    pub fn reset(&mut self) {
        self.remote = None;
    }
}

/// The empty-poll wait policy, all of it. A consumer that polls a partition again soon after
/// an empty answer is following its tail: upstream's iggy-bench and clients that poll in a loop
/// send the next poll at once, so a consumer keeping up with two producers sent 33 000 empty
/// polls a second, each a round trip of CPU on both sides of a 2-core machine that the
/// producers needed (67 892 polls for 2 000 batches). Such a poll waits up to the configured
/// time for the next message instead and is answered as soon as it is visible, which is also
/// sooner than the client's next poll would have seen it. A first empty poll, a poll of another
/// partition in between (a client going round its partitions) or a pause longer than the wait
/// is answered at once, as upstream answers.
#[derive(Debug, Clone, Default)]
pub struct TailPolls {
    /// The partition (stream, topic, partition ids) whose last poll by this session found
    /// nothing new, and when that answer went out.
    last_empty: Option<((u32, u32, u32), Instant)>,
}

impl TailPolls {
    /// How long a poll of `partition` may wait for data, with `wait` configured.
    pub fn wait_for(&self, partition: (u32, u32, u32), wait: Duration, now: Instant) -> Duration {
        match self.last_empty {
            Some((last, at)) if last == partition && now.saturating_duration_since(at) <= wait => {
                wait
            }
            _ => Duration::ZERO,
        }
    }

    /// A poll of `partition` was answered at `now`, with messages or without.
    pub fn note(&mut self, partition: (u32, u32, u32), empty: bool, now: Instant) {
        self.last_empty = empty.then_some((partition, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_poll_again_soon_after_an_empty_answer_waits() {
        let wait = Duration::from_millis(10);
        let start = Instant::now();
        let mut tail = TailPolls::default();
        let p = (1, 0, 0);
        assert_eq!(
            tail.wait_for(p, wait, start),
            Duration::ZERO,
            "a first poll"
        );
        tail.note(p, true, start);
        assert_eq!(
            tail.wait_for(p, wait, start + Duration::from_millis(1)),
            wait
        );
        assert_eq!(
            tail.wait_for((1, 0, 1), wait, start),
            Duration::ZERO,
            "another partition"
        );
        assert_eq!(
            tail.wait_for(p, wait, start + Duration::from_millis(11)),
            Duration::ZERO,
            "a pause longer than the wait"
        );
        assert_eq!(tail.wait_for(p, Duration::ZERO, start), Duration::ZERO);
        tail.note((1, 0, 1), true, start);
        assert_eq!(
            tail.wait_for(p, wait, start),
            Duration::ZERO,
            "round the partitions"
        );
        tail.note(p, false, start);
        assert_eq!(
            tail.wait_for(p, wait, start),
            Duration::ZERO,
            "after messages came back"
        );
    }

    #[test]
    fn a_run_of_small_requests_to_one_other_shard_moves_the_session() {
        let mut affinity = Affinity::default();
        for _ in 0..MOVE_AFTER_REMOTE_REQUESTS - 1 {
            affinity.note_owner(1, 0);
            affinity.note_request_bytes(100);
        }
        assert_eq!(affinity.destination(), None);
        affinity.note_owner(1, 0);
        assert_eq!(affinity.destination(), Some(1));
        affinity.note_owner(0, 0);
        assert_eq!(
            affinity.destination(),
            None,
            "a local request breaks the run"
        );
    }

    #[test]
    fn large_requests_and_other_shards_break_the_run() {
        let mut affinity = Affinity::default();
        for _ in 0..10 {
            affinity.note_owner(1, 0);
        }
        affinity.note_request_bytes(SMALL_REQUEST_BYTES);
        assert_eq!(affinity.destination(), None);
        for _ in 0..MOVE_AFTER_REMOTE_REQUESTS {
            affinity.note_owner(1, 0);
        }
        affinity.note_owner(2, 0);
        assert_eq!(
            affinity.destination(),
            None,
            "counting restarts for shard 2"
        );
    }
}
