//! Topic and partition changes.

use super::ControlPlane;
use super::streams::remove_dir;
use crate::layout::topic_dir;
use crate::metadata::{MetadataOp, TopicSettings, User, lowest_free_id};
use crate::permissions::Action;
use crate::shard::table::PartitionKey;
use crate::views;
use rill_core::requests::{
    CreatePartitions, CreateTopic, DeletePartitions, DeleteTopic, UpdateTopic,
};
use rill_core::{Encode, ErrorCode};

/// Most partitions one request may create (protocol.md 4.5).
const MAX_PARTITIONS_PER_REQUEST: u32 = 1000;

impl ControlPlane {
    /// Applies server defaults to a topic's expiry and size (0 = server default). A finite size
    /// must hold at least one of the topic's segments (`segment_size`, 0 = the server's).
    fn resolve_settings(
        &self,
        name: String,
        compression: rill_core::primitives::CompressionAlgorithm,
        message_expiry: u64,
        max_topic_size: u64,
        replication_factor: u8,
        segment_size: u64,
    ) -> Result<TopicSettings, ErrorCode> {
        let system = &self.shard.shared.config.system;
        let message_expiry = match message_expiry {
            0 => system
                .topic
                .message_expiry
                .get()
                .map_or(u64::MAX, |expiry| expiry.0.as_micros() as u64),
            value => value,
        };
        let max_topic_size = match max_topic_size {
            0 => system.topic.max_size.get().map_or(u64::MAX, |size| size.0),
            value => value,
        };
        if max_topic_size != u64::MAX
            && max_topic_size < self.shard.shared.segment_size(segment_size)
        {
            return Err(ErrorCode::InvalidTopicSize);
        }
        // On a single node the factor is only stored (0 as 1, as upstream). In a cluster it is
        // how many nodes hold each partition: 0 and 1 are the configured default
        // (`link::effective_factor`), and no more than the nodes there are.
        let cluster = &self.shard.shared.config.cluster;
        let replication_factor = if self.link.is_some() {
            let wanted = crate::cluster::link::effective_factor(
                replication_factor,
                cluster.replication_factor,
            );
            wanted.min(u8::try_from(cluster.nodes.len()).unwrap_or(u8::MAX))
        } else {
            replication_factor
        };
        Ok(TopicSettings {
            name,
            compression,
            message_expiry,
            max_topic_size,
            replication_factor: replication_factor.max(1),
        })
    }

    /// Creates a topic; `segment_size` is its own (a 0.9 option) or 0 for the server's.
    pub(super) async fn create_topic(
        &mut self,
        user: &User,
        request: CreateTopic,
        segment_size: u64,
    ) -> Result<Vec<u8>, ErrorCode> {
        if request.partitions_count > MAX_PARTITIONS_PER_REQUEST {
            return Err(ErrorCode::TooManyPartitions);
        }
        let name = request.name.into_string();
        let (stream_id, id) = self.metadata(|metadata| {
            let stream = metadata
                .stream(&request.stream_id)
                .ok_or(ErrorCode::StreamIdNotFound)?;
            // Permission first: "already exists" would tell others which names are taken.
            Self::require(user, Action::CreateTopic(stream.id))?;
            if stream.topics.values().any(|topic| topic.name == name) {
                return Err(ErrorCode::TopicNameAlreadyExists);
            }
            Ok((
                stream.id,
                lowest_free_id(&stream.topics).ok_or(ErrorCode::InvalidTopicId)?,
            ))
        })??;
        let settings = self.resolve_settings(
            name,
            request.compression_algorithm,
            request.message_expiry,
            request.max_topic_size,
            request.replication_factor,
            segment_size,
        )?;
        let created_at = crate::time::now_micros();
        let partitions_count = request.partitions_count;
        self.commit(MetadataOp::CreateTopic {
            stream_id,
            id,
            created_at,
            settings,
            partitions_count,
            segment_size,
        })
        .await?;
        self.open_partitions((0..partitions_count).map(|p| PartitionKey::new(stream_id, id, p)))
            .await?;
        let table = &self.shard.shared.shards_table;
        let mut details = self.metadata(|metadata| {
            views::topic_details(
                table,
                stream_id,
                metadata.topic_by_ids(stream_id, id).expect("just created"),
            )
        })?;
        // Upstream reports 0 segments for a freshly created topic; so do we, for identical bytes.
        for partition in &mut details.partitions {
            partition.segments_count = 0;
        }
        Ok(details.to_bytes())
    }

