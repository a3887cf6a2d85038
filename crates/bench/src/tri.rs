//! The TRSM/TRMM comparison (`compare --routine trsm|trmm`): hetblas with host operands against
//! cuBLASXt's TRSM/TRMM at its best block size, and device-resident cuBLAS (one call on the
//! whole matrix, the ceiling). Side L, lower, N, non-unit; A well conditioned (diagonal of
//! modulus in [1, 2], off-diagonal entries below 1/n); results checked on sampled columns of B
//! in f64 (TRSM by its residual).

use crate::cublasxt::CublasXt;
use crate::{median, par_copy, random_data};
use hetblas::{
    Diag, MatMut, MatRef, Runtime, Scalar, Side, Trans, TriCallOptions, TriOptions, TriProblem,
    TriRoutine, Uplo,
};
use hetblas_core::problem::tri_check::check_tri_lines;
use hetblas_core::scalar::c64;
use hetblas_core::HostAccess;
use std::time::Instant;

/// One measured variant.
#[derive(Debug, Clone)]
pub struct TriRow {
    pub variant: String,
    pub seconds: f64,
    pub tflops: f64,
    pub detail: String,
}

/// What to run.
pub struct TriBench<'a> {
    pub routine: TriRoutine,
    pub n: usize,
    pub reps: usize,
    pub gpus: &'a [usize],
    pub xt: Option<&'a CublasXt>,
    pub xt_blocks: &'a [i32],
    pub tile: Option<usize>,
    pub variants: &'a [String],
}

const OPTS: TriOptions = TriOptions {
    side: Side::Left,
    uplo: Uplo::Lower,
    transa: Trans::N,
    diag: Diag::NonUnit,
};

/// A well-conditioned lower triangular `n x n` matrix (the upper triangle zero).
fn lower<T: Scalar>(n: usize) -> Vec<T> {
    let mut a: Vec<T> = random_data(11, n * n);
    let scale = 1.0 / n.max(1) as f64;
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let cols = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in a.chunks_mut(cols * n).enumerate() {
            s.spawn(move || {
                for (jj, col) in part.chunks_mut(n).enumerate() {
                    let j = c * cols + jj;
                    for (i, x) in col.iter_mut().enumerate() {
                        let v = x.to_c64();
                        *x = T::from_c64(if i == j {
                            let m = v.norm().max(1e-3);
                            v / m * (1.0 + m)
                        } else if i > j {
                            v * scale
                        } else {
                            c64::new(0.0, 0.0)
                        });
                    }
                }
            });
        }
    });
    a
}

fn check<T: Scalar>(
    p: &TriProblem,
    a: &[T],
    b0: &[T],
    b: &[T],
    lines: &[usize],
) -> Result<String, String> {
    let n = p.n;
    let v = |x| MatRef::packed(x, n, n).map_err(|e| e.to_string());
    let (checked, worst) = check_tri_lines(p, T::from_f64(1.0), v(a)?, v(b0)?, v(b)?, lines, 4.0)
        .map_err(|e| format!("check FAILED: {e}"))?;
    Ok(format!("checked {checked} (worst {worst:.2} of bound)"))
}

