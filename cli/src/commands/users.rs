//! `iggy user` and `iggy pat`.

use super::session::{Settings, read_secret};
use super::values::{id, user_status};
use super::views::{permissions_json, user_json};
use crate::args::*;
use crate::context::Home;
use crate::error::CliError;
use crate::output::Printer;
use crate::util::*;
use rill_sdk::Client;
use serde_json::{Value, json};

pub(super) async fn pat_command(
    printer: &Printer,
    client: &Client,
    settings: &Settings,
    home: &Home,
    action: PatAction,
) -> Result<(), CliError> {
    match action {
        PatAction::Create {
            store_token,
            name,
            expiry,
        } => {
            let expiry_micros = parse_expiry(&expiry, u64::MAX)?;
            if store_token && expiry_micros != u64::MAX {
                return Err(CliError::usage(
                    "--store-token can only be used for tokens without expiry",
                ));
            }
            printer.info(format!(
                "Executing create personal access token with name: {name}"
            ));
            let token = client
                .create_personal_access_token(&name, expiry_micros)
                .await?;
            if store_token {
                home.store_token(&settings.address, &name, token.token.as_str())?;
                if printer.quiet {
                    println!("{name}");
                }
                printer.info(format!(
                    "Personal access token with name: {name} and {} created and stored",
                    if expiry.is_empty() {
                        "without expiry".to_owned()
                    } else {
                        format!("expiry: {}", expiry.join(" "))
                    }
                ));
            } else if printer.json {
                printer.json(&json!({"name": name, "token": token.token.as_str()}));
            } else if printer.quiet {
                println!("{}", token.token);
            } else {
                printer.info(format!(
                    "Personal access token with name: {name} and {} created",
                    if expiry.is_empty() {
                        "without expiry".to_owned()
                    } else {
                        format!("expiry: {}", expiry.join(" "))
                    }
                ));
                printer.info(format!("Token: {}", token.token));
            }
        }
        PatAction::Delete { name } => {
            printer.info(format!(
                "Executing delete personal access tokens with name: {name}"
            ));
            client.delete_personal_access_token(&name).await?;
            home.delete_stored_token(&settings.address, &name);
            printer.info(format!("Personal access token with name: {name} deleted"));
        }
        PatAction::List(list) => {
            printer.info(
                format!(
                    "Executing list personal access tokens in {:?} mode",
                    list.list_mode
                )
                .to_lowercase(),
            );
            let tokens = client.get_personal_access_tokens().await?;
            let expiry = |at: u64| {
                if at == 0 {
                    "unlimited".to_owned()
                } else {
                    format_timestamp(at)
                }
            };
            let rows = tokens
                .iter()
                .map(|t| vec![t.name.to_string(), expiry(t.expiry_at)])
                .collect();
            printer.rows(list.list_mode, &["Name", "Token Expiry Time"], rows,
                json!(tokens.iter().map(|t| json!({"name": t.name.as_str(), "expiry_at": if t.expiry_at == 0 { Value::Null } else { json!(t.expiry_at) }})).collect::<Vec<_>>()));
        }
    }
    Ok(())
}

