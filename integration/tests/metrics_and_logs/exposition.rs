//! A strict check of the text exposition (OpenMetrics text as prometheus-client writes it,
//! which Prometheus reads), then the values through prometheus-parse; scraping `/metrics`.

use rill_integration::http::http;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;

/// A sample's name and its labels, sorted.
type Key = (String, Vec<(String, String)>);
/// Series -> value.
type Series = BTreeMap<Key, f64>;

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `{a="x",b="y"}` (escapes \\ \" \n) and the rest of the line after it.
fn parse_labels(text: &str, line: &str) -> (Vec<(String, String)>, String) {
    let mut labels = Vec::new();
    let mut chars = text.chars().peekable();
    assert_eq!(chars.next(), Some('{'), "labels must open with {{: {line}");
    if chars.peek() == Some(&'}') {
        chars.next();
        return (labels, chars.collect());
    }
    loop {
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert!(is_label_name(&name), "bad label name {name:?} in {line}");
        assert_eq!(
            chars.next(),
            Some('"'),
            "label value must be quoted: {line}"
        );
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("unterminated label value in {line}"),
            }
        }
        assert!(
            labels.iter().all(|(existing, _)| existing != &name),
            "duplicate label {name} in {line}"
        );
        labels.push((name, value));
        match chars.next() {
            Some(',') => continue,
            Some('}') => break,
            other => panic!("expected , or }} after a label, got {other:?} in {line}"),
        }
    }
    (labels, chars.collect())
}

fn parse_value(text: &str, line: &str) -> f64 {
    match text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        other => other
            .parse()
            .unwrap_or_else(|_| panic!("bad sample value {other:?} in {line}")),
    }
}

/// Checks the exposition strictly and returns every sample. Rules: `# EOF` exactly once, last;
/// each family has one HELP and one TYPE before its samples and appears once; sample names
/// are the family name plus the suffixes its type allows; label names and escapes are valid;
/// values are numbers; no series twice; counters are non-negative; every histogram's buckets
/// are cumulative, ascending, end with +Inf, and +Inf equals `_count`.
fn check_exposition(text: &str) -> Series {
    assert!(text.ends_with("# EOF\n"), "exposition must end with # EOF");
    let body = &text[..text.len() - "# EOF\n".len()];
    assert!(!body.contains("# EOF"), "# EOF must appear once");
    let mut families: HashMap<String, String> = HashMap::new();
    let mut helped: HashSet<String> = HashSet::new();
    let mut current: Option<(String, String)> = None;
    let mut series = Series::new();
    // (family, labels without le) -> [(le, cumulative count)]
    let mut buckets: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(is_metric_name(name), "bad family name in {line}");
            assert!(
                helped.insert(name.to_string()),
                "family {name} described twice"
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(
                ["counter", "gauge", "histogram", "info", "unknown"].contains(&kind),
                "unknown type in {line}"
            );
            assert!(helped.contains(name), "TYPE before HELP for {name}");
            assert!(
                families
                    .insert(name.to_string(), kind.to_string())
                    .is_none(),
                "family {name} declared twice"
            );
            current = Some((name.to_string(), kind.to_string()));
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment {line:?}");
        assert!(!line.is_empty(), "empty line in the exposition");
        let (family, kind) = current
            .as_ref()
            .unwrap_or_else(|| panic!("sample before any TYPE: {line}"));
        let name_end = line.find(['{', ' ']).expect("sample value");
        let name = &line[..name_end];
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..], line)
        } else {
            (Vec::new(), line[name_end..].to_string())
        };
        let value_text = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("missing space before the value: {line}"));
        assert!(
            !value_text.contains(' '),
            "timestamps are not expected: {line}"
        );
        let value = parse_value(value_text, line);
        let suffix = name
            .strip_prefix(family.as_str())
            .unwrap_or_else(|| panic!("sample {name} outside its family {family}"));
        let allowed: &[&str] = match kind.as_str() {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            "info" => &["_info"],
            _ => &[""],
        };
        assert!(
            allowed.contains(&suffix),
            "sample {name} is not allowed in {kind} family {family}"
        );
        if kind == "counter" {
            assert!(value >= 0.0, "negative counter: {line}");
        }
        let mut sorted = labels.clone();
        sorted.sort();
        if suffix == "_bucket" {
            let le = labels
                .iter()
                .find(|(name, _)| name == "le")
                .map(|(_, value)| parse_value(value, line))
                .unwrap_or_else(|| panic!("bucket without le: {line}"));
            let others: Vec<_> = sorted.iter().filter(|(n, _)| n != "le").cloned().collect();
            buckets
                .entry((family.clone(), others))
                .or_default()
                .push((le, value));
        }
        assert!(
            series.insert((name.to_string(), sorted), value).is_none(),
            "series twice: {line}"
        );
    }
    for ((family, labels), list) in &buckets {
        assert!(
            list.windows(2)
                .all(|pair| pair[0].0 < pair[1].0 && pair[0].1 <= pair[1].1),
            "{family}{labels:?}: buckets must ascend and be cumulative: {list:?}"
        );
        let (last_le, last_count) = *list.last().unwrap();
        assert_eq!(last_le, f64::INFINITY, "{family}: last bucket must be +Inf");
        let count = series[&(format!("{family}_count"), labels.clone())];
        assert_eq!(
            last_count, count,
            "{family}{labels:?}: +Inf bucket != _count"
        );
    }
    series
}

