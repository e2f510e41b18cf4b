//! The permission matrix: every command for every kind of grant, checked against the oracle.

use crate::helpers::{PASSWORD, create_user, global_flag};
use crate::permission_oracle::{
    ALL_CMDS, Cmd, MAIN_STREAM, MAIN_TOPIC, Oracle, VICTIM_STREAM, VICTIM_TOPIC, matrix_users,
};
use crate::support::{all_global, global_only, login_client};
use iggy::prelude::*;
use rill_integration::sdk::{anonymous_client, id, named, root_client};
use rill_integration::{ServerOptions, TestServer};

/// Shared state of one matrix run: the root client (which prepares and restores victims) and a
/// counter for unique names.
struct Matrix<'a> {
    server: &'a TestServer,
    root: IggyClient,
    counter: u32,
    target_user: u32,
    /// The matrix users' permissions, granted again when a victim stream or topic is recreated:
    /// deleting a stream or topic removes every permission entry naming it (issue 21), so the
    /// grants on the victim do not carry over to its successor by themselves.
    grants: Vec<(u32, Option<Permissions>)>,
}

impl Matrix<'_> {
    fn unique(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }

    async fn ensure_victim_stream(&self) {
        if self
            .root
            .get_stream(&id(VICTIM_STREAM))
            .await
            .unwrap()
            .is_none()
        {
            let stream = self
                .root
                .create_stream("victim")
                .await
                .expect("victim stream");
            assert_eq!(stream.id, VICTIM_STREAM, "recreated victim stream id");
            self.grant_again().await;
            self.root
                .create_topic(
                    &id(VICTIM_STREAM),
                    "victim-stream-topic",
                    1,
                    CompressionAlgorithm::None,
                    None,
                    IggyExpiry::ServerDefault,
                    MaxTopicSize::ServerDefault,
                )
                .await
                .expect("victim stream's topic");
        }
    }

    async fn ensure_victim_topic(&self) {
        match self
            .root
            .get_topic(&id(MAIN_STREAM), &id(VICTIM_TOPIC))
            .await
            .unwrap()
        {
            Some(topic) if topic.partitions_count >= 2 => {}
            Some(topic) => {
                self.root
                    .create_partitions(
                        &id(MAIN_STREAM),
                        &id(VICTIM_TOPIC),
                        3 - topic.partitions_count,
                    )
                    .await
                    .expect("refill victim topic partitions");
            }
            None => {
                let topic = self
                    .root
                    .create_topic(
                        &id(MAIN_STREAM),
                        "victim-topic",
                        3,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
                    .expect("victim topic");
                assert_eq!(topic.id, VICTIM_TOPIC, "recreated victim topic id");
                self.grant_again().await;
            }
        }
    }

    async fn grant_again(&self) {
        for (user_id, permissions) in &self.grants {
            self.root
                .update_permissions(&id(*user_id), permissions.clone())
                .await
                .expect("grant again");
        }
    }

    async fn ensure_victim_user(&self) -> u32 {
        if let Some(user) = self.root.get_user(&named("victim-user")).await.unwrap() {
            return user.id;
        }
        create_user(&self.root, "victim-user", None).await.id
    }

    async fn ensure_victim_group(&self) {
        let group = self
            .root
            .get_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), &named("victim-group"))
            .await
            .unwrap();
        if group.is_none() {
            self.root
                .create_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), "victim-group")
                .await
                .expect("victim group");
        }
    }

    /// Runs `cmd` as `client` (user `user_id` with `password`), preparing what it needs with
    /// root first and cleaning up after a success. Returns the command's own result.
    async fn attempt(
        &mut self,
        cmd: Cmd,
        client: &IggyClient,
        user_id: u32,
        password: &str,
        token: &mut Option<String>,
    ) -> Result<(), IggyError> {
        let (s, t) = (id(MAIN_STREAM), id(MAIN_TOPIC));
        let root = &self.root;
        match cmd {
            Cmd::Ping => client.ping().await,
            Cmd::GetMe => client.get_me().await.map(drop),
            Cmd::GetStats => client.get_stats().await.map(drop),
            Cmd::GetClient => {
                let me = own_client_id(client).await;
                match client.get_client(me).await? {
                    Some(_) => Ok(()),
                    None => Err(IggyError::ResourceNotFound(format!("client {me}"))),
                }
            }
            Cmd::GetClients => client.get_clients().await.map(drop),
            Cmd::GetClusterMetadata => client.get_cluster_metadata().await.map(drop),
            Cmd::GetSnapshot => client
                .snapshot(SnapshotCompression::Stored, vec![SystemSnapshotType::Test])
                .await
                .map(drop),
            Cmd::GetUserSelf => match client.get_user(&id(user_id)).await? {
                Some(_) => Ok(()),
                None => Err(IggyError::ResourceNotFound("self".into())),
            },
            Cmd::GetUserOther => client.get_user(&id(self.target_user)).await.map(drop),
            Cmd::GetUsers => client.get_users().await.map(drop),
            Cmd::CreateUser => {
                let name = self.unique("made-user");
                let result = client
                    .create_user(&name, PASSWORD, UserStatus::Active, None)
                    .await;
                if result.is_ok() {
                    self.root.delete_user(&named(&name)).await.expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateUser => {
                let name = self.unique("target");
                client
                    .update_user(&id(self.target_user), Some(&name), None)
                    .await
            }
            Cmd::UpdatePermissions => {
                client
                    .update_permissions(
                        &id(self.target_user),
                        Some(global_only(global_flag("read_streams"))),
                    )
                    .await
            }
            Cmd::ChangePasswordSelf => {
                client
                    .change_password(&id(user_id), password, password)
                    .await
            }
            Cmd::ChangePasswordOther => {
                client
                    .change_password(&id(self.target_user), PASSWORD, PASSWORD)
                    .await
            }
            Cmd::DeleteUser => {
                let victim = self.ensure_victim_user().await;
                client.delete_user(&id(victim)).await
            }
            Cmd::CreatePersonalAccessToken => {
                let created = client
                    .create_personal_access_token("matrix-token", IggyExpiry::NeverExpire)
                    .await?;
                *token = Some(created.token);
                Ok(())
            }
            Cmd::GetPersonalAccessTokens => {
                let tokens = client.get_personal_access_tokens().await?;
                if tokens.iter().any(|t| t.name == "matrix-token") {
                    Ok(())
                } else {
                    Err(IggyError::ResourceNotFound("matrix-token".into()))
                }
            }
            Cmd::LoginWithPersonalAccessToken => {
                let Some(token) = token.as_deref() else {
                    return Err(IggyError::ResourceNotFound("no token was created".into()));
                };
                let fresh = anonymous_client(self.server).await;
                let identity = fresh.login_with_personal_access_token(token).await?;
                if identity.user_id == user_id {
                    Ok(())
                } else {
                    Err(IggyError::ResourceNotFound(format!(
                        "token logged in as user {}",
                        identity.user_id
                    )))
                }
            }
            Cmd::DeletePersonalAccessToken => {
                client.delete_personal_access_token("matrix-token").await
            }
            Cmd::GetStream => client.get_stream(&s).await.map(drop),
            Cmd::GetStreams => client.get_streams().await.map(drop),
            Cmd::CreateStream => {
                let name = self.unique("made-stream");
                let result = client.create_stream(&name).await;
                if result.is_ok() {
                    self.root
                        .delete_stream(&named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateStream => {
                self.ensure_victim_stream().await;
                let name = self.unique("victim");
                client.update_stream(&id(VICTIM_STREAM), &name).await
            }
            Cmd::PurgeStream => {
                self.ensure_victim_stream().await;
                client.purge_stream(&id(VICTIM_STREAM)).await
            }
            Cmd::DeleteStream => {
                self.ensure_victim_stream().await;
                client.delete_stream(&id(VICTIM_STREAM)).await
            }
            Cmd::GetTopic => client.get_topic(&s, &t).await.map(drop),
            Cmd::GetTopics => client.get_topics(&s).await.map(drop),
            Cmd::CreateTopic => {
                self.ensure_victim_topic().await;
                let name = self.unique("made-topic");
                let result = client
                    .create_topic(
                        &s,
                        &name,
                        1,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await;
                if result.is_ok() {
                    self.root
                        .delete_topic(&s, &named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::UpdateTopic => {
                self.ensure_victim_topic().await;
                let name = self.unique("victim-topic");
                client
                    .update_topic(
                        &s,
                        &id(VICTIM_TOPIC),
                        &name,
                        CompressionAlgorithm::None,
                        None,
                        IggyExpiry::ServerDefault,
                        MaxTopicSize::ServerDefault,
                    )
                    .await
            }
            Cmd::PurgeTopic => {
                self.ensure_victim_topic().await;
                client.purge_topic(&s, &id(VICTIM_TOPIC)).await
            }
            Cmd::CreatePartitions => {
                self.ensure_victim_topic().await;
                let result = client.create_partitions(&s, &id(VICTIM_TOPIC), 1).await;
                if result.is_ok() {
                    self.root
                        .delete_partitions(&s, &id(VICTIM_TOPIC), 1)
                        .await
                        .expect("cleanup");
                }
                result
            }
            Cmd::DeletePartitions => {
                self.ensure_victim_topic().await;
                client.delete_partitions(&s, &id(VICTIM_TOPIC), 1).await
            }
            Cmd::DeleteSegments => {
                self.ensure_victim_topic().await;
                client.delete_segments(&s, &id(VICTIM_TOPIC), 0, 1).await
            }
            Cmd::DeleteTopic => {
                self.ensure_victim_topic().await;
                client.delete_topic(&s, &id(VICTIM_TOPIC)).await
            }
            Cmd::SendMessages => {
                let mut messages = vec![
                    IggyMessage::builder()
                        .payload(bytes::Bytes::from_static(b"matrix"))
                        .build()
                        .expect("message"),
                ];
                client
                    .send_messages(&s, &t, &Partitioning::partition_id(0), &mut messages)
                    .await
            }
            Cmd::FlushUnsavedBuffer => client.flush_unsaved_buffer(&s, &t, 0, false).await,
            Cmd::PollMessages => client
                .poll_messages(
                    &s,
                    &t,
                    Some(0),
                    &Consumer::new(id(1000 + user_id)),
                    &PollingStrategy::offset(0),
                    1,
                    false,
                )
                .await
                .map(drop),
            Cmd::StoreConsumerOffset => {
                client
                    .store_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0), 0)
                    .await
            }
            Cmd::GetConsumerOffset => client
                .get_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0))
                .await
                .map(drop),
            Cmd::DeleteConsumerOffset => {
                // Stored just before when allowed; make sure of it so "allowed" means Ok.
                let _ = root
                    .store_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0), 0)
                    .await;
                client
                    .delete_consumer_offset(&Consumer::new(id(1000 + user_id)), &s, &t, Some(0))
                    .await
            }
            Cmd::GetConsumerGroup => client
                .get_consumer_group(&s, &t, &named("main-group"))
                .await
                .map(drop),
            Cmd::GetConsumerGroups => client.get_consumer_groups(&s, &t).await.map(drop),
            Cmd::CreateConsumerGroup => {
                let name = self.unique("made-group");
                let result = client.create_consumer_group(&s, &t, &name).await;
                if result.is_ok() {
                    self.root
                        .delete_consumer_group(&s, &t, &named(&name))
                        .await
                        .expect("cleanup");
                }
                result.map(drop)
            }
            Cmd::JoinConsumerGroup => {
                client
                    .join_consumer_group(&s, &t, &named("main-group"))
                    .await
            }
            Cmd::LeaveConsumerGroup => {
                client
                    .leave_consumer_group(&s, &t, &named("main-group"))
                    .await
            }
            Cmd::DeleteConsumerGroup => {
                self.ensure_victim_group().await;
                client
                    .delete_consumer_group(&s, &t, &named("victim-group"))
                    .await
            }
            Cmd::LogoutUser => client.logout_user().await,
        }
    }
}

/// The client id of `client`'s session, as GetMe reports it (GetMe needs no permission; if it
/// fails, that is reported as GetMe's own mismatch and id 1 stands in).
async fn own_client_id(client: &IggyClient) -> u32 {
    client.get_me().await.map(|me| me.client_id).unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_matrix_every_command_for_every_kind_of_grant() {
    // Proves: for every authenticated command, a user without the needed permission gets 41 and
    // a user with it succeeds, following upstream 0.8.0's rules (global flags, "manage" implying
    // "read", stream-level and topic-level entries that apply only to their stream / topic,
    // per-stream poll/send separate from read/manage globals), while commands that need no
    // permission (Ping, GetMe, GetClusterMetadata, own user / password / tokens,
    // LogoutUser) work for everyone. How: 24 users (none, empty, each global flag, each stream
    // flag, each topic flag, everything-but-on-another-stream, plus root) each log in with their
    // own official SDK session and run all 48 matrix commands in order against a fixture; the
    // expected outcome comes from `Oracle`; every mismatch is collected and reported at the end.
    let server = TestServer::start(ServerOptions::new());
    let root = root_client(&server).await;
    let main = root.create_stream("main").await.expect("main stream");
    assert_eq!(main.id, MAIN_STREAM);
    root.create_topic(
        &id(MAIN_STREAM),
        "main-topic",
        2,
        CompressionAlgorithm::None,
        None,
        IggyExpiry::ServerDefault,
        MaxTopicSize::ServerDefault,
    )
    .await
    .expect("main topic");
    let mut messages: Vec<IggyMessage> = (0..5)
        .map(|i| {
            IggyMessage::builder()
                .payload(bytes::Bytes::from(format!("fixture-{i}")))
                .build()
                .expect("message")
        })
        .collect();
    root.send_messages(
        &id(MAIN_STREAM),
        &id(MAIN_TOPIC),
        &Partitioning::partition_id(0),
        &mut messages,
    )
    .await
    .expect("fixture messages");
    root.create_consumer_group(&id(MAIN_STREAM), &id(MAIN_TOPIC), "main-group")
        .await
        .expect("main group");
    let target = create_user(&root, "target-user", None).await;

    let mut matrix = Matrix {
        server: &server,
        root,
        counter: 0,
        target_user: target.id,
        grants: Vec::new(),
    };
    matrix.ensure_victim_stream().await;
    matrix.ensure_victim_topic().await;
    matrix.ensure_victim_group().await;

    let mut users: Vec<(String, u32, Option<Permissions>)> = Vec::new();
    for (username, permissions) in matrix_users() {
        let created = create_user(&matrix.root, &username, permissions.clone()).await;
        assert_eq!(
            created.permissions, permissions,
            "{username}'s permissions as stored"
        );
        matrix.grants.push((created.id, permissions.clone()));
        users.push((username, created.id, permissions));
    }
    users.push(("iggy".to_string(), 0, Some(global_only(all_global()))));

    let mut mismatches = Vec::new();
    let mut checked = 0;
    for (username, user_id, permissions) in &users {
        let password = if *user_id == 0 { "iggy" } else { PASSWORD };
        let client = login_client(&server, username, password).await;
        let oracle = Oracle(permissions.as_ref());
        let mut token = None;
        for cmd in ALL_CMDS {
            let allowed = oracle.allows(cmd);
            let result = matrix
                .attempt(cmd, &client, *user_id, password, &mut token)
                .await;
            checked += 1;
            let ok = match (&result, allowed) {
                (Ok(()), true) => true,
                (Err(error), false) => error.as_code() == 41,
                _ => false,
            };
            if !ok {
                mismatches.push(format!(
                    "{username:>18} {cmd:?}: expected {}, got {}",
                    if allowed { "success" } else { "41" },
                    match &result {
                        Ok(()) => "success".to_string(),
                        Err(error) => format!("{} ({error})", error.as_code()),
                    }
                ));
            }
        }
    }
    assert_eq!(checked, users.len() * ALL_CMDS.len());
    assert!(
        mismatches.is_empty(),
        "{} of {checked} permission checks disagree with upstream 0.8.0's rules:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
