//! `iggy ping`, `me`, `stats`, `snapshot`, `client`, `cluster`.

use super::views::{client_json, user_id_text, user_id_value};
use crate::args::*;
use crate::error::CliError;
use crate::output::Printer;
use crate::util::*;
use rill_sdk::{Client, SnapshotCompression, SnapshotType};
use serde_json::json;
use std::time::{Duration, Instant};

pub(super) async fn ping_command(
    printer: &Printer,
    client: &Client,
    args: PingArgs,
) -> Result<(), CliError> {
    printer.info("Executing ping command");
    let mut times = Vec::new();
    for sequence in 0..args.count.max(1) {
        let start = Instant::now();
        client.ping().await?;
        let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
        times.push(elapsed_ms);
        printer.info(format!(
            "Ping sequence id: {sequence} time: {elapsed_ms:.2} ms"
        ));
        if sequence + 1 < args.count {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = times.iter().cloned().fold(0.0, f64::max);
    let avg = times.iter().sum::<f64>() / times.len() as f64;
    printer.info(format!(
        "\nPing statistics for {} ping commands\nmin/avg/max = {min:.3}/{avg:.3}/{max:.3} ms",
        times.len()
    ));
    if printer.json {
        printer.json(&json!({"count": times.len(), "min_ms": min, "avg_ms": avg, "max_ms": max}));
    }
    Ok(())
}

pub(super) async fn me_command(printer: &Printer, client: &Client) -> Result<(), CliError> {
    printer.info("Executing me command");
    let me = client.get_me().await?;
    let mut rows = vec![
        ("Client ID", me.client_id.to_string()),
        ("User ID", user_id_text(me.user_id)),
        ("Address", me.address.clone()),
        ("Transport", me.transport.name().to_owned()),
    ];
    let groups: Vec<String> = me
        .consumer_groups
        .iter()
        .map(|g| format!("{}/{}/{}", g.stream_id, g.topic_id, g.group_id))
        .collect();
    if !groups.is_empty() {
        rows.push(("Consumer groups (stream/topic/group)", groups.join(", ")));
    }
    printer.properties(rows, json!({"client_id": me.client_id, "user_id": user_id_value(me.user_id), "address": me.address,
        "transport": me.transport.name(), "consumer_groups": me.consumer_groups.iter().map(|g|
        json!({"stream_id": g.stream_id, "topic_id": g.topic_id, "group_id": g.group_id})).collect::<Vec<_>>()}));
    Ok(())
}

pub(super) async fn client_command(
    printer: &Printer,
    client: &Client,
    action: ClientAction,
) -> Result<(), CliError> {
    match action {
        ClientAction::Get { client_id } => {
            printer.info(format!("Executing get client with ID: {client_id}"));
            let Some(details) = client.get_client(client_id).await? else {
                return Err(CliError::not_found(format!(
                    "Client with ID: {client_id} was not found"
                )));
            };
            let groups: Vec<String> = details
                .consumer_groups
                .iter()
                .map(|g| format!("{}/{}/{}", g.stream_id, g.topic_id, g.group_id))
                .collect();
            printer.properties(
                vec![("Client ID", details.client_id.to_string()), ("User ID", user_id_text(details.user_id)),
                    ("Address", details.address.clone()), ("Transport", details.transport.name().to_owned()),
                    ("Consumer Groups Count", details.consumer_groups.len().to_string()), ("Consumer Groups", groups.join(", "))],
                json!({"client_id": details.client_id, "user_id": user_id_value(details.user_id), "address": details.address,
                    "transport": details.transport.name(), "consumer_groups": details.consumer_groups.iter().map(|g|
                    json!({"stream_id": g.stream_id, "topic_id": g.topic_id, "group_id": g.group_id})).collect::<Vec<_>>()}),
            );
            Ok(())
        }
        ClientAction::List(list) => {
            printer.info(
                format!("Executing list clients in {:?} mode", list.list_mode).to_lowercase(),
            );
            let clients = client.get_clients().await?;
            let rows = clients
                .iter()
                .map(|c| {
                    vec![
                        c.client_id.to_string(),
                        user_id_text(c.user_id),
                        c.address.clone(),
                        c.transport.name().to_owned(),
                        c.consumer_groups_count.to_string(),
                    ]
                })
                .collect();
            printer.rows(
                list.list_mode,
                &[
                    "Client ID",
                    "User ID",
                    "Address",
                    "Transport",
                    "Consumer Groups",
                ],
                rows,
                json!(clients.iter().map(client_json).collect::<Vec<_>>()),
            );
            Ok(())
        }
    }
}

pub(super) async fn cluster_command(
    printer: &Printer,
    client: &Client,
    list: ListArgs,
) -> Result<(), CliError> {
    printer.info("Executing get cluster metadata");
    let metadata = client.get_cluster_metadata().await?;
    let role = |role: u8| if role == 0 { "leader" } else { "follower" };
    let status = |status: u8| {
        [
            "healthy",
            "starting",
            "stopping",
            "unreachable",
            "maintenance",
        ]
        .get(status as usize)
        .copied()
        .unwrap_or("unknown")
    };
    let rows = metadata
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.name.clone(),
                n.ip.clone(),
                n.tcp_port.to_string(),
                n.quic_port.to_string(),
                n.http_port.to_string(),
                n.websocket_port.to_string(),
                role(n.role).to_owned(),
                status(n.status).to_owned(),
            ]
        })
        .collect();
    printer.info(format!("Cluster name: {}", metadata.name));
    printer.rows(list.list_mode, &["Name", "IP", "TCP", "QUIC", "HTTP", "WebSocket", "Role", "Status"], rows,
        json!({"name": metadata.name, "nodes": metadata.nodes.iter().map(|n| json!({"name": n.name, "ip": n.ip, "tcp_port": n.tcp_port,
            "quic_port": n.quic_port, "http_port": n.http_port, "websocket_port": n.websocket_port, "role": role(n.role),
            "status": status(n.status)})).collect::<Vec<_>>()}));
    Ok(())
}

