//! One SVG per experiment: the median (or mean) curve of every method with a band between the 25th and 75th
//! percentiles (or ± one standard error), log-scaled y when the values span decades.

use std::path::Path;

use plotters::prelude::*;

use crate::format::Experiment;
use crate::stats;

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// How the curves of one method are summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code, reason = "MeanStderr is for the paper suites that report mean ± s.e.")]
pub enum Band {
    /// Median with the interquartile range.
    MedianIqr,
    /// Mean ± standard error.
    MeanStderr,
}

/// Writes `dir/<file>.svg` for `exp`.
pub fn plot_experiment(exp: &Experiment, dir: &Path, file: &str, band: Band) -> anyhow::Result<()> {
    let path = dir.join(format!("{file}.svg"));
    let mut series = Vec::new();
    for m in &exp.methods {
        let curves: Vec<(Vec<f64>, Vec<f64>)> = m.runs.iter().map(|r| (r.x.clone(), r.y.clone())).collect();
        if curves.is_empty() {
            continue;
        }
        let (grid, ys) = stats::align(&curves);
        let pick = |i: usize| -> Vec<f64> { ys.iter().map(|y| y[i]).collect() };
        let (mid, lo, hi): (Vec<f64>, Vec<f64>, Vec<f64>) = (0..grid.len())
            .map(|i| {
                let v = pick(i);
                match band {
                    Band::MedianIqr => (stats::quantile(&v, 0.5), stats::quantile(&v, 0.25), stats::quantile(&v, 0.75)),
                    Band::MeanStderr => {
                        let (m, s) = (stats::mean(&v), stats::stderr(&v));
                        (m, m - s, m + s)
                    }
                }
            })
            .fold((vec![], vec![], vec![]), |mut acc, (a, b, c)| {
                acc.0.push(a);
                acc.1.push(b);
                acc.2.push(c);
                acc
            });
        series.push((m.name.clone(), grid, mid, lo, hi));
    }
    let all: Vec<f64> =
        series.iter().flat_map(|s| s.2.iter().chain(&s.3).chain(&s.4).copied()).filter(|v| v.is_finite()).collect();
    if all.is_empty() {
        return Ok(());
    }
    let (xmin, xmax) = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let (ymin, ymax) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    let positive = all.iter().all(|v| *v > 0.0);
    let log_y = positive && ymax / ymin > 100.0;
    let root = SVGBackend::new(&path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let caption = format!(
        "{} — {} ({})",
        exp.name,
        exp.metric,
        if band == Band::MedianIqr { "median, IQR" } else { "mean ± s.e." }
    );
    let xr = xmin..xmax.max(xmin + 1e-12);
    let mut builder = ChartBuilder::on(&root);
    builder.caption(caption, ("sans-serif", 18)).margin(12).x_label_area_size(40).y_label_area_size(70);
    if log_y {
        let mut chart = builder.build_cartesian_2d(xr, (ymin * 0.8..ymax * 1.25).log_scale())?;
        chart.configure_mesh().x_desc(exp.x_axis.as_str()).y_desc(exp.metric.as_str()).draw()?;
        for (k, (name, x, mid, lo, hi)) in series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let poly: Vec<(f64, f64)> = x
                .iter()
                .zip(hi)
                .map(|(a, b)| (*a, *b))
                .chain(x.iter().zip(lo).rev().map(|(a, b)| (*a, b.max(ymin * 0.8))))
                .collect();
            chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.15))))?;
            chart
                .draw_series(LineSeries::new(x.iter().zip(mid).map(|(a, b)| (*a, *b)), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 18, py)], c.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    } else {
        let pad = (ymax - ymin).abs().max(1e-12) * 0.05;
        let mut chart = builder.build_cartesian_2d(xr, (ymin - pad)..(ymax + pad))?;
        chart.configure_mesh().x_desc(exp.x_axis.as_str()).y_desc(exp.metric.as_str()).draw()?;
        for (k, (name, x, mid, lo, hi)) in series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let poly: Vec<(f64, f64)> =
                x.iter().zip(hi).map(|(a, b)| (*a, *b)).chain(x.iter().zip(lo).rev().map(|(a, b)| (*a, *b))).collect();
            chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.15))))?;
            chart
                .draw_series(LineSeries::new(x.iter().zip(mid).map(|(a, b)| (*a, *b)), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 18, py)], c.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
