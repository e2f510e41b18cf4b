//! Human-readable sizes and durations ("1 GiB", "100 MB", "30 s", "7 days"): the one place
//! where rill reads and prints them, for the server's configuration, the 0.9 protocol's string
//! option values, the SDK's connection strings, the CLI and the bench.
//!
//! Durations are humantime's grammar, the crate upstream Iggy reads its durations with, so an
//! upstream value ("15 minutes", "1h 30m", "7days") means the same here. A bare number has no
//! unit in that grammar; each caller says which unit a bare number is in (seconds in the server
//! configuration, milliseconds in connection strings).
//!
//! Sizes are read by hand rather than with byte-unit (upstream's choice) on purpose: byte-unit
//! reads a lowercase `b` as bits when case matters, and parses decimals through floating point
//! unless a feature is on. Here units are case-insensitive bytes and decimals are exact.

use std::time::Duration;

/// A size in bytes, read exactly: "1.234 KB" is 1234 bytes (no floating point), whatever the
/// number of decimals a unit leaves whole. `K`, `M`, `G` and `T` alone are the decimal units, as
/// upstream's iggy-bench reads them.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1_000,
        "kib" => 1 << 10,
        "mb" | "m" => 1_000_000,
        "mib" => 1 << 20,
        "gb" | "g" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" | "t" => 1_000_000_000_000,
        "tib" => 1 << 40,
        "pb" => 1_000_000_000_000_000,
        "pib" => 1 << 50,
        "eb" => 1_000_000_000_000_000_000,
        "eib" => 1 << 60,
        other => {
            return Err(format!(
                "unknown size unit `{other}` (use B, KB, KiB, MB, MiB, GB, GiB, TB, TiB, PB, \
                 PiB, EB, EiB)"
            ));
        }
    };
    let not_a_number = || format!("`{trimmed}` does not start with a number");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || fraction.len() > 18 || fraction.contains('.') {
        return Err(not_a_number());
    }
    let whole: u128 = whole.parse().map_err(|_| not_a_number())?;
    let fraction_value: u128 = match fraction {
        "" => 0,
        digits => digits.parse().map_err(|_| not_a_number())?,
    };
    let scale = 10u128.pow(fraction.len() as u32);
    whole
        .checked_mul(multiplier)
        .and_then(|bytes| bytes.checked_add(fraction_value * multiplier / scale))
        .and_then(|bytes| u64::try_from(bytes).ok())
        .ok_or_else(|| format!("size `{text}` is too large"))
}

/// Decimal units from the largest down, for printing.
const DECIMAL_UNITS: [(&str, u64); 6] = [
    ("EB", 1_000_000_000_000_000_000),
    ("PB", 1_000_000_000_000_000),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
];

/// A size for people, in the largest decimal unit with two decimals: `1.50 KB`, `999 B` (the
/// way the official CLI prints sizes).
pub fn format_size(bytes: u64) -> String {
    match DECIMAL_UNITS.iter().find(|(_, size)| bytes >= *size) {
        Some((unit, size)) => format!("{:.2} {unit}", bytes as f64 / *size as f64),
        None => format!("{bytes} B"),
    }
}

/// A size that [`parse_size`] reads back to the same number: the largest decimal unit that
/// divides it, else bytes (`2GB`, `1500KB`, `1234567B`).
pub fn format_size_exact(bytes: u64) -> String {
    match DECIMAL_UNITS
        .iter()
        .find(|(_, size)| bytes >= *size && bytes.is_multiple_of(*size))
    {
        Some((unit, size)) => format!("{}{unit}", bytes / size),
        None => format!("{bytes}B"),
    }
}

/// A duration in humantime's grammar (`500 ms`, `5s`, `15 minutes`, `1h 30m`, `7 days`), or a
/// bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_or(text, Duration::from_secs(1))
}

/// A duration in humantime's grammar, or a bare number (whole or decimal) of `bare_unit`s.
pub fn parse_duration_or(text: &str, bare_unit: Duration) -> Result<Duration, String> {
    let text = text.trim();
    let is_bare = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.');
    if is_bare {
        let number: f64 = text
            .parse()
            .map_err(|_| format!("`{text}` is not a number"))?;
        return Duration::try_from_secs_f64(number * bare_unit.as_secs_f64())
            .map_err(|_| format!("duration `{text}` is out of range"));
    }
    humantime::parse_duration(text).map_err(|error| format!("invalid duration `{text}`: {error}"))
}

/// A duration in the grammar [`parse_duration`] reads: `10s`, `500ms`, `1h 30m`, `250us`.
pub fn format_duration(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_exactly() {
        for (text, bytes) in [
            ("0 B", 0),
            ("1.234 KB", 1234),
            ("123456.789 KB", 123_456_789),
            ("1 KiB", 1024),
            ("1.5 KiB", 1536),
            ("34732 KiB", 34732 * 1024),
            ("10 GB", 10_000_000_000),
            ("7", 7),
            ("2 MB", 2_000_000),
            ("1.05 MB", 1_050_000),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for text in ["", "KB", "1.2.3 KB", "1 parsec", "-1 B"] {
            assert!(parse_size(text).is_err(), "{text}");
        }
        assert_eq!(parse_size("2g"), Ok(2_000_000_000));
    }

    #[test]
    fn printed_sizes_read_back() {
        assert_eq!(format_size(999), "999 B");
        assert_eq!(format_size(1_500), "1.50 KB");
        assert_eq!(format_size(2_000_000_000), "2.00 GB");
        assert_eq!(format_size(u64::MAX), "18.45 EB");
        for bytes in [0, 999, 1_500, 2_000_000_000, 1_234_567, u64::MAX] {
            assert_eq!(parse_size(&format_size_exact(bytes)), Ok(bytes), "{bytes}");
        }
        assert_eq!(format_size_exact(2_000_000_000), "2GB");
        assert_eq!(format_size_exact(1_500_000), "1500KB");
    }

    #[test]
    fn durations_are_humantime_or_a_bare_number_of_the_callers_unit() {
        let second = Duration::from_secs(1);
        for (text, expected) in [
            ("30 s", Duration::from_secs(30)),
            ("500 ms", Duration::from_millis(500)),
            ("250us", Duration::from_micros(250)),
            ("15 minutes", Duration::from_secs(900)),
            ("1h 30m", Duration::from_secs(5400)),
            ("7 days", Duration::from_secs(7 * 86_400)),
            ("1.5s", Duration::from_millis(1500)),
            ("3", Duration::from_secs(3)),
            ("0.25", Duration::from_millis(250)),
        ] {
            assert_eq!(parse_duration_or(text, second), Ok(expected), "{text}");
        }
        let millisecond = Duration::from_millis(1);
        assert_eq!(
            parse_duration_or("15", millisecond),
            Ok(Duration::from_millis(15))
        );
        assert_eq!(
            parse_duration_or("3m", millisecond),
            Ok(Duration::from_secs(180))
        );
        for text in ["", "soon", "5 fortnights", "-1 s", "1e3", "inf", "1.2.3"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
        for duration in [
            Duration::from_secs(10),
            Duration::from_millis(10),
            Duration::from_micros(5),
            Duration::from_secs(5400),
        ] {
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
        assert_eq!(format_duration(Duration::from_secs(10)), "10s");
    }
}
