//! `[cluster]`: the roster, this node's place in it, the election timing and replica
//! authentication. Upstream 0.9's shape, so an upstream cluster configuration carries over.

use super::ConfigError;
use super::sections::{CertificateConfig, Secret};
use super::units::HumanDuration;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// Three replicas: one node may be lost with nothing acknowledged lost.
fn default_replication_factor() -> u8 {
    3
}

/// The shortest shared secret accepted, as upstream.
pub const MIN_SECRET_LENGTH: usize = 32;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub enabled: bool,
    pub name: String,
    pub heartbeat_timeout: HumanDuration,
    pub commit_broadcast_interval: HumanDuration,
    /// Replicas of each partition of a topic created without a replication factor (0), capped
    /// at the node count. Not one of upstream's keys, so it has a default of its own.
    #[serde(default = "default_replication_factor")]
    pub replication_factor: u8,
    pub nodes: Vec<ClusterNodeConfig>,
    pub auth: ClusterAuthConfig,
    #[serde(default)]
    pub tls: ClusterTlsConfig,
    /// This node's roster entry: `--replica-id`, set by [`super::Config::join_cluster`].
    #[serde(skip)]
    pub replica_id: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterNodeConfig {
    pub name: String,
    pub ip: String,
    #[serde(default)]
    pub advertised_address: String,
    pub replica_id: u64,
    pub ports: NodePorts,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePorts {
    #[serde(default)]
    pub tcp: u16,
    #[serde(default)]
    pub quic: u16,
    #[serde(default)]
    pub http: u16,
    #[serde(default)]
    pub websocket: u16,
    #[serde(default)]
    pub tcp_replica: u16,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterAuthConfig {
    pub enabled: bool,
    pub shared_secret: Secret,
    pub previous_shared_secret: Secret,
}

/// `[cluster.tls]`: TLS 1.3 on the replica connections, upstream 0.9's keys. The acceptor shows
/// a certificate and the dialer checks it (against `ca_file`, for the name or address the roster
/// gives the peer); peers prove who they are with `[cluster.auth]`, which TLS therefore needs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterTlsConfig {
    pub enabled: bool,
    /// Each node generates a certificate at start and dialers accept any peer certificate:
    /// encryption without the certificate check (the shared secret still admits peers).
    pub self_signed: bool,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The PEM trust anchors dialers verify peers' certificates against.
    pub ca_file: PathBuf,
}

impl ClusterTlsConfig {
    /// Where this node's certificate comes from, as the front-ends' TLS sections say it.
    pub fn certificate(&self) -> CertificateConfig {
        CertificateConfig {
            self_signed: self.self_signed,
            cert_file: self.cert_file.clone(),
            key_file: self.key_file.clone(),
        }
    }
}

impl ClusterNodeConfig {
    /// The address clients are handed for this node.
    pub fn client_host(&self) -> &str {
        if self.advertised_address.trim().is_empty() {
            &self.ip
        } else {
            self.advertised_address.trim()
        }
    }

    /// Where this node's replica listener binds: the roster IP when it is a literal address,
    /// else (a host name, as in a container network) every interface.
    pub fn replica_bind_address(&self) -> SocketAddr {
        let ip = self
            .ip
            .parse::<IpAddr>()
            .unwrap_or(IpAddr::from([0, 0, 0, 0]));
        SocketAddr::new(ip, self.ports.tcp_replica)
    }
}

impl ClusterConfig {
    /// The roster entry of `replica_id`.
    pub fn node(&self, replica_id: u64) -> Option<&ClusterNodeConfig> {
        self.nodes.iter().find(|node| node.replica_id == replica_id)
    }

    /// Checks the roster and this node's place in it. `replica_id` is `--replica-id`.
    pub fn validate(&self, replica_id: Option<u64>) -> Result<(), ConfigError> {
        if !self.enabled {
            if replica_id.is_some() {
                return Err(ConfigError(
                    "--replica-id names a cluster node, but cluster.enabled is false".into(),
                ));
            }
            return Ok(());
        }
        if self.name.trim().is_empty() {
            return Err(ConfigError("cluster.name must not be empty".into()));
        }
        if self.replication_factor == 0 {
            return Err(ConfigError(
                "cluster.replication_factor must be at least 1 (the replicas of each partition)"
                    .into(),
            ));
        }
        if self.nodes.is_empty() {
            return Err(ConfigError(
                "cluster.enabled = true needs the roster: one [[cluster.nodes]] entry per node \
                 (name, ip, replica_id, ports = { tcp, quic, http, websocket, tcp_replica })"
                    .into(),
            ));
        }
        for (index, node) in self.nodes.iter().enumerate() {
            let here = format!("cluster.nodes[{index}] ({:?})", node.name);
            if node.name.trim().is_empty() || node.ip.trim().is_empty() {
                return Err(ConfigError(format!(
                    "{here}: name and ip must not be empty"
                )));
            }
            if node.ports.tcp_replica == 0 {
                return Err(ConfigError(format!(
                    "{here}: ports.tcp_replica is required (the port peers replicate over)"
                )));
            }
            for other in &self.nodes[..index] {
                if other.replica_id == node.replica_id {
                    return Err(ConfigError(format!(
                        "{here}: replica_id {} is also {:?}'s",
                        node.replica_id, other.name
                    )));
                }
                if other.name == node.name {
                    return Err(ConfigError(format!("{here}: the name is used twice")));
                }
                if other.ip == node.ip && other.ports.tcp_replica == node.ports.tcp_replica {
                    return Err(ConfigError(format!(
                        "{here}: {}:{} is also {:?}'s replica address",
                        node.ip, node.ports.tcp_replica, other.name
                    )));
                }
            }
        }
        let ids = || {
            self.nodes
                .iter()
                .map(|node| node.replica_id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match replica_id {
            None => {
                return Err(ConfigError(format!(
                    "cluster.enabled = true: start each node with --replica-id N, N one of the \
                     roster's replica ids ({})",
                    ids()
                )));
            }
            Some(id) if self.node(id).is_none() => {
                return Err(ConfigError(format!(
                    "--replica-id {id} is not in cluster.nodes (replica ids: {})",
                    ids()
                )));
            }
            Some(_) => {}
        }
        let heartbeat = self.commit_broadcast_interval.0;
        let timeout = self.heartbeat_timeout.0;
        if heartbeat.is_zero() || timeout < heartbeat * 4 {
            return Err(ConfigError(format!(
                "cluster.heartbeat_timeout ({timeout:?}) must be at least 4 times \
                 cluster.commit_broadcast_interval ({heartbeat:?}), which must not be 0"
            )));
        }
        if self.tls.enabled {
            if !self.auth.enabled {
                return Err(ConfigError(
                    "cluster.tls.enabled = true needs cluster.auth.enabled = true: TLS shows \
                     which node was dialed, the shared secret proves who dials"
                        .into(),
                ));
            }
            if !self.tls.self_signed {
                for (key, path) in [
                    ("cert_file", &self.tls.cert_file),
                    ("key_file", &self.tls.key_file),
                    ("ca_file", &self.tls.ca_file),
                ] {
                    if path.as_os_str().is_empty() {
                        return Err(ConfigError(format!(
                            "cluster.tls.{key} is required when cluster.tls.enabled = true \
                             (or self_signed = true: encrypted, peer certificates unchecked)"
                        )));
                    }
                }
            }
            // The front-ends' rule for the pair: with self_signed and one path only, a
            // certificate would quietly be generated beside the file given.
            self.tls.certificate().validate("cluster.tls")?;
        }
        if self.auth.enabled {
            for (key, secret) in [
                ("shared_secret", &self.auth.shared_secret),
                ("previous_shared_secret", &self.auth.previous_shared_secret),
            ] {
                let length = secret.0.len();
                if (key == "shared_secret" || length > 0) && length < MIN_SECRET_LENGTH {
                    return Err(ConfigError(format!(
                        "cluster.auth.{key} must be at least {MIN_SECRET_LENGTH} bytes when \
                         cluster.auth.enabled (`openssl rand -base64 32`, or \
                         IGGY_CLUSTER_AUTH_{})",
                        key.to_ascii_uppercase()
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(text: &str) -> ClusterConfig {
        let table: toml::Table = text.parse().unwrap();
        table["cluster"].clone().try_into().unwrap()
    }

    const THREE: &str = r#"
        [cluster]
        enabled = true
        name = "c"
        heartbeat_timeout = "2 s"
        commit_broadcast_interval = "200 ms"
        [cluster.auth]
        enabled = false
        shared_secret = ""
        previous_shared_secret = ""
        [[cluster.nodes]]
        name = "a"
        ip = "127.0.0.1"
        replica_id = 0
        ports = { tcp = 8090, tcp_replica = 9090 }
        [[cluster.nodes]]
        name = "b"
        ip = "127.0.0.1"
        replica_id = 1
        ports = { tcp = 8091, tcp_replica = 9091 }
        [[cluster.nodes]]
        name = "c"
        ip = "iggy-3"
        advertised_address = "example.org"
        replica_id = 2
        ports = { tcp = 8092, tcp_replica = 9092 }
    "#;

    #[test]
    fn a_roster_and_a_replica_id_pass() {
        let config = cluster(THREE);
        config.validate(Some(1)).unwrap();
        assert_eq!(config.node(2).unwrap().client_host(), "example.org");
        assert_eq!(config.node(0).unwrap().client_host(), "127.0.0.1");
        assert_eq!(
            config.node(2).unwrap().replica_bind_address(),
            "0.0.0.0:9092".parse().unwrap()
        );
    }

    #[test]
    fn the_replica_id_must_be_given_and_known() {
        let config = cluster(THREE);
        let error = config.validate(None).unwrap_err().0;
        assert!(
            error.contains("--replica-id") && error.contains("0, 1, 2"),
            "{error}"
        );
        let error = config.validate(Some(7)).unwrap_err().0;
        assert!(error.contains("--replica-id 7"), "{error}");
    }

    #[test]
    fn duplicate_ids_and_missing_replica_ports_are_refused() {
        let duplicate = THREE.replacen("replica_id = 1", "replica_id = 0", 1);
        let error = cluster(&duplicate).validate(Some(0)).unwrap_err().0;
        assert!(error.contains("replica_id 0"), "{error}");
        let no_port = THREE.replacen(", tcp_replica = 9091", "", 1);
        let error = cluster(&no_port).validate(Some(0)).unwrap_err().0;
        assert!(error.contains("tcp_replica"), "{error}");
    }

    #[test]
    fn auth_needs_a_long_secret_and_timing_must_leave_room_for_heartbeats() {
        let auth = THREE.replacen("enabled = false", "enabled = true", 1);
        let error = cluster(&auth).validate(Some(0)).unwrap_err().0;
        assert!(error.contains("shared_secret"), "{error}");
        let long = auth.replacen(
            "shared_secret = \"\"",
            "shared_secret = \"0123456789abcdef0123456789abcdef\"",
            1,
        );
        cluster(&long).validate(Some(0)).unwrap();
        let tight = THREE.replacen("\"2 s\"", "\"500 ms\"", 1);
        assert!(cluster(&tight).validate(Some(0)).is_err());
    }

    #[test]
    fn tls_needs_auth_and_either_files_or_self_signed() {
        let secret = "shared_secret = \"0123456789abcdef0123456789abcdef\"";
        let auth = THREE
            .replacen("enabled = false", "enabled = true", 1)
            .replacen("shared_secret = \"\"", secret, 1);
        let tls = |config: &str, table: &str| format!("{config}\n[cluster.tls]\n{table}");
        // The roster's [[cluster.nodes]] come before: the table goes after them.
        let refusal = |config: &str, table: &str| {
            cluster(&tls(config, table))
                .validate(Some(0))
                .unwrap_err()
                .0
        };
        let error = refusal(THREE, "enabled = true\nself_signed = true");
        assert!(error.contains("cluster.auth.enabled"), "{error}");
        cluster(&tls(&auth, "enabled = true\nself_signed = true"))
            .validate(Some(0))
            .unwrap();
        let error = refusal(
            &auth,
            "enabled = true\nself_signed = true\ncert_file = \"c\"",
        );
        assert!(error.contains("given together"), "{error}");
        let error = refusal(&auth, "enabled = true\ncert_file = \"c\"\nkey_file = \"k\"");
        assert!(error.contains("cluster.tls.ca_file"), "{error}");
        let files = "enabled = true\ncert_file = \"c\"\nkey_file = \"k\"\nca_file = \"a\"";
        cluster(&tls(&auth, files)).validate(Some(0)).unwrap();
        // Off by default, and unknown keys are refused.
        assert!(!cluster(THREE).tls.enabled);
        let table: toml::Table = tls(THREE, "enable = true").parse().unwrap();
        assert!(
            table["cluster"]
                .clone()
                .try_into::<ClusterConfig>()
                .is_err()
        );
    }

    #[test]
    fn off_needs_no_roster_but_refuses_a_replica_id() {
        let off = cluster(&THREE.replacen("enabled = true", "enabled = false", 1));
        off.validate(None).unwrap();
        assert!(off.validate(Some(0)).is_err());
    }
}
