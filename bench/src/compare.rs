//! `iggy-bench compare`: the same workload against two servers, alternated A B A B ... over N
//! rounds so that drift on a noisy machine hits both alike, then the median of each figure and
//! the ratio B/A.
//!
//! Every run's report.json is kept under `<output dir>/compare_<workload>_<timestamp>/`, next to
//! `compare.json` with the medians.

use crate::args::{Cli, CompareArgs};
use crate::baseline::Baseline;
use crate::error::{Error, Result};
use crate::report::Report;
use crate::stats::{ActorKind, median};
use crate::units::compact_utc;
use crate::workload;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

/// One figure of one run.
type Figure = (String, f64);

/// The figures compared: per actor kind, throughput and latency; per server, RSS and CPU.
pub fn figures(report: &Report) -> Vec<Figure> {
    let mut figures = Vec::new();
    for group in &report.groups {
        let label = group.kind.label();
        figures.push((format!("{label} MB/s"), group.total_throughput_mb_s));
        figures.push((format!("{label} msgs/s"), group.total_throughput_msgs_s));
        figures.push((format!("{label} p50 ms"), group.latency.p50_ms));
        figures.push((format!("{label} p99 ms"), group.latency.p99_ms));
        figures.push((format!("{label} p99.9 ms"), group.latency.p999_ms));
        figures.push((format!("{label} max ms"), group.latency.max_ms));
    }
    if let Some(usage) = &report.server_usage {
        figures.push(("server RSS max MiB".into(), usage.rss_max_mib));
        figures.push(("server CPU cores".into(), usage.cpu_cores_avg));
    }
    figures
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparedFigure {
    pub figure: String,
    pub a_runs: Vec<f64>,
    pub b_runs: Vec<f64>,
    pub a_median: Option<f64>,
    pub b_median: Option<f64>,
    /// b_median / a_median.
    pub ratio_b_over_a: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub workload: Vec<String>,
    pub a: String,
    pub b: String,
    pub a_name: String,
    pub b_name: String,
    pub rounds: u32,
    pub figures: Vec<ComparedFigure>,
}

/// Medians and ratios of figures collected over rounds (figures are matched by name).
pub fn compare_figures(a_runs: &[Vec<Figure>], b_runs: &[Vec<Figure>]) -> Vec<ComparedFigure> {
    let mut names: Vec<String> = Vec::new();
    for (name, _) in a_runs.iter().chain(b_runs).flatten() {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    let collect = |runs: &[Vec<Figure>], name: &str| -> Vec<f64> {
        runs.iter()
            .filter_map(|run| run.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
            .collect()
    };
    names
        .into_iter()
        .map(|name| {
            let a = collect(a_runs, &name);
            let b = collect(b_runs, &name);
            let a_median = median(&a);
            let b_median = median(&b);
            let ratio = match (a_median, b_median) {
                (Some(a), Some(b)) if a != 0.0 => Some(b / a),
                _ => None,
            };
            ComparedFigure {
                figure: name,
                a_runs: a,
                b_runs: b,
                a_median,
                b_median,
                ratio_b_over_a: ratio,
            }
        })
        .collect()
}

pub fn table(comparison: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} = {}, {} = {}; {} rounds of `{}`; medians:",
        comparison.a_name,
        comparison.a,
        comparison.b_name,
        comparison.b,
        comparison.rounds,
        comparison.workload.join(" ")
    );
    let _ = writeln!(
        out,
        "{:<32} {:>14} {:>14} {:>8}",
        "figure",
        comparison.a_name,
        comparison.b_name,
        format!("{}/{}", comparison.b_name, comparison.a_name)
    );
    let show = |value: Option<f64>| value.map_or("-".into(), |v| format!("{v:.3}"));
    for figure in &comparison.figures {
        let _ = writeln!(
            out,
            "{:<32} {:>14} {:>14} {:>8}",
            figure.figure,
            show(figure.a_median),
            show(figure.b_median),
            figure
                .ratio_b_over_a
                .map_or("-".into(), |ratio| format!("{ratio:.3}"))
        );
    }
    out
}

pub fn run(args: &CompareArgs, baseline: Option<Baseline>) -> Result<Comparison> {
    if args.rounds == 0 {
        return Err(Error::Usage("--rounds must be at least 1".into()));
    }
    let cli = Cli::parse_from_args(
        std::iter::once("iggy-bench".to_string()).chain(args.workload.clone()),
    )
    .map_err(|error| Error::Usage(format!("the workload after `--`: {error}")))?;
    let plan = cli.into_plan()?;
    let dir = PathBuf::from(&args.output_dir).join(format!(
        "compare_{}_{}",
        plan.kind.name(),
        compact_utc(SystemTime::now())
    ));
    std::fs::create_dir_all(&dir)?;
    let servers = [
        (&args.a_name, &args.a, args.a_pid, args.a_protocol),
        (&args.b_name, &args.b, args.b_pid, args.b_protocol),
    ];
    let mut runs: [Vec<Vec<Figure>>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=args.rounds {
        for (side, (name, address, pid, protocol)) in servers.iter().enumerate() {
            let mut plan = plan.clone();
            plan.endpoint.address = (*address).clone();
            plan.endpoint.protocol = protocol.unwrap_or(plan.endpoint.protocol);
            plan.server_pid = *pid;
            eprintln!(
                "round {round}/{}: {name} ({address}, protocol {})",
                args.rounds, plan.endpoint.protocol
            );
            let report = workload::run(&plan, baseline.clone())?;
            let summary = report
                .group(ActorKind::Producer)
                .or_else(|| report.groups.first())
                .map(|group| {
                    format!(
                        "{:.1} MB/s, p99 {:.3} ms",
                        group.total_throughput_mb_s, group.latency.p99_ms
                    )
                })
                .unwrap_or_default();
            eprintln!("  {summary}");
            std::fs::write(
                dir.join(format!("round{round}_{}.json", sanitise(name))),
                serde_json::to_string_pretty(&report).expect("report serialises"),
            )?;
            runs[side].push(figures(&report));
        }
    }
    let comparison = Comparison {
        workload: args.workload.clone(),
        a: args.a.clone(),
        b: args.b.clone(),
        a_name: args.a_name.clone(),
        b_name: args.b_name.clone(),
        rounds: args.rounds,
        figures: compare_figures(&runs[0], &runs[1]),
    };
    std::fs::write(
        dir.join("compare.json"),
        serde_json::to_string_pretty(&comparison).expect("comparison serialises"),
    )?;
    eprintln!("results: {}", dir.display());
    Ok(comparison)
}

fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ratios_per_figure() {
        let run =
            |mb: f64, p99: f64| vec![("producers MB/s".to_string(), mb), ("p99".to_string(), p99)];
        let a = [run(100.0, 2.0), run(300.0, 1.0), run(200.0, 3.0)];
        let b = [run(400.0, 1.0), run(500.0, 1.0)];
        let compared = compare_figures(&a, &b);
        assert_eq!(compared.len(), 2);
        assert_eq!(compared[0].figure, "producers MB/s");
        assert_eq!(compared[0].a_median, Some(200.0));
        assert_eq!(compared[0].b_median, Some(450.0));
        assert_eq!(compared[0].ratio_b_over_a, Some(2.25));
        assert_eq!(compared[1].a_median, Some(2.0));
        assert_eq!(compared[1].ratio_b_over_a, Some(0.5));
        let lonely = compare_figures(&[vec![("x".to_string(), 0.0)]], &[]);
        assert_eq!(lonely[0].ratio_b_over_a, None);
    }
}
