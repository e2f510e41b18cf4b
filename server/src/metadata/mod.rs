//! Control-plane metadata: the model, its ops, their binary form, and the durable log.

pub mod codec;
pub mod log;
pub mod model;

pub use model::{
    ConsumerGroupMeta, Leadership, Metadata, MetadataOp, PartitionMeta, PersonalAccessToken,
    RaftLogId, Stream, Topic, TopicSettings, User, lowest_free_id,
};
