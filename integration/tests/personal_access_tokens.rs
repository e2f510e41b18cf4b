//! Personal access tokens (protocol.md 4.3, 7.9, 8): create / list / delete, logging in with a
//! token, the error codes (50, 51, 52, 20, 54), per-user token namespaces, and tokens surviving a
//! graceful restart.

mod support;

use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, assert_error_code, id, root_client};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;
use support::{global_only, login_client, no_global};

const PASSWORD: &str = "secret-pass";

async fn create_user(root: &IggyClient, username: &str, permissions: Option<Permissions>) -> u32 {
    root.create_user(username, PASSWORD, UserStatus::Active, permissions)
        .await
        .unwrap_or_else(|error| panic!("create user {username:?}: {error}"))
        .id
}

/// Logs a fresh session in with `token` and returns it with the user id the server answered.
async fn token_session(server: &TestServer, token: &str) -> (IggyClient, u32) {
    let client = anonymous_client(server).await;
    let identity = client
        .login_with_personal_access_token(token)
        .await
        .unwrap_or_else(|error| panic!("login with token: {error}"));
    (client, identity.user_id)
}

fn hour() -> IggyExpiry {
    IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(3600)))
}

#[tokio::test]
async fn create_list_login_and_delete_tokens() {
    // Proves: CreatePersonalAccessToken returns a raw token (distinct per token); GetPersonal-
    // AccessTokens lists the caller's tokens with expiry None for "never" and now + duration for
    // an expiring one; LoginWithPersonalAccessToken logs a fresh session in as the token's owner
    // (identity and GetMe report that user) with the owner's permissions; DeletePersonalAccess-
    // Token removes the token, after which logging in with it answers 20. How: official SDK,
    // root and a user "mia" with read_streams only.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let mia = create_user(
        &root,
        "mia",
        Some(global_only(GlobalPermissions {
            read_streams: true,
            ..no_global()
        })),
    )
    .await;
    let mia_client = login_client(&server, "mia", PASSWORD).await;

    assert!(
        mia_client
            .get_personal_access_tokens()
            .await
            .expect("list tokens")
            .is_empty(),
        "a new user has no tokens"
    );
    let forever = mia_client
        .create_personal_access_token("forever", IggyExpiry::NeverExpire)
        .await
        .expect("create forever");
    let before = IggyTimestamp::now().as_micros();
    let hourly = mia_client
        .create_personal_access_token("hourly", hour())
        .await
        .expect("create hourly");
    let after = IggyTimestamp::now().as_micros();
    assert!(
        forever.token.len() >= 32,
        "token too short to be secret: {:?}",
        forever.token
    );
    assert_ne!(forever.token, hourly.token);

    let mut tokens = mia_client.get_personal_access_tokens().await.expect("list");
    tokens.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        tokens.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["forever", "hourly"]
    );
    assert_eq!(
        tokens[0].expiry_at, None,
        "a never-expiring token has no expiry"
    );
    let expiry = tokens[1]
        .expiry_at
        .expect("hourly token has an expiry")
        .as_micros();
    let hour_us = 3_600_000_000;
    assert!(
        (before + hour_us - 2_000_000..=after + hour_us + 2_000_000).contains(&expiry),
        "expiry {expiry} is not creation time + 1 h ({before}..{after} + 1 h)"
    );
    assert!(
        root.get_personal_access_tokens()
            .await
            .expect("root's tokens")
            .is_empty(),
        "root must not see mia's tokens"
    );

    for token in [&forever.token, &hourly.token] {
        let (session, user_id) = token_session(&server, token).await;
        assert_eq!(user_id, mia, "the token logs in as its owner");
        let me = session.get_me().await.expect("GetMe over a token session");
        assert_eq!(me.user_id, Some(mia), "GetMe reports the token's owner");
        session
            .get_streams()
            .await
            .expect("the owner's read_streams applies");
        assert_error_code(
            session.create_stream("from-token").await,
            41,
            "the owner lacks manage_streams",
        );
    }

    mia_client
        .delete_personal_access_token("forever")
        .await
        .expect("delete forever");
    let tokens = mia_client.get_personal_access_tokens().await.expect("list");
    assert_eq!(
        tokens.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["hourly"]
    );
    let client = anonymous_client(&server).await;
    assert_error_code(
        client
            .login_with_personal_access_token(&forever.token)
            .await,
        20,
        "login with a deleted token",
    );
    // The remaining token still works.
    let (_session, user_id) = token_session(&server, &hourly.token).await;
    assert_eq!(user_id, mia);

    // Root's own tokens log in as root.
    let root_token = root
        .create_personal_access_token("root-token", IggyExpiry::NeverExpire)
        .await
        .expect("root token");
    let (session, user_id) = token_session(&server, &root_token.token).await;
    assert_eq!(user_id, 0);
    session
        .create_stream("by-root-token")
        .await
        .expect("root may");

    // Deleting the owner removes the owner's tokens from use.
    root.delete_user(&id(mia)).await.expect("delete mia");
    let client = anonymous_client(&server).await;
    let result = client.login_with_personal_access_token(&hourly.token).await;
    assert!(
        result.is_err(),
        "a deleted user's token must not log in: {result:?}"
    );
}

