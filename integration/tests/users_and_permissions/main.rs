//! Users and permissions (protocol.md 1.4, 2.7, 3, 4.2, 8): user commands with their error codes,
//! the permission matrix for every command, the unauthenticated sweep over all 47 command codes,
//! live permission changes, and users surviving a graceful restart.

#[path = "../support/mod.rs"]
mod support;

mod helpers;
mod live_permission_changes;
mod permission_matrix;
mod permission_oracle;
mod restart;
mod unauthenticated_sweep;
mod user_commands;
