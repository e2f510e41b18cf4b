//! Message commands of [`Client`]: poll, send, flush, and consumer offsets.

use super::Client;
use super::identifier::IntoIdentifier;
use crate::error::{Error, Result};
use rill_core::message::{MessageBatch, OutgoingMessage, PolledMessages};
use rill_core::primitives::{Consumer, OptionalPartition, Partitioning, PollingStrategy};
use rill_core::requests::*;
use rill_core::responses::*;

impl Client {
    // ---- Messages -----------------------------------------------------------------------

    /// PollMessages (100). The messages stay in the response buffer.
    #[allow(clippy::too_many_arguments)]
    pub async fn poll_messages(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
        consumer: &Consumer,
        strategy: PollingStrategy,
        count: u32,
        auto_commit: bool,
    ) -> Result<PolledMessages> {
        self.execute(PollMessages {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
            strategy,
            count,
            auto_commit,
        })
        .await
    }

    /// SendMessages (101). Each payload is copied once, into the batch buffer, which is then
    /// written to the socket as is.
    pub async fn send_messages(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partitioning: Partitioning,
        messages: &[OutgoingMessage],
    ) -> Result<()> {
        if messages.is_empty() {
            return Err(Error::invalid("at least one message is required"));
        }
        self.execute(SendMessages {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partitioning,
            batch: MessageBatch::from_messages(messages),
        })
        .await
    }

    /// FlushUnsavedBuffer (102).
    pub async fn flush_unsaved_buffer(
        &self,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: u32,
        fsync: bool,
    ) -> Result<()> {
        self.execute(FlushUnsavedBuffer {
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id,
            fsync,
        })
        .await
    }

    // ---- Consumer offsets ---------------------------------------------------------------

    /// GetConsumerOffset (120); `None` when nothing is stored.
    pub async fn get_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
    ) -> Result<Option<ConsumerOffsetInfo>> {
        self.execute(GetConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
        })
        .await
    }

    /// StoreConsumerOffset (121).
    pub async fn store_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
        offset: u64,
    ) -> Result<()> {
        self.execute(StoreConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
            offset,
        })
        .await
    }

    /// DeleteConsumerOffset (122).
    pub async fn delete_consumer_offset(
        &self,
        consumer: &Consumer,
        stream_id: impl IntoIdentifier,
        topic_id: impl IntoIdentifier,
        partition_id: Option<u32>,
    ) -> Result<()> {
        self.execute(DeleteConsumerOffset {
            consumer: consumer.clone(),
            stream_id: stream_id.into_identifier()?,
            topic_id: topic_id.into_identifier()?,
            partition_id: OptionalPartition(partition_id),
        })
        .await
    }
}
