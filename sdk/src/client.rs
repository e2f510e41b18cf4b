//! The low-level client: one method per command of the protocol, over one connection.
//!
//! A [`Client`] is cheap to clone (all clones share one connection). Requests are serialised
//! over the connection, one outstanding at a time, as the protocol requires (protocol.md 1.1).
//!
//! Connection handling follows the official SDK (protocol.md 8.3, 9):
//! * connecting retries with bounded exponential backoff ([`ReconnectPolicy`]) and ends with
//!   [`Error::Unreachable`] naming the address;
//! * after every (re)connection the client logs in again with the configured credentials, or
//!   with the ones of the last successful explicit login, and re-joins the consumer groups it
//!   had joined (membership ends with the connection on the server);
//! * a request that fails with status 8, 30, 40 or a broken connection is retried once on a new
//!   connection;
//! * every request has a timeout; a timed-out connection is dropped (its stream may be
//!   desynchronised) and the error is returned without retrying, since the server may have
//!   executed the request;
//! * a background task sends Ping (1) every `heartbeat_interval` while connected.

use crate::config::{ClientConfig, Credentials, Protocol, ReconnectPolicy};
use crate::error::{Error, Result};
use crate::generation::{Codec, ends_connection};
use crate::transport::{Connection, Connector, PermanentFailure, connector_for};
use crate::wire::CommandResponse;
use bytes::Bytes;
use rill_core::message::{MessageBatch, OutgoingMessage, PolledMessages};
use rill_core::primitives::{
    CompressionAlgorithm, Consumer, Identifier, Name, OptionalPartition, Partitioning, Permissions,
    PollingStrategy, ShortString, UserStatus,
};
use rill_core::requests::*;
use rill_core::responses::*;
use rill_core::{CommandCode, Request};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

/// The version string sent in LoginUser, as the official SDK 0.10.0 does (protocol.md 12.17).
pub const SDK_VERSION: &str = "0.10.0";

/// Something that names a stream, topic, consumer group, user or consumer: a numeric id
/// (`u32`), a name (`&str`, `String`) or an [`Identifier`].
pub trait IntoIdentifier {
    /// Converts, failing on an empty or over-long name.
    fn into_identifier(self) -> Result<Identifier>;
}

impl IntoIdentifier for Identifier {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(self)
    }
}

impl IntoIdentifier for &Identifier {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(self.clone())
    }
}

impl IntoIdentifier for u32 {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::numeric(self))
    }
}

impl IntoIdentifier for &str {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::named(self)?)
    }
}

impl IntoIdentifier for String {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::String(Name::new(self)?))
    }
}

impl IntoIdentifier for &String {
    fn into_identifier(self) -> Result<Identifier> {
        self.as_str().into_identifier()
    }
}

/// Parses command-line style identifiers: digits are a numeric id, anything else a name.
pub fn parse_identifier(text: &str) -> Result<Identifier> {
    match text.parse::<u32>() {
        Ok(id) => Ok(Identifier::numeric(id)),
        Err(_) => text.into_identifier(),
    }
}

fn name(value: &str) -> Result<Name> {
    Ok(Name::new(value)?)
}

fn secret(value: &str, what: &str) -> Result<ShortString> {
    if value.len() > 255 {
        return Err(Error::invalid(format!("{what} longer than 255 bytes")));
    }
    Ok(ShortString(value.to_owned()))
}

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

/// A consumer group this session joined, re-joined after a reconnection.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JoinedGroup {
    stream_id: Identifier,
    topic_id: Identifier,
    group_id: Identifier,
}

struct Session {
    connection: Option<Box<dyn Connection>>,
    /// How the current connection frames requests (0.9 numbers them per connection).
    codec: Codec,
    /// Set while a request is on the wire. Still set when the next request starts means the
    /// previous one was cancelled mid-way (its future dropped, e.g. by a timeout around it):
    /// its response may still arrive, so the connection is discarded.
    in_flight: bool,
    authenticated: bool,
    /// The login replayed after a reconnection: the configured credentials, replaced by those
    /// of a successful explicit login and cleared by a logout.
    login: Credentials,
    groups: Vec<JoinedGroup>,
}

