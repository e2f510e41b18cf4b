//! Request handlers: one function per command, run on the shard that holds the connection.
//! Reads are answered from the shard's own metadata copy; metadata changes go to shard 0's
//! control lane; partition work goes to the partition's owner (directly when that is this shard).

mod access;
mod groups;
mod login;
mod messages;
mod offsets;
mod relay;
mod response;
mod snapshot;
mod streams;
mod system;
mod users;

use crate::session::Session;
use crate::shard::Shard;
use crate::shard::message::ControlCommand;
use rill_core::ErrorCode;
use rill_core::requests::{CommandCode, Request};

pub use response::{HandlerResult, Response};

/// The gate every request passes before it is even decoded: a session whose user's authority
/// ended is logged out, and commands other than Ping and the logins need a logged-in session.
/// Unknown command codes pass, to be refused by the decoder (InvalidCommand).
pub fn gate(session: &mut Session, code: u32) -> Result<(), ErrorCode> {
    if session.is_revoked() {
        // Its user was deleted or deactivated, or changed password in another session: the
        // control lane already took it out of the clients table.
        tracing::info!(
            client_id = session.client_id,
            user_id = session.user_id,
            "session logged out: its user's authority ended"
        );
        session.log_out();
    }
    match CommandCode::from_code(code) {
        Some(command) if command.requires_authentication() && session.user_id.is_none() => {
            Err(ErrorCode::Unauthenticated)
        }
        _ => Ok(()),
    }
}

/// SyncConsumerGroup (606), which only the 0.9 protocol has: the caller's partitions in a
/// group, or an empty payload when it is not a member.
pub fn sync_group(
    shard: &Shard,
    session: &Session,
    request: rill_core::requests::GetConsumerGroup,
) -> HandlerResult {
    let user_id = session.user_id.ok_or(ErrorCode::Unauthenticated)?;
    groups::sync(shard, session, user_id, request)
}

/// Handles one decoded request for `session` (which passed [`gate`]).
pub async fn handle(shard: &Shard, session: &mut Session, request: Request) -> HandlerResult {
    let command = request.command();
    if command.requires_authentication() && session.user_id.is_none() {
        return Err(ErrorCode::Unauthenticated);
    }
    let user_id = session.user_id.unwrap_or(u32::MAX);
    if shard
        .shared
        .cluster
        .as_ref()
        .is_some_and(|cluster| cluster.relays())
        && relay::relayed(&request)
    {
        return relay::relay(shard, session, user_id, request).await;
    }
    match request {
        Request::Ping(_) => {
            session.last_heartbeat = std::time::Instant::now();
            Ok(Response::Empty)
        }
        Request::LoginUser(request) => login::login(shard, session, request).await,
        Request::LoginWithPersonalAccessToken(request) => {
            login::login_with_token(shard, session, request).await
        }
        Request::LogoutUser(_) => login::logout(shard, session),
        Request::GetStats(_) => system::stats(shard, user_id).await,
        Request::GetMe(_) => system::me(shard, session),
        Request::GetClient(request) => system::client(shard, user_id, request),
        Request::GetClients(_) => system::clients(shard, user_id),
        Request::GetClusterMetadata(_) => system::cluster_metadata(shard, session),
        Request::GetSnapshot(request) => snapshot::snapshot(shard, user_id, request).await,
        Request::GetStream(request) => streams::get_stream(shard, user_id, request).await,
        Request::GetStreams(_) => streams::get_streams(shard, user_id).await,
        Request::GetTopic(request) => streams::get_topic(shard, user_id, request).await,
        Request::GetTopics(request) => streams::get_topics(shard, user_id, request).await,
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
        | Request::DeleteConsumerGroup(_)
        | Request::CreateUser(_)
        | Request::DeleteUser(_)
        | Request::UpdateUser(_)
        | Request::UpdatePermissions(_)
        | Request::CreatePersonalAccessToken(_)
        | Request::DeletePersonalAccessToken(_)) => {
            let command = ControlCommand::Request(request);
            let payload = shard.control(command, session).await?;
            Ok(Response::from_payload(payload))
        }
        Request::ChangePassword(request) => {
            users::change_password(shard, session, user_id, request).await
        }
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
