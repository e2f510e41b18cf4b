//! Observability end to end: `/metrics` scraped during a workload moves by exactly what the
//! workload did and always passes a strict exposition check (and parses with
//! `prometheus-parse`); `/stats` carries the GetStats figures; `/ping`; JSON log lines are valid
//! JSON with the shard id; log files rotate; slow requests are logged with command and timing;
//! the read cache's figures.

mod exposition;
mod huge_pages;
mod json_logs;
mod read_cache;
mod workload_metrics;
