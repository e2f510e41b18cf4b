//! `IGGY_*` environment overrides: `IGGY_` + the TOML path upper-cased and joined by `_`.
//!
//! Field names contain underscores too, so a variable is matched against the paths the schema
//! (the embedded default) actually has rather than split on `_`. The value is read as the type
//! the key has in the schema.

use super::error::ConfigError;

/// Variables with the prefix that are not configuration keys: ours, upstream's (its server,
/// connectors and tests share env files with the server), and our CLI's.
const NOT_CONFIG: &[&str] = &[
    "IGGY_ROOT_USERNAME",
    "IGGY_ROOT_PASSWORD",
    "IGGY_CONFIG_PATH",
    "IGGY_ENV_PATH",
    "IGGY_DISPLAY_CONFIG",
    "IGGY_CI_BUILD",
    "IGGY_CONNECTORS_CONFIG_PATH",
    "IGGY_MCP_CONFIG_PATH",
    "IGGY_TEST_CLEANUP_DISABLED",
    "IGGY_TEST_VERBOSE",
    "IGGY_PROTOCOL",
];
const NOT_CONFIG_PREFIXES: &[&str] = &["IGGY_CONNECTORS_SINK_", "IGGY_CONNECTORS_SOURCE_"];

/// An upstream variable's value typed as upstream reads it: true/false, an integer, or text.
fn sniff(raw: &str) -> toml::Value {
    let text = raw.trim();
    match text.to_ascii_lowercase().as_str() {
        "true" => return toml::Value::Boolean(true),
        "false" => return toml::Value::Boolean(false),
        _ => {}
    }
    text.parse::<i64>()
        .map(toml::Value::Integer)
        .unwrap_or_else(|_| toml::Value::String(text.to_string()))
}

fn leaf_paths(
    table: &toml::Table,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, toml::Value)>,
) {
    for (key, value) in table {
        prefix.push(key.clone());
        match value {
            toml::Value::Table(inner) => leaf_paths(inner, prefix, out),
            other => out.push((prefix.clone(), other.clone())),
        }
        prefix.pop();
    }
}

fn env_name(path: &[String]) -> String {
    format!("IGGY_{}", path.join("_").to_ascii_uppercase())
}

/// Applies the overrides in `environment` to `table`. Returns warnings for unknown variables,
/// and upstream's variables for keys that are not ours as a table for `upstream::translate`.
/// An empty value means "not set", as upstream reads it.
pub(super) fn apply(
    table: &mut toml::Table,
    schema: &toml::Table,
    environment: impl IntoIterator<Item = (String, String)>,
) -> Result<(Vec<String>, toml::Table), ConfigError> {
    let mut leaves = Vec::new();
    leaf_paths(schema, &mut Vec::new(), &mut leaves);
    let mut warnings = Vec::new();
    let mut upstream = toml::Table::new();
    for (name, raw) in environment {
        if !name.starts_with("IGGY_")
            || NOT_CONFIG.contains(&name.as_str())
            || NOT_CONFIG_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix))
            || raw.is_empty()
        {
            continue;
        }
        if let Some(rest) = name.strip_prefix("IGGY_CLUSTER_NODES_") {
            roster_entry(table, &name, rest, &raw)?;
            continue;
        }
        let Some((path, example)) = leaves.iter().find(|(path, _)| env_name(path) == name) else {
            match super::upstream::env_path(&name) {
                Some(path) => super::upstream::insert(&mut upstream, &path, sniff(&raw))?,
                None => warnings.push(format!(
                    "ignoring environment variable {name}: no such configuration key"
                )),
            }
            continue;
        };
        let value = match example {
            toml::Value::Boolean(_) => match raw.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => toml::Value::Boolean(true),
                "false" | "0" | "no" | "off" => toml::Value::Boolean(false),
                _ => return Err(ConfigError(format!("{name}: `{raw}` is not a boolean"))),
            },
            // Lists are written comma-separated: IGGY_X="a, b".
            toml::Value::Array(_) => toml::Value::Array(
                raw.split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| toml::Value::String(item.into()))
                    .collect(),
            ),
            toml::Value::Integer(_) => raw
                .trim()
                .parse::<i64>()
                .map(toml::Value::Integer)
                .map_err(|_| ConfigError(format!("{name}: `{raw}` is not an integer")))?,
            _ => toml::Value::String(raw),
        };
        let mut slot = &mut *table;
        for key in &path[..path.len() - 1] {
            slot = slot
                .get_mut(key)
                .and_then(toml::Value::as_table_mut)
                .expect("the schema path exists in the merged table");
        }
        slot.insert(path[path.len() - 1].clone(), value);
    }
    Ok((warnings, upstream))
}

/// `IGGY_CLUSTER_NODES_<i>_<KEY>`: one key of the roster's entry `i` (from 0), creating the
/// entries up to `i` as needed, as upstream names them.
fn roster_entry(
    table: &mut toml::Table,
    name: &str,
    rest: &str,
    raw: &str,
) -> Result<(), ConfigError> {
    let unknown = || {
        ConfigError(format!(
            "{name}: expected IGGY_CLUSTER_NODES_<index>_<NAME|IP|ADVERTISED_ADDRESS|REPLICA_ID|\
             PORTS_TCP|PORTS_QUIC|PORTS_HTTP|PORTS_WEBSOCKET|PORTS_TCP_REPLICA>"
        ))
    };
    let (index, key) = rest.split_once('_').ok_or_else(unknown)?;
    let index: usize = index.parse().map_err(|_| unknown())?;
    if index >= 64 {
        return Err(ConfigError(format!("{name}: at most 64 roster entries")));
    }
    let integer = || {
        raw.trim()
            .parse::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| ConfigError(format!("{name}: `{raw}` is not an integer")))
    };
    let (path, value): (&[&str], toml::Value) = match key {
        "NAME" => (&["name"], toml::Value::String(raw.into())),
        "IP" => (&["ip"], toml::Value::String(raw.into())),
        "ADVERTISED_ADDRESS" => (&["advertised_address"], toml::Value::String(raw.into())),
        "REPLICA_ID" => (&["replica_id"], integer()?),
        "PORTS_TCP" => (&["ports", "tcp"], integer()?),
        "PORTS_QUIC" => (&["ports", "quic"], integer()?),
        "PORTS_HTTP" => (&["ports", "http"], integer()?),
        "PORTS_WEBSOCKET" => (&["ports", "websocket"], integer()?),
        "PORTS_TCP_REPLICA" => (&["ports", "tcp_replica"], integer()?),
        _ => return Err(unknown()),
    };
    let nodes = table
        .get_mut("cluster")
        .and_then(toml::Value::as_table_mut)
        .and_then(|cluster| cluster.get_mut("nodes"))
        .and_then(toml::Value::as_array_mut)
        .expect("the schema has cluster.nodes");
    while nodes.len() <= index {
        nodes.push(toml::Value::Table(toml::Table::new()));
    }
    let mut slot = nodes[index]
        .as_table_mut()
        .ok_or_else(|| ConfigError(format!("{name}: cluster.nodes[{index}] is not a table")))?;
    for key in &path[..path.len() - 1] {
        slot = slot
            .entry(key.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| ConfigError(format!("{name}: {key} is not a table")))?;
    }
    slot.insert(path[path.len() - 1].to_string(), value);
    Ok(())
}
