//! `hetblas trsm` / `hetblas trmm`: a triangular call on random host data (a well-conditioned
//! triangular A), timed, optionally checked on sampled lines of B and traced; and the model's
//! choice for `hetblas predict --routine trsm|trmm`.

use crate::report::{median, say, Out};
use crate::shape::{ProblemArgs, RunArgs};
use clap::Args;
use hetblas::{
    DType, Diag, MatMut, MatRef, Result, Runtime, Scalar, Side, SolvePlacement, Trans,
    TriCallOptions, TriOptions, TriProblem, TriReport, TriRoutine, Uplo,
};
use hetblas_core::problem::tri_check::check_tri_lines;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::MemorySpace;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

/// The problem of a triangular call (of both subcommands and of `predict --routine`).
#[derive(Debug, Clone)]
pub struct TriShapeArgs {
    /// Rows and columns of B.
    pub m: usize,
    pub n: usize,
    pub dtype: DType,
    pub side: char,
    pub uplo: char,
    pub transa: Trans,
    pub diag: char,
}

impl TriShapeArgs {
    pub fn options(&self) -> Result<TriOptions> {
        let bad = |what: &str, c: char| {
            hetblas::Error::InvalidInput(format!("--{what} {c:?}: not a BLAS option"))
        };
        Ok(TriOptions {
            side: Side::from_blas_char(self.side as u8).ok_or_else(|| bad("side", self.side))?,
            uplo: Uplo::from_blas_char(self.uplo as u8).ok_or_else(|| bad("uplo", self.uplo))?,
            transa: self.transa,
            diag: Diag::from_blas_char(self.diag as u8).ok_or_else(|| bad("diag", self.diag))?,
        })
    }

    pub fn problem(&self, routine: TriRoutine) -> Result<TriProblem> {
        let (m, n) = (self.m, self.n);
        Ok(TriProblem {
            routine,
            opts: self.options()?,
            m,
            n,
            dtype: self.dtype,
        })
    }
}

#[derive(Args, Debug)]
pub struct TriArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[command(flatten)]
    pub run: RunArgs,
    /// SIDE: L (op(A) on the left of B) or R (on the right).
    #[arg(long, default_value = "L")]
    pub side: char,
    /// UPLO: L (A lower triangular) or U (upper).
    #[arg(long, default_value = "L")]
    pub uplo: char,
    /// op(A): N, T or C.
    #[arg(long, default_value = "N")]
    pub transa: Trans,
    /// DIAG: N (non-unit) or U (unit diagonal, not read).
    #[arg(long, default_value = "N")]
    pub diag: char,
    /// The scalar alpha (negative values welcome: --alpha -1.5).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Force the tile size (A's diagonal blocks and B's panels).
    #[arg(long)]
    pub tile: Option<usize>,
    /// Sweep these tile sizes ("1024,2048,4096"), then the model's choice (or --tile), and
    /// report its time against the best of the sweep.
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<usize>,
    /// Where the diagonal blocks (TRSM's solves, TRMM's triangular products) run: `device`
    /// (each device its own) or `host` (the CPU, in B itself); default: the model decides.
    #[arg(long, value_parser = ["device", "host"])]
    pub solve: Option<String>,
    /// With --trace: replay the last repetition's tile DAG in the simulator against the
    /// profile and write the simulated timeline beside the real one (two process rows).
    #[arg(long, requires = "trace")]
    pub simulate: bool,
}

impl TriArgs {
    fn shape(&self, routine: TriRoutine) -> Result<TriShapeArgs> {
        self.problem.without(
            &routine.name().to_lowercase(),
            &['k'],
            "B is m x n, A m x m (--side L) or n x n (--side R)",
        )?;
        let (m, n, _) = self.problem.mnk();
        Ok(TriShapeArgs {
            m,
            n,
            dtype: self.problem.dtype(),
            side: self.side,
            uplo: self.uplo,
            transa: self.transa,
            diag: self.diag,
        })
    }
}

pub fn run(rt: &Runtime, routine: TriRoutine, a: TriArgs) -> Result<()> {
    match a.problem.dtype() {
        DType::F64 => run_typed::<f64>(rt, routine, a),
        DType::F32 => run_typed::<f32>(rt, routine, a),
        DType::C64 => run_typed::<c64>(rt, routine, a),
        DType::C32 => run_typed::<c32>(rt, routine, a),
    }
}

