//! Every command: resolve settings and credentials, connect, run, print. `run` and the
//! dispatcher live here; each command group has a module.

mod contexts;
mod groups;
mod messages;
mod session;
mod streams;
mod system;
mod topics;
mod users;
mod values;
mod views;

use crate::args::*;
use crate::context::Home;
use crate::error::CliError;
use crate::output::Printer;
use contexts::run_context;
use groups::{group_command, offset_command};
use messages::{flush_command, poll_command, send_command};
use rill_sdk::Client;
use session::{
    Settings, client_for, login, login_command, logout_command, resolve_login, settings,
};
use std::io::Write;
use streams::stream_command;
use system::{
    client_command, cluster_command, me_command, ping_command, snapshot_command, stats_command,
};
use topics::{partition_command, segment_command, topic_command};
use users::{pat_command, user_command};

pub async fn run(global: GlobalArgs, command: Command) -> Result<(), CliError> {
    let printer = Printer {
        quiet: global.quiet,
        json: global.json,
    };
    let home = Home::locate();
    if let Command::Context(action) = command {
        return run_context(&printer, &home, action);
    }
    let settings = settings(&global, home.active_context()?)?;
    if let Some(path) = &global.debug
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(file, "command: {command:?}\nserver: {}", settings.address);
    }
    let client = client_for(&settings)?;
    let needs_login = !matches!(command, Command::Ping(_));
    let is_login_command = matches!(command, Command::Login(_));
    if is_login_command && home.session_token(&settings.address).is_some() {
        printer.info(format!(
            "Already logged into Iggy server {}",
            settings.address
        ));
        return Ok(());
    }
    if matches!(command, Command::Logout) && home.session_token(&settings.address).is_none() {
        printer.info(format!("Not logged into Iggy server {}", settings.address));
        return Ok(());
    }
    if needs_login {
        let credentials = resolve_login(&settings, &home, !is_login_command)?;
        login(&client, &credentials, &settings, &home).await?;
    }
    let result = execute(&printer, &client, &settings, &home, command).await;
    client.shutdown().await;
    result
}

async fn execute(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
    command: Command,
) -> Result<(), CliError> {
    match command {
        Command::Stream(action) => stream_command(printer, client, action).await,
        Command::Topic(action) => topic_command(printer, client, action).await,
        Command::Partition(action) => partition_command(printer, client, action).await,
        Command::Segment(action) => segment_command(printer, client, action).await,
        Command::Ping(args) => ping_command(printer, client, args).await,
        Command::Me => me_command(printer, client).await,
        Command::Stats(args) => stats_command(printer, client, args).await,
        Command::Snapshot(args) => snapshot_command(printer, client, args).await,
        Command::Pat(action) => pat_command(printer, client, settings, home, action).await,
        Command::User(action) => user_command(printer, client, action).await,
        Command::Client(action) => client_command(printer, client, action).await,
        Command::Cluster(ClusterAction::Metadata(list)) => {
            cluster_command(printer, client, list).await
        }
        Command::ConsumerGroup(action) => group_command(printer, client, action).await,
        Command::ConsumerOffset(action) => offset_command(printer, client, action).await,
        Command::Message(action) => match action {
            MessageAction::Send(args) => send_command(printer, client, args).await,
            MessageAction::Poll(args) => poll_command(printer, client, args).await,
            MessageAction::Flush {
                fsync,
                stream_id,
                topic_id,
                partition_id,
            } => flush_command(printer, client, fsync, stream_id, topic_id, partition_id).await,
        },
        Command::Login(args) => login_command(printer, client, settings, home, args).await,
        Command::Logout => logout_command(printer, client, settings, home).await,
        Command::Context(_) | Command::Completion(_) => unreachable!("handled before connecting"),
    }
}