struct Inner {
    config: ClientConfig,
    connector: Arc<dyn Connector>,
    session: Mutex<Session>,
    /// Incremented on every new connection; the high-level consumer watches it.
    connection_epoch: AtomicU64,
    shut_down: AtomicBool,
    heartbeat: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.heartbeat.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

/// The low-level client. See the module documentation.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("address", &self.inner.config.address)
            .field("transport", &self.inner.config.transport)
            .finish()
    }
}

impl Client {
    /// A builder with default options (`127.0.0.1:8090`, no credentials).
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A client for `iggy://user:password@host:port` (not yet connected).
    pub fn from_connection_string(text: &str) -> Result<Self> {
        ClientBuilder::from_connection_string(text)?.build()
    }

    /// A client with the given configuration (not yet connected).
    pub fn new(config: ClientConfig) -> Result<Self> {
        let connector = connector_for(&config)?;
        Ok(Self::with_connector(config, connector))
    }

    /// A client over a custom transport.
    pub fn with_connector(config: ClientConfig, connector: Arc<dyn Connector>) -> Self {
        let login = config.credentials.clone();
        let codec = Codec::new(config.protocol);
        Client {
            inner: Arc::new(Inner {
                config,
                connector,
                session: Mutex::new(Session {
                    connection: None,
                    codec,
                    in_flight: false,
                    authenticated: false,
                    login,
                    groups: Vec::new(),
                }),
                connection_epoch: AtomicU64::new(0),
                shut_down: AtomicBool::new(false),
                heartbeat: std::sync::Mutex::new(None),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// How many connections this client has established so far (grows on every reconnection).
    pub fn connection_epoch(&self) -> u64 {
        self.inner.connection_epoch.load(Ordering::Acquire)
    }

    /// Connects (if not connected), logs in with the configured credentials and starts the
    /// heartbeat. Fails with [`Error::Unreachable`] when no attempt succeeds.
    pub async fn connect(&self) -> Result<()> {
        if self.inner.shut_down.load(Ordering::Acquire) {
            return Err(Error::NotConnected);
        }
        {
            let mut session = self.inner.session.lock().await;
            self.ensure_ready(&mut session).await?;
        }
        self.start_heartbeat();
        Ok(())
    }

    /// Whether a connection is currently open.
    pub async fn is_connected(&self) -> bool {
        self.inner.session.lock().await.connection.is_some()
    }

    /// The local address of the current connection (the server derives the client id from it).
    pub async fn local_address(&self) -> Option<SocketAddr> {
        let session = self.inner.session.lock().await;
        session.connection.as_ref().and_then(|c| c.local_address())
    }

    /// Closes the connection; the next request reconnects.
    pub async fn disconnect(&self) {
        let mut session = self.inner.session.lock().await;
        session.connection = None;
        session.authenticated = false;
    }

    /// Closes the connection for good: later requests fail with [`Error::NotConnected`].
    pub async fn shutdown(&self) {
        self.inner.shut_down.store(true, Ordering::Release);
        if let Some(task) = self.inner.heartbeat.lock().expect("heartbeat lock").take() {
            task.abort();
        }
        self.disconnect().await;
    }

    fn start_heartbeat(&self) {
        let Some(interval) = self.inner.config.heartbeat_interval else {
            return;
        };
        let mut slot = self.inner.heartbeat.lock().expect("heartbeat lock");
        if slot.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        *slot = Some(tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let client = Client { inner };
                if client.inner.shut_down.load(Ordering::Acquire) {
                    return;
                }
                // Only an open, idle connection is pinged: the heartbeat never reconnects on
                // its own nor waits behind a long request.
                let Ok(mut session) = client.inner.session.try_lock() else {
                    continue;
                };
                if session.connection.is_none() || session.in_flight {
                    continue;
                }
                let request = Request::Ping(Ping {});
                if let Err(error) = client.round_trip(&mut session, &request).await {
                    debug!(%error, "heartbeat failed; the next request reconnects");
                    session.connection = None;
                    session.authenticated = false;
                }
            }
        }));
    }

    /// Connects with backoff, returning the new connection.
    async fn open_connection(&self) -> Result<Box<dyn Connection>> {
        let config = &self.inner.config;
        let policy = &config.reconnect;
        let mut attempt = 1;
        loop {
            let outcome = tokio::time::timeout(
                config.connect_timeout,
                self.inner.connector.connect(&config.address),
            )
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    self.inner
                        .connector
                        .timeout_message(&config.address, config.connect_timeout),
                ))
            });
            match outcome {
                Ok(connection) => {
                    self.inner.connection_epoch.fetch_add(1, Ordering::AcqRel);
                    // Clients used without an explicit connect() get heartbeats too.
                    self.start_heartbeat();
                    return Ok(connection);
                }
                Err(source) => {
                    // A certificate nobody trusts stays untrusted: fail now, saying why.
                    if let Some(failure) = PermanentFailure::find(&source) {
                        return Err(failure.clone().into());
                    }
                    if !policy.allows(attempt + 1) || self.inner.shut_down.load(Ordering::Acquire) {
                        return Err(Error::Unreachable {
                            address: config.address.clone(),
                            attempts: attempt,
                            source,
                        });
                    }
                    attempt += 1;
                    let wait = policy.backoff(attempt);
                    debug!(address = %config.address, attempt, ?wait, %source, "connection failed; retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Opens a new connection for the session, with a fresh codec state.
    async fn attach(&self, session: &mut Session) -> Result<()> {
        session.connection = Some(self.open_connection().await?);
        session.codec = Codec::new(self.inner.config.protocol);
        Ok(())
    }

    /// Makes sure the session has a connection, is logged in (when credentials are known) and
    /// has re-joined its consumer groups.
    async fn ensure_ready(&self, session: &mut Session) -> Result<()> {
        if self.inner.shut_down.load(Ordering::Acquire) {
            return Err(Error::NotConnected);
        }
        Self::discard_if_cancelled(session);
        if session.connection.is_none() {
            session.authenticated = false;
            self.attach(session).await?;
        }
        if session.authenticated {
            return Ok(());
        }
        let login = match &session.login {
            Credentials::None => return Ok(()),
            Credentials::UsernamePassword { username, password } => Request::LoginUser(LoginUser {
                username: name(username)?,
                password: secret(password, "password")?,
                version: Some(SDK_VERSION.to_owned()),
                context: Some(String::new()),
            }),
            Credentials::PersonalAccessToken(token) => {
                Request::LoginWithPersonalAccessToken(LoginWithPersonalAccessToken {
                    token: name(token)?,
                })
            }
        };
        self.round_trip(session, &login).await?;
        session.authenticated = true;
        for group in session.groups.clone() {
            let join = Request::JoinConsumerGroup(JoinConsumerGroup {
                stream_id: group.stream_id.clone(),
                topic_id: group.topic_id.clone(),
                group_id: group.group_id.clone(),
            });
            match self.round_trip(session, &join).await {
                Ok(_) => debug!(?group, "re-joined consumer group after reconnecting"),
                Err(error) if error.server_code().is_some() => {
                    warn!(?group, %error, "could not re-join consumer group; forgetting it");
                    session.groups.retain(|g| g != &group);
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// One request and its response on the current connection, with the request timeout.
    async fn round_trip(&self, session: &mut Session, request: &Request) -> Result<Bytes> {
        let command = request.command();
        let Session {
            connection, codec, ..
        } = session;
        let connection = connection.as_mut().ok_or(Error::NotConnected)?;
        let encoded = codec.encode(request)?;
        session.in_flight = true;
        let timeout = self.inner.config.request_timeout;
        let outcome = tokio::time::timeout(timeout, connection.round_trip(encoded.frame())).await;
        let response = match outcome {
            Err(_) => {
                session.connection = None;
                session.authenticated = false;
                return Err(Error::Timeout {
                    command,
                    after: timeout,
                });
            }
            Ok(Err(error)) => {
                session.connection = None;
                session.authenticated = false;
                return Err(Error::Io(error));
            }
            Ok(Ok(response)) => response,
        };
        session.in_flight = false;
        let result = session.codec.decode(request, &encoded, response);
        if let Err(Error::Server { code, .. }) = &result
            && ends_connection(self.inner.config.protocol, *code)
        {
            session.connection = None;
            session.authenticated = false;
        }
        result
    }

    /// Drops a connection whose last request was cancelled before its response was read.
    fn discard_if_cancelled(session: &mut Session) {
        if session.in_flight {
            debug!("previous request was cancelled mid-flight; reconnecting");
            session.connection = None;
            session.authenticated = false;
            session.in_flight = false;
        }
    }

    /// Remembers what a successful request changed about the session.
    fn observe(session: &mut Session, request: &Request) {
        match request {
            Request::LoginUser(login) => {
                session.authenticated = true;
                session.login = Credentials::UsernamePassword {
                    username: login.username.as_str().to_owned(),
                    password: login.password.0.clone(),
                };
            }
            Request::LoginWithPersonalAccessToken(login) => {
                session.authenticated = true;
                session.login = Credentials::PersonalAccessToken(login.token.as_str().to_owned());
            }
            Request::LogoutUser(_) => {
                session.authenticated = false;
                session.login = Credentials::None;
                session.groups.clear();
            }
            Request::JoinConsumerGroup(join) => {
                let group = JoinedGroup {
                    stream_id: join.stream_id.clone(),
                    topic_id: join.topic_id.clone(),
                    group_id: join.group_id.clone(),
                };
                if !session.groups.contains(&group) {
                    session.groups.push(group);
                }
            }
            Request::LeaveConsumerGroup(LeaveConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            })
            | Request::DeleteConsumerGroup(DeleteConsumerGroup {
                stream_id,
                topic_id,
                group_id,
            }) => session.groups.retain(|group| {
                !(&group.stream_id == stream_id
                    && &group.topic_id == topic_id
                    && &group.group_id == group_id)
            }),
            _ => {}
        }
    }

    /// Sends any request and returns the raw OK payload, with the reconnect-and-retry-once
    /// behaviour described in the module documentation.
    pub async fn send_request(&self, request: &Request) -> Result<Bytes> {
        let mut session = self.inner.session.lock().await;
        Self::discard_if_cancelled(&mut session);
        let explicit_login = matches!(
            request.command(),
            CommandCode::LoginUser | CommandCode::LoginWithPersonalAccessToken
        );
        // A 0.9 server answers a second login on a bound connection with the session it has
        // (protocol-0.9.md 3.6): end it first, as SDK 0.11.0 does.
        if explicit_login
            && self.inner.config.protocol == Protocol::V09
            && session.authenticated
            && session.connection.is_some()
        {
            let logout = Request::LogoutUser(LogoutUser {});
            if self.round_trip(&mut session, &logout).await.is_ok() {
                Self::observe(&mut session, &logout);
            }
        }
        // An explicit login replaces the stored one, so there is nothing to log in with first.
        if explicit_login && session.connection.is_none() {
            self.attach(&mut session).await?;
            session.authenticated = false;
        } else if !explicit_login {
            self.ensure_ready(&mut session).await?;
        }
        let first = self.round_trip(&mut session, request).await;
        let result = match first {
            Err(error)
                if error.should_reconnect()
                    && self.inner.config.reconnect.enabled
                    && !self.inner.shut_down.load(Ordering::Acquire) =>
            {
                debug!(%error, command = %request.command(), "reconnecting and retrying once");
                session.connection = None;
                session.authenticated = false;
                if explicit_login {
                    self.attach(&mut session).await?;
                } else {
                    self.ensure_ready(&mut session).await?;
                }
                self.round_trip(&mut session, request).await
            }
            other => other,
        };
        if result.is_ok() {
            Self::observe(&mut session, request);
        }
        result
    }

    /// Sends a typed command and decodes its typed response.
    pub async fn execute<C: CommandResponse>(&self, command: C) -> Result<C::Output> {
        let request: Request = command.into();
        let payload = self.send_request(&request).await?;
        C::parse_response(payload).map_err(|source| Error::Decode {
            command: C::CODE,
            source,
        })
    }

    // ---- System -------------------------------------------------------------------------

    /// Ping (1). Works without logging in.
    pub async fn ping(&self) -> Result<()> {
        self.execute(Ping {}).await
    }

    /// GetStats (10).
    pub async fn get_stats(&self) -> Result<Stats> {
        self.execute(GetStats {}).await
    }

    /// GetSnapshot (11): the ZIP archive bytes. `compression` and `types` use the codes of
    /// protocol.md 2.6 (see [`SnapshotCompression`] and [`SnapshotType`]).
    pub async fn get_snapshot(
        &self,
        compression: SnapshotCompression,
        types: &[SnapshotType],
    ) -> Result<Bytes> {
        self.execute(GetSnapshot {
            compression: compression as u8,
            types: types.iter().map(|kind| *kind as u8).collect(),
        })
        .await
    }

    /// GetClusterMetadata (12).
    pub async fn get_cluster_metadata(&self) -> Result<ClusterMetadata> {
        self.execute(GetClusterMetadata {}).await
    }

    /// GetMe (20): this session.
    pub async fn get_me(&self) -> Result<ClientDetails> {
        self.execute(GetMe {}).await
    }

    /// GetClient (21); `None` if no such client.
    pub async fn get_client(&self, client_id: u32) -> Result<Option<ClientDetails>> {
        self.execute(GetClient { client_id }).await
    }

    /// GetClients (22).
    pub async fn get_clients(&self) -> Result<Vec<ClientInfo>> {
        self.execute(GetClients {}).await
    }

    // ---- Users --------------------------------------------------------------------------

    /// GetUser (31); `None` if no such user.
    pub async fn get_user(&self, user_id: impl IntoIdentifier) -> Result<Option<UserDetails>> {
        self.execute(GetUser {
            user_id: user_id.into_identifier()?,
        })
        .await
    }

    /// GetUsers (32).
    pub async fn get_users(&self) -> Result<Vec<UserInfo>> {
        self.execute(GetUsers {}).await
    }

    /// CreateUser (33).
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        status: UserStatus,
        permissions: Option<Permissions>,
    ) -> Result<UserDetails> {
        self.execute(CreateUser {
            username: name(username)?,
            password: secret(password, "password")?,
            status,
            permissions,
        })
        .await
    }

    /// DeleteUser (34).
    pub async fn delete_user(&self, user_id: impl IntoIdentifier) -> Result<()> {
        self.execute(DeleteUser {
            user_id: user_id.into_identifier()?,
        })
        .await
    }

    /// UpdateUser (35): a new username and/or status.
    pub async fn update_user(
        &self,
        user_id: impl IntoIdentifier,
        username: Option<&str>,
        status: Option<UserStatus>,
    ) -> Result<()> {
        self.execute(UpdateUser {
            user_id: user_id.into_identifier()?,
            username: username.map(name).transpose()?,
            status,
        })
        .await
    }

    /// UpdatePermissions (36); `None` removes all permissions.
    pub async fn update_permissions(
        &self,
        user_id: impl IntoIdentifier,
        permissions: Option<Permissions>,
    ) -> Result<()> {
        self.execute(UpdatePermissions {
            user_id: user_id.into_identifier()?,
            permissions,
        })
        .await
    }

    /// ChangePassword (37).
    pub async fn change_password(
        &self,
        user_id: impl IntoIdentifier,
        current_password: &str,
        new_password: &str,
    ) -> Result<()> {
        self.execute(ChangePassword {
            user_id: user_id.into_identifier()?,
            current_password: secret(current_password, "current password")?,
            new_password: secret(new_password, "new password")?,
        })
        .await
    }

    /// LoginUser (38). The credentials are remembered and replayed after reconnections.
    pub async fn login_user(&self, username: &str, password: &str) -> Result<IdentityInfo> {
        self.execute(LoginUser {
            username: name(username)?,
            password: secret(password, "password")?,
            version: Some(SDK_VERSION.to_owned()),
            context: Some(String::new()),
        })
        .await
    }

    /// LogoutUser (39). Reconnections no longer log in.
    pub async fn logout_user(&self) -> Result<()> {
        self.execute(LogoutUser {}).await
    }

    // ---- Personal access tokens ----------------------------------------------------------

    /// GetPersonalAccessTokens (41): the caller's tokens.
    pub async fn get_personal_access_tokens(&self) -> Result<Vec<PersonalAccessTokenInfo>> {
        self.execute(GetPersonalAccessTokens {}).await
    }

    /// CreatePersonalAccessToken (42). `expiry` in µs; 0 = server default, `u64::MAX` = never.
    pub async fn create_personal_access_token(
        &self,
        token_name: &str,
        expiry: u64,
    ) -> Result<RawPersonalAccessToken> {
        self.execute(CreatePersonalAccessToken {
            name: name(token_name)?,
            expiry,
        })
        .await
    }

    /// DeletePersonalAccessToken (43).
    pub async fn delete_personal_access_token(&self, token_name: &str) -> Result<()> {
        self.execute(DeletePersonalAccessToken {
            name: name(token_name)?,
        })
        .await
    }

    /// LoginWithPersonalAccessToken (44). The token is replayed after reconnections.
    pub async fn login_with_personal_access_token(&self, token: &str) -> Result<IdentityInfo> {
        self.execute(LoginWithPersonalAccessToken {
            token: name(token)?,
        })
        .await
    }

    // ---- Messages -----------------------------------------------------------------------

    /// PollMessages (100). The messages stay in the response buffer.
    #[allow(clippy::too_many_arguments)]
    pub async fn poll_messages(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
        consumer: &Consumer,
        strategy: PollingStrategy,
        count: u32,
        auto_commit: bool,
    ) -> Result<PolledMessages> {
        self.execute(PollMessages {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
            strategy,
            count,
            auto_commit,
        })
        .await
    }

    /// SendMessages (101). Each payload is copied once, into the batch buffer, which is then
    /// written to the socket as is.
    pub async fn send_messages(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitioning: Partitioning,
        messages: &[OutgoingMessage],
    ) -> Result<()> {
        if messages.is_empty() {
            return Err(Error::invalid("at least one message is required"));
        }
        self.execute(SendMessages {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitioning,
            batch: MessageBatch::from_messages(messages),
        })
        .await
    }

    /// FlushUnsavedBuffer (102).
    pub async fn flush_unsaved_buffer(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: u32,
        fsync: bool,
    ) -> Result<()> {
        self.execute(FlushUnsavedBuffer {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id,
            fsync,
        })
        .await
    }

    // ---- Consumer offsets ---------------------------------------------------------------

    /// GetConsumerOffset (120); `None` when nothing is stored.
    pub async fn get_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
    ) -> Result<Option<ConsumerOffsetInfo>> {
        self.execute(GetConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
        })
        .await
    }

    /// StoreConsumerOffset (121).
    pub async fn store_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
        offset: u64,
    ) -> Result<()> {
        self.execute(StoreConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
            offset,
        })
        .await
    }

    /// DeleteConsumerOffset (122).
    pub async fn delete_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
    ) -> Result<()> {
        self.execute(DeleteConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
        })
        .await
    }

    // ---- Streams ------------------------------------------------------------------------

    /// GetStream (200); `None` if no such stream.
    pub async fn get_stream(
        &self,
        stream_id: impl IntoIdentifier,
    ) -> Result<Option<StreamDetails>> {
        self.execute(GetStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// GetStreams (201).
    pub async fn get_streams(&self) -> Result<Vec<StreamInfo>> {
        self.execute(GetStreams {}).await
    }

    /// CreateStream (202). The server assigns the id.
    pub async fn create_stream(&self, stream_name: &str) -> Result<StreamDetails> {
        self.execute(CreateStream {
            name: name(stream_name)?,
        })
        .await
    }

    /// DeleteStream (203).
    pub async fn delete_stream(&self, stream_id: impl IntoIdentifier) -> Result<()> {
        self.execute(DeleteStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// UpdateStream (204): renames the stream.
    pub async fn update_stream(
        &self,
        stream_id: impl IntoIdentifier,
        new_name: &str,
    ) -> Result<()> {
        self.execute(UpdateStream {
            stream_id: stream_id.into_identifier()?,
            name: name(new_name)?,
        })
        .await
    }

    /// PurgeStream (205).
    pub async fn purge_stream(&self, stream_id: impl IntoIdentifier) -> Result<()> {
        self.execute(PurgeStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    // ---- Topics -------------------------------------------------------------------------

    /// GetTopic (300); `None` if no such topic.
    pub async fn get_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<Option<TopicDetails>> {
        self.execute(GetTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// GetTopics (301).
    pub async fn get_topics(&self, stream_id: impl IntoIdentifier) -> Result<Vec<TopicInfo>> {
        self.execute(GetTopics {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// CreateTopic (302). See [`TopicOptions`] for expiry, size and compression.
    pub async fn create_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_name: &str,
        partitions_count: u32,
        options: TopicOptions,
    ) -> Result<TopicDetails> {
        self.execute(CreateTopic {
            stream_id: stream_id.into_identifier()?,
            partitions_count,
            compression_algorithm: options.compression_algorithm,
            message_expiry: options.message_expiry,
            max_topic_size: options.max_topic_size,
            replication_factor: options.replication_factor,
            name: name(topic_name)?,
        })
        .await
    }

    /// DeleteTopic (303).
    pub async fn delete_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(DeleteTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// UpdateTopic (304).
    pub async fn update_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        new_name: &str,
        options: TopicOptions,
    ) -> Result<()> {
        self.execute(UpdateTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            compression_algorithm: options.compression_algorithm,
            message_expiry: options.message_expiry,
            max_topic_size: options.max_topic_size,
            replication_factor: options.replication_factor,
            name: name(new_name)?,
        })
        .await
    }

    /// PurgeTopic (305).
    pub async fn purge_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(PurgeTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    // ---- Partitions and segments --------------------------------------------------------

    /// CreatePartitions (402): adds partitions after the existing ones.
    pub async fn create_partitions(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitions_count: u32,
    ) -> Result<()> {
        self.execute(CreatePartitions {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitions_count,
        })
        .await
    }

    /// DeletePartitions (403): removes the last `partitions_count` partitions.
    pub async fn delete_partitions(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitions_count: u32,
    ) -> Result<()> {
        self.execute(DeletePartitions {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitions_count,
        })
        .await
    }

    /// DeleteSegments (503): deletes up to `segments_count` of the oldest sealed segments.
    pub async fn delete_segments(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: u32,
        segments_count: u32,
    ) -> Result<()> {
        self.execute(DeleteSegments {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id,
            segments_count,
        })
        .await
    }

    // ---- Consumer groups ----------------------------------------------------------------

    /// GetConsumerGroup (600); `None` if no such group.
    pub async fn get_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<Option<ConsumerGroupDetails>> {
        self.execute(GetConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// GetConsumerGroups (601).
    pub async fn get_consumer_groups(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<Vec<ConsumerGroupInfo>> {
        self.execute(GetConsumerGroups {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// CreateConsumerGroup (602). The server assigns the id.
    pub async fn create_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_name: &str,
    ) -> Result<ConsumerGroupDetails> {
        self.execute(CreateConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            name: name(group_name)?,
        })
        .await
    }

    /// DeleteConsumerGroup (603).
    pub async fn delete_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(DeleteConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// JoinConsumerGroup (604). The membership is re-established after reconnections.
    pub async fn join_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(JoinConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// LeaveConsumerGroup (605).
    pub async fn leave_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(LeaveConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }
}

/// Topic settings for [`Client::create_topic`] and [`Client::update_topic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicOptions {
    /// Compression (stored, not applied, by the server).
    pub compression_algorithm: CompressionAlgorithm,
    /// µs; 0 = server default, `u64::MAX` = never expire.
    pub message_expiry: u64,
    /// Bytes; 0 = server default, `u64::MAX` = unlimited.
    pub max_topic_size: u64,
    /// 0 = default.
    pub replication_factor: u8,
}

impl Default for TopicOptions {
    fn default() -> Self {
        TopicOptions {
            compression_algorithm: CompressionAlgorithm::None,
            message_expiry: 0,
            max_topic_size: 0,
            replication_factor: 0,
        }
    }
}

/// Snapshot archive compression (protocol.md 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SnapshotCompression {
    /// No compression.
    Stored = 1,
    /// Deflate.
    Deflated = 2,
    /// bzip2.
    Bzip2 = 3,
    /// zstd.
    Zstd = 4,
    /// LZMA.
    Lzma = 5,
    /// xz.
    Xz = 6,
}

/// What a snapshot collects (protocol.md 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SnapshotType {
    /// Filesystem overview.
    FilesystemOverview = 1,
    /// Process list.
    ProcessList = 2,
    /// Resource usage.
    ResourceUsage = 3,
    /// Test entry.
    Test = 4,
    /// Server logs.
    ServerLogs = 5,
    /// Server configuration.
    ServerConfig = 6,
    /// Everything (must be alone).
    All = 100,
}