pub(super) async fn stats_command(
    printer: &Printer,
    client: &Client,
    args: StatsArgs,
) -> Result<(), CliError> {
    printer.info("Executing get stats");
    let s = client.get_stats().await?;
    let json = json!({
        "process_id": s.process_id, "cpu_usage": s.cpu_usage, "total_cpu_usage": s.total_cpu_usage,
        "memory_usage": s.memory_usage, "total_memory": s.total_memory, "available_memory": s.available_memory,
        "run_time": s.run_time, "start_time": s.start_time, "read_bytes": s.read_bytes, "written_bytes": s.written_bytes,
        "messages_size_bytes": s.messages_size_bytes, "streams_count": s.streams_count, "topics_count": s.topics_count,
        "partitions_count": s.partitions_count, "segments_count": s.segments_count, "messages_count": s.messages_count,
        "clients_count": s.clients_count, "consumer_groups_count": s.consumer_groups_count, "hostname": s.hostname,
        "os_name": s.os_name, "os_version": s.os_version, "kernel_version": s.kernel_version,
        "iggy_server_version": s.iggy_server_version, "iggy_server_semver": s.iggy_server_semver,
        "threads_count": s.threads_count, "free_disk_space": s.free_disk_space, "total_disk_space": s.total_disk_space,
    });
    let rows = vec![
        ("Iggy Server PID", s.process_id.to_string()),
        ("Iggy Server CPU Usage", format!("{:.4}%", s.cpu_usage)),
        ("Total CPU Usage", format!("{:.4}%", s.total_cpu_usage)),
        ("Iggy Server Memory Usage", format_size(s.memory_usage)),
        ("Total Memory (RAM)", format_size(s.total_memory)),
        ("Available Memory (RAM)", format_size(s.available_memory)),
        (
            "Iggy Server Run Time",
            rill_core::units::format_duration(Duration::from_secs(s.run_time / 1_000_000)),
        ),
        ("Start Time", format_timestamp(s.start_time)),
        ("Read Bytes", format_size(s.read_bytes)),
        ("Written Bytes", format_size(s.written_bytes)),
        ("Messages Size Bytes", format_size(s.messages_size_bytes)),
        ("Streams Count", s.streams_count.to_string()),
        ("Topics Count", s.topics_count.to_string()),
        ("Partitions Count", s.partitions_count.to_string()),
        ("Segments Count", s.segments_count.to_string()),
        ("Message Count", s.messages_count.to_string()),
        ("Clients Count", s.clients_count.to_string()),
        ("Consumer Groups Count", s.consumer_groups_count.to_string()),
        ("Threads Count", s.threads_count.to_string()),
        ("Free Disk Space", format_size(s.free_disk_space)),
        ("Total Disk Space", format_size(s.total_disk_space)),
        ("OS Name", s.os_name.clone()),
        ("OS Version", s.os_version.clone()),
        ("Kernel Version", s.kernel_version.clone()),
        ("Iggy Server Version", s.iggy_server_version.clone()),
        ("Hostname", s.hostname.clone()),
    ];
    let output = if printer.json {
        StatsOutput::Json
    } else {
        args.output
    };
    match output {
        StatsOutput::Table => printer.properties(rows, json),
        StatsOutput::List => {
            if !printer.quiet {
                for (name, value) in rows {
                    println!("{name}|{value}");
                }
            }
        }
        StatsOutput::Json => printer.json(&json),
        StatsOutput::Toml => {
            let text = toml::to_string(&json).map_err(|e| CliError::other(e.to_string()))?;
            print!("{text}");
        }
    }
    Ok(())
}