pub(crate) fn alloc<T: Scalar>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| {
        hetblas::Error::InvalidInput(format!("not enough memory for {what} ({n} elements: {e})"))
    })?;
    Ok(v)
}

fn value<T: Scalar>(rng: &mut StdRng) -> c64 {
    let re = rng.random_range(-1.0..1.0);
    let im = if T::DTYPE.is_complex() {
        rng.random_range(-1.0..1.0)
    } else {
        0.0
    };
    c64::new(re, im)
}

/// A well-conditioned triangular `k x k` A: diagonal of modulus in [1, 2], off-diagonal
/// entries below 1/k in modulus (the other triangle zero).
fn triangular<T: Scalar>(rng: &mut StdRng, o: &TriOptions, k: usize) -> Result<Vec<T>> {
    let mut a = alloc::<T>(k * k, "A")?;
    let scale = 1.0 / k.max(1) as f64;
    for j in 0..k {
        for i in 0..k {
            let v = value::<T>(rng);
            let stored = match o.uplo {
                Uplo::Lower => i >= j,
                Uplo::Upper => i <= j,
            };
            a.push(T::from_c64(if i == j {
                let m = v.norm().max(1e-3);
                v / m * (1.0 + m)
            } else if stored {
                v * scale
            } else {
                c64::new(0.0, 0.0)
            }));
        }
    }
    Ok(a)
}

