//! SVG charts of a report (plotters, SVG backend only: no fonts or system libraries needed).
//!
//! * `throughput.svg`: MB/s per actor kind over time, smoothed with the `-W` moving average, with
//!   the baseline ceilings as horizontal lines when known;
//! * `latency.svg`: mean batch latency per sampling interval over time, per actor kind;
//! * `latency_distribution.svg`: latency by percentile (x axis in "nines": 1 = p90, 2 = p99,
//!   3 = p99.9 ...), from the merged histogram of each actor kind, up to the percentile the
//!   number of samples supports.

use crate::error::{Error, Result};
use crate::report::Report;
use crate::stats::{ActorKind, moving_average, new_histogram};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (1100, 560);
/// Percentile resolution of the distribution chart, in hundredths of a "nine".
const NINES_STEPS_PER_NINE: u32 = 50;
const MAX_NINES: f64 = 5.0;

type ChartResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn colour(kind: ActorKind) -> RGBColor {
    match kind {
        ActorKind::Producer => RGBColor(31, 119, 180),
        ActorKind::Consumer => RGBColor(214, 39, 40),
        ActorKind::ProducingConsumer => RGBColor(44, 160, 44),
    }
}

pub fn write_all(report: &Report, dir: &Path) -> Result<()> {
    let chart_error =
        |name: &str, error: Box<dyn std::error::Error>| Error::Protocol(format!("{name}: {error}"));
    throughput(report, &dir.join("throughput.svg"))
        .map_err(|error| chart_error("throughput.svg", error))?;
    latency(report, &dir.join("latency.svg")).map_err(|error| chart_error("latency.svg", error))?;
    distribution(report, &dir.join("latency_distribution.svg"))
        .map_err(|error| chart_error("latency_distribution.svg", error))?;
    Ok(())
}

fn title(report: &Report, what: &str) -> String {
    format!(
        "{what}: {} ({} B × {}/batch, ack {})",
        report.workload.name(),
        report.params.message_size,
        report.params.messages_per_batch,
        report
            .ack_mode
            .detected
            .as_ref()
            .map(|detected| detected.mode.name())
            .or(report.ack_mode.required.map(|mode| mode.name()))
            .unwrap_or("?")
    )
}

fn throughput(report: &Report, path: &Path) -> ChartResult {
    let window = report.moving_average_window as usize;
    let lines: Vec<(ActorKind, Vec<(f64, f64)>)> = report
        .groups
        .iter()
        .map(|group| {
            let values: Vec<f64> = group.series.iter().map(|p| p.throughput_mb_s).collect();
            let smoothed = moving_average(&values, window);
            let points = group
                .series
                .iter()
                .zip(smoothed)
                .map(|(point, value)| (point.time_s, value))
                .collect();
            (group.kind, points)
        })
        .collect();
    let mut ceilings: Vec<(&str, f64)> = Vec::new();
    if let Some(baseline) = report.ceilings.as_ref().map(|c| &c.baseline) {
        if let Some(value) = baseline.loopback_mb_s() {
            ceilings.push(("loopback TCP ceiling", value));
        }
        if let Some(value) = baseline.disk_write_mb_s()
            && report.groups.iter().any(|g| g.kind != ActorKind::Consumer)
        {
            ceilings.push(("O_DIRECT write ceiling", value));
        }
    }
    let x_max = max_of(lines.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)));
    let y_max = max_of(
        lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
            .chain(ceilings.iter().map(|(_, value)| *value)),
    ) * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let mut chart = frame(&root, title(report, "Throughput"), x_max, y_max)?;
    chart
        .configure_mesh()
        .x_desc("time since measurement start (s)")
        .y_desc(format!("MB/s (moving average of {window})"))
        .draw()?;
    draw_kinds(&mut chart, lines, 2)?;
    for (index, (label, value)) in ceilings.into_iter().enumerate() {
        let style = if index == 0 {
            RGBColor(120, 120, 120)
        } else {
            RGBColor(200, 140, 0)
        };
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, value), (x_max, value)],
                style.stroke_width(1),
            ))?
            .label(format!("{label} {value:.0} MB/s"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

fn latency(report: &Report, path: &Path) -> ChartResult {
    let lines: Vec<(ActorKind, Vec<(f64, f64)>)> = report
        .groups
        .iter()
        .map(|group| {
            let points = group
                .series
                .iter()
                .filter(|point| point.latency_avg_ms > 0.0)
                .map(|point| (point.time_s, point.latency_avg_ms))
                .collect();
            (group.kind, points)
        })
        .collect();
    let x_max = max_of(lines.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)));
    let y_max = max_of(lines.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y))) * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let mut chart = frame(&root, title(report, "Batch latency"), x_max, y_max)?;
    chart
        .configure_mesh()
        .x_desc("time since measurement start (s)")
        .y_desc("mean latency per interval (ms)")
        .draw()?;
    draw_kinds(&mut chart, lines, 1)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `(nines, latency ms)` points of a kind's merged histogram.
