//! Consumer groups (protocol.md 4.7, 4.8, 5.2, 5.4, 7.7, 8): commands and their error codes,
//! partition assignment and rebalancing on join / leave / disconnect / partition changes, polls
//! reading only the member's partitions, exactly-once consumption across a changing group with
//! committed offsets, and groups surviving a graceful restart.

#[path = "../support/mod.rs"]
mod support;

mod exactly_once;
mod group_commands;
mod helpers;
mod rebalancing;
mod restart;
