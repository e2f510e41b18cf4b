//! Who the caller is and what a request names: permission checks and identifier resolution,
//! done inside one metadata read.

use crate::metadata::{Metadata, User};
use crate::permissions::{Action, allowed};
use rill_core::ErrorCode;
use rill_core::primitives::Identifier;

/// Looks up the session's user and checks `action`, inside one metadata read.
pub(super) fn check(metadata: &Metadata, user_id: u32, action: Action) -> Result<(), ErrorCode> {
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

/// The answer to a read of something that does not exist (a stream, or a topic when
/// `topic_id` is given and the stream exists): empty OK for a user who could read it if it
/// existed, 41 for anyone else, so that "missing" and "forbidden" look alike to those who may
/// not see it. A named object that does not exist could be anything in its parent: reading it
/// needs the right to list the parent (all streams, or the stream's topics).
pub(super) fn absent(
    metadata: &Metadata,
    user_id: u32,
    stream_id: &Identifier,
    topic_id: Option<&Identifier>,
) -> Result<super::Response, ErrorCode> {
    let action = match (metadata.stream(stream_id), topic_id) {
        (Some(stream), Some(Identifier::Numeric(topic))) => Action::ReadTopic(stream.id, *topic),
        (Some(stream), _) => Action::ReadTopics(stream.id),
        (None, _) => match stream_id {
            Identifier::Numeric(stream) => Action::ReadStream(*stream),
            Identifier::String(_) => Action::ReadStreams,
        },
    };
    check(metadata, user_id, action)?;
    Ok(super::Response::Empty)
}
