//! `hetblas potrf|getrf|gesv`: a factorization (or solve) of a random host matrix, timed,
//! optionally checked by residuals on sampled columns and traced; and the model's choice for
//! `hetblas predict --routine potrf|getrf`.

use crate::report::{median, say, Out};
use crate::shape::{ProblemArgs, RunArgs};
use crate::tri::alloc;
use clap::Args;
use hetblas::{DType, FactorOptions, FactorReport, MatMut, Result, Runtime, Scalar, Uplo};
use hetblas_core::plan::FactorRoutine;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::MemorySpace;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

/// Which command: a factorization or the solve on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactorCommand {
    Potrf,
    Getrf,
    Gesv,
}

#[derive(Args, Debug)]
pub struct FactorArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[command(flatten)]
    pub run: RunArgs,
    /// UPLO of POTRF: L (A = L L^H) or U (A = U^H U).
    #[arg(long, default_value = "L")]
    pub uplo: char,
    /// Right-hand sides of GESV.
    #[arg(long, default_value_t = 1)]
    pub nrhs: usize,
    /// Force the block column width.
    #[arg(long)]
    pub nb: Option<usize>,
    /// Force where panels run: `host` (the host LAPACK) or `device` (the updating device's
    /// solver library); default: the model decides.
    #[arg(long, value_parser = ["host", "device"])]
    pub panels: Option<String>,
}

impl FactorArgs {
    fn options(&self, rt: &Runtime) -> Result<FactorOptions> {
        let devices = self
            .run
            .devices
            .as_deref()
            .map(|s| crate::cli::parse_devices(rt, s))
            .transpose()?;
        let mut o = FactorOptions::default()
            .nb(self.nb)
            .panels_on_host(self.panels.as_deref().map(|p| p == "host"));
        if let Some(d) = devices {
            o = o.devices(d);
        }
        Ok(o)
    }
}

pub fn uplo_of(c: char) -> Result<Uplo> {
    Uplo::from_blas_char(c as u8)
        .ok_or_else(|| hetblas::Error::InvalidInput(format!("--uplo {c:?}: L or U")))
}

/// LAPACK's operation counts: POTRF n^3/3, GETRF m n^2 - n^3/3 (m >= n), complex four times.
pub fn factor_flops(routine: FactorRoutine, m: usize, n: usize, dtype: DType) -> f64 {
    let (m, n) = (m as f64, n as f64);
    let real = match routine {
        FactorRoutine::Potrf(_) => n * n * n / 3.0,
        FactorRoutine::Getrf if m >= n => m * n * n - n * n * n / 3.0,
        FactorRoutine::Getrf => n * m * m - m * m * m / 3.0,
    };
    real * dtype.flops_per_fma() / 2.0
}

pub fn run(rt: &Runtime, cmd: FactorCommand, a: FactorArgs) -> Result<()> {
    match cmd {
        FactorCommand::Getrf => a.problem.without("getrf", &['k'], "A is m x n")?,
        FactorCommand::Potrf => a.problem.without("potrf", &['m', 'k'], "A is n x n")?,
        FactorCommand::Gesv => {
            a.problem
                .without("gesv", &['m', 'k'], "A is n x n, B n x nrhs (--nrhs)")?
        }
    }
    match a.problem.dtype() {
        DType::F64 => run_typed::<f64>(rt, cmd, a),
        DType::F32 => run_typed::<f32>(rt, cmd, a),
        DType::C64 => run_typed::<c64>(rt, cmd, a),
        DType::C32 => run_typed::<c32>(rt, cmd, a),
    }
}

/// A value in [-1, 1) (both parts for complex) from the position's hash: the same for (i, j)
/// and (j, i), so a Hermitian matrix fills column by column without reading its mirror.
fn entry(seed: u64, i: usize, j: usize, complex: bool) -> c64 {
    let (lo, hi) = (i.min(j) as u64, i.max(j) as u64);
    let mut x = seed ^ lo.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ hi.rotate_left(32);
    let mut next = || {
        // splitmix64
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    };
    let re = next();
    let im = if complex { next() } else { 0.0 };
    // A Hermitian matrix takes the conjugate in the upper triangle.
    c64::new(re, if i < j { -im } else { im })
}

