//! `iggy-bench`: whole-system benchmark (its own issue). Holds nothing yet.

pub use rill_core as protocol;
