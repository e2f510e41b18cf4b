//! Users, passwords and deletions surviving a graceful restart.

use crate::helpers::{PASSWORD, create_user, sample_permissions};
use crate::support::code_of;
use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, assert_error_code, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn users_survive_a_graceful_restart() {
    // Proves: users (ids, names, statuses, permissions), changed passwords and deletions are
    // persisted: after SIGTERM and a restart, GetUsers / GetUser answer the same, the new
    // password logs in and the old one does not, an inactive user is still refused (47), a
    // deleted user stays deleted, and root keeps its credentials. How: official SDK, TestServer
    // restart on the same data directory.
    let mut server = TestServer::start(ServerOptions::new());
    let (ivy, jack, kate) = {
        let root = root_client(&server).await;
        let ivy = root
            .create_user(
                "ivy",
                PASSWORD,
                UserStatus::Active,
                Some(sample_permissions()),
            )
            .await
            .expect("ivy");
        let jack = create_user(&root, "jack", None).await;
        let kate = create_user(&root, "kate", None).await;
        root.change_password(&id(ivy.id), PASSWORD, "ivy-new-pass")
            .await
            .expect("change ivy's password");
        root.update_user(&id(jack.id), Some("jackson"), Some(UserStatus::Inactive))
            .await
            .expect("rename and deactivate jack");
        root.delete_user(&id(kate.id)).await.expect("delete kate");
        (ivy, jack, kate)
    };
    server.restart();

    let root = root_client(&server).await;
    let users = root.get_users().await.expect("users after restart");
    let listed: Vec<(u32, &str, UserStatus)> = users
        .iter()
        .map(|u| (u.id, u.username.as_str(), u.status))
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "iggy", UserStatus::Active),
            (ivy.id, "ivy", UserStatus::Active),
            (jack.id, "jackson", UserStatus::Inactive),
        ]
    );
    let ivy_after = root.get_user(&named("ivy")).await.unwrap().expect("ivy");
    assert_eq!(ivy_after.permissions, Some(sample_permissions()));
    assert_eq!(ivy_after.created_at, ivy.created_at);
    assert!(root.get_user(&id(kate.id)).await.unwrap().is_none());

    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("ivy", PASSWORD).await,
        42,
        "ivy's old password",
    );
    assert_eq!(
        client
            .login_user("ivy", "ivy-new-pass")
            .await
            .expect("ivy's new password")
            .user_id,
        ivy.id
    );
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("jackson", PASSWORD).await,
        47,
        "inactive jackson",
    );
    assert_error_code(
        client.login_user("kate", PASSWORD).await,
        42,
        "deleted kate",
    );

    // A new user after the restart does not reuse a live user's id.
    let leo = create_user(&root, "leo", None).await;
    assert!(
        ![0, ivy.id, jack.id].contains(&leo.id),
        "new user id {} collides with an existing user",
        leo.id
    );
    assert_eq!(code_of(&root.get_user(&id(leo.id)).await), 0);
}