    pub(super) async fn update_topic(
        &mut self,
        user: &User,
        request: UpdateTopic,
    ) -> Result<Vec<u8>, ErrorCode> {
        let name = request.name.into_string();
        let (stream_id, id, replication_factor, segment_size) = self.metadata(|metadata| {
            let (stream, topic) =
                metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
            Self::require(user, Action::ManageTopic(stream.id, topic.id))?;
            if stream
                .topics
                .values()
                .any(|other| other.name == name && other.id != topic.id)
            {
                return Err(ErrorCode::TopicNameAlreadyExists);
            }
            Ok((
                stream.id,
                topic.id,
                topic.replication_factor,
                topic.segment_size,
            ))
        })??;
        let mut settings = self.resolve_settings(
            name,
            request.compression_algorithm,
            request.message_expiry,
            request.max_topic_size,
            request.replication_factor,
            segment_size,
        )?;
        // A partition's replicas are fixed when its topic is created: moving its data to
        // other nodes is not done, so in a cluster the factor stays what it is.
        if self.link.is_some() {
            settings.replication_factor = replication_factor;
        }
        self.commit(MetadataOp::UpdateTopic {
            stream_id,
            id,
            settings,
        })
        .await?;
        Ok(Vec::new())
    }

    pub(super) async fn delete_topic(
        &mut self,
        user: &User,
        request: DeleteTopic,
    ) -> Result<Vec<u8>, ErrorCode> {
        let (stream_id, id, keys) = self.metadata(|metadata| {
            let (stream, topic) =
                metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
            let keys = PartitionKey::of_topic(stream.id, topic);
            Ok::<_, ErrorCode>((stream.id, topic.id, keys))
        })??;
        Self::require(user, Action::ManageTopic(stream_id, id))?;
        self.commit(MetadataOp::DeleteTopic { stream_id, id })
            .await?;
        self.forget_groups(stream_id, Some(id));
        self.close_partitions(keys).await;
        remove_dir(&topic_dir(
            &self.shard.shared.config.system.path,
            stream_id,
            id,
        ))
        .await;
        Ok(Vec::new())
    }

    /// Resolves a topic: (stream id, topic id, partition count).
    fn partitions_of(
        &self,
        stream_id: &rill_core::primitives::Identifier,
        topic_id: &rill_core::primitives::Identifier,
    ) -> Result<(u32, u32, u32), ErrorCode> {
        self.metadata(|metadata| {
            let (stream, topic) = metadata.stream_and_topic(stream_id, topic_id)?;
            Ok((stream.id, topic.id, topic.partitions.len() as u32))
        })?
    }

    pub(super) async fn create_partitions(
        &mut self,
        user: &User,
        request: CreatePartitions,
    ) -> Result<Vec<u8>, ErrorCode> {
        if request.partitions_count == 0 || request.partitions_count > MAX_PARTITIONS_PER_REQUEST {
            return Err(ErrorCode::TooManyPartitions);
        }
        let (stream_id, topic_id, existing) =
            self.partitions_of(&request.stream_id, &request.topic_id)?;
        Self::require(user, Action::ManageTopic(stream_id, topic_id))?;
        let count = request.partitions_count;
        let created_at = crate::time::now_micros();
        self.commit(MetadataOp::CreatePartitions {
            stream_id,
            topic_id,
            count,
            created_at,
        })
        .await?;
        self.open_partitions(
            (existing..existing + count).map(|p| PartitionKey::new(stream_id, topic_id, p)),
        )
        .await?;
        self.shard
            .shared
            .groups
            .set_partitions_count(stream_id, topic_id, existing + count);
        Ok(Vec::new())
    }

    pub(super) async fn delete_partitions(
        &mut self,
        user: &User,
        request: DeletePartitions,
    ) -> Result<Vec<u8>, ErrorCode> {
        if request.partitions_count == 0 {
            return Err(ErrorCode::TooManyPartitions);
        }
        let (stream_id, topic_id, existing) =
            self.partitions_of(&request.stream_id, &request.topic_id)?;
        Self::require(user, Action::ManageTopic(stream_id, topic_id))?;
        let count = request.partitions_count;
        if count > existing {
            return Err(ErrorCode::InvalidPartitionsCount);
        }
        self.commit(MetadataOp::DeletePartitions {
            stream_id,
            topic_id,
            count,
        })
        .await?;
        self.shard
            .shared
            .groups
            .set_partitions_count(stream_id, topic_id, existing - count);
        self.close_partitions(
            (existing - count..existing)
                .map(|p| PartitionKey::new(stream_id, topic_id, p))
                .collect(),
        )
        .await;
        Ok(Vec::new())
    }
}
