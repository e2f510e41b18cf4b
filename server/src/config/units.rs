//! Human-readable sizes and durations in the configuration ("1 GiB", "30 s", "none").

use serde::{Deserialize, Deserializer, de};
use std::fmt;
use std::time::Duration;

/// A size in bytes, written as `1 GiB`, `100 MB`, `4096` or `4 KiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// A duration, written as `500 ms`, `5 s`, `1 m`, `2 h` or `7 days`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

/// A limit that may be switched off: `none`, `never` and `unlimited` mean no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit<T> {
    Unlimited,
    Limited(T),
}

impl<T: Copy> Limit<T> {
    pub fn get(self) -> Option<T> {
        match self {
            Limit::Unlimited => None,
            Limit::Limited(value) => Some(value),
        }
    }
}

/// The read cache's budget for the whole server: `auto` or a size (`0` turns it off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheSize {
    /// An eighth of the memory the process may use (its cgroup's limit, else the machine's
    /// RAM), at most [`CacheSize::AUTO_MAX_BYTES`].
    Auto,
    Fixed(ByteSize),
}

impl CacheSize {
    pub const AUTO_MAX_BYTES: u64 = 2 << 30;

    /// The budget in bytes, given the memory the process may use.
    pub fn resolve(self, memory_limit_bytes: u64) -> u64 {
        match self {
            CacheSize::Auto => (memory_limit_bytes / 8).min(Self::AUTO_MAX_BYTES),
            CacheSize::Fixed(size) => size.0,
        }
    }
}

pub use rill_core::units::{parse_duration, parse_size};

fn is_unlimited(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().as_str(),
        "none" | "never" | "unlimited"
    )
}

struct Visitor<F>(F, &'static str);

impl<'de, T, F: Fn(&str) -> Result<T, String>> de::Visitor<'de> for Visitor<F> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.1)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        (self.0)(value).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        self.visit_str(&value.to_string())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        self.visit_str(&value.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor(
            |text: &str| parse_size(text).map(ByteSize),
            "a size such as \"1 GiB\"",
        ))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor(
            |text: &str| parse_duration(text).map(HumanDuration),
            "a duration such as \"30 s\"",
        ))
    }
}

impl<'de> Deserialize<'de> for Limit<ByteSize> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor(
            |text: &str| {
                if is_unlimited(text) {
                    Ok(Limit::Unlimited)
                } else {
                    parse_size(text).map(|b| Limit::Limited(ByteSize(b)))
                }
            },
            "a size or \"unlimited\"",
        ))
    }
}

impl<'de> Deserialize<'de> for Limit<HumanDuration> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor(
            |text: &str| {
                if is_unlimited(text) {
                    Ok(Limit::Unlimited)
                } else {
                    parse_duration(text).map(|d| Limit::Limited(HumanDuration(d)))
                }
            },
            "a duration or \"none\"",
        ))
    }
}

impl<'de> Deserialize<'de> for CacheSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Visitor(
            |text: &str| {
                if text.trim().eq_ignore_ascii_case("auto") {
                    Ok(CacheSize::Auto)
                } else {
                    parse_size(text).map(|b| CacheSize::Fixed(ByteSize(b)))
                }
            },
            "a size or \"auto\"",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse() {
        assert_eq!(parse_size("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_size("100 MB"), Ok(100_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1.5 KiB"), Ok(1536));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("GiB").is_err());
        assert_eq!(parse_duration("30 s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500 ms"), Ok(Duration::from_millis(500)));
        assert_eq!(
            parse_duration("7 days"),
            Ok(Duration::from_secs(7 * 86_400))
        );
        assert!(parse_duration("5 fortnights").is_err());
    }

    #[test]
    fn cache_sizes_are_auto_or_a_size() {
        let parse = |text: &str| {
            CacheSize::deserialize(de::value::StrDeserializer::<de::value::Error>::new(text))
        };
        assert_eq!(parse("auto"), Ok(CacheSize::Auto));
        assert_eq!(parse(" AUTO "), Ok(CacheSize::Auto));
        assert_eq!(parse("512 MiB"), Ok(CacheSize::Fixed(ByteSize(512 << 20))));
        assert_eq!(parse("0"), Ok(CacheSize::Fixed(ByteSize(0))));
        assert!(parse("lots").is_err());
        // An eighth of the memory, capped: a 1 GiB container gets 128 MiB, a 24 GiB machine 2 GiB.
        assert_eq!(CacheSize::Auto.resolve(1 << 30), 128 << 20);
        assert_eq!(CacheSize::Auto.resolve(24 << 30), CacheSize::AUTO_MAX_BYTES);
        assert_eq!(CacheSize::Fixed(ByteSize(7)).resolve(24 << 30), 7);
    }
}
