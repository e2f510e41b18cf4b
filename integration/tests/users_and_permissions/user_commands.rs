//! User commands (create, get, update, permissions, delete), their error codes, and the
//! rules of ChangePassword.

use crate::helpers::{PASSWORD, create_user, sample_permissions};
use crate::support::{all_global, global_only, login_client, no_global};
use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, assert_error_code, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn user_commands_happy_path() {
    // Proves: CreateUser returns the new user's details (id, status, username, permissions as
    // given, created_at now); GetUser by id and by name returns the same; GetUsers lists root
    // and the users sorted by id; UpdateUser changes username and status; UpdatePermissions
    // replaces (and clears) permissions; DeleteUser removes the user, who can then no longer log
    // in. How: official SDK as root, every answer compared field by field.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let before = IggyTimestamp::now().as_micros();
    let alice = root
        .create_user(
            "alice",
            PASSWORD,
            UserStatus::Active,
            Some(sample_permissions()),
        )
        .await
        .expect("create alice");
    let after = IggyTimestamp::now().as_micros();
    assert_eq!(alice.username, "alice");
    assert_eq!(alice.status, UserStatus::Active);
    assert_eq!(alice.permissions, Some(sample_permissions()));
    assert_ne!(alice.id, 0, "user 0 is root");
    let created = alice.created_at.as_micros();
    assert!(
        (before.saturating_sub(1_000_000)..=after + 1_000_000).contains(&created),
        "created_at {created} outside {before}..={after}"
    );
    let bob = root
        .create_user("bob", PASSWORD, UserStatus::Inactive, None)
        .await
        .expect("create bob");
    assert_eq!(bob.status, UserStatus::Inactive);
    assert_eq!(bob.permissions, None);
    assert!(
        bob.id > alice.id,
        "ids grow: alice {} bob {}",
        alice.id,
        bob.id
    );

    for identifier in [id(alice.id), named("alice")] {
        let fetched = root
            .get_user(&identifier)
            .await
            .expect("get alice")
            .expect("alice exists");
        assert_eq!(fetched.id, alice.id);
        assert_eq!(fetched.username, "alice");
        assert_eq!(fetched.status, UserStatus::Active);
        assert_eq!(fetched.created_at, alice.created_at);
        assert_eq!(fetched.permissions, Some(sample_permissions()));
    }
    let root_details = root
        .get_user(&id(0))
        .await
        .expect("get root")
        .expect("root exists");
    assert_eq!(root_details.username, "iggy");
    assert_eq!(
        root_details.permissions,
        Some(global_only(all_global())),
        "root has all ten global permissions and no stream entries (protocol.md 2.7)"
    );

    let users = root.get_users().await.expect("get users");
    let listed: Vec<(u32, &str, UserStatus)> = users
        .iter()
        .map(|user| (user.id, user.username.as_str(), user.status))
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "iggy", UserStatus::Active),
            (alice.id, "alice", UserStatus::Active),
            (bob.id, "bob", UserStatus::Inactive),
        ]
    );

    root.update_user(&id(bob.id), Some("robert"), Some(UserStatus::Active))
        .await
        .expect("rename and activate bob");
    let robert = root
        .get_user(&named("robert"))
        .await
        .expect("get robert")
        .expect("robert exists");
    assert_eq!((robert.id, robert.status), (bob.id, UserStatus::Active));
    assert!(root.get_user(&named("bob")).await.unwrap().is_none());
    // Only the status this time.
    root.update_user(&named("robert"), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate robert");
    let robert = root.get_user(&id(bob.id)).await.unwrap().expect("robert");
    assert_eq!(
        (robert.username.as_str(), robert.status),
        ("robert", UserStatus::Inactive)
    );

    let new_permissions = global_only(GlobalPermissions {
        manage_streams: true,
        ..GlobalPermissions::default()
    });
    root.update_permissions(&id(alice.id), Some(new_permissions.clone()))
        .await
        .expect("update alice's permissions");
    let fetched = root.get_user(&id(alice.id)).await.unwrap().expect("alice");
    assert_eq!(fetched.permissions, Some(new_permissions));
    root.update_permissions(&named("alice"), None)
        .await
        .expect("clear alice's permissions");
    let fetched = root.get_user(&id(alice.id)).await.unwrap().expect("alice");
    assert_eq!(fetched.permissions, None);

    // A user can read their own details without read_users.
    let alice_client = login_client(&server, "alice", PASSWORD).await;
    let own = alice_client
        .get_user(&id(alice.id))
        .await
        .expect("alice reads herself")
        .expect("alice exists");
    assert_eq!(own.username, "alice");

    root.delete_user(&named("alice"))
        .await
        .expect("delete alice");
    assert!(root.get_user(&id(alice.id)).await.unwrap().is_none());
    let users = root.get_users().await.unwrap();
    assert_eq!(
        users.iter().map(|u| u.id).collect::<Vec<_>>(),
        vec![0, bob.id]
    );
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("alice", PASSWORD).await,
        42,
        "login of a deleted user",
    );
}

