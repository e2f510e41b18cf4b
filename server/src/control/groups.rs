//! Consumer group creation and deletion (membership itself is runtime state, `crate::groups`).

use super::ControlPlane;
use crate::groups::GroupKey;
use crate::metadata::{MetadataOp, User, lowest_free_id};
use crate::permissions::Action;
use rill_core::primitives::Name;
use rill_core::requests::{CreateConsumerGroup, DeleteConsumerGroup};
use rill_core::responses::ConsumerGroupInfo;
use rill_core::{Encode, ErrorCode};

impl ControlPlane {
    pub(super) async fn create_group(
        &mut self,
        actor: &User,
        request: CreateConsumerGroup,
    ) -> Result<Vec<u8>, ErrorCode> {
        let name = request.name.into_string();
        let (stream_id, topic_id, id, partitions_count) = self.metadata(|metadata| {
            let (stream, topic) =
                metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
            Self::require(actor, Action::ReadTopic(stream.id, topic.id))?;
            if topic.groups.values().any(|group| group.name == name) {
                return Err(ErrorCode::ConsumerGroupNameAlreadyExists);
            }
            let id = lowest_free_id(&topic.groups).ok_or(ErrorCode::InvalidConsumerGroupId)?;
            Ok((stream.id, topic.id, id, topic.partitions.len() as u32))
        })??;
        self.commit(MetadataOp::CreateConsumerGroup {
            stream_id,
            topic_id,
            id,
            name: name.clone(),
        })
        .await?;
        self.shard.shared.groups.register(
            GroupKey {
                stream_id,
                topic_id,
                group_id: id,
            },
            partitions_count,
        );
        let name = Name::new(name).expect("validated by the decoder");
        Ok(ConsumerGroupInfo {
            id,
            partitions_count,
            members_count: 0,
            name,
        }
        .to_bytes())
    }

    pub(super) async fn delete_group(
        &mut self,
        actor: &User,
        request: DeleteConsumerGroup,
    ) -> Result<Vec<u8>, ErrorCode> {
        let (stream_id, topic_id, id, partitions_count) = self.metadata(|metadata| {
            let (stream, topic) =
                metadata.stream_and_topic(&request.stream_id, &request.topic_id)?;
            let group = topic
                .group(&request.group_id)
                .ok_or(ErrorCode::ConsumerGroupIdNotFound)?;
            Ok::<_, ErrorCode>((stream.id, topic.id, group.id, topic.partitions.len() as u32))
        })??;
        Self::require(actor, Action::ReadTopic(stream_id, topic_id))?;
        self.commit(MetadataOp::DeleteConsumerGroup {
            stream_id,
            topic_id,
            id,
        })
        .await?;
        let key = GroupKey {
            stream_id,
            topic_id,
            group_id: id,
        };
        for client_id in self.shard.shared.groups.remove(&key) {
            self.shard
                .shared
                .clients
                .leave_group(client_id, (stream_id, topic_id, id));
        }
        // The group's stored offsets go with it.
        for partition_id in 0..partitions_count {
            let partition =
                crate::shard::table::PartitionKey::new(stream_id, topic_id, partition_id);
            if let Ok(target) = self.shard.route(partition) {
                let consumer = crate::shard::message::ConsumerKey::Group(id);
                let _ = target.delete_offset(consumer).await;
            }
        }
        Ok(Vec::new())
    }
}
