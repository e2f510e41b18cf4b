//! Sessions: logging in as root with the official SDK and with raw frames, wrong credentials,
//! and the Unauthenticated (40) answer to every command but Ping and LoginUser before login.

use iggy::prelude::*;
use rill_integration::raw::{RawClient, codes, login_payload, name, status};
use rill_integration::sdk::{anonymous_client, assert_error_code, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn root_logs_in_with_the_official_client() {
    // Proves: the SDK's explicit login_user("iggy", "iggy") succeeds with user id 0 (root), and
    // the session can then run authenticated commands. How: connect without auto-login, log in,
    // ping, list streams (empty on a fresh server), log out.
    let server = TestServer::start(ServerOptions::new());
    let client = anonymous_client(&server).await;
    client.ping().await.expect("ping before login");
    let identity = client.login_user("iggy", "iggy").await.expect("root login");
    assert_eq!(identity.user_id, 0, "root is user 0");
    client.ping().await.expect("ping after login");
    let streams = client.get_streams().await.expect("get_streams after login");
    assert!(
        streams.is_empty(),
        "fresh server has no streams: {streams:?}"
    );
    client.logout_user().await.expect("logout");
}

#[tokio::test]
async fn auto_login_from_a_connection_string_works() {
    // Proves: the SDK's usual setup (credentials in the connection string, auto-login on connect,
    // followed by its GetClusterMetadata probe) leaves an authenticated session. How: connect with
    // iggy://iggy:iggy@..., then call GetStats and check a fresh server's counts.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stats = client.get_stats().await.expect("get_stats");
    assert_eq!(stats.streams_count, 0);
    assert_eq!(stats.topics_count, 0);
    assert_eq!(stats.partitions_count, 0);
    assert_eq!(stats.messages_count, 0);
    assert!(
        stats.clients_count >= 1,
        "at least this client is connected"
    );
    assert!(stats.process_id > 0, "stats report the server's pid");
}

#[tokio::test]
async fn wrong_credentials_are_rejected_with_42() {
    // Proves: a wrong password or an unknown user gets InvalidCredentials (42), and the session
    // stays usable for a correct login afterwards. How: official client, three login attempts.
    let server = TestServer::start(ServerOptions::new());
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("iggy", "not-the-password").await,
        42,
        "login with a wrong password",
    );
    assert_error_code(
        client.login_user("nobody", "iggy").await,
        42,
        "login as an unknown user",
    );
    let identity = client.login_user("iggy", "iggy").await.expect("root login");
    assert_eq!(identity.user_id, 0);
}

#[test]
fn commands_before_login_get_40_and_the_connection_stays_usable() {
    // Proves: before login, Ping works and authenticated commands (GetStreams, GetStats,
    // CreateStream, GetStream) answer 40 with an empty error frame; the connection stays open and
    // in sync; after login they work; after LogoutUser they answer 40 again. How: a raw TCP client,
    // because the SDK refuses to send these requests client-side when not logged in.
    let server = TestServer::start(ServerOptions::new());
    let mut raw = RawClient::connect(server.address());
    raw.assert_ping();
    let before_login = [
        (codes::GET_STREAMS, Vec::new()),
        (codes::GET_STATS, Vec::new()),
        (codes::CREATE_STREAM, name("sneaky")),
        (
            codes::GET_STREAM,
            rill_integration::raw::numeric_identifier(0),
        ),
    ];
    for (code, payload) in &before_login {
        let response = raw.request(*code, payload);
        assert_eq!(
            response.status,
            status::UNAUTHENTICATED,
            "command {code} before login"
        );
    }
    raw.assert_ping();

    let response = raw.request(codes::LOGIN_USER, &login_payload("iggy", "wrong"));
    assert_eq!(
        response.status,
        status::INVALID_CREDENTIALS,
        "wrong password"
    );
    raw.login_root();
    let response = raw.request(codes::GET_STREAMS, &[]);
    assert_eq!(response.status, status::OK, "GetStreams after login");
    assert!(
        response.payload.is_empty(),
        "no streams: the stream created before login must not exist"
    );

    let response = raw.request(codes::LOGOUT_USER, &[]);
    assert_eq!(response.status, status::OK, "LogoutUser");
    assert!(response.payload.is_empty());
    let response = raw.request(codes::GET_STREAMS, &[]);
    assert_eq!(
        response.status,
        status::UNAUTHENTICATED,
        "GetStreams after logout"
    );
    raw.assert_ping();
}
