//! High-level producer.
