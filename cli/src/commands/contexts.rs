//! `iggy context`: named sets of connection settings, kept in the CLI's home directory.

use crate::args::*;
use crate::context::{ContextConfig, DEFAULT_CONTEXT, Home, validate_context_name};
use crate::error::CliError;
use crate::output::Printer;
use serde_json::json;

pub(super) fn run_context(
    printer: &Printer,
    home: &Home,
    action: ContextAction,
) -> Result<(), CliError> {
    match action {
        ContextAction::List(list) => {
            let active = home.active_context_name();
            let contexts = home.contexts()?;
            let rows = contexts
                .keys()
                .map(|name| {
                    vec![
                        if *name == active {
                            "*".to_owned()
                        } else {
                            String::new()
                        },
                        name.clone(),
                    ]
                })
                .collect();
            let json = json!(
                contexts
                    .keys()
                    .map(|name| json!({"name": name, "active": *name == active}))
                    .collect::<Vec<_>>()
            );
            printer.rows(list.list_mode, &["Active", "Name"], rows, json);
        }
        ContextAction::Use { context_name } => {
            if !home.contexts()?.contains_key(&context_name) {
                return Err(CliError::not_found(format!(
                    "context '{context_name}' does not exist"
                )));
            }
            home.set_active_context(&context_name)?;
            printer.info(format!("active context set to '{context_name}'"));
        }
        ContextAction::Create(create) => {
            let name = create.context_name;
            validate_context_name(&name)?;
            if name == DEFAULT_CONTEXT {
                return Err(CliError::usage(format!(
                    "cannot create a context named '{DEFAULT_CONTEXT}' - it is reserved"
                )));
            }
            let mut contexts = home.contexts()?;
            if contexts.contains_key(&name) {
                return Err(CliError::usage(format!("context '{name}' already exists")));
            }
            contexts.insert(
                name.clone(),
                ContextConfig {
                    username: create.username,
                    password: create.password,
                    token: create.token,
                    token_name: create.token_name,
                    transport: create.transport,
                    tcp_server_address: create.tcp_server_address,
                    tcp_tls_enabled: create.tcp_tls_enabled,
                    quic_server_address: create.quic_server_address,
                    http_api_url: create.http_api_url,
                    extra: Default::default(),
                },
            );
            home.save_contexts(&contexts)?;
            printer.info(format!("context '{name}' created successfully"));
        }
        ContextAction::Delete { context_name } => {
            if context_name == DEFAULT_CONTEXT {
                return Err(CliError::usage(format!(
                    "cannot delete the '{DEFAULT_CONTEXT}' context"
                )));
            }
            let mut contexts = home.contexts()?;
            if contexts.remove(&context_name).is_none() {
                return Err(CliError::not_found(format!(
                    "context '{context_name}' not found"
                )));
            }
            home.save_contexts(&contexts)?;
            if home.active_context_name() == context_name {
                home.set_active_context(DEFAULT_CONTEXT)?;
            }
            printer.info(format!("context '{context_name}' deleted successfully"));
        }
    }
    Ok(())
}
