//! Rust client library for Iggy 0.8.0-compatible servers, on tokio.
//!
//! * [`Client`]: the low-level client, one async method per command (all 47), typed requests
//!   and responses from [`rill_core`], with reconnection, re-login, heartbeats and timeouts.
//! * [`producer::Producer`]: background batching sender with partitioning, bounded queue and
//!   retries.
//! * [`consumer::Consumer`]: an async [`futures_core::Stream`] of messages with polling
//!   strategies, consumer groups and offset commits.
//!
//! The protocol itself lives in `rill_core` (sans I/O); this crate adds transports
//! ([`transport`]: TCP, TLS over TCP with rustls, QUIC with quinn, WebSocket (ws/wss) with
//! tungstenite; chosen by [`TransportKind`] or the connection string's scheme `iggy://`,
//! `iggy+tls://`, `iggy+quic://`, `iggy+ws://`)
//! and ergonomics. Either protocol generation is spoken, Iggy 0.8 by default or 0.9 with
//! [`Protocol::V09`] (`protocol=0.9` in the connection string).
//!
//! ```no_run
//! # async fn example() -> rill_sdk::Result<()> {
//! use rill_sdk::Client;
//! let client = Client::from_connection_string("iggy://iggy:iggy@127.0.0.1:8090")?;
//! client.connect().await?;
//! let stream = client.create_stream("orders").await?;
//! println!("created stream {}", stream.stream.id);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod consumer;
pub mod error;
mod generation;
pub mod message;
pub mod producer;
pub mod transport;
mod wire;

pub use client::{
    Client, ClientBuilder, IntoIdentifier, SnapshotCompression, SnapshotType, TopicOptions,
    parse_identifier,
};
pub use config::{
    ClientConfig, Credentials, HttpOptions, Protocol, QuicOptions, ReconnectPolicy, TlsOptions,
    TransportKind, WebSocketOptions,
};
pub use error::{Error, Result};
pub use message::{Header, HeaderValue, Message, SendMessage};
pub use wire::CommandResponse;

/// The protocol crate, re-exported so applications need only one dependency.
pub use rill_core;

/// Protocol types used in the client's signatures.
pub mod types {
    pub use rill_core::ErrorCode;
    pub use rill_core::message::{MessageView, OutgoingMessage, PolledMessages};
    pub use rill_core::primitives::user_headers::{HeaderField, HeaderKind};
    pub use rill_core::primitives::{
        CompressionAlgorithm, Consumer, ConsumerKind, GlobalPermissions, Identifier, Name,
        Partitioning, Permissions, PollingKind, PollingStrategy, StreamPermissions,
        TopicPermissions, Transport, UserStatus,
    };
    pub use rill_core::responses::*;
}
