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

mod builder;
mod identifier;
mod messages;
mod options;
mod streams;
mod system;

pub use builder::ClientBuilder;
pub use identifier::{IntoIdentifier, parse_identifier};
pub use options::{SnapshotCompression, SnapshotType, TopicOptions};

use crate::config::{ClientConfig, Credentials, Protocol};
use crate::error::{Error, Result};
use crate::generation::{Codec, ends_connection};
use crate::transport::{Connection, Connector, PermanentFailure, connector_for};
use crate::wire::CommandResponse;
use bytes::Bytes;
use identifier::{name, secret};
use rill_core::primitives::Identifier;
use rill_core::requests::*;
use rill_core::{CommandCode, Request};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

// Named by the module documentation only.
#[cfg(doc)]
use crate::config::ReconnectPolicy;

/// The version string sent in LoginUser, as the official SDK 0.10.0 does (protocol.md 12.17).
pub const SDK_VERSION: &str = "0.10.0";

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
}