/// POTRF: Hermitian with entries in [-1, 1) and a real diagonal n + 1 (diagonally dominant,
/// so positive definite). GETRF: a general random matrix (pivoting needed).
fn matrix<T: Scalar>(cmd: FactorCommand, m: usize, n: usize, seed: u64) -> Result<Vec<T>> {
    let mut v = alloc::<T>(m * n, "A")?;
    let complex = T::DTYPE.is_complex();
    for j in 0..n {
        for i in 0..m {
            let x = entry(seed, i, j, complex);
            v.push(T::from_c64(match cmd {
                FactorCommand::Potrf if i == j => c64::new(n as f64 + 1.0, 0.0),
                FactorCommand::Potrf => x,
                // Not symmetric: the transposed position draws its own value.
                _ if i < j => entry(seed ^ 0x5151, i, j, complex),
                _ => x,
            }));
        }
    }
    Ok(v)
}

fn one_norm<T: Scalar>(a: &[T], m: usize, n: usize) -> f64 {
    (0..n)
        .map(|j| {
            a[j * m..(j + 1) * m]
                .iter()
                .map(|x| x.to_c64().norm())
                .sum()
        })
        .fold(0.0, f64::max)
}

fn run_typed<T: Scalar>(rt: &Runtime, cmd: FactorCommand, a: FactorArgs) -> Result<()> {
    let out = Out::new(a.run.json);
    let (m, n, _) = a.problem.mnk();
    let m = match cmd {
        FactorCommand::Getrf => m,
        _ => n,
    };
    let uplo = uplo_of(a.uplo)?;
    let routine = match cmd {
        FactorCommand::Potrf => FactorRoutine::Potrf(uplo),
        _ => FactorRoutine::Getrf,
    };
    let opts = a.options(rt)?;
    let mut trace_file = crate::gemm::create_trace(a.run.trace.as_deref())?;
    let a0: Vec<T> = matrix(cmd, m, n, a.run.seed)?;
    let mut work = alloc::<T>(m * n, "a copy of A")?;
    work.extend_from_slice(&a0);
    let nrhs = a.nrhs;
    let mut rng = StdRng::seed_from_u64(a.run.seed ^ 0xb0b);
    let b0: Vec<T> = (0..n * nrhs)
        .map(|_| T::from_c64(c64::new(rng.random_range(-1.0..1.0), 0.0)))
        .collect();
    let mut b = b0.clone();
    let mut ipiv = vec![0i32; m.min(n)];
    let mut times = Vec::new();
    let mut last: Option<FactorReport> = None;
    // Devices that failed during a call (left out of the later ones), said as they happen.
    let mut recovered: Vec<String> = Vec::new();
    let bar = crate::progress::bar(a.run.reps + 1, "calls", a.run.json);
    for rep in 0..=a.run.reps {
        bar.inc(1);
        work.copy_from_slice(&a0);
        b.copy_from_slice(&b0);
        let o = opts
            .clone()
            .trace(trace_file.is_some() && rep == a.run.reps);
        let am = MatMut::new(&mut work, m, n, m.max(1))?;
        let t = Instant::now();
        let report = match cmd {
            FactorCommand::Potrf => rt.potrf(uplo, am, &o)?,
            FactorCommand::Getrf => rt.getrf(am, &mut ipiv, &o)?,
            FactorCommand::Gesv => {
                rt.gesv(am, &mut ipiv, MatMut::new(&mut b, n, nrhs, n.max(1))?, &o)?
            }
        };
        if rep > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
        for f in &report.recovered {
            bar.suspend(|| say!(out, "call {rep}: recovered: {f}"));
            recovered.push(format!("call {rep}: {f}"));
        }
        last = Some(report);
    }
    bar.finish_and_clear();
    out.set("recovered", recovered);
    let med = median(&mut times);
    let report = last.unwrap_or_default();
    let flops = factor_flops(routine, m, n, T::DTYPE)
        + if cmd == FactorCommand::Gesv {
            2.0 * (n * n * nrhs) as f64 * T::DTYPE.flops_per_fma() / 2.0
        } else {
            0.0
        };
    let name = match cmd {
        FactorCommand::Potrf => format!("potrf {}", uplo.as_char()),
        FactorCommand::Getrf => "getrf".into(),
        FactorCommand::Gesv => format!("gesv nrhs={nrhs}"),
    };
    out.set(
        "routine",
        format!(
            "{}{}",
            T::DTYPE.blas_prefix(),
            name.split(' ').next().unwrap_or_default()
        ),
    );
    out.set("m", m);
    out.set("n", n);
    out.set("devices", report.devices.clone());
    out.set("panels", report.panels.clone());
    out.set("nb", report.nb);
    out.set("median_s", med);
    out.set("gflops", flops / med / 1e9);
    out.set("predicted_s", report.predicted_seconds);
    out.set("info", report.info);
    say!(
        out,
        "{}{name} m={m} n={n} on [{}] panels on {} nb {}: median {med:.4} s over {} reps, \
         {:.2} GFLOP/s (predicted {:.4} s, planning {:.1} ms{}), info {}",
        T::DTYPE.blas_prefix(),
        report.devices.join(", "),
        report.panels.as_deref().unwrap_or("-"),
        report.nb.map_or("-".into(), |b| b.to_string()),
        a.run.reps,
        flops / med / 1e9,
        report.predicted_seconds.unwrap_or(f64::NAN),
        report.planning_seconds * 1e3,
        if report.plan_cached { ", cached" } else { "" },
        report.info,
    );
    say!(
        out,
        "traffic: {:.2} GB in, {:.2} GB out",
        report.bytes_in as f64 / 1e9,
        report.bytes_out as f64 / 1e9
    );
    if let (Some(path), Some(file), Some(tr)) = (&a.run.trace, trace_file.as_mut(), &report.trace) {
        crate::gemm::write_trace(&out, path, file, &tr.to_chrome_json(), tr.intervals.len())?;
        for u in tr.usage() {
            say!(out, "  {}: busy {:.1}%", u.queue, 100.0 * u.fraction);
        }
        // Where the panels ran, beside the updates: time per task kind and device.
        let mut kinds: std::collections::BTreeMap<(String, String), (usize, f64)> =
            Default::default();
        for i in &tr.intervals {
            let kind = i
                .label
                .split(|c: char| c == ' ' || c == '(' || c.is_ascii_digit())
                .next()
                .unwrap_or("")
                .to_string();
            let e = kinds.entry((i.device.clone(), kind)).or_default();
            e.0 += 1;
            e.1 += i.end - i.start;
        }
        for ((dev, kind), (count, secs)) in kinds {
            say!(out, "  {dev:<12} {kind:<10} {count:>6} tasks {secs:>9.4} s");
        }
    }
    if a.run.check {
        if report.info != 0 {
            return Err(crate::check::failed(format!(
                "info = {} on a matrix built to be {}",
                report.info,
                if cmd == FactorCommand::Potrf {
                    "positive definite"
                } else {
                    "nonsingular"
                }
            )));
        }
        let eps = T::DTYPE.unit_roundoff() * 2.0;
        let anorm = one_norm(&a0, m, n);
        let worst = match cmd {
            FactorCommand::Gesv => gesv_residual(&a0, &b0, &b, n, nrhs) / (anorm * n as f64 * eps),
            _ => {
                let cols = sampled(n, a.run.seed);
                let mut worst = 0.0f64;
                for &j in &cols {
                    let r = match cmd {
                        FactorCommand::Potrf => potrf_column(&a0, &work, n, uplo, j),
                        _ => getrf_column(&a0, &work, &ipiv, m, n, j),
                    };
                    worst = worst.max(r / (anorm * n as f64 * eps));
                }
                say!(out, "check: {} columns", cols.len());
                worst
            }
        };
        // LAPACK's test programs pass a residual ratio below 30.
        if worst.is_nan() || worst >= 30.0 {
            return Err(crate::check::failed(format!(
                "residual ratio {worst:.3e} (at most 30)"
            )));
        }
        say!(out, "check: residual ratio {worst:.3} (at most 30)");
        out.set(
            "check",
            serde_json::json!({ "passed": true, "residual_ratio": worst, "at_most": 30 }),
        );
    }
    out.finish();
    Ok(())
}