#[tokio::test]
async fn user_commands_error_codes() {
    // Proves the error codes of protocol.md 4.2 / 8.1: duplicate username 46 (create and
    // rename), username length outside 3..=50 → 43, password length outside 3..=100 → 44,
    // inactive user login 47, wrong password 42, deleting root 48, changing root's permissions
    // 49, unknown user → 20 on UpdateUser / DeleteUser / UpdatePermissions / ChangePassword, and
    // GetUser of an unknown user → None. How: official SDK as root; after every refusal the state
    // is checked to be unchanged.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let carol = create_user(&root, "carol", None).await;
    create_user(&root, "dave", None).await;

    assert_error_code(
        root.create_user("carol", PASSWORD, UserStatus::Active, None)
            .await,
        46,
        "duplicate username",
    );
    assert_error_code(
        root.update_user(&id(carol.id), Some("dave"), None).await,
        46,
        "rename to an existing username",
    );
    for username in ["ab".to_string(), "u".repeat(51)] {
        assert_error_code(
            root.create_user(&username, PASSWORD, UserStatus::Active, None)
                .await,
            43,
            &format!("create user with a {}-byte username", username.len()),
        );
    }
    assert_error_code(
        root.update_user(&id(carol.id), Some("ab"), None).await,
        43,
        "rename to a 2-byte username",
    );
    for password in ["pw".to_string(), "p".repeat(101)] {
        assert_error_code(
            root.create_user("erin", &password, UserStatus::Active, None)
                .await,
            44,
            &format!("create user with a {}-byte password", password.len()),
        );
    }
    // 3 and 50 / 3 and 100 are the inclusive bounds.
    root.create_user(&"x".repeat(50), "abc", UserStatus::Active, None)
        .await
        .expect("50-byte username and 3-byte password are valid");
    root.create_user("xyz", &"p".repeat(100), UserStatus::Active, None)
        .await
        .expect("3-byte username and 100-byte password are valid");
    let users = root.get_users().await.unwrap();
    let names: Vec<&str> = users.iter().map(|u| u.username.as_str()).collect();
    assert!(
        !names.contains(&"erin"),
        "refused users must not exist: {names:?}"
    );
    assert_eq!(
        users.len(),
        5,
        "root, carol, dave and the two bound cases: {names:?}"
    );

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("carol", "wrong-password").await,
        42,
        "wrong password",
    );
    assert_error_code(
        client.login_user("nobody", PASSWORD).await,
        42,
        "unknown username",
    );
    root.update_user(&id(carol.id), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate carol");
    assert_error_code(
        client.login_user("carol", PASSWORD).await,
        47,
        "login of an inactive user",
    );
    root.update_user(&id(carol.id), None, Some(UserStatus::Active))
        .await
        .expect("reactivate carol");
    let identity = client.login_user("carol", PASSWORD).await.expect("login");
    assert_eq!(identity.user_id, carol.id);

    assert_error_code(root.delete_user(&id(0)).await, 48, "delete root by id");
    assert_error_code(
        root.delete_user(&named("iggy")).await,
        48,
        "delete root by name",
    );
    assert_error_code(
        root.update_permissions(&id(0), Some(global_only(no_global())))
            .await,
        49,
        "change root's permissions",
    );
    assert_error_code(
        root.update_permissions(&id(0), None).await,
        49,
        "clear root's permissions",
    );
    let root_details = root.get_user(&id(0)).await.unwrap().expect("root");
    assert_eq!(root_details.permissions, Some(global_only(all_global())));
    let root_again = root_client(&server).await;
    root_again.get_users().await.expect("root still works");

    for unknown in [id(4242), named("nobody")] {
        let what = format!("unknown user {unknown}");
        assert_error_code(
            root.update_user(&unknown, Some("someone"), None).await,
            20,
            &format!("UpdateUser of {what}"),
        );
        assert_error_code(
            root.delete_user(&unknown).await,
            20,
            &format!("DeleteUser of {what}"),
        );
        assert_error_code(
            root.update_permissions(&unknown, None).await,
            20,
            &format!("UpdatePermissions of {what}"),
        );
        assert_error_code(
            root.change_password(&unknown, PASSWORD, "another-pass")
                .await,
            20,
            &format!("ChangePassword of {what}"),
        );
        assert!(
            root.get_user(&unknown).await.expect("GetUser").is_none(),
            "GetUser of {what} must be None (empty OK)"
        );
    }
}

#[tokio::test]
async fn change_password_rules() {
    // Proves: a user may change their own password without any permission; the old password
    // then fails (42) and the new one works; a wrong current password is 42; a new password
    // outside 3..=100 is 44; changing someone else's password needs manage_users (41 without it,
    // accepted with it). How: official SDK, several sessions.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let frank = create_user(&root, "frank", None).await;
    let grace = create_user(&root, "grace", None).await;
    let admin = create_user(
        &root,
        "user-admin",
        Some(global_only(GlobalPermissions {
            manage_users: true,
            ..GlobalPermissions::default()
        })),
    )
    .await;

    let frank_client = login_client(&server, "frank", PASSWORD).await;
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), "wrong-current", "frank-new-pass")
            .await,
        42,
        "wrong current password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), PASSWORD, "xy")
            .await,
        44,
        "2-byte new password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(frank.id), PASSWORD, &"n".repeat(101))
            .await,
        44,
        "101-byte new password",
    );
    assert_error_code(
        frank_client
            .change_password(&id(grace.id), PASSWORD, "grace-new-pass")
            .await,
        41,
        "frank changes grace's password without manage_users",
    );
    frank_client
        .change_password(&id(frank.id), PASSWORD, "frank-new-pass")
        .await
        .expect("frank changes his own password");

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("frank", PASSWORD).await,
        42,
        "old password after the change",
    );
    client
        .login_user("frank", "frank-new-pass")
        .await
        .expect("new password works");
    let grace_client = login_client(&server, "grace", PASSWORD).await;
    drop(grace_client);

    let admin_client = login_client(&server, "user-admin", PASSWORD).await;
    admin_client
        .change_password(&named("grace"), PASSWORD, "grace-new-pass")
        .await
        .expect("a manage_users holder changes grace's password");
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("grace", PASSWORD).await,
        42,
        "grace's old password",
    );
    let identity = client
        .login_user("grace", "grace-new-pass")
        .await
        .expect("grace's new password");
    assert_eq!(identity.user_id, grace.id);
    assert_ne!(admin.id, grace.id);
}
