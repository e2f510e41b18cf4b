//! Stream changes.

use super::ControlPlane;
use crate::layout::stream_dir;
use crate::metadata::{MetadataOp, User, lowest_free_id};
use crate::permissions::Action;
use crate::shard::table::PartitionKey;
use crate::views;
use rill_core::Encode;
use rill_core::ErrorCode;
use rill_core::requests::{CreateStream, DeleteStream, UpdateStream};

impl ControlPlane {
    pub(super) async fn create_stream(
        &mut self,
        user: &User,
        request: CreateStream,
    ) -> Result<Vec<u8>, ErrorCode> {
        Self::require(user, Action::CreateStream)?;
        let name = request.name.into_string();
        let id = self.metadata(|metadata| {
            if metadata.streams.values().any(|stream| stream.name == name) {
                return Err(ErrorCode::StreamNameAlreadyExists);
            }
            lowest_free_id(&metadata.streams).ok_or(ErrorCode::InvalidStreamId)
        })??;
        let created_at = crate::time::now_micros();
        self.commit(MetadataOp::CreateStream {
            id,
            name,
            created_at,
        })
        .await?;
        let table = &self.shard.shared.shards_table;
        self.metadata(|metadata| views::stream_info(table, &metadata.streams[&id]).to_bytes())
    }

    pub(super) async fn update_stream(
        &mut self,
        user: &User,
        request: UpdateStream,
    ) -> Result<Vec<u8>, ErrorCode> {
        let name = request.name.into_string();
        let id = self.metadata(|metadata| {
            let stream = metadata
                .stream(&request.stream_id)
                .ok_or(ErrorCode::StreamIdNotFound)?;
            // Permission first: "already exists" would tell others which names are taken.
            Self::require(user, Action::ManageStream(stream.id))?;
            if metadata
                .streams
                .values()
                .any(|other| other.name == name && other.id != stream.id)
            {
                return Err(ErrorCode::StreamNameAlreadyExists);
            }
            Ok(stream.id)
        })??;
        self.commit(MetadataOp::UpdateStream { id, name }).await?;
        Ok(Vec::new())
    }

    pub(super) async fn delete_stream(
        &mut self,
        user: &User,
        request: DeleteStream,
    ) -> Result<Vec<u8>, ErrorCode> {
        let (id, keys) = self.metadata(|metadata| {
            let stream = metadata
                .stream(&request.stream_id)
                .ok_or(ErrorCode::StreamIdNotFound)?;
            Ok::<_, ErrorCode>((stream.id, PartitionKey::of_stream(stream)))
        })??;
        Self::require(user, Action::ManageStream(id))?;
        self.commit(MetadataOp::DeleteStream { id }).await?;
        self.forget_groups(id, None);
        self.close_partitions(keys).await;
        remove_dir(&stream_dir(&self.shard.shared.config.system.path, id)).await;
        Ok(Vec::new())
    }
}

/// Removes a directory left after its partitions were deleted; a failure only leaves garbage
/// that the next boot removes.
pub(super) async fn remove_dir(dir: &std::path::Path) {
    if let Err(error) = crate::storage::blocking::remove_dir_all(dir).await
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %dir.display(), %error, "cannot remove directory");
    }
}
