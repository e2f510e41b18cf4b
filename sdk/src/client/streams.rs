//! Stream, topic, partition, segment and consumer-group commands of [`Client`].

use super::Client;
use super::identifier::{IntoIdentifier, name};
use super::options::TopicOptions;
use crate::error::Result;
use rill_core::requests::*;
use rill_core::responses::*;

impl Client {
    // ---- Streams ------------------------------------------------------------------------

    /// GetStream (200); `None` if no such stream.
    pub async fn get_stream(
        &self,
        stream_id: impl IntoIdentifier,
    ) -> Result<Option<StreamDetails>> {
        self.execute(GetStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// GetStreams (201).
    pub async fn get_streams(&self) -> Result<Vec<StreamInfo>> {
        self.execute(GetStreams {}).await
    }

    /// CreateStream (202). The server assigns the id.
    pub async fn create_stream(&self, stream_name: &str) -> Result<StreamDetails> {
        self.execute(CreateStream {
            name: name(stream_name)?,
        })
        .await
    }

    /// DeleteStream (203).
    pub async fn delete_stream(&self, stream_id: impl IntoIdentifier) -> Result<()> {
        self.execute(DeleteStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// UpdateStream (204): renames the stream.
    pub async fn update_stream(
        &self,
        stream_id: impl IntoIdentifier,
        new_name: &str,
    ) -> Result<()> {
        self.execute(UpdateStream {
            stream_id: stream_id.into_identifier()?,
            name: name(new_name)?,
        })
        .await
    }

    /// PurgeStream (205).
    pub async fn purge_stream(&self, stream_id: impl IntoIdentifier) -> Result<()> {
        self.execute(PurgeStream {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    // ---- Topics -------------------------------------------------------------------------

    /// GetTopic (300); `None` if no such topic.
    pub async fn get_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<Option<TopicDetails>> {
        self.execute(GetTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// GetTopics (301).
    pub async fn get_topics(&self, stream_id: impl IntoIdentifier) -> Result<Vec<TopicInfo>> {
        self.execute(GetTopics {
            stream_id: stream_id.into_identifier()?,
        })
        .await
    }

    /// CreateTopic (302). See [`TopicOptions`] for expiry, size and compression.
    pub async fn create_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_name: &str,
        partitions_count: u32,
        options: TopicOptions,
    ) -> Result<TopicDetails> {
        self.execute(CreateTopic {
            stream_id: stream_id.into_identifier()?,
            partitions_count,
            compression_algorithm: options.compression_algorithm,
            message_expiry: options.message_expiry,
            max_topic_size: options.max_topic_size,
            replication_factor: options.replication_factor,
            name: name(topic_name)?,
        })
        .await
    }

    /// DeleteTopic (303).
    pub async fn delete_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(DeleteTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// UpdateTopic (304).
    pub async fn update_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        new_name: &str,
        options: TopicOptions,
    ) -> Result<()> {
        self.execute(UpdateTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            compression_algorithm: options.compression_algorithm,
            message_expiry: options.message_expiry,
            max_topic_size: options.max_topic_size,
            replication_factor: options.replication_factor,
            name: name(new_name)?,
        })
        .await
    }

    /// PurgeTopic (305).
    pub async fn purge_topic(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(PurgeTopic {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    // ---- Partitions and segments --------------------------------------------------------

    /// CreatePartitions (402): adds partitions after the existing ones.
    pub async fn create_partitions(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitions_count: u32,
    ) -> Result<()> {
        self.execute(CreatePartitions {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitions_count,
        })
        .await
    }

    /// DeletePartitions (403): removes the last `partitions_count` partitions.
    pub async fn delete_partitions(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitions_count: u32,
    ) -> Result<()> {
        self.execute(DeletePartitions {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitions_count,
        })
        .await
    }

    /// DeleteSegments (503): deletes up to `segments_count` of the oldest sealed segments.
    pub async fn delete_segments(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: u32,
        segments_count: u32,
    ) -> Result<()> {
        self.execute(DeleteSegments {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id,
            segments_count,
        })
        .await
    }

    // ---- Consumer groups ----------------------------------------------------------------

    /// GetConsumerGroup (600); `None` if no such group.
    pub async fn get_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<Option<ConsumerGroupDetails>> {
        self.execute(GetConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// GetConsumerGroups (601).
    pub async fn get_consumer_groups(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
    ) -> Result<Vec<ConsumerGroupInfo>> {
        self.execute(GetConsumerGroups {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
        })
        .await
    }

    /// CreateConsumerGroup (602). The server assigns the id.
    pub async fn create_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_name: &str,
    ) -> Result<ConsumerGroupDetails> {
        self.execute(CreateConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            name: name(group_name)?,
        })
        .await
    }

    /// DeleteConsumerGroup (603).
    pub async fn delete_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(DeleteConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// JoinConsumerGroup (604). The membership is re-established after reconnections.
    pub async fn join_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(JoinConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }

    /// LeaveConsumerGroup (605).
    pub async fn leave_consumer_group(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        group_id: impl IntoIdentifier,
    ) -> Result<()> {
        self.execute(LeaveConsumerGroup {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            group_id: group_id.into_identifier()?,
        })
        .await
    }
}
