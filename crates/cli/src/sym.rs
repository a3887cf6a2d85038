//! `hetblas syrk|herk|syr2k|her2k|symm|hemm`: a symmetric/Hermitian routine on random host
//! data, timed, optionally checked; `--tiles` sweeps the diagonal block against the model's.

use crate::report::{median, say, Out};
use crate::shape::{ProblemArgs, RunArgs};
use clap::Args;
use hetblas::{DType, Error, GemmOptions, MatIn, MatMut, MatRef, Result, Runtime, Scalar};
use hetblas::{Side, SymOp, SymProblem, Trans, Uplo};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::sym_reference::check_sym_sampled;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

/// Which routine a subcommand runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    Syrk,
    Herk,
    Syr2k,
    Her2k,
    Symm,
    Hemm,
}

impl std::str::FromStr for Routine {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "syrk" => Routine::Syrk,
            "herk" => Routine::Herk,
            "syr2k" => Routine::Syr2k,
            "her2k" => Routine::Her2k,
            "symm" => Routine::Symm,
            "hemm" => Routine::Hemm,
            _ => return Err(format!("unknown routine {s:?}")),
        })
    }
}

impl Routine {
    fn rank(self) -> bool {
        matches!(
            self,
            Routine::Syrk | Routine::Herk | Routine::Syr2k | Routine::Her2k
        )
    }

    fn hermitian(self) -> bool {
        matches!(self, Routine::Herk | Routine::Her2k | Routine::Hemm)
    }

    /// `--dtype`, or the routine's default: c64 where only complex types are defined.
    pub fn dtype(self, given: Option<DType>) -> DType {
        given.unwrap_or(if self.hermitian() {
            DType::C64
        } else {
            DType::F64
        })
    }
}

/// The options of the six routines.
#[derive(Args, Debug)]
pub struct SymArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[command(flatten)]
    pub run: RunArgs,
    /// The triangle of C (rank updates) or of A (SYMM/HEMM) referenced: U or L.
    #[arg(long, default_value = "L")]
    pub uplo: Uplo,
    /// The scalar alpha (real part; HERK's is real).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Imaginary part of alpha (complex types, not HERK).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub alpha_im: f64,
    /// The scalar beta (real part; HERK's and HER2K's are real); 0 never reads C.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta: f64,
    /// Imaginary part of beta (complex SYRK, SYR2K, SYMM, HEMM).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta_im: f64,
    /// Force the diagonal block size (and the GEMMs' square tile).
    #[arg(long)]
    pub tile: Option<usize>,
    /// Sweep these diagonal block sizes ("2048,4096,8192"), then the model's choice, and
    /// report the model's time against the best of the sweep.
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<usize>,
}

/// SYRK, HERK, SYR2K, HER2K: C is n x n, op(A) n x k.
#[derive(Args, Debug)]
pub struct RankArgs {
    #[command(flatten)]
    pub sym: SymArgs,
    /// N (op(A) = A, n x k) or T / C (op(A) = A^T / A^H, A stored k x n).
    #[arg(long, default_value = "N")]
    pub trans: Trans,
}

/// SYMM, HEMM: C and B are m x n, A m x m (side L) or n x n (side R).
#[derive(Args, Debug)]
pub struct MultiplyArgs {
    #[command(flatten)]
    pub sym: SymArgs,
    /// L (C = alpha A B + beta C) or R (C = alpha B A + beta C).
    #[arg(long, default_value = "L")]
    pub side: Side,
}

/// The routine's problem from the command's dimensions: (m, n, k) of the rank updates' n and
/// k (C n x n), or SYMM/HEMM's m and n.
pub fn problem(
    routine: Routine,
    uplo: Uplo,
    trans: Trans,
    side: Side,
    (m, n, k): (usize, usize, usize),
    dtype: DType,
) -> SymProblem {
    let rank = |two, herm| SymProblem::rank(uplo, trans, two, herm, n, k, dtype);
    let mul = |herm| SymProblem::multiply(side, uplo, herm, m, n, dtype);
    match routine {
        Routine::Syrk => rank(false, false),
        Routine::Herk => rank(false, true),
        Routine::Syr2k => rank(true, false),
        Routine::Her2k => rank(true, true),
        Routine::Symm => mul(false),
        Routine::Hemm => mul(true),
    }
}

