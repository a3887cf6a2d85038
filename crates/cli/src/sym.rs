//! `hetblas syrk|herk|syr2k|her2k|symm|hemm`: a symmetric/Hermitian routine on random host
//! data, timed, optionally checked; `--tiles` sweeps the diagonal block against the model's.

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

#[derive(Args, Debug)]
pub struct SymArgs {
    /// Order of C for the rank updates (SYRK ... HER2K); columns of C for SYMM/HEMM.
    #[arg(short = 'n', long = "size", default_value_t = 4096)]
    pub n: usize,
    /// Rows of C and B (SYMM/HEMM; default: the size).
    #[arg(short = 'm')]
    pub m: Option<usize>,
    /// Columns of op(A) in the rank updates (default: the size).
    #[arg(short = 'k')]
    pub k: Option<usize>,
    /// Element type: f64, f32, c64 or c32 (HERK, HER2K and HEMM: c64 or c32).
    #[arg(long, default_value = "f64")]
    pub dtype: DType,
    /// The triangle of C (rank updates) or of A (SYMM/HEMM) referenced: U or L.
    #[arg(long, default_value = "L")]
    pub uplo: Uplo,
    /// Rank updates: N (op(A) = A, n x k) or T / C (op(A) = A^T / A^H, A k x n).
    #[arg(long, default_value = "N")]
    pub trans: Trans,
    /// SYMM/HEMM: L (C = alpha A B + beta C) or R (C = alpha B A + beta C).
    #[arg(long, default_value = "L")]
    pub side: Side,
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
    /// Devices to use: indices or labels ("0,1", "cuda:0"); default: hetblas decides.
    #[arg(long)]
    pub devices: Option<String>,
    /// Force the diagonal block size (and the GEMMs' square tile).
    #[arg(long)]
    pub tile: Option<usize>,
    /// Sweep these diagonal block sizes ("2048,4096,8192"), then the model's choice, and
    /// report the model's time against the best of the sweep.
    #[arg(long, value_delimiter = ',')]
    pub tiles: Vec<usize>,
    /// Timed repetitions (after one warm-up call); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Verify the result against an f64-accumulated reference (sampled entries for big sizes;
    /// the untouched triangle bit for bit).
    #[arg(long)]
    pub check: bool,
    /// Seed of the random A, B and C.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl SymArgs {
    /// The routine's operation and problem.
    pub fn problem(&self, routine: Routine) -> SymProblem {
        let (n, k) = (self.n, self.k.unwrap_or(self.n));
        let m = self.m.unwrap_or(n);
        let rank = |two, herm| SymProblem::rank(self.uplo, self.trans, two, herm, n, k, self.dtype);
        let mul = |herm| SymProblem::multiply(self.side, self.uplo, herm, m, n, self.dtype);
        match routine {
            Routine::Syrk => rank(false, false),
            Routine::Herk => rank(false, true),
            Routine::Syr2k => rank(true, false),
            Routine::Her2k => rank(true, true),
            Routine::Symm => mul(false),
            Routine::Hemm => mul(true),
        }
    }
}

