//! [`ClientBuilder`]: assembles a [`ClientConfig`] and creates a [`Client`] from it.

use super::Client;
use crate::config::{ClientConfig, Credentials, ReconnectPolicy};
use crate::error::Result;

/// Builds a [`Client`].
#[derive(Debug, Clone, Default)]
pub struct ClientBuilder {
    config: ClientConfig,
}

impl ClientBuilder {
    /// Starts from a connection string (see [`ClientConfig::from_connection_string`]).
    pub fn from_connection_string(text: &str) -> Result<Self> {
        Ok(ClientBuilder {
            config: ClientConfig::from_connection_string(text)?,
        })
    }

    /// Starts from a whole configuration.
    pub fn from_config(config: ClientConfig) -> Self {
        ClientBuilder { config }
    }

    /// The server's `host:port`.
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.config.address = address.into();
        self
    }

    /// Log in with a username and password after every (re)connection.
    pub fn credentials(mut self, username: impl Into<String>, password: impl Into<String>) -> Self {
        self.config.credentials = Credentials::UsernamePassword {
            username: username.into(),
            password: password.into(),
        };
        self
    }

    /// Log in with a personal access token after every (re)connection.
    pub fn personal_access_token(mut self, token: impl Into<String>) -> Self {
        self.config.credentials = Credentials::PersonalAccessToken(token.into());
        self
    }

    /// The transport (TCP by default).
    pub fn transport(mut self, transport: crate::config::TransportKind) -> Self {
        self.config.transport = transport;
        self
    }

    /// The wire protocol generation (0.8 by default).
    pub fn protocol(mut self, protocol: crate::config::Protocol) -> Self {
        self.config.protocol = protocol;
        self
    }

    /// TCP_NODELAY (on by default).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.config.nodelay = nodelay;
        self
    }

    /// Timeout of every request.
    pub fn request_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Timeout of each connection attempt.
    pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// Heartbeat interval; `None` disables heartbeats.
    pub fn heartbeat_interval(mut self, interval: Option<std::time::Duration>) -> Self {
        self.config.heartbeat_interval = interval;
        self
    }

    /// Reconnection policy.
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.config.reconnect = policy;
        self
    }

    /// The configuration built so far.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Creates the client without connecting (the first request connects).
    pub fn build(self) -> Result<Client> {
        Client::new(self.config)
    }

    /// Creates the client, connects and logs in.
    pub async fn connect(self) -> Result<Client> {
        let client = self.build()?;
        client.connect().await?;
        Ok(client)
    }
}
