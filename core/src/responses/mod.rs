//! Response payloads (protocol.md section 7). List responses (`X*`) are `Vec<X>`, decoded by
//! looping to the end of the payload. Responses to commands that answer "empty OK" have no type.

mod groups;
mod streams;
mod system;
mod topics;
mod users;

pub use groups::{
    ConsumerGroupDetails, ConsumerGroupInfo, ConsumerGroupMember, ConsumerOffsetInfo,
};
pub use streams::{StreamDetails, StreamInfo};
pub use system::{
    CacheMetric, ClientDetails, ClientGroup, ClientInfo, ClusterMetadata, ClusterNode, Stats,
};
pub use topics::{PartitionInfo, TopicDetails, TopicInfo};
pub use users::{
    IdentityInfo, PersonalAccessTokenInfo, RawPersonalAccessToken, UserDetails, UserInfo,
};

pub use crate::message::PolledMessages;