/// The BLAS name with its options and dimensions: `dsyrk L N n=64 k=32`, `zhemm L U m=8 n=9`.
pub fn describe(p: &SymProblem) -> String {
    let name = format!(
        "{}{}",
        p.dtype.blas_prefix(),
        p.op.name().to_ascii_lowercase()
    );
    match p.op {
        SymOp::Rank { uplo, trans, .. } => format!(
            "{name} {} {} n={} k={}",
            uplo.as_char(),
            trans.as_char(),
            p.n,
            p.k
        ),
        SymOp::Multiply { side, uplo, .. } => format!(
            "{name} {} {} m={} n={}",
            side.as_char(),
            uplo.as_char(),
            p.m,
            p.n
        ),
    }
}

pub fn run_rank(rt: &Runtime, routine: Routine, a: RankArgs) -> Result<()> {
    let what = "C is n x n (give -n or --size; -k is the inner dimension)";
    a.sym.problem.without(&routine.name(), &['m'], what)?;
    let (_, n, k) = a.sym.problem.mnk();
    run(rt, routine, a.sym, a.trans, Side::Left, (n, n, k))
}

pub fn run_multiply(rt: &Runtime, routine: Routine, a: MultiplyArgs) -> Result<()> {
    let what = "C and B are m x n, A m x m (--side L) or n x n (--side R)";
    a.sym.problem.without(&routine.name(), &['k'], what)?;
    let (m, n, _) = a.sym.problem.mnk();
    let k = if a.side == Side::Left { m } else { n };
    run(rt, routine, a.sym, Trans::N, a.side, (m, n, k))
}

impl Routine {
    /// The lower-case name of the subcommand.
    pub fn name(self) -> String {
        format!("{self:?}").to_ascii_lowercase()
    }
}

fn run(
    rt: &Runtime,
    routine: Routine,
    a: SymArgs,
    trans: Trans,
    side: Side,
    mnk: (usize, usize, usize),
) -> Result<()> {
    let dtype = routine.dtype(a.problem.dtype);
    let p = problem(routine, a.uplo, trans, side, mnk, dtype);
    if !p.op.defined_for(dtype) {
        return Err(Error::InvalidInput(format!(
            "{} is defined for complex types only (--dtype c64 or c32)",
            p.op.name()
        )));
    }
    match dtype {
        DType::F64 => run_typed::<f64>(rt, &p, a),
        DType::F32 => run_typed::<f32>(rt, &p, a),
        DType::C64 => run_typed::<c64>(rt, &p, a),
        DType::C32 => run_typed::<c32>(rt, &p, a),
    }
}

fn random<T: Scalar>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| {
            let re = rng.random_range(-1.0..1.0);
            let im = if T::DTYPE.is_complex() {
                rng.random_range(-1.0..1.0)
            } else {
                0.0
            };
            T::from_c64(c64::new(re, im))
        })
        .collect()
}

/// The stored shapes of A and B.
fn operand_shapes(p: &SymProblem) -> ((usize, usize), (usize, usize)) {
    match p.op {
        SymOp::Rank { trans, .. } => {
            let s = trans.stored_shape(p.n, p.k);
            (s, s)
        }
        SymOp::Multiply { .. } => ((p.k, p.k), (p.m, p.n)),
    }
}

