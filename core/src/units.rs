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

pub fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = split_number(text)?;
    let multiplier: u64 = match unit.as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        other => {
            return Err(format!(
                "unknown size unit `{other}` (use B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)"
            ));
        }
    };
    let bytes = number * multiplier as f64;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(format!("size `{text}` is too large"));
    }
    Ok(bytes as u64)
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