pub fn run(rt: &Runtime, routine: Routine, a: SymArgs) -> Result<()> {
    let p = a.problem(routine);
    if !p.op.defined_for(a.dtype) {
        return Err(Error::InvalidInput(format!(
            "{} is defined for complex types only (--dtype c64 or c32)",
            p.op.name()
        )));
    }
    match a.dtype {
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
    let ((ar, ac), (br, bc)) = operand_shapes(p);
    let uses_b = !matches!(p.op, SymOp::Rank { two: false, .. });
    let mut rng = StdRng::seed_from_u64(a.seed);
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
    if let Some(d) = &a.devices {
        opts = opts.devices(crate::cli::parse_devices(rt, d)?);
    }
    let a_ref = MatRef::new(&av, ar, ac, ar.max(1))?;
    let b_ref = if uses_b {
        Some(MatRef::new(&bv, br, bc, br.max(1))?)
    } else {
        None
    };
    // One timed configuration: the median of `reps` calls after a warm-up, C restored before
    // each (beta != 0 reads it).
    let time = |tile: Option<usize>, c: &mut Vec<T>| -> Result<(f64, hetblas::GemmReport)> {
        let opts = opts.clone().tile(tile);
        let mut secs = Vec::new();
        let mut last = None;
        for rep in 0..=a.reps {
            c.copy_from_slice(&c0);
            let cm = MatMut::new(c, p.m, p.n, p.m.max(1))?;
            let start = Instant::now();
            let r = rt.sym_with(p.op, alpha, a_ref, b_ref.map(MatIn::Host), beta, cm, &opts)?;
            if rep > 0 {
                secs.push(start.elapsed().as_secs_f64());
            }
            last = Some(r);
        }
        secs.sort_by(f64::total_cmp);
        let report = last.ok_or_else(|| Error::internal("no repetition ran"))?;
        Ok((secs[secs.len() / 2], report))
    };
    let name = format!(
        "{}{}",
        T::DTYPE.blas_prefix(),
        p.op.name().to_ascii_lowercase()
    );
    let describe = |secs: f64, r: &hetblas::GemmReport, what: &str| {
        println!(
            "{name} m={} n={} k={} {:?} on [{}] block {}{what}: median {secs:.4} s over {} reps, {:.2} GFLOP/s",
            p.m,
            p.n,
            p.k,
            p.op,
            r.devices.join(", "),
            r.tile.map_or(0, |t| t.0),
            a.reps,
            p.flops() / secs / 1e9
        );
    };
    let model = rt.sym_block(p, &GemmOptions::default().tile(a.tile));
    let mut best: Option<(f64, usize)> = None;
    for &t in &a.tiles {
        let (secs, r) = time(Some(t), &mut c)?;
        describe(secs, &r, " (sweep)");
        if best.is_none_or(|(b, _)| secs < b) {
            best = Some((secs, t));
        }
    }
    let (secs, r) = time(Some(model), &mut c)?;
    describe(secs, &r, if a.tile.is_some() { "" } else { " (model)" });
    if let Some((b, t)) = best {
        println!(
            "model block {model}: {:.3}x the best of the sweep (block {t}, {b:.4} s)",
            secs / b
        );
    }
    if a.check {
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
            a.seed,
        )
        .map_err(|e| Error::InvalidInput(format!("check failed: {e}")))?;
        println!("check: passed (worst error/bound {worst:.3})");
    }
    Ok(())
}

/// `hetblas predict --routine ...`: the model's diagonal block and predicted time for the
/// routine of shape `m x n` (C), inner dimension `k`, op(A) per `trans` (lower triangle, left
/// side: the prediction does not depend on them).
pub fn predict(
    rt: &Runtime,
    routine: Routine,
    (m, n, k): (usize, usize, usize),
    dtype: DType,
    trans: Trans,
) -> Result<()> {
    let args = SymArgs {
        n,
        m: Some(m),
        k: Some(k),
        dtype,
        uplo: Uplo::Lower,
        trans,
        side: Side::Left,
        alpha: 1.0,
        alpha_im: 0.0,
        beta: 0.0,
        beta_im: 0.0,
        devices: None,
        tile: None,
        tiles: Vec::new(),
        reps: 1,
        check: false,
        seed: 0,
    };
    let p = args.problem(routine);
    let block = rt.sym_block(&p, &GemmOptions::default());
    match rt.predict_sym(&p) {
        Some(pred) => println!(
            "{:?} m={} n={} k={}: block {block}, predicted {:.4} s on {:?} ({:.2} GFLOP/s)",
            p.op,
            p.m,
            p.n,
            p.k,
            pred.seconds,
            pred.devices,
            p.flops() / pred.seconds / 1e9
        ),
        None => println!(
            "{:?} m={} n={} k={}: block {block}; no time predicted ({})",
            p.op,
            p.m,
            p.n,
            p.k,
            rt.profile_status()
        ),
    }
    let candidates = rt.sym_tile_predictions(&p);
    if !candidates.is_empty() {
        println!("simulated makespan per square tile (every pass):");
        for (t, secs) in candidates {
            match secs {
                Some(s) => println!(
                    "  {t:>6}  {s:.4} s  {:.2} GFLOP/s{}",
                    p.flops() / s / 1e9,
                    if t == block { "  <- chosen" } else { "" }
                ),
                None => println!("  {t:>6}  - (not replayable against the profile)"),
            }
        }
    }
    Ok(())
}
