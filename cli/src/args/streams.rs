//! `iggy stream`: create, delete, update, get, list and purge streams.

use super::shared::ListArgs;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum StreamAction {
    /// Create stream with given name
    #[command(visible_alias = "c")]
    Create {
        /// Stream ID to create (ignored: the server assigns ids since 0.6.0)
        #[arg(short, long)]
        stream_id: Option<u32>,
        /// Name of the stream
        name: String,
    },
    /// Delete stream with given ID
    #[command(visible_alias = "d")]
    Delete {
        /// Stream ID to delete (name or ID)
        stream_id: String,
    },
    /// Update stream name for given stream ID
    #[command(visible_alias = "u")]
    Update {
        /// Stream ID to update (name or ID)
        stream_id: String,
        /// New name for the stream
        name: String,
    },
    /// Get details of a single stream with given ID
    #[command(visible_alias = "g")]
    Get {
        /// Stream ID to get (name or ID)
        stream_id: String,
    },
    /// List all streams
    #[command(visible_alias = "l")]
    List(ListArgs),
    /// Purge all topics in given stream ID
    #[command(visible_alias = "p")]
    Purge {
        /// Stream ID to purge (name or ID)
        stream_id: String,
    },
}