pub(super) async fn snapshot_command(
    printer: &Printer,
    client: &Client,
    args: SnapshotArgs,
) -> Result<(), CliError> {
    let compression = match args.compression.as_deref().unwrap_or("deflated") {
        "stored" | "none" => SnapshotCompression::Stored,
        "deflated" => SnapshotCompression::Deflated,
        "bzip2" => SnapshotCompression::Bzip2,
        "zstd" => SnapshotCompression::Zstd,
        "lzma" => SnapshotCompression::Lzma,
        "xz" => SnapshotCompression::Xz,
        other => {
            return Err(CliError::usage(format!(
                "unknown snapshot compression '{other}'"
            )));
        }
    };
    let names = args
        .snapshot_types
        .unwrap_or_else(|| vec!["all".to_owned()]);
    let mut types = Vec::new();
    for name in &names {
        types.push(match name.as_str() {
            "filesystem_overview" => SnapshotType::FilesystemOverview,
            "process_list" => SnapshotType::ProcessList,
            "resource_usage" => SnapshotType::ResourceUsage,
            "test" => SnapshotType::Test,
            "server_logs" => SnapshotType::ServerLogs,
            "server_config" => SnapshotType::ServerConfig,
            "all" => SnapshotType::All,
            other => return Err(CliError::usage(format!("unknown snapshot type '{other}'"))),
        });
    }
    printer.info(format!(
        "Executing snapshot command with types: {}",
        names.join(", ")
    ));
    let archive = client.get_snapshot(compression, &types).await?;
    let directory = std::path::PathBuf::from(args.out_dir.unwrap_or_else(|| ".".to_owned()));
    std::fs::create_dir_all(&directory)?;
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let path = directory.join(format!("snapshot_{seconds}.zip"));
    std::fs::write(&path, &archive)?;
    printer.info(format!(
        "Snapshot file {} of size {} saved",
        path.display(),
        format_size(archive.len() as u64)
    ));
    if printer.json {
        printer.json(&json!({"path": path.display().to_string(), "size_bytes": archive.len()}));
    }
    Ok(())
}
