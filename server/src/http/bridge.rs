//! Runs an HTTP request's command on a shard, as a binary client's request runs: the same
//! handler, permission checks, routing to the partition's owner, metrics and request span.
//!
//! The command travels as a task on the shard's HTTP channel (one per shard, served by
//! [`serve_tasks`] on the shard's event loop, so the shard layer knows nothing of HTTP), with a
//! session of its own made for this one request: logged in as the token's user, client id 0
//! (HTTP clients are not registered, as upstream's are not), transport HTTP. Shards are taken in
//! turn; a data request for another shard's partition is forwarded from there as any is.

use crate::handlers::Response;
use crate::session::Session;
use crate::shard::Shard;
use rill_core::primitives::Transport;
use rill_core::{ErrorCode, Request};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// A command for a shard: it gets the shard and runs on its event loop, and sends its result
/// back over a channel it captured.
pub type ShardTask = Box<dyn FnOnce(Rc<Shard>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// One channel per shard: the senders for the HTTP thread, the receivers for the shards.
#[allow(clippy::type_complexity)]
pub fn task_channels(
    shards: u16,
) -> (
    Vec<flume::Sender<ShardTask>>,
    Vec<flume::Receiver<ShardTask>>,
) {
    (0..shards).map(|_| flume::unbounded()).unzip()
}

/// Runs the HTTP API's commands on this shard, each as a task of its own.
pub async fn serve_tasks(shard: Rc<Shard>, tasks: flume::Receiver<ShardTask>) {
    while let Ok(task) = tasks.recv_async().await {
        compio::runtime::spawn(task(shard.clone())).detach();
    }
}

/// The client id of every HTTP request: registered clients start at 1.
pub const HTTP_CLIENT_ID: u32 = 0;

pub struct Bridge {
    shards: Vec<flume::Sender<ShardTask>>,
    next: AtomicUsize,
}

impl Bridge {
    pub fn new(shards: Vec<flume::Sender<ShardTask>>) -> Bridge {
        Bridge {
            shards,
            next: AtomicUsize::new(0),
        }
    }

    /// How many shards there are (a partition's owner is `PartitionKey::owner` of it).
    pub fn shard_count(&self) -> u16 {
        self.shards.len() as u16
    }

    /// Runs `request` as `user_id` (None: not logged in) for a client at `peer`.
    pub async fn run(
        &self,
        user_id: Option<u32>,
        peer: SocketAddr,
        request: Request,
    ) -> Result<Response, ErrorCode> {
        self.run_as(HTTP_CLIENT_ID, Transport::Http, user_id, peer, request)
            .await
    }

    /// Runs `request` for a session of client `client_id` over `transport`.
    pub async fn run_as(
        &self,
        client_id: u32,
        transport: Transport,
        user_id: Option<u32>,
        peer: SocketAddr,
        request: Request,
    ) -> Result<Response, ErrorCode> {
        let index = self.next_shard().ok_or(ErrorCode::Error)?;
        self.call_on(index, move |shard| {
            Box::pin(async move {
                let mut session = Session::new(client_id, peer, transport);
                if let Some(user_id) = user_id {
                    session.log_in(user_id);
                }
                let slot = crate::metrics::command_slot(request.command().code());
                crate::frontend::run(&shard, &mut session, slot, request, Instant::now()).await
            })
        })
        .await
        .unwrap_or(Err(ErrorCode::Error))
    }

    /// Sends a metadata change that no protocol request can carry to the control lane, as
    /// `user_id`, from the next shard in turn; its payload.
    pub async fn control(
        &self,
        user_id: u32,
        peer: SocketAddr,
        command: crate::shard::message::ControlCommand,
    ) -> Result<Vec<u8>, ErrorCode> {
        let index = self.next_shard().ok_or(ErrorCode::Error)?;
        let mut session = Session::new(HTTP_CLIENT_ID, peer, Transport::Http);
        session.log_in(user_id);
        self.call_on(index, move |shard| {
            Box::pin(async move { shard.control(command, &session).await })
        })
        .await
        .unwrap_or(Err(ErrorCode::Error))
    }

    /// The shard whose turn it is to take the next piece of work (None: no shards).
    fn next_shard(&self) -> Option<usize> {
        let count = self.shards.len();
        (count > 0).then(|| self.next.fetch_add(1, Ordering::Relaxed) % count)
    }

    /// Runs `work` on shard `index`'s event loop and returns what it gives; None when there is
    /// no such shard or it has stopped (the server is shutting down).
    pub async fn call_on<T: Send + 'static>(
        &self,
        index: usize,
        work: impl FnOnce(Rc<Shard>) -> Pin<Box<dyn Future<Output = T>>> + Send + 'static,
    ) -> Option<T> {
        let sender = self.shards.get(index)?;
        let (reply, answer) = flume::bounded(1);
        let task: ShardTask = Box::new(move |shard| {
            Box::pin(async move {
                let _ = reply.send(work(shard).await);
            })
        });
        sender.send_async(task).await.ok()?;
        answer.recv_async().await.ok()
    }

    /// Runs `work` on a shard (the next one in turn).
    pub async fn on_a_shard(&self, work: impl FnOnce(&Shard) + Send + 'static) {
        let Some(shard) = self.next_shard() else {
            return;
        };
        let task: ShardTask = Box::new(move |shard| {
            Box::pin(async move {
                work(&shard);
            })
        });
        let _ = self.shards[shard].send_async(task).await;
    }
}
