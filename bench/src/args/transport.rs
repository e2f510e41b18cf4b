//! The transport subcommand of a benchmark (`tcp`, `quic`, `websocket`, and the unsupported
//! `http`), with the results `output` subcommand under it.

use crate::client::Transport;
use crate::plan::OutputArgs;
use clap::{Args, Subcommand};
use rill_sdk::config::{DEFAULT_QUIC_RESPONSE_BUFFER_SIZE, DEFAULT_QUIC_SERVER_NAME};
use rill_sdk::{QuicOptions, TlsOptions};

pub const DEFAULT_TCP_ADDRESS: &str = "127.0.0.1:8090";
pub const DEFAULT_QUIC_ADDRESS: &str = "127.0.0.1:8080";
pub const DEFAULT_HTTP_ADDRESS: &str = "127.0.0.1:3000";
pub const DEFAULT_WEBSOCKET_ADDRESS: &str = "127.0.0.1:8092";

#[derive(Subcommand, Debug, Clone)]
pub enum TransportCommand {
    /// Binary protocol over TCP (optionally TLS)
    Tcp(TcpArgs),
    /// Binary protocol over QUIC
    Quic(QuicArgs),
    /// The HTTP REST API (optionally HTTPS): each command as its HTTP call
    Http(HttpArgs),
    /// Binary protocol over WebSocket (optionally TLS: wss)
    #[command(visible_aliases = ["ws", "websocket"])]
    WebSocket(WebSocketArgs),
}

#[derive(Args, Debug, Clone)]
pub struct TcpArgs {
    /// Address of the server
    #[arg(long, default_value = DEFAULT_TCP_ADDRESS)]
    pub server_address: String,
    /// Accepted for compatibility: TCP_NODELAY is always set (each frame leaves in one write)
    #[arg(long)]
    pub nodelay: bool,
    // TLS over TCP: the server needs [tcp.tls].
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Args, Debug, Clone)]
pub struct WebSocketArgs {
    /// Address of the server's WebSocket listener
    #[arg(long, default_value = DEFAULT_WEBSOCKET_ADDRESS)]
    pub server_address: String,
    // wss: the server needs [websocket.tls].
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Args, Debug, Clone)]
pub struct QuicArgs {
    /// Address of the server
    #[arg(long, default_value = DEFAULT_QUIC_ADDRESS)]
    pub server_address: String,
    /// Local UDP address to bind (default: the unspecified address, port chosen by the system,
    /// so that remote servers are reachable; upstream binds 127.0.0.1:0)
    #[arg(long)]
    pub client_address: Option<String>,
    /// Name for SNI and certificate validation
    #[arg(long, default_value = DEFAULT_QUIC_SERVER_NAME)]
    pub server_name: String,
    /// Validate the server's certificate (off by default, as upstream)
    #[arg(long)]
    pub validate_certificate: bool,
    /// PEM file of CA certificates (or the server's own certificate) to trust when validating
    /// [rill addition]
    #[arg(long, requires = "validate_certificate")]
    pub ca_file: Option<String>,
    /// Largest response accepted, in bytes: raise it when one poll returns more
    /// (messages per batch × message size) [rill addition]
    #[arg(long, default_value_t = DEFAULT_QUIC_RESPONSE_BUFFER_SIZE)]
    pub response_buffer_size: usize,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

#[derive(Args, Debug, Clone)]
pub struct HttpArgs {
    /// Address of the server's HTTP API
    #[arg(long, default_value = DEFAULT_HTTP_ADDRESS)]
    pub server_address: String,
    // HTTPS: the server needs [http.tls].
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(subcommand)]
    pub output: Option<OutputCommand>,
}

/// TLS to the server (`--tls` and its options), the same for `tcp`, `ws` and `http`.
#[derive(Args, Debug, Clone)]
pub struct TlsArgs {
    /// TLS to the server (the server needs [tcp.tls], [websocket.tls] or [http.tls] enabled)
    #[arg(long)]
    pub tls: bool,
    /// Name to verify the certificate against (default: the host of --server-address)
    #[arg(long, requires = "tls")]
    pub tls_domain: Option<String>,
    /// Validate the server's certificate (off by default, as upstream's iggy-bench and
    /// WebSocket client: servers use a self-signed certificate unless configured otherwise)
    #[arg(long, requires = "tls")]
    pub tls_validate_certificate: bool,
    /// PEM file of CA certificates (or the server's own certificate) to trust when validating
    #[arg(long, requires = "tls_validate_certificate")]
    pub tls_ca_file: Option<String>,
}

impl TlsArgs {
    /// The TLS options asked for, if `--tls`.
    pub fn options(&self) -> Option<TlsOptions> {
        self.tls.then(|| TlsOptions {
            domain: self.tls_domain.clone(),
            ca_file: self.tls_ca_file.clone(),
            validate_certificate: self.tls_validate_certificate,
        })
    }
}

#[derive(Subcommand, Debug, Clone)]
pub enum OutputCommand {
    /// Where and how to write the results
    Output(OutputArgs),
}

/// What a transport subcommand says.
pub(super) struct TransportChoice {
    pub(super) transport: Transport,
    pub(super) address: String,
    pub(super) tls: Option<TlsOptions>,
    pub(super) quic: QuicOptions,
    pub(super) output: Option<OutputArgs>,
}

impl TransportCommand {
    pub(super) fn choice(&self) -> TransportChoice {
        let output = |output: &Option<OutputCommand>| {
            output
                .as_ref()
                .map(|OutputCommand::Output(args)| args.clone())
        };
        match self {
            TransportCommand::Tcp(args) => TransportChoice {
                transport: Transport::Tcp,
                address: args.server_address.clone(),
                tls: args.tls.options(),
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
            TransportCommand::Quic(args) => TransportChoice {
                transport: Transport::Quic,
                address: args.server_address.clone(),
                tls: None,
                quic: QuicOptions {
                    server_name: args.server_name.clone(),
                    client_address: args.client_address.clone(),
                    validate_certificate: args.validate_certificate,
                    ca_file: args.ca_file.clone(),
                    response_buffer_size: args.response_buffer_size,
                    ..QuicOptions::default()
                },
                output: output(&args.output),
            },
            TransportCommand::Http(args) => TransportChoice {
                transport: Transport::Http,
                address: args.server_address.clone(),
                tls: args.tls.options(),
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
            TransportCommand::WebSocket(args) => TransportChoice {
                transport: Transport::WebSocket,
                address: args.server_address.clone(),
                tls: args.tls.options(),
                quic: QuicOptions::default(),
                output: output(&args.output),
            },
        }
    }
}