/// Columns to check: all when small, else five spread over A with the last one.
fn sampled(n: usize, seed: u64) -> Vec<usize> {
    if n <= 512 {
        return (0..n).collect();
    }
    let mut pick = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut cols: Vec<usize> = (0..4).map(|_| pick.random_range(0..n)).collect();
    cols.push(n - 1);
    cols.sort_unstable();
    cols.dedup();
    cols
}

/// ||A(:, j) - (L L^H)(:, j)||_1 over the stored triangle (upper: U^H U).
fn potrf_column<T: Scalar>(a0: &[T], f: &[T], n: usize, uplo: Uplo, j: usize) -> f64 {
    let at = |i: usize, k: usize| f[k * n + i].to_c64();
    let mut r = 0.0;
    let rows: Vec<usize> = match uplo {
        Uplo::Lower => (j..n).collect(),
        Uplo::Upper => (0..=j).collect(),
    };
    for i in rows {
        let mut s = c64::new(0.0, 0.0);
        for k in 0..=i.min(j) {
            s += match uplo {
                Uplo::Lower => at(i, k) * at(j, k).conj(),
                Uplo::Upper => at(k, i).conj() * at(k, j),
            };
        }
        r += (a0[j * n + i].to_c64() - s).norm();
    }
    r
}

