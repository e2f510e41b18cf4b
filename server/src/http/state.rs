//! What every HTTP connection task shares.

use super::{bridge, jwt, operators};
use crate::shard::SharedState;
use std::sync::Arc;

pub struct Api {
    pub shared: Arc<SharedState>,
    pub tokens: jwt::Tokens,
    pub operators: Arc<operators::Endpoint>,
    pub bridge: bridge::Bridge,
}