/// A parsed scrape: the strict check's samples, cross-checked against prometheus-parse.
pub(crate) struct Metrics {
    pub(crate) series: Series,
}

impl Metrics {
    fn parse(text: &str) -> Metrics {
        let series = check_exposition(text);
        let parsed = prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_string())))
            .expect("prometheus-parse reads the exposition");
        // Every plain sample prometheus-parse reads has the value the strict check read.
        for sample in &parsed.samples {
            let value = match sample.value {
                prometheus_parse::Value::Counter(value)
                | prometheus_parse::Value::Gauge(value)
                | prometheus_parse::Value::Untyped(value) => value,
                prometheus_parse::Value::Histogram(_) | prometheus_parse::Value::Summary(_) => {
                    continue;
                }
            };
            let mut labels: Vec<(String, String)> = sample
                .labels
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            labels.sort();
            assert_eq!(
                series.get(&(sample.metric.clone(), labels.clone())),
                Some(&value),
                "prometheus-parse disagrees on {}{labels:?}",
                sample.metric
            );
        }
        // One histogram value per histogram series (each has exactly one `_count`).
        let histograms = parsed
            .samples
            .iter()
            .filter(|sample| matches!(sample.value, prometheus_parse::Value::Histogram(_)))
            .count();
        let counts = series
            .keys()
            .filter(|(name, _)| name.ends_with("_count"))
            .count();
        assert_eq!(
            histograms, counts,
            "histogram series seen by prometheus-parse"
        );
        Metrics { series }
    }

    /// Sum of the samples named `name` whose labels include `labels`.
    pub(crate) fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.series
            .iter()
            .filter(|((sample, sample_labels), _)| {
                sample == name
                    && labels.iter().all(|(key, value)| {
                        sample_labels.iter().any(|(k, v)| k == key && v == value)
                    })
            })
            .map(|(_, value)| value)
            .sum()
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.series.keys().any(|(sample, _)| sample == name)
    }

    /// The value of the one series `name` with exactly `labels`.
    pub(crate) fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut sorted: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        sorted.sort();
        *self
            .series
            .get(&(name.to_string(), sorted))
            .unwrap_or_else(|| panic!("no series {name}{labels:?}"))
    }
}

pub(crate) fn scrape(address: SocketAddr) -> Metrics {
    let response = http(address, "GET", "/metrics");
    assert_eq!(response.status, 200);
    assert!(
        response.headers["content-type"].starts_with("application/openmetrics-text"),
        "{:?}",
        response.headers
    );
    Metrics::parse(&response.body)
}