fn run_typed<T: Scalar>(rt: &Runtime, routine: TriRoutine, a: TriArgs) -> Result<()> {
    let problem = a.shape(routine)?.problem(routine)?;
    let out = Out::new(a.run.json);
    // Refused now rather than after the computation.
    if a.simulate && rt.profile().is_none() {
        return Err(hetblas::Error::Profile(format!(
            "--simulate needs a machine profile: {}",
            rt.profile_status()
        )));
    }
    let (m, n) = (problem.m, problem.n);
    let k = problem.a_order();
    let mut trace_file = crate::gemm::create_trace(a.run.trace.as_deref())?;
    let mut rng = StdRng::seed_from_u64(a.run.seed);
    let av: Vec<T> = triangular(&mut rng, &problem.opts, k)?;
    let mut b0 = alloc::<T>(m * n, "B")?;
    b0.extend((0..m * n).map(|_| T::from_c64(value::<T>(&mut rng))));
    let mut b = alloc::<T>(m * n, "a copy of B")?;
    b.extend_from_slice(&b0);
    let devices = a
        .run
        .devices
        .as_deref()
        .map(|s| crate::cli::parse_devices(rt, s))
        .transpose()?;
    let solve = a.solve.as_deref().map(|s| match s {
        "host" => SolvePlacement::Host,
        _ => SolvePlacement::OnDevice,
    });
    let alpha = T::from_f64(a.alpha);
    // One timed point: a warm-up call, then `reps` timed; the median and the last report.
    let calls = (a.tiles.len() as u64 + 1) * (a.run.reps + 1);
    let bar = crate::progress::bar(calls, "calls", a.run.json);
    let mut timed = |tile: Option<usize>, traced: bool| -> Result<(f64, TriReport)> {
        let mut times = Vec::new();
        let mut last = None;
        for rep in 0..=a.run.reps {
            bar.inc(1);
            b.copy_from_slice(&b0);
            let call = TriCallOptions::default()
                .tile(tile)
                .device_list(devices.clone())
                .solve(solve)
                .trace(traced && rep == a.run.reps);
            let t = Instant::now();
            let report = rt.tri_with(
                routine,
                problem.opts,
                alpha,
                MatRef::new(&av, k, k, k.max(1))?,
                MatMut::new(&mut b, m, n, m.max(1))?,
                &call,
            )?;
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
            for f in &report.recovered {
                bar.suspend(|| say!(out, "call {rep}: recovered: {f}"));
            }
            last = Some(report);
        }
        Ok((median(&mut times), last.unwrap_or_default()))
    };
    let mut best: Option<(f64, usize)> = None;
    for &t in &a.tiles {
        let (secs, r) = timed(Some(t), false)?;
        bar.suspend(|| {
            say!(
                out,
                "tile {t} (sweep) on [{}]: median {secs:.4} s, {:.2} GFLOP/s",
                r.devices.join(", "),
                problem.flops() / secs / 1e9
            )
        });
        if best.is_none_or(|(b, _)| secs < b) {
            best = Some((secs, t));
        }
    }
    let (med, report) = timed(a.tile, trace_file.is_some())?;
    bar.finish_and_clear();
    let o = problem.opts;
    let name = format!(
        "{}{} {} {} {} {}",
        T::DTYPE.blas_prefix(),
        routine.name().to_lowercase(),
        o.side.as_char(),
        o.uplo.as_char(),
        o.transa.as_char(),
        o.diag.as_char()
    );
    // TRSM's diagonal blocks are solves, TRMM's triangular products.
    let diagonal = match routine {
        TriRoutine::Trsm => "solves",
        TriRoutine::Trmm => "diagonal products",
    };
    let placed = match report.solve {
        Some(SolvePlacement::Host) => "on the host",
        _ => "on each device",
    };
    say!(
        out,
        "{name} m={m} n={n} on [{}] tile {} {diagonal} {placed}: median {:.4} s over {} reps, \
         {:.2} GFLOP/s (predicted {:.4} s, planning {:.1} ms{})",
        report.devices.join(", "),
        report.tile.map_or("-".into(), |t| t.to_string()),
        med,
        a.run.reps,
        problem.flops() / med / 1e9,
        report.predicted_seconds.unwrap_or(f64::NAN),
        report.planning_seconds * 1e3,
        if report.plan_cached { ", cached" } else { "" },
    );
    out.set("routine", name.split(' ').next().unwrap_or_default());
    out.set("problem", name.clone());
    out.set("m", m);
    out.set("n", n);
    out.set("devices", report.devices.clone());
    out.set("tile", report.tile);
    out.set(
        "diagonal_blocks_on",
        if placed == "on the host" {
            "host"
        } else {
            "device"
        },
    );
    out.set("median_s", med);
    out.set("gflops", problem.flops() / med / 1e9);
    out.set("predicted_s", report.predicted_seconds);
    if let Some((b, t)) = best {
        say!(
            out,
            "{} tile {}: {:.3}x the best of the sweep (tile {t}, {b:.4} s)",
            if a.tile.is_some() { "forced" } else { "model" },
            report.tile.map_or("-".into(), |x| x.to_string()),
            med / b
        );
    }
    say!(
        out,
        "traffic: {:.2} GB in, {:.2} GB out; A tiles fetched {}, B tiles fetched {}, written \
         back {}",
        report.bytes_in as f64 / 1e9,
        report.bytes_out as f64 / 1e9,
        report.stats.fetches[0],
        report.stats.fetches[1],
        report.stats.writebacks
    );
    if let (Some(path), Some(file)) = (&a.run.trace, trace_file.as_mut()) {
        if let Some(tr) = &report.trace {
            use std::io::Write;
            let json = if a.simulate {
                let sim = rt.simulate_tri_report(&report, None)?;
                let (s, e) = tr.span();
                say!(
                    out,
                    "simulated: {:.4} s against {:.4} s measured ({:+.1}%)",
                    sim.makespan,
                    e - s,
                    100.0 * (sim.makespan - (e - s)) / (e - s)
                );
                hetblas_core::trace::chrome_json_rows(&[("real", tr), ("simulated", &sim.trace)])
            } else {
                tr.to_chrome_json()
            };
            file.write_all(json.as_bytes())
                .map_err(|e| crate::gemm::cannot_write(path, e))?;
            let compute = |i: &hetblas_core::trace::Interval| {
                i.activity == hetblas_core::trace::Activity::Gemm
            };
            let transfer = |i: &hetblas_core::trace::Interval| {
                i.activity != hetblas_core::trace::Activity::Gemm
            };
            out.set("trace", path.display().to_string());
            say!(
                out,
                "trace: {} ({} intervals); compute streams busy {:.1}% of the span (any), \
                 transfers {:.1}%",
                path.display(),
                tr.intervals.len(),
                100.0 * tr.busy_fraction(compute),
                100.0 * tr.busy_fraction(transfer)
            );
            for u in tr.usage() {
                say!(out, "  {}: busy {:.1}%", u.queue, 100.0 * u.fraction);
            }
            // Per device: how much of its compute time was covered by diagonal work while
            // an update ran on another of its queues (the look-ahead).
            let overlap = panel_overlap(tr);
            say!(
                out,
                "  diagonal work overlapping updates: {:.1}%",
                100.0 * overlap
            );
        }
    }
    if a.run.check {
        // Sampled lines of B (all when small): columns on the left side, rows on the right.
        let lines_total = problem.b_lines();
        let want = if k <= 2048 {
            lines_total
        } else {
            4.min(lines_total)
        };
        let mut pick = StdRng::seed_from_u64(a.run.seed ^ 0x5eed);
        let mut lines: Vec<usize> = (0..want)
            .map(|i| {
                if want == lines_total {
                    i
                } else {
                    pick.random_range(0..lines_total)
                }
            })
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let (checked, worst) = check_tri_lines(
            &problem,
            alpha,
            MatRef::new(&av, k, k, k.max(1))?,
            MatRef::new(&b0, m, n, m.max(1))?,
            MatRef::new(&b, m, n, m.max(1))?,
            &lines,
            4.0,
        )
        .map_err(crate::check::failed)?;
        let what = format!("{checked} entries on {} lines", lines.len());
        crate::check::passed(&out, &what, Some(checked), worst, &b, "");
    }
    out.finish();
    Ok(())
}

