//! High-level consumer.