/// ||(P A)(:, j) - (L U)(:, j)||_1 with LAPACK's pivots.
fn getrf_column<T: Scalar>(a0: &[T], f: &[T], ipiv: &[i32], m: usize, n: usize, j: usize) -> f64 {
    let mut col: Vec<c64> = a0[j * m..(j + 1) * m].iter().map(|x| x.to_c64()).collect();
    for (i, &p) in ipiv.iter().enumerate() {
        col.swap(i, (p - 1) as usize);
    }
    let at = |i: usize, k: usize| f[k * m + i].to_c64();
    let kmax = j.min(m.min(n) - 1);
    let mut r = 0.0;
    for (i, c) in col.iter().enumerate() {
        let mut s = c64::new(0.0, 0.0);
        for k in 0..=kmax.min(i) {
            let l = if k == i { c64::new(1.0, 0.0) } else { at(i, k) };
            s += l * at(k, j);
        }
        r += (c - s).norm();
    }
    r
}

/// max over right-hand sides of ||A x - b||_1 / ||x||_1.
fn gesv_residual<T: Scalar>(a0: &[T], b0: &[T], x: &[T], n: usize, nrhs: usize) -> f64 {
    let mut worst = 0.0f64;
    for r in 0..nrhs {
        let xr = &x[r * n..(r + 1) * n];
        let mut ax = vec![c64::new(0.0, 0.0); n];
        for (k, xk) in xr.iter().enumerate() {
            let xk = xk.to_c64();
            for (i, v) in ax.iter_mut().enumerate() {
                *v += a0[k * n + i].to_c64() * xk;
            }
        }
        let res: f64 = ax
            .iter()
            .zip(&b0[r * n..(r + 1) * n])
            .map(|(v, b)| (*v - b.to_c64()).norm())
            .sum();
        let xn: f64 = xr.iter().map(|v| v.to_c64().norm()).sum();
        worst = worst.max(res / xn.max(f64::MIN_POSITIVE));
    }
    worst
}

/// `hetblas predict --routine potrf|getrf`: the model's choice and every alternative.
pub fn predict(
    rt: &Runtime,
    out: &Out,
    spinner: &indicatif::ProgressBar,
    routine: FactorRoutine,
    n: usize,
    dtype: DType,
) -> Result<()> {
    let d = rt.predict_factor(
        routine,
        (n, n),
        dtype,
        MemorySpace::HOST,
        &FactorOptions::default(),
    )?;
    spinner.finish_and_clear();
    let name = match routine {
        FactorRoutine::Potrf(u) => format!("potrf {}", u.as_char()),
        FactorRoutine::Getrf => "getrf".into(),
    };
    let status = rt.profile_status();
    say!(
        out,
        "{}{name} n={n} (A in host memory): {status}",
        dtype.blas_prefix()
    );
    out.set(
        "routine",
        format!(
            "{}{}",
            dtype.blas_prefix(),
            name.split(' ').next().unwrap_or_default()
        ),
    );
    if let FactorRoutine::Potrf(u) = routine {
        out.set("uplo", u.as_char().to_string());
    }
    out.set("n", n);
    out.set("model", status);
    say!(
        out,
        "{:<40} {:>12} {:>6} {:>12} {:>10}",
        "devices",
        "panels",
        "nb",
        "predicted s",
        "GFLOP/s"
    );
    let flops = factor_flops(routine, n, n, dtype);
    let chosen = &d.chosen;
    let mut rows = Vec::new();
    for alt in std::iter::once(chosen).chain(d.alternatives.iter().filter(|x| *x != chosen)) {
        let is_chosen = std::ptr::eq(alt, chosen);
        say!(
            out,
            "{:<40} {:>12} {:>6} {:>12.4} {:>10.1}{}",
            alt.devices.join(","),
            alt.panels,
            alt.nb,
            alt.seconds,
            flops / alt.seconds / 1e9,
            if is_chosen { "  <- chosen" } else { "" }
        );
        rows.push(serde_json::json!({
            "devices": alt.devices,
            "panels": alt.panels,
            "nb": alt.nb,
            "predicted_s": alt.seconds,
            "gflops": flops / alt.seconds / 1e9,
            "chosen": is_chosen,
        }));
    }
    out.set("alternatives", rows);
    say!(
        out,
        "why: the fastest predicted makespan (each candidate's task graph simulated with the \
         calibrated GEMM rates, the panel rates and the link models)"
    );
    Ok(())
}