pub(super) async fn user_command(
    printer: &Printer,
    client: &Client,
    action: UserAction,
) -> Result<(), CliError> {
    match action {
        UserAction::Create {
            username,
            password,
            user_status: status,
            global_permissions,
            stream_permissions,
        } => {
            let permissions =
                parse_permissions(global_permissions.as_deref(), stream_permissions.as_deref())?;
            printer.info(format!("Executing create user with username: {username}"));
            let user = client
                .create_user(&username, &password, user_status(status), permissions)
                .await?;
            printer.info(format!(
                "User with username: {username} and ID: {} created",
                user.user.id
            ));
            if printer.json {
                printer.json(&user_json(&user.user));
            }
        }
        UserAction::Delete { user_id } => {
            printer.info(format!("Executing delete user with ID: {user_id}"));
            client.delete_user(id(&user_id)?).await?;
            printer.info(format!("User with ID: {user_id} deleted"));
        }
        UserAction::Get { user_id } => {
            printer.info(format!("Executing get user with ID: {user_id}"));
            let Some(user) = client.get_user(id(&user_id)?).await? else {
                return Err(CliError::not_found(format!(
                    "User with ID: {user_id} was not found"
                )));
            };
            let u = &user.user;
            let mut json = user_json(u);
            json["permissions"] = permissions_json(&user.permissions);
            let mut rows = vec![
                ("User ID", u.id.to_string()),
                ("Created", format_timestamp(u.created_at)),
                ("Status", u.status.name().to_owned()),
                ("Username", u.username.to_string()),
            ];
            if let Some(permissions) = &user.permissions {
                let g = &permissions.global;
                for (name, value) in [
                    ("Permission: Manage Servers", g.manage_servers),
                    ("Permission: Read Servers", g.read_servers),
                    ("Permission: Manage Users", g.manage_users),
                    ("Permission: Read Users", g.read_users),
                    ("Permission: Manage Streams", g.manage_streams),
                    ("Permission: Read Streams", g.read_streams),
                    ("Permission: Manage Topics", g.manage_topics),
                    ("Permission: Read Topics", g.read_topics),
                    ("Permission: Poll Messages", g.poll_messages),
                    ("Permission: Send Messages", g.send_messages),
                ] {
                    rows.push((name, value.to_string()));
                }
                for stream in &permissions.streams {
                    rows.push(("Stream permissions", format!("stream {}: manage_stream={} read_stream={} manage_topics={} read_topics={} poll_messages={} send_messages={} topics={}",
                        stream.stream_id, stream.manage_stream, stream.read_stream, stream.manage_topics, stream.read_topics,
                        stream.poll_messages, stream.send_messages, stream.topics.len())));
                }
            }
            printer.properties(rows, json);
        }
        UserAction::List(list) => {
            printer
                .info(format!("Executing list users in {:?} mode", list.list_mode).to_lowercase());
            let users = client.get_users().await?;
            let rows = users
                .iter()
                .map(|u| {
                    vec![
                        u.id.to_string(),
                        format_timestamp(u.created_at),
                        u.status.name().to_owned(),
                        u.username.to_string(),
                    ]
                })
                .collect();
            printer.rows(
                list.list_mode,
                &["ID", "Created", "Status", "Username"],
                rows,
                json!(users.iter().map(user_json).collect::<Vec<_>>()),
            );
        }
        UserAction::Name { user_id, username } => {
            printer.info(format!(
                "Executing update user with ID: {user_id} with username: {username}"
            ));
            client
                .update_user(id(&user_id)?, Some(&username), None)
                .await?;
            printer.info(format!(
                "User with ID: {user_id} updated with username: {username}"
            ));
        }
        UserAction::Status { user_id, status } => {
            printer.info(format!(
                "Executing update user with ID: {user_id} with status: {}",
                user_status(status).name()
            ));
            client
                .update_user(id(&user_id)?, None, Some(user_status(status)))
                .await?;
            printer.info(format!(
                "User with ID: {user_id} updated with status: {}",
                user_status(status).name()
            ));
        }
        UserAction::Password {
            user_id,
            current_password,
            new_password,
        } => {
            let current = match current_password {
                Some(password) => password,
                None => read_secret("Current password: ")?,
            };
            let new = match new_password {
                Some(password) => password,
                None => read_secret("New password: ")?,
            };
            printer.info(format!(
                "Executing change password for user with ID: {user_id}"
            ));
            client
                .change_password(id(&user_id)?, &current, &new)
                .await?;
            printer.info(format!("Password for user with ID: {user_id} changed"));
        }
        UserAction::Permissions {
            user_id,
            global_permissions,
            stream_permissions,
        } => {
            let permissions =
                parse_permissions(global_permissions.as_deref(), stream_permissions.as_deref())?;
            printer.info(format!(
                "Executing update permissions for user with ID: {user_id}"
            ));
            client
                .update_permissions(id(&user_id)?, permissions)
                .await?;
            printer.info(format!("Permissions for user with ID: {user_id} updated"));
        }
    }
    Ok(())
}
