//! Contexts, login sessions and stored tokens, kept in the iggy home directory
//! (`$IGGY_HOME`, else `~/.iggy`), laid out like the official CLI's: `contexts.toml` (one table
//! per context) and `.active_context`. Where the official CLI uses the platform keyring for
//! session tokens and `pat create --store-token`, this CLI uses files readable only by the user:
//! `sessions/<server>` and `tokens/<server>/<name>`.

use crate::error::CliError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const DEFAULT_CONTEXT: &str = "default";
const CONTEXTS_FILE: &str = "contexts.toml";
const ACTIVE_CONTEXT_FILE: &str = ".active_context";
/// The name of the personal access token a login session uses (as the official CLI).
pub const SESSION_TOKEN_NAME: &str = "iggy-cli-session";

/// One context: connection defaults applied when the command line does not set them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_server_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_tls_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_server_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_api_url: Option<String>,
    /// Settings this CLI does not know, kept as they are.
    #[serde(flatten)]
    pub extra: BTreeMap<String, toml::Value>,
}

pub struct Home {
    root: PathBuf,
}

fn io_error(what: &str, path: &Path, error: impl std::fmt::Display) -> CliError {
    CliError::other(format!("{what} {}: {error}", path.display()))
}

fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_private(path: &Path, content: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("cannot create", parent, e))?;
    }
    std::fs::write(path, content).map_err(|e| io_error("cannot write", path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

impl Home {
    pub fn locate() -> Home {
        let root = std::env::var_os("IGGY_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".iggy")))
            .unwrap_or_else(|| PathBuf::from(".iggy"));
        Home { root }
    }

    pub fn contexts(&self) -> Result<BTreeMap<String, ContextConfig>, CliError> {
        let path = self.root.join(CONTEXTS_FILE);
        let mut contexts: BTreeMap<String, ContextConfig> = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| io_error("cannot parse", &path, e))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => return Err(io_error("cannot read", &path, error)),
        };
        contexts.entry(DEFAULT_CONTEXT.to_owned()).or_default();
        Ok(contexts)
    }

    pub fn save_contexts(
        &self,
        contexts: &BTreeMap<String, ContextConfig>,
    ) -> Result<(), CliError> {
        let text = toml::to_string(contexts).map_err(|e| CliError::other(e.to_string()))?;
        write_private(&self.root.join(CONTEXTS_FILE), &text)
    }

    pub fn active_context_name(&self) -> String {
        std::fs::read_to_string(self.root.join(ACTIVE_CONTEXT_FILE))
            .map(|name| name.trim().to_owned())
            .ok()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| DEFAULT_CONTEXT.to_owned())
    }

    pub fn set_active_context(&self, name: &str) -> Result<(), CliError> {
        write_private(&self.root.join(ACTIVE_CONTEXT_FILE), name)
    }

    pub fn active_context(&self) -> Result<ContextConfig, CliError> {
        let name = self.active_context_name();
        let mut contexts = self.contexts()?;
        contexts.remove(&name).ok_or_else(|| {
            CliError::usage(format!(
                "active context '{name}' not found in {CONTEXTS_FILE}"
            ))
        })
    }

    fn session_path(&self, server: &str) -> PathBuf {
        self.root.join("sessions").join(sanitise(server))
    }

    pub fn session_token(&self, server: &str) -> Option<String> {
        std::fs::read_to_string(self.session_path(server))
            .ok()
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty())
    }

    pub fn store_session(&self, server: &str, token: &str) -> Result<(), CliError> {
        write_private(&self.session_path(server), token)
    }

    pub fn delete_session(&self, server: &str) {
        let _ = std::fs::remove_file(self.session_path(server));
    }

    fn token_path(&self, server: &str, name: &str) -> PathBuf {
        self.root
            .join("tokens")
            .join(sanitise(server))
            .join(sanitise(name))
    }

    pub fn stored_token(&self, server: &str, name: &str) -> Result<String, CliError> {
        std::fs::read_to_string(self.token_path(server, name))
            .map(|token| token.trim().to_owned())
            .map_err(|_| CliError::auth(format!("no stored token named '{name}' for {server}")))
    }

    pub fn store_token(&self, server: &str, name: &str, token: &str) -> Result<(), CliError> {
        write_private(&self.token_path(server, name), token)
    }

    pub fn delete_stored_token(&self, server: &str, name: &str) {
        let _ = std::fs::remove_file(self.token_path(server, name));
    }
}

/// Context names: letters, digits, `-` and `_`.
pub fn validate_context_name(name: &str) -> Result<(), CliError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(CliError::usage(format!(
            "invalid context name '{name}': use letters, digits, '-' and '_'"
        )));
    }
    Ok(())
}