#[tokio::test]
async fn token_error_codes() {
    // Proves the error codes of protocol.md 4.3 / 8.1: name length outside 3..=30 → 50 (3 and
    // 30 accepted), duplicate name for the same user → 51 (while another user may use the same
    // name), an unknown token → 20, an expired token → 54 (created with a 1 s expiry, used after
    // 1.5 s; the cleanup timer is 60 s so it is still present), and more than 100 tokens for one
    // user → 52. How: official SDK.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    create_user(&root, "noah", None).await;
    let noah = login_client(&server, "noah", PASSWORD).await;

    for name in ["ab".to_string(), "t".repeat(31)] {
        assert_error_code(
            root.create_personal_access_token(&name, IggyExpiry::NeverExpire)
                .await,
            50,
            &format!("{}-byte token name", name.len()),
        );
    }
    root.create_personal_access_token("abc", IggyExpiry::NeverExpire)
        .await
        .expect("3-byte name");
    root.create_personal_access_token(&"t".repeat(30), IggyExpiry::NeverExpire)
        .await
        .expect("30-byte name");

    root.create_personal_access_token("shared-name", IggyExpiry::NeverExpire)
        .await
        .expect("root's shared-name");
    assert_error_code(
        root.create_personal_access_token("shared-name", hour())
            .await,
        51,
        "duplicate token name for the same user",
    );
    noah.create_personal_access_token("shared-name", IggyExpiry::NeverExpire)
        .await
        .expect("another user may use the same token name");

    let client = anonymous_client(&server).await;
    assert_error_code(
        client
            .login_with_personal_access_token("this-token-was-never-issued-by-the-server")
            .await,
        20,
        "login with an unknown token",
    );

    let short = noah
        .create_personal_access_token(
            "short-lived",
            IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(1))),
        )
        .await
        .expect("create a 1 s token");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_with_personal_access_token(&short.token).await,
        54,
        "login with an expired token",
    );

    // noah has shared-name and short-lived: 98 more reach 100, the 101st is refused.
    for n in 0..98 {
        noah.create_personal_access_token(&format!("bulk-{n}"), IggyExpiry::NeverExpire)
            .await
            .unwrap_or_else(|error| panic!("token {} of 100: {error}", n + 3));
    }
    assert_eq!(
        noah.get_personal_access_tokens().await.expect("list").len(),
        100
    );
    assert_error_code(
        noah.create_personal_access_token("one-too-many", IggyExpiry::NeverExpire)
            .await,
        52,
        "the 101st token",
    );
}

#[tokio::test]
async fn tokens_survive_a_graceful_restart() {
    // Proves: tokens are persisted (hashed): after SIGTERM and a restart the same raw tokens log
    // in as their owners, the list and expiries are unchanged, and a token deleted before the
    // restart stays unusable (20). How: official SDK, TestServer restart.
    let mut server = TestServer::start(ServerOptions::new());
    let (olivia, kept, hourly, deleted, listed_before) = {
        let root = root_client(&server).await;
        let olivia = create_user(&root, "olivia", None).await;
        let client = login_client(&server, "olivia", PASSWORD).await;
        let kept = client
            .create_personal_access_token("kept", IggyExpiry::NeverExpire)
            .await
            .expect("kept");
        let hourly = client
            .create_personal_access_token("hourly", hour())
            .await
            .expect("hourly");
        let deleted = client
            .create_personal_access_token("deleted", IggyExpiry::NeverExpire)
            .await
            .expect("deleted");
        client
            .delete_personal_access_token("deleted")
            .await
            .expect("delete");
        let mut listed: Vec<(String, Option<u64>)> = client
            .get_personal_access_tokens()
            .await
            .expect("list")
            .into_iter()
            .map(|t| (t.name, t.expiry_at.map(|e| e.as_micros())))
            .collect();
        listed.sort();
        (olivia, kept.token, hourly.token, deleted.token, listed)
    };
    server.restart();

    let (session, user_id) = token_session(&server, &kept).await;
    assert_eq!(user_id, olivia);
    let mut listed: Vec<(String, Option<u64>)> = session
        .get_personal_access_tokens()
        .await
        .expect("list after restart")
        .into_iter()
        .map(|t| (t.name, t.expiry_at.map(|e| e.as_micros())))
        .collect();
    listed.sort();
    assert_eq!(listed, listed_before);
    let (_session, user_id) = token_session(&server, &hourly).await;
    assert_eq!(user_id, olivia);
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_with_personal_access_token(&deleted).await,
        20,
        "token deleted before the restart",
    );
}
