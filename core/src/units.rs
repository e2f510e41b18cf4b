//! Human-readable sizes and durations ("1 GiB", "100 MB", "30 s", "7 days"), parsed the same
//! way wherever a person writes one: the server's configuration and the 0.9 protocol's string
//! option values.

use std::time::Duration;

fn split_number(text: &str) -> Result<(f64, String), String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number"))?;
    Ok((number, unit.trim().to_ascii_lowercase()))
}

/// A size in bytes, read exactly: "1.234 KB" is 1234 bytes (no floating point), whatever the
/// number of decimals a unit leaves whole.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let multiplier: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" => 1_000_000_000_000,
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

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = split_number(text)?;
    let seconds = match unit.as_str() {
        "us" | "µs" => number / 1e6,
        "ms" => number / 1e3,
        "" | "s" | "sec" | "secs" | "second" | "seconds" => number,
        "m" | "min" | "mins" | "minute" | "minutes" => number * 60.0,
        "h" | "hour" | "hours" => number * 3600.0,
        "d" | "day" | "days" => number * 86_400.0,
        other => {
            return Err(format!(
                "unknown duration unit `{other}` (use ms, s, m, h, days)"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("duration `{text}` is out of range"))
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
    }
}
