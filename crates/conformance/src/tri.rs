//! The TRSM and TRMM conformance cases: every side, uplo, transa and diag in S, D, C and Z, on odd
//! shapes cut into several tiles, with leading dimensions above the rows, alpha = 0 (A not
//! read: NaN in A), unit diagonals not read (NaN on the diagonal), the unused triangle never
//! read (NaN there always), device-resident B, and argument errors.
//!
//! A is a well-conditioned random triangular matrix: a diagonal of modulus in [1, 2] (or the
//! unit one) and off-diagonal entries of modulus below 1/order, so `op(A)` is diagonally
//! dominant and its solves are stable. TRSM is checked by its residual, `|op(A) X - alpha B| <=
//! tol (|op(A)| |X| + |alpha| |B|)` per entry, TRMM against the f64-accumulated product; both
//! bounds grow with the order.

use crate::data::{random_scalar, random_vec, rng};
use crate::Target;
use hetblas_core::problem::triangular::{Diag, Side, TriOptions, TriRoutine, Uplo};
use hetblas_core::scalar::{c32, c64, Complex64};
use hetblas_core::{MatMut, MatRef, Scalar, Trans, TriCallOptions};

/// One triangular call to run and check.
#[derive(Debug, Clone)]
pub struct TriCase {
    pub routine: TriRoutine,
    pub opts: TriOptions,
    pub m: usize,
    pub n: usize,
    pub alpha: Complex64,
    /// Extra leading dimension of A and B beyond their rows.
    pub pad: (usize, usize),
    pub tile: Option<usize>,
    pub devices: Option<Vec<usize>>,
    /// B on `Target::homes[i]`.
    pub b_home: Option<usize>,
    pub seed: u64,
}

/// The stored A (`k x k`, ld `lda`): the `uplo` triangle random and well conditioned, the
/// other triangle NaN, the diagonal NaN when unit.
pub fn triangular<T: Scalar>(opts: &TriOptions, k: usize, lda: usize, seed: u64) -> Vec<T> {
    let mut r = rng(seed);
    let vals: Vec<T> = random_vec(&mut r, lda * k.max(1));
    let scale = 1.0 / k.max(1) as f64;
    let nan = T::from_f64(f64::NAN);
    let mut a = vec![nan; lda * k.max(1)];
    for j in 0..k {
        for i in 0..k {
            let v = vals[i + j * lda];
            let stored = match opts.uplo {
                Uplo::Lower => i >= j,
                Uplo::Upper => i <= j,
            };
            a[i + j * lda] = if i == j {
                match opts.diag {
                    Diag::Unit => nan,
                    // Modulus in [1, 2], sign (or phase) random.
                    Diag::NonUnit => {
                        let z = v.to_c64();
                        let m = z.norm().max(1e-3);
                        T::from_c64(z / m * (1.0 + m))
                    }
                }
            } else if stored {
                T::from_c64(v.to_c64() * scale)
            } else {
                nan
            };
        }
    }
    a
}

/// `op(A)(i, l)` as the routine uses it (the unit diagonal as 1, the other triangle as 0).
fn op_a(opts: &TriOptions, a: &[c64], lda: usize, i: usize, l: usize) -> c64 {
    let (r, c) = if opts.transa.is_transposed() {
        (l, i)
    } else {
        (i, l)
    };
    if r == c && opts.diag == Diag::Unit {
        return c64::new(1.0, 0.0);
    }
    let stored = match opts.uplo {
        Uplo::Lower => r >= c,
        Uplo::Upper => r <= c,
    };
    if !stored {
        return c64::new(0.0, 0.0);
    }
    let v = a[r + c * lda];
    if opts.transa == Trans::C {
        v.conj()
    } else {
        v
    }
}

/// `op(A) * X` (left) or `X * op(A)` (right), entry (i, j), with the sum of the absolute terms.
fn product(
    opts: &TriOptions,
    (a, lda): (&[c64], usize),
    (x, ldx): (&[c64], usize),
    (m, n): (usize, usize),
    (i, j): (usize, usize),
) -> (c64, f64) {
    let mut s = c64::new(0.0, 0.0);
    let mut abs = 0.0;
    match opts.side {
        Side::Left => {
            for l in 0..m {
                let t = op_a(opts, a, lda, i, l) * x[l + j * ldx];
                s += t;
                abs += t.norm();
            }
        }
        Side::Right => {
            for l in 0..n {
                let t = x[i + l * ldx] * op_a(opts, a, lda, l, j);
                s += t;
                abs += t.norm();
            }
        }
    }
    (s, abs)
}

