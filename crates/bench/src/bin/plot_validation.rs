//! Reads the CSV of `validate` and writes: a markdown table of every problem with the summary
//! statistics (stdout), `predicted_vs_measured.svg`, and `time_vs_tile.svg` (measured sweep and
//! model curve for a few problems).

use clap::Parser;
use hetblas_bench::validation_csv::{fields, percentile, points};
use hetblas_core::Blocking;
use plotters::prelude::*;

#[derive(Parser, Debug)]
struct Args {
    csv: std::path::PathBuf,
    #[arg(long, default_value = ".")]
    out_dir: std::path::PathBuf,
}

struct Row {
    label: String,
    chosen: Blocking,
    predicted: f64,
    measured: f64,
    error: f64,
    best_tile: Blocking,
    chosen_over_best: f64,
    plan_new_us: f64,
    plan_repeat_us: f64,
    sweep: Vec<(usize, f64)>,
    model: Vec<(usize, f64)>,
}

/// The square tiles of `blocking:seconds` pairs, by tile size: what a time-vs-T curve shows.
fn square(points: Vec<(Blocking, f64)>) -> Vec<(usize, f64)> {
    points
        .into_iter()
        .filter(|p| p.0.is_square())
        .map(|(b, s)| (b.tm, s))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.csv)?;
    let mut rows = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f = fields(line);
        if f.len() < 17 {
            continue;
        }
        let beta = if f[5] == "true" { " beta=0" } else { "" };
        rows.push(Row {
            label: format!("{}x{}x{} {} {}{}", f[0], f[1], f[2], f[3], f[4], beta),
            chosen: f[6].parse()?,
            predicted: f[7].parse()?,
            measured: f[8].parse()?,
            error: f[9].parse()?,
            best_tile: f[10].parse()?,
            chosen_over_best: f[12].parse()?,
            plan_new_us: f[13].parse()?,
            plan_repeat_us: f[14].parse()?,
            sweep: square(points(&f[15])?),
            model: square(points(&f[16])?),
        });
    }
    println!("| problem | tile | predicted s | measured s | error | best tile (sweep) | chosen/best | plan new us | plan repeat us |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        println!(
            "| {} | {} | {:.4} | {:.4} | {:+.1}% | {} | {:.3} | {:.0} | {:.1} |",
            r.label,
            r.chosen,
            r.predicted,
            r.measured,
            r.error * 100.0,
            r.best_tile,
            r.chosen_over_best,
            r.plan_new_us,
            r.plan_repeat_us
        );
    }
    let abs: Vec<f64> = rows.iter().map(|r| r.error.abs()).collect();
    let cob: Vec<f64> = rows.iter().map(|r| r.chosen_over_best - 1.0).collect();
    let plans: Vec<f64> = rows.iter().map(|r| r.plan_new_us).collect();
    println!();
    println!(
        "{} problems: |error| median {:.1}%, p90 {:.1}%, max {:.1}%; chosen tile vs best of sweep: median +{:.1}%, max +{:.1}%; planning a new problem: median {:.0} us, max {:.0} us",
        rows.len(),
        percentile(&abs, 0.5) * 100.0,
        percentile(&abs, 0.9) * 100.0,
        percentile(&abs, 1.0) * 100.0,
        percentile(&cob, 0.5) * 100.0,
        percentile(&cob, 1.0) * 100.0,
        percentile(&plans, 0.5),
        percentile(&plans, 1.0),
    );

    std::fs::create_dir_all(&args.out_dir)?;
    // Predicted vs measured.
    let path = args.out_dir.join("predicted_vs_measured.svg");
    let root = SVGBackend::new(&path, (640, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let hi = rows
        .iter()
        .map(|r| r.measured.max(r.predicted))
        .fold(0.0f64, f64::max)
        * 1.1;
    let lo = rows
        .iter()
        .map(|r| r.measured.min(r.predicted))
        .fold(f64::INFINITY, f64::min)
        * 0.8;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "hetblas pipeline model: predicted vs measured (s)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("measured seconds")
        .y_desc("predicted seconds")
        .draw()?;
    chart.draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], &BLACK))?;
    chart.draw_series(
        rows.iter()
            .map(|r| Circle::new((r.measured, r.predicted), 4, BLUE.filled())),
    )?;
    root.present()?;

    // Time vs tile for up to four problems with the largest sweeps.
    let path = args.out_dir.join("time_vs_tile.svg");
    let root = SVGBackend::new(&path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut picked: Vec<&Row> = rows.iter().filter(|r| r.sweep.len() >= 3).collect();
    picked.sort_by(|a, b| b.measured.total_cmp(&a.measured));
    picked.truncate(4);
    let ymax = picked
        .iter()
        .flat_map(|r| r.sweep.iter().chain(&r.model).map(|p| p.1))
        .fold(0.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "time vs tile size: measured (points) and model (lines)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d((256f64..16384f64).log_scale(), 0f64..ymax.max(1e-3))?;
    chart
        .configure_mesh()
        .x_desc("tile T")
        .y_desc("seconds")
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (r, color) in picked.iter().zip(colors) {
        chart
            .draw_series(LineSeries::new(
                r.model.iter().map(|&(t, s)| (t as f64, s)),
                color,
            ))?
            .label(r.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart.draw_series(
            r.sweep
                .iter()
                .map(|&(t, s)| Circle::new((t as f64, s), 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    eprintln!("plots written to {}", args.out_dir.display());
    Ok(())
}