/// Share of the diagonal tasks' time during which an update ran on another queue of the same
/// device: the look-ahead's overlap of the panel with the trailing update.
fn panel_overlap(tr: &hetblas_core::trace::Trace) -> f64 {
    let is_diag = |l: &str| l.starts_with("trsm") || l.starts_with("trmm");
    let mut total = 0.0;
    let mut covered = 0.0;
    for d in tr.intervals.iter().filter(|i| is_diag(&i.label)) {
        total += d.end - d.start;
        let mut spans: Vec<(f64, f64)> = tr
            .intervals
            .iter()
            .filter(|u| u.device == d.device && u.queue != d.queue && u.label.starts_with("update"))
            .map(|u| (u.start.max(d.start), u.end.min(d.end)))
            .filter(|(s, e)| e > s)
            .collect();
        spans.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut end = d.start;
        for (s, e) in spans {
            let s = s.max(end);
            if e > s {
                covered += e - s;
                end = e;
            }
        }
    }
    if total > 0.0 {
        covered / total
    } else {
        0.0
    }
}

/// `hetblas predict --routine trsm|trmm`: the model's choice and every alternative.
pub fn predict(
    rt: &Runtime,
    out: &Out,
    spinner: &indicatif::ProgressBar,
    routine: TriRoutine,
    shape: &TriShapeArgs,
) -> Result<()> {
    let problem = shape.problem(routine)?;
    let d = rt.predict_tri(
        &problem,
        [MemorySpace::HOST, MemorySpace::HOST],
        &TriCallOptions::default(),
    )?;
    spinner.finish_and_clear();
    let o = problem.opts;
    let name = format!(
        "{}{} {} {} {} {}",
        problem.dtype.blas_prefix(),
        routine.name().to_lowercase(),
        o.side.as_char(),
        o.uplo.as_char(),
        o.transa.as_char(),
        o.diag.as_char()
    );
    let status = rt.profile_status();
    say!(
        out,
        "{name} m={} n={} (A and B in host memory): {status}",
        problem.m,
        problem.n
    );
    out.set("routine", name.split(' ').next().unwrap_or_default());
    out.set("problem", name.clone());
    out.set("m", problem.m);
    out.set("n", problem.n);
    out.set("model", status);
    say!(
        out,
        "{:<40} {:>6} {:>10} {:>12} {:>10}",
        "devices",
        "tile",
        "solves",
        "predicted s",
        "GFLOP/s"
    );
    let mut rows = Vec::new();
    for (i, alt) in d.alternatives.iter().enumerate() {
        let solves = match alt.solve {
            SolvePlacement::Host => "host",
            SolvePlacement::OnDevice => "device",
        };
        say!(
            out,
            "{:<40} {:>6} {:>10} {:>12.4} {:>10.1}{}",
            alt.devices.join(","),
            alt.tile,
            solves,
            alt.seconds,
            problem.flops() / alt.seconds / 1e9,
            if i == 0 { "  <- chosen" } else { "" }
        );
        rows.push(serde_json::json!({
            "devices": alt.devices,
            "tile": alt.tile,
            "diagonal_blocks_on": solves,
            "predicted_s": alt.seconds,
            "gflops": problem.flops() / alt.seconds / 1e9,
            "chosen": i == 0,
        }));
    }
    out.set("alternatives", rows);
    say!(
        out,
        "why: the fastest predicted makespan (each candidate's task graph simulated with the \
         calibrated GEMM rates, TRSM/TRMM tiles at {:.0}% of them unless the profile says \
         otherwise, and the link models)",
        100.0 * hetblas_core::model::TRI_EFFICIENCY
    );
    Ok(())
}