fn widen<T: Scalar>(v: &[T]) -> Vec<c64> {
    v.iter()
        .map(|x| {
            if x.is_nan() {
                c64::new(0.0, 0.0)
            } else {
                x.to_c64()
            }
        })
        .collect()
}

/// Runs the case on `t` and checks it; `Err` says what was wrong.
pub fn run_tri<T: Scalar>(t: &Target, case: &TriCase) -> Result<(), String> {
    let (m, n) = (case.m, case.n);
    let k = if case.opts.side == Side::Left { m } else { n };
    let (lda, ldb) = (k.max(1) + case.pad.0, m.max(1) + case.pad.1);
    let a: Vec<T> = triangular(&case.opts, k, lda, case.seed);
    let b0: Vec<T> = random_vec(&mut rng(case.seed + 1), ldb * n.max(1));
    let mut b = b0.clone();
    let alpha = T::from_c64(case.alpha);
    let call = TriCallOptions::default()
        .tile(case.tile)
        .device_list(case.devices.clone());
    let av = MatRef::new(&a, k, k, lda).map_err(|e| e.to_string())?;
    let pool = &t.pool;
    let res = match case.b_home {
        None => {
            let bv = MatMut::new(&mut b, m, n, ldb).map_err(|e| e.to_string())?;
            pool.tri_with(case.routine, case.opts, alpha, av, bv, &call)
        }
        Some(h) => {
            let bh = MatRef::new(&b0, m, n, ldb).map_err(|e| e.to_string())?;
            let mut dm = pool.upload(t.homes[h], bh).map_err(|e| e.to_string())?;
            let r = pool.tri_with(case.routine, case.opts, alpha, av, &mut dm, &call);
            let bv = MatMut::new(&mut b, m, n, ldb).map_err(|e| e.to_string())?;
            pool.download(&dm, bv).map_err(|e| e.to_string())?;
            r
        }
    };
    res.map_err(|e| format!("{case:?}: {e}"))?;
    check_tri(case, &a, lda, &b0, &b, ldb, alpha.to_c64())
        .map_err(|e| format!("{} {:?} {e}", T::DTYPE, case))
}

/// Checks `got` (B after the call) against the problem `a`, `b0`.
pub fn check_tri<T: Scalar>(
    case: &TriCase,
    a: &[T],
    lda: usize,
    b0: &[T],
    got: &[T],
    ldb: usize,
    alpha: c64,
) -> Result<(), String> {
    let (m, n) = (case.m, case.n);
    let k = if case.opts.side == Side::Left { m } else { n };
    let u = T::DTYPE.unit_roundoff();
    let bound = 4.0 * (k as f64 + 2.0) * u;
    // Padding rows of B are never written.
    for j in 0..n {
        for i in m..ldb {
            let (g, o) = (got[i + j * ldb], b0[i + j * ldb]);
            if g.to_c64() != o.to_c64() {
                return Err(format!("padding B({i},{j}) changed"));
            }
        }
    }
    if alpha == c64::new(0.0, 0.0) {
        for j in 0..n {
            for i in 0..m {
                if got[i + j * ldb].to_c64() != c64::new(0.0, 0.0) {
                    return Err(format!("alpha = 0 but B({i},{j}) = {}", got[i + j * ldb]));
                }
            }
        }
        return Ok(());
    }
    let aw = widen(a);
    let bw = widen(b0);
    let gw = widen(got);
    for j in 0..n {
        for i in 0..m {
            let g = got[i + j * ldb];
            if g.is_nan() {
                return Err(format!("B({i},{j}) is NaN (a NaN of A was read)"));
            }
            let (want, scale, have) = match case.routine {
                TriRoutine::Trsm => {
                    let (ax, abs) = product(&case.opts, (&aw, lda), (&gw, ldb), (m, n), (i, j));
                    let rhs = alpha * bw[i + j * ldb];
                    (rhs, abs + rhs.norm(), ax)
                }
                TriRoutine::Trmm => {
                    let (ab, abs) = product(&case.opts, (&aw, lda), (&bw, ldb), (m, n), (i, j));
                    (alpha * ab, alpha.norm() * abs, gw[i + j * ldb])
                }
            };
            let err = (have - want).norm();
            if err > bound * scale.max(f64::MIN_POSITIVE) {
                return Err(format!(
                    "entry ({i},{j}): got {have}, want {want}, error {err:e} > {:e}",
                    bound * scale
                ));
            }
        }
    }
    Ok(())
}

