//! Who the caller is and what a request names: permission checks and identifier resolution,
//! done inside one metadata read.

use crate::metadata::{Metadata, Stream, Topic, User};
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

/// Resolves a stream and topic by identifiers: (stream, topic) or the not-found code.
pub(super) fn resolve<'a>(
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