pub fn distribution_points(report: &Report, kind: ActorKind) -> Vec<(f64, f64)> {
    let mut histogram = new_histogram();
    for actor in report.actors.iter().filter(|actor| actor.kind == kind) {
        histogram
            .add(&actor.histogram)
            .expect("histograms share bounds");
    }
    if histogram.is_empty() {
        return Vec::new();
    }
    let supported = (histogram.len() as f64).log10().clamp(0.0, MAX_NINES);
    let steps = (supported * f64::from(NINES_STEPS_PER_NINE)).floor() as u32;
    let mut points: Vec<(f64, f64)> = (0..=steps)
        .map(|step| {
            let nines = f64::from(step) / f64::from(NINES_STEPS_PER_NINE);
            let quantile = 1.0 - 10f64.powf(-nines);
            (nines, histogram.value_at_quantile(quantile) as f64 / 1e6)
        })
        .collect();
    points.push((supported.max(0.01), histogram.max() as f64 / 1e6));
    points
}

fn nines_label(nines: &f64) -> String {
    let percentile = 100.0 * (1.0 - 10f64.powf(-nines));
    let text = format!("{percentile:.4}");
    format!("p{}", text.trim_end_matches('0').trim_end_matches('.'))
}

fn distribution(report: &Report, path: &Path) -> ChartResult {
    let lines: Vec<(ActorKind, Vec<(f64, f64)>)> = report
        .groups
        .iter()
        .map(|group| (group.kind, distribution_points(report, group.kind)))
        .collect();
    let x_max = max_of(lines.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)));
    let y_max = max_of(lines.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y))) * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let mut chart = frame(&root, title(report, "Latency distribution"), x_max, y_max)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("batch latency (ms)")
        .x_labels(x_max.floor() as usize + 1)
        .x_label_formatter(&nines_label)
        .draw()?;
    draw_kinds(&mut chart, lines, 2)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The frame every chart shares, so that they read alike side by side: white, titled, both
/// axes from zero.
fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: String,
    x_max: f64,
    y_max: f64,
) -> std::result::Result<Chart<'a, 'b>, Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    Ok(ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?)
}

/// One line per actor kind, in the kind's colour, with its legend entry.
fn draw_kinds(
    chart: &mut Chart<'_, '_>,
    lines: Vec<(ActorKind, Vec<(f64, f64)>)>,
    stroke_width: u32,
) -> ChartResult {
    for (kind, points) in lines {
        let style = colour(kind);
        chart
            .draw_series(LineSeries::new(points, style.stroke_width(stroke_width)))?
            .label(kind.label())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    Ok(())
}

/// The largest value, or 1 when there is none (a chart needs a non-empty range).
fn max_of(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.fold(0.0, f64::max);
    if max > 0.0 { max } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels_read_as_nines() {
        assert_eq!(nines_label(&0.0), "p0");
        assert_eq!(nines_label(&1.0), "p90");
        assert_eq!(nines_label(&2.0), "p99");
        assert_eq!(nines_label(&3.0), "p99.9");
        assert_eq!(nines_label(&4.0), "p99.99");
        assert_eq!(max_of(std::iter::empty()), 1.0);
        assert_eq!(max_of([0.5, 2.0].into_iter()), 2.0);
    }
}