fn run_typed<T: Scalar>(rt: &Runtime, p: &SymProblem, a: SymArgs) -> Result<()> {
    let out = Out::new(a.run.json);
    let ((ar, ac), (br, bc)) = operand_shapes(p);
    let uses_b = !matches!(p.op, SymOp::Rank { two: false, .. });
    let mut trace_file = crate::gemm::create_trace(a.run.trace.as_deref())?;
    let mut rng = StdRng::seed_from_u64(a.run.seed);
    let av: Vec<T> = random(&mut rng, ar * ac);
    let bv: Vec<T> = if uses_b {
        random(&mut rng, br * bc)
    } else {
        Vec::new()
    };
    let c0: Vec<T> = random(&mut rng, p.m * p.n);
    let mut c = c0.clone();
    let alpha = T::from_c64(c64::new(a.alpha, a.alpha_im));
    let beta = T::from_c64(c64::new(a.beta, a.beta_im));
    let mut opts = GemmOptions::default();
    if let Some(d) = &a.run.devices {
        opts = opts.devices(crate::cli::parse_devices(rt, d)?);
    }
    let a_ref = MatRef::new(&av, ar, ac, ar.max(1))?;
    let b_ref = if uses_b {
        Some(MatRef::new(&bv, br, bc, br.max(1))?)
    } else {
        None
    };
    // One timed configuration: the median of `reps` calls after a warm-up, C restored before
    // each (beta != 0 reads it); the last one traced when `traced`.
    let calls = (a.tiles.len() as u64 + 1) * (a.run.reps + 1);
    let bar = crate::progress::bar(calls, "calls", a.run.json);
    let time =
        |tile: Option<usize>, traced: bool, c: &mut Vec<T>| -> Result<(f64, hetblas::GemmReport)> {
            let mut secs = Vec::new();
            let mut last = None;
            for rep in 0..=a.run.reps {
                bar.inc(1);
                let opts = opts.clone().tile(tile).trace(traced && rep == a.run.reps);
                c.copy_from_slice(&c0);
                let cm = MatMut::new(c, p.m, p.n, p.m.max(1))?;
                let start = Instant::now();
                let r = rt.sym_with(p.op, alpha, a_ref, b_ref.map(MatIn::Host), beta, cm, &opts)?;
                if rep > 0 {
                    secs.push(start.elapsed().as_secs_f64());
                }
                last = Some(r);
            }
            let report = last.ok_or_else(|| Error::internal("no repetition ran"))?;
            Ok((median(&mut secs), report))
        };
    let name = describe(p);
    let describe = |secs: f64, r: &hetblas::GemmReport, what: &str| {
        say!(
            out,
            "{name} on [{}] block {}{what}: median {secs:.4} s over {} reps, {:.2} GFLOP/s",
            r.devices.join(", "),
            r.tile.map_or(0, |t| t.0),
            a.run.reps,
            p.flops() / secs / 1e9
        );
    };
    let model = rt.sym_block(p, &GemmOptions::default().tile(a.tile));
    let mut best: Option<(f64, usize)> = None;
    let mut sweep = Vec::new();
    for &t in &a.tiles {
        let (secs, r) = time(Some(t), false, &mut c)?;
        bar.suspend(|| describe(secs, &r, " (sweep)"));
        sweep.push(serde_json::json!({ "block": t, "median_s": secs }));
        if best.is_none_or(|(b, _)| secs < b) {
            best = Some((secs, t));
        }
    }
    let (secs, r) = time(Some(model), trace_file.is_some(), &mut c)?;
    bar.finish_and_clear();
    describe(secs, &r, if a.tile.is_some() { "" } else { " (model)" });
    out.set("routine", name.split(' ').next().unwrap_or_default());
    out.set("problem", name.clone());
    out.set("m", p.m);
    out.set("n", p.n);
    out.set("k", p.k);
    out.set("devices", r.devices.clone());
    out.set("block", model);
    out.set("median_s", secs);
    out.set("gflops", p.flops() / secs / 1e9);
    out.set("sweep", sweep);
    if let Some((b, t)) = best {
        say!(
            out,
            "model block {model}: {:.3}x the best of the sweep (block {t}, {b:.4} s)",
            secs / b
        );
    }
    if let (Some(path), Some(file)) = (&a.run.trace, trace_file.as_mut()) {
        match &r.trace {
            Some(tr) => crate::gemm::write_trace(
                &out,
                path,
                file,
                &tr.to_chrome_json(),
                tr.intervals.len(),
            )?,
            None => say!(
                out,
                "trace: none recorded ({} ran as several GEMM calls, which are not traced as \
                 one; `hetblas gemm --trace` traces a GEMM of the same size); {} left empty",
                p.op.name(),
                path.display()
            ),
        }
    }
    if a.run.check {
        let got = MatRef::new(&c, p.m, p.n, p.m.max(1))?;
        let c0v = MatRef::new(&c0, p.m, p.n, p.m.max(1))?;
        let worst = check_sym_sampled(
            p,
            alpha.to_c64(),
            a_ref,
            b_ref,
            beta.to_c64(),
            c0v,
            got,
            4096,
            a.run.seed,
        )
        .map_err(crate::check::failed)?;
        crate::check::passed(&out, "sampled entries", None, worst, &c, "");
    }
    out.finish();
    Ok(())
}

