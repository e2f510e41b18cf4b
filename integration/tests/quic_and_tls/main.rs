//! QUIC (protocol.md 1.6) and TLS over TCP (1.5) with the official `iggy` 0.10.0 SDK: login,
//! streams and topics, send and poll with content checks, consumer groups; QUIC clients that
//! misbehave do not disturb others; certificate problems stop the server with a clear message.

mod helpers;
mod misbehaving_quic_clients;
mod official_clients;
mod raw_quic;
mod socket_options;
mod startup_refusals;