/// Runs the comparison at one size.
///
/// # Errors
/// Any variant's failure, or a result outside its error bound.
pub fn compare_tri<T: Scalar>(rt: &Runtime, b: &TriBench<'_>) -> Result<Vec<TriRow>, String> {
    let n = b.n;
    let p = TriProblem {
        routine: b.routine,
        opts: OPTS,
        m: n,
        n,
        dtype: T::DTYPE,
    };
    let t0 = Instant::now();
    let a: Vec<T> = lower(n);
    let b0: Vec<T> = random_data(12, n * n);
    let mut bw: Vec<T> = random_data(12, n * n);
    for &g in b.gpus {
        for (buf, access) in [(&a, HostAccess::Read), (&bw, HostAccess::ReadWrite)] {
            rt.devices()[g]
                .prepare_host(buf.as_ptr() as u64, std::mem::size_of_val(&buf[..]), access)
                .map_err(|e| e.to_string())?;
        }
    }
    let name = format!(
        "{}{}",
        T::DTYPE.blas_prefix(),
        b.routine.name().to_lowercase()
    );
    println!(
        "\n== {name} LLNN m=n={n}, {} GPU(s); data ready in {:.1} s",
        b.gpus.len(),
        t0.elapsed().as_secs_f64()
    );
    let want = |v: &str| b.variants.iter().any(|x| x == v);
    let flops = p.flops();
    let mut rows = Vec::new();
    let mut push = |variant: &str, secs: f64, detail: String| {
        let tf = flops / secs / 1e12;
        println!("  {variant:<9} {tf:8.2} TFLOP/s  ({secs:.4} s) {detail}");
        rows.push(TriRow {
            variant: variant.into(),
            seconds: secs,
            tflops: tf,
            detail,
        });
    };
    let lines = [n / 3, n - 1];
    if want("hetblas") {
        let call = TriCallOptions::default()
            .devices(b.gpus.iter().copied())
            .tile(b.tile);
        let mut times = Vec::new();
        let mut last = None;
        for rep in 0..=b.reps {
            par_copy(&mut bw, &b0);
            let t = Instant::now();
            let r = rt
                .tri_with(
                    b.routine,
                    OPTS,
                    T::from_f64(1.0),
                    MatRef::packed(&a, n, n).map_err(|e| e.to_string())?,
                    MatMut::packed(&mut bw, n, n).map_err(|e| e.to_string())?,
                    &call,
                )
                .map_err(|e| e.to_string())?;
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
            last = Some(r);
        }
        let ok = check(&p, &a, &b0, &bw, &lines)?;
        let r = last.unwrap_or_default();
        push(
            "hetblas",
            median(&mut times),
            format!(
                "tile {} on [{}], predicted {:.4} s; {ok}",
                r.tile.unwrap_or(0),
                r.devices.join(","),
                r.predicted_seconds.unwrap_or(f64::NAN)
            ),
        );
    }
    if let (true, Some(xt)) = (want("cublasxt"), b.xt) {
        let trmm = b.routine == TriRoutine::Trmm;
        let mut c: Vec<T> = if trmm {
            random_data(13, n * n)
        } else {
            Vec::new()
        };
        let mut per_block = Vec::new();
        for &blk in b.xt_blocks {
            xt.set_block_dim(blk)?;
            let mut times = Vec::new();
            for rep in 0..=b.reps.min(2) {
                par_copy(&mut bw, &b0);
                let t = Instant::now();
                let cp = if trmm {
                    c.as_mut_ptr()
                } else {
                    bw.as_mut_ptr()
                };
                // SAFETY: A, B and C are n x n host matrices with leading dimension n.
                unsafe {
                    xt.tri_left_lower(
                        trmm,
                        n,
                        n,
                        T::from_f64(1.0),
                        a.as_ptr(),
                        n,
                        bw.as_mut_ptr(),
                        n,
                        cp,
                        n,
                    )
                }?;
                if rep > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            per_block.push((blk, median(&mut times)));
        }
        let &(blk, secs) = per_block
            .iter()
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .ok_or("no cuBLASXt block size")?;
        let got = if trmm { &c } else { &bw };
        let ok = check(&p, &a, &b0, got, &lines[..1])?;
        push(
            "cublasxt",
            secs,
            format!("best block {blk} of {per_block:?}; {ok}"),
        );
    }
    if want("ceiling") {
        // Device-resident cuBLAS: one call on the whole matrix on the first GPU.
        let g = b.gpus[0];
        let da = rt
            .upload(g, MatRef::packed(&a, n, n).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let mut db = rt
            .upload(g, MatRef::packed(&b0, n, n).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let call = TriCallOptions::default().devices([g]).tile(n);
        let mut times = Vec::new();
        for rep in 0..=b.reps {
            let t = Instant::now();
            rt.tri_with(b.routine, OPTS, T::from_f64(1.0), &da, &mut db, &call)
                .map_err(|e| e.to_string())?;
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        push(
            "ceiling",
            median(&mut times),
            "cuBLAS on device-resident A and B (one call)".into(),
        );
    }
    for buf in [&a[..], &bw[..]] {
        rt.release_host(buf).map_err(|e| e.to_string())?;
    }
    Ok(rows)
}
