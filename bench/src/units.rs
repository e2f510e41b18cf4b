//! Parsing and printing of the quantities on the command line and in reports: byte sizes
//! (`2GB`, `1GiB`), durations (`10s`, `500ms`), numbers or ranges (`1000`, `100..1000`), and UTC
//! timestamps for results directories.
//!
//! Sizes and durations are read and printed by `rill_core::units`, as everywhere in rill. Units
//! follow upstream `iggy-bench`: `KB`/`MB`/`GB` are powers of 1000, `KiB`/`MiB`/`GiB` powers of
//! 1024. Throughput is reported in MB/s = 1 000 000 bytes per second, as upstream does.

use rill_core::units;
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes in a megabyte as reports count them (decimal, like upstream).
pub const BYTES_PER_MEGABYTE: f64 = 1_000_000.0;
/// Bytes in a mebibyte (used for RSS, which the kernel reports in KiB).
pub const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

/// A byte count written with an optional unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        units::parse_size(text).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&units::format_size_exact(self.0))
    }
}

/// Durations such as `10s`, `500ms`, `2m`, `1h`, `250us` or a plain number of seconds.
pub use units::{format_duration, parse_duration};

/// A value or an inclusive range `min..max`, as upstream's `-m 100..1000`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumericParam {
    pub min: u32,
    pub max: u32,
}

impl NumericParam {
    pub fn fixed(value: u32) -> Self {
        NumericParam {
            min: value,
            max: value,
        }
    }

    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }

    /// The mean of a uniform draw from the range.
    pub fn mean(&self) -> f64 {
        (f64::from(self.min) + f64::from(self.max)) / 2.0
    }
}

impl FromStr for NumericParam {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parse = |part: &str| {
            part.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{text}' is not a number or a range such as 100..1000"))
        };
        let param = match text.split_once("..") {
            Some((min, max)) => NumericParam {
                min: parse(min)?,
                max: parse(max)?,
            },
            None => NumericParam::fixed(parse(text)?),
        };
        if param.min == 0 {
            return Err(format!("'{text}': values must be at least 1"));
        }
        if param.min > param.max {
            return Err(format!("'{text}': the range's start exceeds its end"));
        }
        Ok(param)
    }
}

impl fmt::Display for NumericParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_fixed() {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}..{}", self.min, self.max)
        }
    }
}

/// Microseconds since the Unix epoch.
pub fn unix_micros(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros() as u64)
}

/// The UTC calendar date and time of a Unix timestamp in seconds:
/// (year, month, day, hour, minute, second). Howard Hinnant's days-to-civil algorithm.
pub fn utc_fields(unix_seconds: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (unix_seconds / 86_400) as i64;
    let seconds_of_day = unix_seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (seconds_of_day / 3600) as u32,
        (seconds_of_day / 60 % 60) as u32,
        (seconds_of_day % 60) as u32,
    )
}

/// `2025-11-22T00:36:45Z`.
pub fn iso8601_utc(time: SystemTime) -> String {
    let (year, month, day, hour, minute, second) = utc_fields(unix_micros(time) / 1_000_000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// `20251122-003645`, for directory names.
pub fn compact_utc(time: SystemTime) -> String {
    let (year, month, day, hour, minute, second) = utc_fields(unix_micros(time) / 1_000_000);
    format!("{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_use_decimal_and_binary_units() {
        assert_eq!("1000".parse(), Ok(ByteSize(1000)));
        assert_eq!("2GB".parse(), Ok(ByteSize(2_000_000_000)));
        assert_eq!("2 GB".parse(), Ok(ByteSize(2_000_000_000)));
        assert_eq!("1GiB".parse(), Ok(ByteSize(1 << 30)));
        assert_eq!("1.5MB".parse(), Ok(ByteSize(1_500_000)));
        assert_eq!("10kb".parse(), Ok(ByteSize(10_000)));
        assert!("ten".parse::<ByteSize>().is_err());
        assert!("5XB".parse::<ByteSize>().is_err());
        assert_eq!(ByteSize(2_000_000_000).to_string(), "2GB");
        assert_eq!(ByteSize(1_500_000).to_string(), "1500KB");
        assert_eq!(ByteSize(999).to_string(), "999B");
    }

    #[test]
    fn durations_accept_common_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(
            parse_duration("5 days"),
            Ok(Duration::from_secs(5 * 86_400))
        );
        assert_eq!(format_duration(Duration::from_secs(10)), "10s");
        assert_eq!(format_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(format_duration(Duration::from_micros(5)), "5us");
    }

    #[test]
    fn numeric_params_are_values_or_ranges() {
        assert_eq!("1000".parse(), Ok(NumericParam::fixed(1000)));
        assert_eq!(
            "100..1000".parse(),
            Ok(NumericParam {
                min: 100,
                max: 1000
            })
        );
        assert!("0".parse::<NumericParam>().is_err());
        assert!("10..5".parse::<NumericParam>().is_err());
        assert!("a..b".parse::<NumericParam>().is_err());
        assert_eq!("100..1000".parse::<NumericParam>().unwrap().mean(), 550.0);
        assert_eq!(NumericParam { min: 1, max: 3 }.to_string(), "1..3");
    }

    #[test]
    fn utc_dates_match_known_instants() {
        assert_eq!(utc_fields(0), (1970, 1, 1, 0, 0, 0));
        // 2000-02-29 12:34:56 UTC, a leap day.
        assert_eq!(utc_fields(951_827_696), (2000, 2, 29, 12, 34, 56));
        // 2025-11-22 00:36:45 UTC.
        assert_eq!(utc_fields(1_763_771_805), (2025, 11, 22, 0, 36, 45));
        let time = UNIX_EPOCH + Duration::from_secs(1_763_771_805);
        assert_eq!(iso8601_utc(time), "2025-11-22T00:36:45Z");
        assert_eq!(compact_utc(time), "20251122-003645");
    }
}
