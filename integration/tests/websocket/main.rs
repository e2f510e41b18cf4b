//! The WebSocket transport (`[websocket]`): the official SDK 0.10.0 `WebSocketClient` does what
//! it does over TCP (login, ping, streams and topics, send and poll with every strategy, stored
//! offsets, consumer groups, users, stats, cluster metadata naming the WebSocket port), the
//! 0.11.0 client speaks 0.9 over it, data crosses between WebSocket and TCP, wss works with the
//! generated certificate, and hostile peers (unmasked, text, oversized frames, bad handshakes)
//! are closed with the RFC's codes while another client keeps working.

mod helpers;
mod official_sdk;
mod raw_peers;
mod raw_ws;
