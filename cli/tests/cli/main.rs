//! End-to-end tests of the `iggy` binary against the real server: every command group, the
//! output modes, exit codes and credential handling.

mod env;
mod messages;
mod resources;
mod system;
mod transport;
mod usage;
mod users;