/// Every (side, uplo, transa, diag), for real dtypes `N` and `T`, for complex ones `C` too.
pub fn all_options(complex: bool) -> Vec<TriOptions> {
    let mut v = Vec::new();
    let trans: &[Trans] = if complex {
        &[Trans::N, Trans::T, Trans::C]
    } else {
        &[Trans::N, Trans::T]
    };
    for side in [Side::Left, Side::Right] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for &transa in trans {
                for diag in [Diag::NonUnit, Diag::Unit] {
                    v.push(TriOptions {
                        side,
                        uplo,
                        transa,
                        diag,
                    });
                }
            }
        }
    }
    v
}

fn base(routine: TriRoutine, opts: TriOptions, m: usize, n: usize, seed: u64) -> TriCase {
    TriCase {
        routine,
        opts,
        m,
        n,
        alpha: c64::new(1.0, 0.0),
        pad: (0, 0),
        tile: None,
        devices: None,
        b_home: None,
        seed,
    }
}

/// Every option combination of both routines on shapes cut into several edge tiles.
fn all_combinations<T: Scalar>(t: &Target) -> Result<(), String> {
    let tile = t.small_tile;
    let (m, n) = (2 * tile + 5, tile + 3);
    let mut r = rng(7);
    let mut seed = 100;
    for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
        for opts in all_options(T::DTYPE.is_complex()) {
            seed += 1;
            let mut c = base(routine, opts, m, n, seed);
            c.tile = Some(tile);
            c.alpha = c64::new(random_scalar(&mut r), 0.5 * random_scalar(&mut r));
            c.pad = (3, 2);
            run_tri::<T>(t, &c)?;
        }
    }
    Ok(())
}

pub fn tri_all_combinations_f64(t: &Target) -> Result<(), String> {
    all_combinations::<f64>(t)
}
pub fn tri_all_combinations_f32(t: &Target) -> Result<(), String> {
    all_combinations::<f32>(t)
}
pub fn tri_all_combinations_c32(t: &Target) -> Result<(), String> {
    all_combinations::<c32>(t)
}
pub fn tri_all_combinations_c64(t: &Target) -> Result<(), String> {
    all_combinations::<c64>(t)
}

/// alpha = 0: B becomes 0 and A (all NaN) is not read; NaN in B is overwritten.
pub fn tri_alpha_zero_reads_no_a(t: &Target) -> Result<(), String> {
    for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
        let opts = all_options(false)[0];
        let (m, n) = (13, 9);
        let a = vec![f64::NAN; m * m];
        let mut b = vec![f64::NAN; m * n];
        let av = MatRef::new(&a, m, m, m).map_err(|e| e.to_string())?;
        let bv = MatMut::new(&mut b, m, n, m).map_err(|e| e.to_string())?;
        t.pool
            .tri_with(routine, opts, 0.0, av, bv, &TriCallOptions::default())
            .map_err(|e| e.to_string())?;
        if b.iter().any(|&x| x != 0.0) {
            return Err(format!("{routine:?}: alpha = 0 left a non-zero in B"));
        }
    }
    Ok(())
}

