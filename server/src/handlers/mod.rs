//! Request handlers: one function per command, run on the shard that holds the connection.
//! Reads are answered from the shard's own metadata copy; metadata changes go to shard 0's
//! control lane; partition work goes to the partition's owner (directly when that is this shard).

mod groups;
mod messages;
mod offsets;
mod snapshot;
mod streams;
mod system;
mod users;

use crate::metadata::{Metadata, Stream, Topic, User};
use crate::permissions::{Action, allowed};
use crate::shard::Shard;
use bytes::Bytes;
use rill_core::primitives::{Identifier, Transport};
use rill_core::requests::Request;
use rill_core::{Encode, ErrorCode};
use std::net::SocketAddr;

/// One connection's session (one client, protocol.md 1.4).
#[derive(Debug, Clone)]
pub struct Session {
    pub client_id: u32,
    pub address: SocketAddr,
    pub transport: Transport,
    pub user_id: Option<u32>,
    /// When the session last sent a Ping (the only command that counts as a heartbeat).
    pub last_heartbeat: std::time::Instant,
    /// The other shard that owned the partitions of this session's latest data requests, and
    /// how many of them in a row went there: the TCP front-end moves a connection that keeps
    /// using another shard's partitions to that shard, saving two cross-core hops per request.
    pub remote_owner: Option<(u16, u32)>,
}

impl Session {
    /// Notes which shard owns the partition a data request goes to.
    pub fn note_partition_owner(&mut self, owner: u16, here: u16) {
        self.remote_owner = match self.remote_owner {
            _ if owner == here => None,
            Some((shard, count)) if shard == owner => Some((shard, count.saturating_add(1))),
            _ => Some((owner, 1)),
        };
    }
}

/// What goes back in the response frame's payload.
pub enum Response {
    Empty,
    Bytes(Vec<u8>),
    /// A poll: the 16-byte header, then stored message bytes as they are.
    Polled {
        header: [u8; 16],
        chunks: Vec<Bytes>,
    },
}

impl Response {
    pub fn encoded(value: &impl Encode) -> Response {
        Response::Bytes(value.to_bytes())
    }

    pub fn len(&self) -> usize {
        match self {
            Response::Empty => 0,
            Response::Bytes(bytes) => bytes.len(),
            Response::Polled { header, chunks } => {
                header.len() + chunks.iter().map(Bytes::len).sum::<usize>()
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub type HandlerResult = Result<Response, ErrorCode>;

/// Handles one decoded request for `session`.
pub async fn handle(shard: &Shard, session: &mut Session, request: Request) -> HandlerResult {
    let command = request.command();
    if command.requires_authentication() && session.user_id.is_none() {
        return Err(ErrorCode::Unauthenticated);
    }
    let user_id = session.user_id.unwrap_or(u32::MAX);
    match request {
        Request::Ping(_) => {
            session.last_heartbeat = std::time::Instant::now();
            Ok(Response::Empty)
        }
        Request::LoginUser(request) => users::login(shard, session, request).await,
        Request::LoginWithPersonalAccessToken(request) => {
            users::login_with_token(shard, session, request)
        }
        Request::LogoutUser(_) => users::logout(shard, session),
        Request::GetStats(_) => system::stats(shard, user_id),
        Request::GetMe(_) => system::me(shard, session),
        Request::GetClient(request) => system::client(shard, user_id, request),
        Request::GetClients(_) => system::clients(shard, user_id),
        Request::GetClusterMetadata(_) => system::cluster_metadata(shard),
        Request::GetSnapshot(request) => snapshot::snapshot(shard, request).await,
        Request::GetStream(request) => streams::get_stream(shard, user_id, request),
        Request::GetStreams(_) => streams::get_streams(shard, user_id),
        Request::GetTopic(request) => streams::get_topic(shard, user_id, request),
        Request::GetTopics(request) => streams::get_topics(shard, user_id, request),
        Request::GetUser(request) => users::get_user(shard, user_id, request),
        Request::GetUsers(_) => users::get_users(shard, user_id),
        Request::GetPersonalAccessTokens(_) => users::get_tokens(shard, user_id),
        Request::GetConsumerGroup(request) => groups::get_group(shard, user_id, request),
        Request::GetConsumerGroups(request) => groups::get_groups(shard, user_id, request),
        Request::JoinConsumerGroup(request) => groups::join(shard, session, user_id, request),
        Request::LeaveConsumerGroup(request) => groups::leave(shard, session, user_id, request),
        request @ (Request::CreateStream(_)
        | Request::UpdateStream(_)
        | Request::DeleteStream(_)
        | Request::CreateTopic(_)
        | Request::UpdateTopic(_)
        | Request::DeleteTopic(_)
        | Request::CreatePartitions(_)
        | Request::DeletePartitions(_)
        | Request::CreateConsumerGroup(_)
        | Request::DeleteConsumerGroup(_)) => forward(shard, user_id, request).await,
        request @ (Request::CreateUser(_)
        | Request::DeleteUser(_)
        | Request::UpdateUser(_)
        | Request::UpdatePermissions(_)
        | Request::ChangePassword(_)
        | Request::CreatePersonalAccessToken(_)
        | Request::DeletePersonalAccessToken(_)) => users::change(shard, user_id, request).await,
        Request::PurgeStream(request) => streams::purge_stream(shard, user_id, request).await,
        Request::PurgeTopic(request) => streams::purge_topic(shard, user_id, request).await,
        Request::DeleteSegments(request) => {
            messages::delete_segments(shard, user_id, request).await
        }
        Request::SendMessages(request) => messages::send(shard, session, user_id, request).await,
        Request::PollMessages(request) => messages::poll(shard, session, user_id, request).await,
        Request::FlushUnsavedBuffer(request) => messages::flush(shard, user_id, request).await,
        Request::GetConsumerOffset(request) => offsets::get(shard, session, user_id, request).await,
        Request::StoreConsumerOffset(request) => {
            offsets::store(shard, session, user_id, request).await
        }
        Request::DeleteConsumerOffset(request) => {
            offsets::delete(shard, session, user_id, request).await
        }
    }
}

/// Sends a metadata change to shard 0's control lane.
async fn forward(shard: &Shard, user_id: u32, request: Request) -> HandlerResult {
    let payload = shard.control(request, user_id).await?;
    Ok(if payload.is_empty() {
        Response::Empty
    } else {
        Response::Bytes(payload)
    })
}

/// Looks up the session's user and checks `action`, inside one metadata read.
fn check(metadata: &Metadata, user_id: u32, action: Action) -> Result<(), ErrorCode> {
    let user: &User = metadata
        .users
        .get(&user_id)
        .ok_or(ErrorCode::Unauthenticated)?;
    if allowed(user, action) {
        Ok(())
    } else {
        Err(ErrorCode::Unauthorized)
    }
}

/// Resolves a stream and topic by identifiers: (stream, topic) or the not-found code.
fn resolve<'a>(
    metadata: &'a Metadata,
    stream_id: &Identifier,
    topic_id: &Identifier,
) -> Result<(&'a Stream, &'a Topic), ErrorCode> {
    let stream = metadata
        .stream(stream_id)
        .ok_or(ErrorCode::StreamIdNotFound)?;
    let topic = stream.topic(topic_id).ok_or(ErrorCode::TopicIdNotFound)?;
    Ok((stream, topic))
}
