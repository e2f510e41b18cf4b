//! Permission and status changes applying to sessions already logged in.

use crate::helpers::{PASSWORD, create_user, global_flag};
use crate::support::{global_only, login_client};
use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, assert_error_code, id, root_client};
use rill_integration::{ServerOptions, TestServer};

#[tokio::test]
async fn permission_changes_apply_to_sessions_already_logged_in() {
    // Proves: UpdatePermissions takes effect for a session that is already logged in (no
    // re-login), both granting and revoking; and a deactivated user's new logins are refused
    // (47) while root is unaffected. How: one session of "henry" checks GetStreams (needs
    // read_streams) before and after root changes his permissions.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let henry = create_user(&root, "henry", None).await;
    let session = login_client(&server, "henry", PASSWORD).await;
    assert_error_code(
        session.get_streams().await,
        41,
        "GetStreams without permission",
    );
    root.update_permissions(
        &id(henry.id),
        Some(global_only(global_flag("read_streams"))),
    )
    .await
    .expect("grant read_streams");
    session
        .get_streams()
        .await
        .expect("GetStreams right after the grant, same session");
    assert_error_code(
        session.create_stream("henrys").await,
        41,
        "CreateStream with read_streams only",
    );
    root.update_permissions(&id(henry.id), None)
        .await
        .expect("revoke");
    assert_error_code(
        session.get_streams().await,
        41,
        "GetStreams right after the revocation, same session",
    );
    root.update_user(&id(henry.id), None, Some(UserStatus::Inactive))
        .await
        .expect("deactivate");
    let client = anonymous_client(&server).await;
    assert_error_code(
        client.login_user("henry", PASSWORD).await,
        47,
        "login after deactivation",
    );
    root.get_streams().await.expect("root unaffected");
}