/// Odd shapes with the model's own tile choice, skinny and single-line ones included, on
/// every device of the target together and on each alone.
pub fn tri_odd_shapes_default_tile(t: &Target) -> Result<(), String> {
    let mut seed = 500;
    let shapes = [(1, 1), (1, 7), (7, 1), (31, 17), (67, 45), (130, 3)];
    let mut sets = vec![None, Some(t.compute.clone())];
    sets.extend(t.compute.iter().map(|&d| Some(vec![d])));
    for (m, n) in shapes {
        for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
            for opts in [all_options(false)[0], all_options(false)[11]] {
                for devices in &sets {
                    seed += 1;
                    let mut c = base(routine, opts, m, n, seed);
                    c.devices = devices.clone();
                    c.alpha = c64::new(-1.5, 0.0);
                    run_tri::<f64>(t, &c)?;
                }
            }
        }
    }
    Ok(())
}

/// B resident on each home device (A on the host): computed in place there.
pub fn tri_device_resident_b(t: &Target) -> Result<(), String> {
    let tile = t.small_tile;
    for h in 0..t.homes.len() {
        for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
            for opts in [all_options(false)[0], all_options(false)[6]] {
                let mut c = base(routine, opts, 2 * tile + 3, tile + 1, 900 + h as u64);
                c.tile = Some(tile);
                c.b_home = Some(h);
                c.alpha = c64::new(0.75, 0.0);
                run_tri::<f64>(t, &c)?;
            }
        }
    }
    Ok(())
}

/// Argument errors carry the reference's parameter numbers; empty shapes return at once.
pub fn tri_bad_arguments_and_quick_returns(t: &Target) -> Result<(), String> {
    let a = vec![1.0f64; 16];
    let mut b = vec![1.0f64; 16];
    let o = TriCallOptions::default();
    let p = &t.pool;
    // (side, uplo, transa, diag, m, n, lda, ldb, the parameter reported).
    type BadCall = (u8, u8, u8, u8, i64, i64, i64, i64, u32);
    let cases: [BadCall; 8] = [
        (b'X', b'L', b'N', b'N', 2, 2, 2, 2, 1),
        (b'L', b'X', b'N', b'N', 2, 2, 2, 2, 2),
        (b'L', b'L', b'X', b'N', 2, 2, 2, 2, 3),
        (b'L', b'L', b'N', b'X', 2, 2, 2, 2, 4),
        (b'L', b'L', b'N', b'N', -1, 2, 2, 2, 5),
        (b'L', b'L', b'N', b'N', 2, -1, 2, 2, 6),
        (b'L', b'L', b'N', b'N', 4, 2, 3, 4, 9),
        (b'R', b'L', b'N', b'N', 4, 2, 2, 3, 11),
    ];
    for (side, uplo, ta, diag, m, n, lda, ldb, want) in cases {
        for trsm in [true, false] {
            let r = if trsm {
                p.tri_blas(
                    TriRoutine::Trsm,
                    side,
                    uplo,
                    ta,
                    diag,
                    m,
                    n,
                    1.0,
                    &a,
                    lda,
                    &mut b,
                    ldb,
                    &o,
                )
            } else {
                p.tri_blas(
                    TriRoutine::Trmm,
                    side,
                    uplo,
                    ta,
                    diag,
                    m,
                    n,
                    1.0,
                    &a,
                    lda,
                    &mut b,
                    ldb,
                    &o,
                )
            };
            match r {
                Err(e) if e.blas_param() == Some(want) => {}
                other => {
                    return Err(format!(
                        "expected parameter {want} for {:?}: {other:?}",
                        (
                            side as char,
                            uplo as char,
                            ta as char,
                            diag as char,
                            m,
                            n,
                            lda,
                            ldb
                        )
                    ))
                }
            }
        }
    }
    // m = 0 or n = 0: nothing read or written.
    let nan = vec![f64::NAN; 4];
    let mut untouched = vec![7.0f64; 4];
    p.tri_blas(
        TriRoutine::Trsm,
        b'L',
        b'L',
        b'N',
        b'N',
        0,
        2,
        1.0,
        &nan,
        1,
        &mut untouched,
        1,
        &o,
    )
    .map_err(|e| e.to_string())?;
    p.tri_blas(
        TriRoutine::Trmm,
        b'R',
        b'U',
        b'T',
        b'U',
        2,
        0,
        1.0,
        &nan,
        1,
        &mut untouched,
        2,
        &o,
    )
    .map_err(|e| e.to_string())?;
    if untouched.iter().any(|&x| x != 7.0) {
        return Err("an empty call wrote B".into());
    }
    Ok(())
}
