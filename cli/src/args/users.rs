//! `iggy user`: users, their status, passwords and permissions.

use super::shared::ListArgs;
use clap::{Subcommand, ValueEnum};

/// User status values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UserStatusArg {
    /// Active.
    Active,
    /// Inactive.
    Inactive,
}

#[derive(Debug, Subcommand)]
pub enum UserAction {
    /// Create user with given username and password
    #[command(visible_alias = "c")]
    Create {
        /// Username (3..=50 characters)
        username: String,
        /// Password (3..=100 characters)
        password: String,
        /// User status
        #[arg(short, long, value_enum, default_value_t = UserStatusArg::Active)]
        user_status: UserStatusArg,
        /// Set global permissions, e.g. m_srv,r_srv,p_msg,s_msg
        #[arg(short, long)]
        global_permissions: Option<String>,
        /// Set stream permissions: STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]
        #[arg(short, long)]
        stream_permissions: Option<Vec<String>>,
    },
    /// Delete user with given ID
    #[command(visible_alias = "d")]
    Delete {
        /// User ID to delete (username or ID)
        user_id: String,
    },
    /// Get details of a single user with given ID
    #[command(visible_alias = "g")]
    Get {
        /// User ID to get (username or ID)
        user_id: String,
    },
    /// List all users
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Change username for user with given ID
    #[command(visible_alias = "n")]
    Name {
        /// User ID to update (username or ID)
        user_id: String,
        /// New username
        username: String,
    },
    /// Change status for user with given ID
    #[command(visible_alias = "s")]
    Status {
        /// User ID to update (username or ID)
        user_id: String,
        /// New status
        #[arg(value_enum)]
        status: UserStatusArg,
    },
    /// Change password for user with given ID
    #[command(visible_alias = "pwd")]
    Password {
        /// User ID to update (username or ID)
        user_id: String,
        /// Current password (prompted when omitted)
        current_password: Option<String>,
        /// New password (prompted when omitted)
        new_password: Option<String>,
    },
    /// Set permissions for user with given ID
    #[command(visible_alias = "p")]
    Permissions {
        /// User ID to update (username or ID)
        user_id: String,
        /// Set global permissions, e.g. m_srv,r_srv,p_msg,s_msg
        #[arg(short, long)]
        global_permissions: Option<String>,
        /// Set stream permissions: STREAM_ID[:PERMS][#TOPIC_ID[:PERMS]]
        #[arg(short, long)]
        stream_permissions: Option<Vec<String>>,
    },
}