/// `hetblas predict --routine ...`: the model's diagonal block and predicted time for the
/// routine of shape `m x n` (C), inner dimension `k`, op(A) per `trans` (lower triangle, left
/// side: the prediction does not depend on them); `calibrate` the command that would give it
/// a profile to predict times with.
#[allow(clippy::too_many_arguments)] // the report, the problem, and the hint of its refusal
pub fn predict(
    rt: &Runtime,
    out: &Out,
    spinner: &indicatif::ProgressBar,
    routine: Routine,
    mnk: (usize, usize, usize),
    dtype: Option<DType>,
    trans: Trans,
    calibrate: &str,
) -> Result<()> {
    let dtype = routine.dtype(dtype);
    let (m, n, k) = mnk;
    // SYMM/HEMM's A is m x m on the left side.
    let mnk = if routine.rank() { (n, n, k) } else { (m, n, m) };
    let p = problem(routine, Uplo::Lower, trans, Side::Left, mnk, dtype);
    let block = rt.sym_block(&p, &GemmOptions::default());
    let name = describe(&p);
    let prediction = rt.predict_sym(&p);
    let candidates = rt.sym_tile_predictions(&p);
    spinner.finish_and_clear();
    out.set("routine", name.split(' ').next().unwrap_or_default());
    out.set("problem", name.clone());
    out.set("m", p.m);
    out.set("n", p.n);
    out.set("k", p.k);
    out.set("block", block);
    match prediction {
        Some(pred) => {
            let devices: Vec<String> = pred
                .devices
                .iter()
                .filter_map(|&i| rt.devices().get(i).map(|d| d.info().label()))
                .collect();
            say!(
                out,
                "{name}: block {block}, predicted {:.4} s on [{}] ({:.2} GFLOP/s)",
                pred.seconds,
                devices.join(", "),
                p.flops() / pred.seconds / 1e9
            );
            out.set("predicted_s", pred.seconds);
            out.set("devices", devices);
            out.set("gflops", p.flops() / pred.seconds / 1e9);
        }
        None => {
            let why = format!(
                "{}; {calibrate} gives it a profile to predict with",
                rt.profile_status()
            );
            say!(out, "{name}: block {block}; no time predicted ({why})");
            out.set("predicted_s", serde_json::Value::Null);
            out.set("no_prediction", why);
        }
    }
    if !candidates.is_empty() {
        say!(out, "simulated makespan per square tile (every pass):");
    }
    let mut rows = Vec::new();
    for (t, secs) in candidates {
        match secs {
            Some(s) => say!(
                out,
                "  {t:>6}  {s:.4} s  {:.2} GFLOP/s{}",
                p.flops() / s / 1e9,
                if t == block { "  <- chosen" } else { "" }
            ),
            None => say!(out, "  {t:>6}  - (not replayable against the profile)"),
        }
        rows.push(serde_json::json!({ "tile": t, "predicted_s": secs, "chosen": t == block }));
    }
    out.set("candidates", rows);
    Ok(())
}
