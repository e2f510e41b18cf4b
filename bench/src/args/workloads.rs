//! One argument struct per benchmark: its actors, streams, partitions and topic limits.

use super::transport::TransportCommand;
use crate::units::{ByteSize, parse_duration};
use clap::Args;
use std::time::Duration;

pub(super) const DEFAULT_ACTORS: u32 = 8;
pub(super) const DEFAULT_BALANCED_PARTITIONS: u32 = 24;

#[derive(Args, Debug, Clone)]
pub struct PinnedProducerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
    /// Message expiry, e.g. 1h (default: server default)
    #[arg(long, short = 'e', value_parser = parse_duration)]
    pub message_expiry: Option<Duration>,
}

#[derive(Args, Debug, Clone)]
pub struct PinnedConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of consumers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
}

#[derive(Args, Debug, Clone)]
pub struct PinnedProducerAndConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of partitions (must be 1 for pinned workloads)
    #[arg(long, short = 'a', default_value_t = 1)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedProducerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
    /// Message expiry, e.g. 1h (default: server default)
    #[arg(long, short = 'e', value_parser = parse_duration)]
    pub message_expiry: Option<Duration>,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedConsumerGroupArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic (used when the topic is created here)
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Consumer groups per stream
    #[arg(long, short = 'g', default_value_t = 1)]
    pub consumer_groups: u32,
}

#[derive(Args, Debug, Clone)]
pub struct BalancedProducerAndConsumerGroupArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams
    #[arg(long, short = 's', default_value_t = 1)]
    pub streams: u32,
    /// Partitions per topic
    #[arg(long, short = 'a', default_value_t = DEFAULT_BALANCED_PARTITIONS)]
    pub partitions: u32,
    /// Number of producers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
    /// Number of consumers
    #[arg(long, short = 'c', default_value_t = DEFAULT_ACTORS)]
    pub consumers: u32,
    /// Consumer groups per stream
    #[arg(long, short = 'g', default_value_t = 1)]
    pub consumer_groups: u32,
    /// Max topic size, e.g. 10GB (default: server default)
    #[arg(long, short = 'T')]
    pub max_topic_size: Option<ByteSize>,
}

#[derive(Args, Debug, Clone)]
pub struct EndToEndProducingConsumerArgs {
    #[command(subcommand)]
    pub transport: TransportCommand,
    /// Number of streams (default: number of producing consumers)
    #[arg(long, short = 's')]
    pub streams: Option<u32>,
    /// Number of producing consumers
    #[arg(long, short = 'p', default_value_t = DEFAULT_ACTORS)]
    pub producers: u32,
}
