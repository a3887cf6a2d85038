//! The factorization tiles (`Kernel::potrf`, `getrf`, `laswp`) on every computing device of a
//! target, called directly on one of its compute queues (these are kernels, below any planner):
//! operands uploaded through the pool (leading dimensions above the rows, the padding and the
//! unreferenced triangle filled with NaN and checked bit for bit afterwards), the op issued, the
//! queue synchronised, `info` read from its cell and the results downloaded.
//!
//! Checks, in S, D, C and Z, on odd orders and n = 0 and 1:
//! - POTRF, both uplo: `||A - L L^H||_1 / (n eps ||A||_1)` (or `U^H U`) below LAPACK's test
//!   threshold of 30, with the product accumulated in f64; `info = 0`; the other triangle and
//!   the padding untouched. A matrix whose leading minor of order `k` is not positive definite
//!   gives `info = k` (LAPACK's value), and so does a NaN pivot in column `k`.
//! - GETRF, tall, square and wide panels: `||P A - L U||_1 / (max(m, n) eps ||A||_1)` below 30;
//!   the pivots in range and never above their row (`ipiv[i] >= i + 1`); the multipliers
//!   bounded (`|l| <= 1`, `sqrt 2` for complex dtypes, whose pivots maximise `|re| + |im|`).
//!   Exactly singular panels (zero columns) give LAPACK's `info`, the first zero column, with a
//!   finite, complete factorization.
//! - The pivots are LAPACK's: on matrices whose pivots are decided by margins far above
//!   rounding (a dominant entry per column in a random row), and on an exact tie (the first
//!   row wins), the `ipiv` of the reference algorithm exactly; on random matrices, the reference
//!   LU's (computed in f64 from the same data) up to the first column where two candidates are
//!   within rounding of each other (a legitimate difference between two correct LUs, which
//!   changes every later pivot too).
//! - LASWP: bit-exact against the interchanges done on the host, for every range `k1..=k2`
//!   (empty included), with pivots above and below their row, on tiles of a few rows and of
//!   more than a thousand (several rounds of the CUDA kernel); with a panel's own pivots right
//!   after its GETRF on the same queue; and with pivots copied to another device over the
//!   link between them (or through the host when there is none).
//! - Malformed tiles are refused before anything is issued.

use crate::data::{random_vec, rng};
use crate::{required, Target};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::sym_reference::same_bits;
use hetblas_core::{
    Device, DeviceMatrix, FactorOp, GetrfTile, InfoCell, LaswpTile, MatMut, MatOut, MatRef,
    PotrfTile, Queue, RawPivots, RawTile, Scalar, Uplo,
};
use std::sync::Arc;

/// LAPACK's test threshold for the scaled residuals (`THRESH` of its test programs).
const THRESH: f64 = 30.0;

type Case = Result<(), String>;

/// A computing device of the target, with its first compute queue.
struct On<'a> {
    t: &'a Target,
    idx: usize,
    device: &'a Arc<dyn Device>,
    queue: Arc<dyn Queue>,
}

impl On<'_> {
    fn label(&self) -> String {
        self.device.info().label()
    }

    /// `host` (`ld x cols`, column major) copied to the device whole.
    fn upload<T: Scalar>(
        &self,
        host: &[T],
        ld: usize,
        cols: usize,
    ) -> Result<DeviceMatrix<T>, String> {
        let v = MatRef::new(host, ld, cols, ld.max(1)).map_err(|e| e.to_string())?;
        self.t
            .pool
            .upload(self.idx, v)
            .map_err(|e| format!("upload to {}: {e}", self.label()))
    }

    fn download<T: Scalar>(&self, m: &DeviceMatrix<T>) -> Result<Vec<T>, String> {
        let mut out = vec![T::default(); m.rows() * m.cols()];
        let v = MatMut::new(&mut out, m.rows(), m.cols(), m.rows().max(1))
            .map_err(|e| e.to_string())?;
        self.t
            .pool
            .download(m, v)
            .map_err(|e| format!("download from {}: {e}", self.label()))?;
        Ok(out)
    }

    /// `len` pivots on the device: a `len x 1` f32 matrix holding the `i32`s' bytes (the
    /// pivots' tile form, [`RawPivots::as_tile`]), set from `host` or left as allocated.
    fn pivots(
        &self,
        host: Option<&[i32]>,
        len: usize,
    ) -> Result<(DeviceMatrix<f32>, RawPivots), String> {
        let m = match host {
            Some(p) => {
                let bits: Vec<f32> = p.iter().map(|&x| f32::from_bits(x as u32)).collect();
                self.upload(&bits, len, 1)?
            }
            None => self
                .t
                .pool
                .alloc_matrix::<f32>(self.idx, len, 1)
                .map_err(|e| e.to_string())?,
        };
        let raw = m.raw();
        let p = RawPivots {
            space: raw.space,
            addr: raw.addr,
            len,
        };
        Ok((m, p))
    }

    fn download_pivots(&self, m: &DeviceMatrix<f32>) -> Result<Vec<i32>, String> {
        Ok(self
            .download(m)?
            .iter()
            .map(|x| x.to_bits() as i32)
            .collect())
    }

    fn sync(&self, what: &str) -> Case {
        self.queue
            .synchronize()
            .map_err(|e| format!("{what} on {}: {e}", self.label()))
    }
}

/// Whether the pool-level cases of `op` in `dtype` skip this target: none of its computing
/// devices can update the factorization (the pool's condition: the op, TRSM, and SYRK for
/// POTRF or LASWP for GETRF; a GPU backend without symmetric kernels, like HIP without
/// rocBLAS's or the test runtime, leaves POTRF to other devices). An error instead when
/// `HETBLAS_REQUIRE` names the backend, or for the CPU and emulated devices, which always can.
fn pool_skips(t: &Target, op: FactorOp, dtype: hetblas_core::DType) -> Result<bool, String> {
    let devices = t.pool.devices();
    if t.compute
        .iter()
        .any(|&i| t.pool.updates_factor(i, op, dtype))
    {
        return Ok(false);
    }
    let why = format!("no device of {} updates a {dtype} {}", t.name, op.name());
    let must = t.compute.iter().any(|&i| {
        let backend = &devices[i].info().backend;
        required(backend) || matches!(backend.as_str(), "cpu" | "emulated")
    });
    if must {
        return Err(why);
    }
    eprintln!("SKIPPED ({why})");
    Ok(true)
}

/// Runs `case` on every computing device of the target that supports `op` in `dtype`. A GPU
/// backend without the op skips it, unless `HETBLAS_REQUIRE` names the backend; the CPU and
/// emulated devices always have it.
fn each_device(
    t: &Target,
    op: FactorOp,
    dtype: hetblas_core::DType,
    case: &mut dyn FnMut(&On<'_>) -> Case,
) -> Case {
    for &idx in &t.compute {
        let device = &t.pool.devices()[idx];
        let backend = device.info().backend.clone();
        if !device.kernel().supports_factor(op, dtype) {
            let why = format!("{} has no {} {}", device.info().label(), dtype, op.name());
            if required(&backend) || matches!(backend.as_str(), "cpu" | "emulated") {
                return Err(why);
            }
            eprintln!("SKIPPED ({why})");
            continue;
        }
        let queue = device
            .compute_queues()
            .first()
            .cloned()
            .ok_or("a computing device without a compute queue")?;
        case(&On {
            t,
            idx,
            device,
            queue,
        })?;
    }
    Ok(())
}

/// The scalar types, for cases written once.
macro_rules! every_dtype {
    ($f:ident, $($arg:expr),*) => {{
        $f::<f32>($($arg),*)?;
        $f::<f64>($($arg),*)?;
        $f::<c32>($($arg),*)?;
        $f::<c64>($($arg),*)
    }};
}

fn eps<T: Scalar>() -> f64 {
    match T::DTYPE.real() {
        hetblas_core::DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    }
}

fn nan<T: Scalar>() -> T {
    T::from_f64(f64::NAN)
}

/// `|re| + |im|`, the pivot size of LAPACK's `i?amax`.
fn abs1(z: c64) -> f64 {
    z.re.abs() + z.im.abs()
}

/// The 1-norm (largest column sum of moduli) of a column-major `rows x cols` c64 matrix.
fn norm1(a: &[c64], rows: usize, cols: usize) -> f64 {
    (0..cols)
        .map(|j| (0..rows).map(|i| a[i + j * rows].norm()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Every entry outside the `rows x cols` block of an `ld x cols` array, and inside it where
/// `keep(i, j)`, unchanged bit for bit.
fn untouched<T: Scalar>(
    before: &[T],
    after: &[T],
    rows: usize,
    ld: usize,
    keep: impl Fn(usize, usize) -> bool,
) -> Case {
    for (k, (x, y)) in before.iter().zip(after).enumerate() {
        let (i, j) = (k % ld.max(1), k / ld.max(1));
        if (i >= rows || keep(i, j)) && !same_bits(x, y) {
            return Err(format!("entry ({i}, {j}) changed: {x} -> {y}"));
        }
    }
    Ok(())
}

// POTRF

/// A Hermitian positive definite `n x n` matrix in an `ld x n` array: `B B^H / n + I` with `B`
/// random, rounded to `T` (its diagonal exactly real), the `uplo` triangle stored, NaN in the
/// other triangle and the padding.
fn hpd<T: Scalar>(uplo: Uplo, n: usize, ld: usize, seed: u64) -> Vec<T> {
    let b: Vec<T> = random_vec(&mut rng(seed), n * n);
    let mut a = vec![nan::<T>(); ld * n.max(1)];
    for j in 0..n {
        for i in 0..n {
            if !uplo.contains(i, j) {
                continue;
            }
            let mut s = c64::new(0.0, 0.0);
            for l in 0..n {
                s += b[i + l * n].to_c64() * b[j + l * n].to_c64().conj();
            }
            s /= n as f64;
            if i == j {
                s = c64::new(s.re + 1.0, 0.0);
            }
            a[i + j * ld] = T::from_c64(s);
        }
    }
    a
}

/// The full Hermitian matrix of a stored triangle, in c64.
fn hermitian<T: Scalar>(a: &[T], uplo: Uplo, n: usize, ld: usize) -> Vec<c64> {
    let mut full = vec![c64::new(0.0, 0.0); n * n];
    for j in 0..n {
        for i in 0..n {
            let (si, sj, conj) = if uplo.contains(i, j) {
                (i, j, false)
            } else {
                (j, i, true)
            };
            let x = a[si + sj * ld].to_c64();
            full[i + j * n] = if i == j {
                c64::new(x.re, 0.0)
            } else if conj {
                x.conj()
            } else {
                x
            };
        }
    }
    full
}

/// `||A - L L^H||_1 / (n eps ||A||_1)` (`U^H U` for the upper triangle) of a factor in `f`.
fn cholesky_residual<T: Scalar>(a0: &[T], f: &[T], uplo: Uplo, n: usize, ld: usize) -> f64 {
    let a = hermitian(a0, uplo, n, ld);
    // L (n x n, lower) from the factor; the upper factor is U = L^H.
    let l = |i: usize, j: usize| -> c64 {
        match uplo {
            Uplo::Lower if i >= j => f[i + j * ld].to_c64(),
            Uplo::Upper if i >= j => f[j + i * ld].to_c64().conj(),
            _ => c64::new(0.0, 0.0),
        }
    };
    let mut r = vec![c64::new(0.0, 0.0); n * n];
    for j in 0..n {
        for i in 0..n {
            let mut s = c64::new(0.0, 0.0);
            for k in 0..=i.min(j) {
                s += l(i, k) * l(j, k).conj();
            }
            r[i + j * n] = a[i + j * n] - s;
        }
    }
    norm1(&r, n, n) / (n.max(1) as f64 * eps::<T>() * norm1(&a, n, n).max(f64::MIN_POSITIVE))
}

/// Factors `a` (`n x n` in an `ld x n` array) on the device; the factor and `info`.
fn run_potrf<T: Scalar>(
    on: &On<'_>,
    uplo: Uplo,
    a: &[T],
    n: usize,
    ld: usize,
) -> Result<(Vec<T>, i64), String> {
    let dm = on.upload(a, ld, n)?;
    let tile = RawTile {
        rows: n,
        ..dm.raw()
    };
    let op = PotrfTile { uplo, a: tile };
    let info = InfoCell::new();
    // SAFETY: the tile is the device matrix just uploaded (the device's own memory, alive
    // until it is dropped below, after the queue is synchronised), used by nothing else.
    unsafe { on.device.kernel().potrf(&on.queue, &op, &info) }
        .map_err(|e| format!("potrf on {}: {e}", on.label()))?;
    on.sync("potrf")?;
    let info = info
        .get()
        .ok_or("potrf: info still pending after the queue synchronised")?;
    Ok((on.download(&dm)?, info))
}

fn potrf_every_uplo<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Potrf, T::DTYPE, &mut |on| {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for (n, pad) in [
                (0, 0),
                (1, 0),
                (1, 2),
                (2, 1),
                (5, 0),
                (17, 3),
                (33, 1),
                (70, 5),
            ] {
                let ld = n.max(1) + pad;
                let a = hpd::<T>(uplo, n, ld, 7 + n as u64);
                let (f, info) = run_potrf(on, uplo, &a, n, ld)?;
                let what = || {
                    format!(
                        "{}potrf {uplo:?} n={n} ld={ld} on {}",
                        T::DTYPE.blas_prefix(),
                        on.label()
                    )
                };
                if info != 0 {
                    return Err(format!("{}: info = {info}", what()));
                }
                untouched(&a, &f, n, ld, |i, j| !uplo.contains(i, j))
                    .map_err(|e| format!("{}: outside the triangle: {e}", what()))?;
                let r = cholesky_residual(&a, &f, uplo, n, ld);
                if r.is_nan() || r > THRESH {
                    return Err(format!("{}: residual {r:.2} > {THRESH}", what()));
                }
            }
        }
        Ok(())
    })
}

/// Every uplo, S/D/C/Z, odd orders, ld above n, n = 0 and 1.
pub fn factor_potrf_every_uplo(t: &Target) -> Case {
    every_dtype!(potrf_every_uplo, t)
}

fn potrf_not_positive_definite<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Potrf, T::DTYPE, &mut |on| {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let (n, ld) = (23, 25);
            for k in [1, 12, 23] {
                let mut a = hpd::<T>(uplo, n, ld, 40 + k as u64);
                // The order-k pivot becomes -1 - |l|^2 < 0; the minors before it are unchanged.
                a[(k - 1) * (ld + 1)] = T::from_f64(-1.0);
                let (_, info) = run_potrf(on, uplo, &a, n, ld)?;
                if info != k as i64 {
                    return Err(format!(
                        "{}potrf {uplo:?}: the minor of order {k} is not positive definite, info = {info} on {}",
                        T::DTYPE.blas_prefix(),
                        on.label()
                    ));
                }
            }
        }
        Ok(())
    })
}

/// Not positive definite at a chosen order (first, middle, last).
pub fn factor_potrf_not_positive_definite(t: &Target) -> Case {
    every_dtype!(potrf_not_positive_definite, t)
}

fn potrf_nan_pivot<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Potrf, T::DTYPE, &mut |on| {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let mut a = hpd::<T>(uplo, 4, 4, 9);
            a[2 * 5] = nan();
            let (_, info) = run_potrf(on, uplo, &a, 4, 4)?;
            if info != 3 {
                return Err(format!(
                    "{}potrf {uplo:?} with a NaN pivot 3: info = {info} on {}",
                    T::DTYPE.blas_prefix(),
                    on.label()
                ));
            }
        }
        Ok(())
    })
}

/// A NaN pivot stops the factorization there, as LAPACK's `AJJ <= 0 or NaN` test does.
pub fn factor_potrf_nan_pivot(t: &Target) -> Case {
    every_dtype!(potrf_nan_pivot, t)
}

// GETRF

/// Factors the `m x n` panel in an `ld x n` array on the device; the factors, pivots, `info`.
fn run_getrf<T: Scalar>(
    on: &On<'_>,
    a: &[T],
    m: usize,
    n: usize,
    ld: usize,
) -> Result<(Vec<T>, Vec<i32>, i64), String> {
    let dm = on.upload(a, ld, n)?;
    let k = m.min(n);
    let (pm, ipiv) = on.pivots(None, k)?;
    let op = GetrfTile {
        a: RawTile {
            rows: m,
            ..dm.raw()
        },
        ipiv,
    };
    let info = InfoCell::new();
    // SAFETY: panel and pivots are two device matrices just made (the device's own memory,
    // apart, alive until dropped after the queue is synchronised), used by nothing else.
    unsafe { on.device.kernel().getrf(&on.queue, &op, &info) }
        .map_err(|e| format!("getrf on {}: {e}", on.label()))?;
    on.sync("getrf")?;
    let info = info
        .get()
        .ok_or("getrf: info still pending after the queue synchronised")?;
    Ok((on.download(&dm)?, on.download_pivots(&pm)?, info))
}

/// Applies LAPACK interchanges `ipiv` (1-based, in order) to the rows of a column-major array.
fn swap_rows<T: Copy>(a: &mut [T], ld: usize, cols: usize, ipiv: &[i32], k1: usize, k2: usize) {
    for j in 0..cols {
        for i in k1..=k2 {
            let p = ipiv[i - 1] as usize;
            a.swap(i - 1 + j * ld, p - 1 + j * ld);
        }
    }
}

/// Checks a GETRF result: pivots in range, multipliers bounded, `||P A - L U||` small. The
/// factorization must be complete and finite (also when `info > 0`).
fn check_lu<T: Scalar>(a0: &[T], f: &[T], ipiv: &[i32], m: usize, n: usize, ld: usize) -> Case {
    let k = m.min(n);
    for (i, &p) in ipiv.iter().enumerate() {
        if p < i as i32 + 1 || p as usize > m {
            return Err(format!("ipiv[{i}] = {p} outside {}..={m}", i + 1));
        }
    }
    let bound = if T::DTYPE.is_complex() {
        2f64.sqrt()
    } else {
        1.0
    } * (1.0 + 8.0 * eps::<T>());
    let mut pa: Vec<c64> = a0.iter().map(|x| x.to_c64()).collect();
    swap_rows(&mut pa, ld, n, ipiv, 1, k);
    let mut r = vec![c64::new(0.0, 0.0); m * n];
    let mut a = vec![c64::new(0.0, 0.0); m * n];
    for j in 0..n {
        for i in 0..m {
            let x = f[i + j * ld].to_c64();
            if !(x.re.is_finite() && x.im.is_finite()) {
                return Err(format!("factor entry ({i}, {j}) = {x}"));
            }
            if i > j && x.norm() > bound {
                return Err(format!("multiplier L({i}, {j}) = {x} above {bound}"));
            }
            let mut s = c64::new(0.0, 0.0);
            for l in 0..=i.min(j).min(k - 1) {
                let lv = if l == i {
                    c64::new(1.0, 0.0)
                } else {
                    f[i + l * ld].to_c64()
                };
                s += lv * f[l + j * ld].to_c64();
            }
            a[i + j * m] = pa[i + j * ld];
            r[i + j * m] = pa[i + j * ld] - s;
        }
    }
    let ratio = norm1(&r, m, n)
        / (m.max(n).max(1) as f64 * eps::<T>() * norm1(&a, m, n).max(f64::MIN_POSITIVE));
    if ratio.is_nan() || ratio > THRESH {
        return Err(format!("||P A - L U|| ratio {ratio:.2} > {THRESH}"));
    }
    Ok(())
}

/// Panels, square and wide tiles (and empty and 1 x 1 ones) for the LU cases.
const PANELS: [(usize, usize, usize); 11] = [
    (0, 0, 0),
    (0, 3, 1),
    (4, 0, 0),
    (1, 1, 0),
    (1, 4, 2),
    (4, 1, 3),
    (5, 5, 0),
    (17, 5, 2),
    (33, 8, 1),
    (71, 16, 3),
    (3, 7, 0),
];

fn getrf_panels<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Getrf, T::DTYPE, &mut |on| {
        for (m, n, pad) in PANELS {
            let ld = m.max(1) + pad;
            let mut a: Vec<T> = random_vec(&mut rng(100 + (m * 31 + n) as u64), ld * n.max(1));
            for j in 0..n {
                for i in m..ld {
                    a[i + j * ld] = nan();
                }
            }
            let (f, ipiv, info) = run_getrf(on, &a, m, n, ld)?;
            let what = || {
                format!(
                    "{}getrf {m}x{n} ld={ld} on {}",
                    T::DTYPE.blas_prefix(),
                    on.label()
                )
            };
            if info != 0 {
                return Err(format!("{}: info = {info}", what()));
            }
            untouched(&a, &f, m, ld, |_, _| false)
                .map_err(|e| format!("{}: padding: {e}", what()))?;
            check_lu(&a, &f, &ipiv, m, n, ld).map_err(|e| format!("{}: {e}", what()))?;
        }
        Ok(())
    })
}

/// Tall, square and wide panels, S/D/C/Z, ld above m, empty and 1 x 1 ones.
pub fn factor_getrf_panels(t: &Target) -> Case {
    every_dtype!(getrf_panels, t)
}

/// The reference LU of `a` (`m x n`, ld `ld`) in c64: partial pivoting on `|re| + |im|`, the
/// first largest on a tie, as LAPACK. Returns the pivots and, per column, the two largest
/// candidate sizes `(chosen, runner_up)` (how decisive each choice was).
fn reference_pivots<T: Scalar>(
    a0: &[T],
    m: usize,
    n: usize,
    ld: usize,
) -> (Vec<i32>, Vec<(f64, f64)>) {
    let mut a: Vec<c64> = (0..n)
        .flat_map(|j| (0..m).map(move |i| (i, j)))
        .map(|(i, j)| a0[i + j * ld].to_c64())
        .collect();
    let k = m.min(n);
    let (mut ipiv, mut margins) = (Vec::with_capacity(k), Vec::with_capacity(k));
    for j in 0..k {
        let mut order: Vec<usize> = (j..m).collect();
        // Stable: equal sizes keep the first row first.
        order.sort_by(|&x, &y| abs1(a[y + j * m]).total_cmp(&abs1(a[x + j * m])));
        let p = order[0];
        let runner = order.get(1).map_or(0.0, |&q| abs1(a[q + j * m]));
        ipiv.push(p as i32 + 1);
        margins.push((abs1(a[p + j * m]), runner));
        for c in 0..n {
            a.swap(j + c * m, p + c * m);
        }
        let piv = a[j + j * m];
        if piv == c64::new(0.0, 0.0) {
            continue;
        }
        for i in j + 1..m {
            a[i + j * m] /= piv;
        }
        for c in j + 1..n {
            let u = a[j + c * m];
            for i in j + 1..m {
                let l = a[i + j * m];
                a[i + c * m] -= l * u;
            }
        }
    }
    (ipiv, margins)
}

/// A tall panel whose pivots rounding cannot change: column `j` has an entry `8 (j + 2)` times
/// larger than the rest (random signs and phases) in row `rows[j]` (distinct rows), so that
/// elimination never overturns it.
fn decided_panel<T: Scalar>(m: usize, n: usize, seed: u64) -> Vec<T> {
    let mut r = rng(seed);
    let mut a: Vec<T> = random_vec::<T>(&mut r, m * n)
        .iter()
        .map(|x| T::from_c64(x.to_c64() * 0.1))
        .collect();
    // Distinct rows from a fixed scramble of 0..m.
    let rows: Vec<usize> = (0..m).map(|i| (i * 7 + seed as usize) % m).collect();
    for j in 0..n {
        let big = a[rows[j] + j * m].to_c64();
        let size = 8.0 * (j + 2) as f64;
        a[rows[j] + j * m] = T::from_c64(big / big.norm() * size * m as f64);
    }
    a
}

fn getrf_pivots_match_lapack<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Getrf, T::DTYPE, &mut |on| {
        let label = |s: &str| format!("{}getrf {s} on {}", T::DTYPE.blas_prefix(), on.label());
        // Decided pivots: exactly the reference's.
        let (m, n) = (37, 9);
        let a = decided_panel::<T>(m, n, 3);
        let (_, ipiv, info) = run_getrf(on, &a, m, n, m)?;
        let (want, _) = reference_pivots(&a, m, n, m);
        if info != 0 || ipiv != want {
            return Err(format!(
                "{}: ipiv {ipiv:?}, LAPACK's {want:?} (info {info})",
                label("decided pivots")
            ));
        }
        // An exact tie in the first column: rows 3 and 6 hold -4 and 4; the first wins.
        let mut a: Vec<T> = random_vec(&mut rng(5), 8 * 3);
        a[2] = T::from_f64(-4.0);
        a[5] = T::from_f64(4.0);
        let (_, ipiv, _) = run_getrf(on, &a, 8, 3, 8)?;
        if ipiv[0] != 3 {
            return Err(format!(
                "{}: a tie between rows 3 and 6 pivoted row {}",
                label("tie"),
                ipiv[0]
            ));
        }
        // Random panels: the reference's pivots up to the first near-tie.
        for (m, n, seed) in [(64, 16, 11u64), (45, 45, 12), (129, 8, 13)] {
            let a: Vec<T> = random_vec(&mut rng(seed), m * n);
            let (_, ipiv, _) = run_getrf(on, &a, m, n, m)?;
            let (want, margins) = reference_pivots(&a, m, n, m);
            for j in 0..ipiv.len() {
                if ipiv[j] == want[j] {
                    continue;
                }
                // Within rounding of the elimination so far: a tie a correct LU may break
                // either way, after which the two factorizations differ.
                let (best, runner) = margins[j];
                if best - runner <= 64.0 * (j + 1) as f64 * eps::<T>() * best {
                    break;
                }
                return Err(format!(
                    "{}: pivot {j} is row {}, LAPACK's row {} ({best} against {runner}: no tie)",
                    label(&format!("{m}x{n}")),
                    ipiv[j],
                    want[j]
                ));
            }
        }
        Ok(())
    })
}

/// LAPACK's pivots: decided ones and an exact tie exactly, random ones up to a near-tie.
pub fn factor_getrf_pivots_match_lapack(t: &Target) -> Case {
    every_dtype!(getrf_pivots_match_lapack, t)
}

fn getrf_exactly_singular<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Getrf, T::DTYPE, &mut |on| {
        // Zero columns stay exactly zero through every update: U(j, j) = 0 for the first one.
        for (m, n, zeros, want) in [
            (12, 5, vec![0], 1),
            (12, 5, vec![2, 4], 3),
            (40, 12, vec![11], 12),
            (6, 6, vec![3, 5], 4),
            (1, 1, vec![0], 1),
        ] {
            let ld = m + 1;
            let mut a: Vec<T> = random_vec(&mut rng(200 + m as u64), ld * n);
            for &z in &zeros {
                (0..m).for_each(|i| a[i + z * ld] = T::default());
            }
            let (f, ipiv, info) = run_getrf(on, &a, m, n, ld)?;
            let what = format!(
                "{}getrf {m}x{n}, zero columns {zeros:?}, on {}",
                T::DTYPE.blas_prefix(),
                on.label()
            );
            if info != want {
                return Err(format!("{what}: info = {info}, LAPACK's {want}"));
            }
            check_lu(&a, &f, &ipiv, m, n, ld).map_err(|e| format!("{what}: {e}"))?;
        }
        Ok(())
    })
}

/// Exactly singular panels: `info` names the first zero pivot; the factorization completes.
pub fn factor_getrf_exactly_singular(t: &Target) -> Case {
    every_dtype!(getrf_exactly_singular, t)
}

// LASWP

/// Applies interchanges `(k1, k2)` of `ipiv` on the device to the `rows x cols` tile held in
/// the `ld x cols` array `a`; returns the whole array afterwards.
fn run_laswp<T: Scalar>(
    on: &On<'_>,
    a: &[T],
    (rows, cols, ld): (usize, usize, usize),
    (k1, k2): (usize, usize),
    ipiv: &[i32],
) -> Result<Vec<T>, String> {
    let dm = on.upload(a, ld, cols)?;
    let (_pm, p) = on.pivots(Some(ipiv), ipiv.len())?;
    let op = LaswpTile {
        a: RawTile { rows, ..dm.raw() },
        k1,
        k2,
        ipiv: p,
    };
    // SAFETY: tile and pivots are device matrices just made (alive until dropped after the
    // synchronisation), apart; every pivot of k1..=k2 is a row of the tile (built so).
    unsafe { on.device.kernel().laswp(&on.queue, &op) }
        .map_err(|e| format!("laswp on {}: {e}", on.label()))?;
    on.sync("laswp")?;
    on.download(&dm)
}

fn laswp_ranges<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Laswp, T::DTYPE, &mut |on| {
        let (rows, ld) = (19, 22);
        let mut r = rng(300);
        // Pivots anywhere in the tile, above and below their own row.
        let ipiv: Vec<i32> = random_vec::<f64>(&mut r, 12)
            .iter()
            .map(|x| ((x.abs() * rows as f64) as i32).clamp(0, rows as i32 - 1) + 1)
            .collect();
        for (cols, k1, k2) in [
            (7, 1, 12),
            (7, 3, 9),
            (1, 12, 12),
            (5, 6, 5),
            (0, 1, 12),
            (33, 1, 1),
        ] {
            let a: Vec<T> = random_vec(&mut rng(301 + cols as u64), ld * cols.max(1));
            let a = &a[..ld * cols];
            let got = run_laswp(on, a, (rows, cols, ld), (k1, k2), &ipiv)?;
            let mut want = a.to_vec();
            if k1 <= k2 {
                swap_rows(&mut want, ld, cols, &ipiv, k1, k2);
            }
            untouched(&want, &got, 0, ld, |_, _| true).map_err(|e| {
                format!(
                    "{}laswp k1={k1} k2={k2} cols={cols} on {}: {e}",
                    T::DTYPE.blas_prefix(),
                    on.label()
                )
            })?;
        }
        Ok(())
    })
}

/// Every range (empty ones included), pivots above and below their row, bit-exact.
pub fn factor_laswp_ranges(t: &Target) -> Case {
    every_dtype!(laswp_ranges, t)
}

fn laswp_many_pivots<T: Scalar>(t: &Target) -> Case {
    each_device(t, FactorOp::Laswp, T::DTYPE, &mut |on| {
        let (rows, ld, cols) = (1300, 1303, 9);
        let mut r = rng(310);
        let uniform = random_vec::<f64>(&mut r, 2 * rows);
        // Anywhere in the tile, a few rows named again and again (in and out of the range);
        // and a panel's kind (at or below their own row, as GETRF writes them).
        let any: Vec<i32> = (0..rows)
            .map(|i| match i % 5 {
                0 => (i / 5 % 4 * 331 + 17) as i32,
                _ => (uniform[i].abs() * rows as f64).min(rows as f64 - 1.0) as i32 + 1,
            })
            .collect();
        let below: Vec<i32> = (0..rows)
            .map(|i| {
                let span = (rows - i) as f64;
                (i + (uniform[rows + i].abs() * span).min(span - 1.0) as usize) as i32 + 1
            })
            .collect();
        let a: Vec<T> = random_vec(&mut rng(311), ld * cols);
        for (ipiv, k1, k2) in [
            (&any, 1, rows),
            (&any, 3, 1100),
            (&any, 700, rows),
            (&below, 1, rows),
            (&below, 1, 512),
        ] {
            let got = run_laswp(on, &a, (rows, cols, ld), (k1, k2), ipiv)?;
            let mut want = a.to_vec();
            swap_rows(&mut want, ld, cols, ipiv, k1, k2);
            untouched(&want, &got, 0, ld, |_, _| true).map_err(|e| {
                format!(
                    "{}laswp of {rows} rows k1={k1} k2={k2} on {}: {e}",
                    T::DTYPE.blas_prefix(),
                    on.label()
                )
            })?;
        }
        Ok(())
    })
}

/// More pivots than one round of a GPU kernel takes (hundreds), repeated targets, ranges not
/// starting at 1, a width that is no multiple of a kernel's column group; bit-exact.
pub fn factor_laswp_many_pivots(t: &Target) -> Case {
    every_dtype!(laswp_many_pivots, t)
}

/// GETRF of a panel on one device, then LASWP with its pivots on every computing device of the
/// target: on the same queue right behind it (the pivots never leave the device), and on the
/// others after a copy of the pivots over the link between the two spaces (through the host
/// when there is none).
pub fn factor_pivots_move_between_devices(t: &Target) -> Case {
    type T = f64;
    let (m, n, cols) = (29, 6, 5);
    let a: Vec<T> = random_vec(&mut rng(400), m * n);
    let b: Vec<T> = random_vec(&mut rng(401), m * cols);
    each_device(t, FactorOp::Getrf, T::DTYPE, &mut |src| {
        let panel = src.upload(&a, m, n)?;
        let trailing = src.upload(&b, m, cols)?;
        let (pm, ipiv) = src.pivots(None, n)?;
        let info = InfoCell::new();
        let getrf = GetrfTile {
            a: panel.raw(),
            ipiv,
        };
        let laswp = |on: &On<'_>, tile: RawTile, ipiv: RawPivots| {
            // SAFETY: the trailing tile and pivots are device matrices alive until this case
            // returns (after the queue synchronised); the pivots come from a GETRF of an m-row
            // panel, so they name rows of the m-row tile.
            unsafe {
                on.device.kernel().laswp(
                    &on.queue,
                    &LaswpTile {
                        a: tile,
                        k1: 1,
                        k2: n,
                        ipiv,
                    },
                )
            }
            .map_err(|e| format!("laswp on {}: {e}", on.label()))
        };
        // SAFETY: panel and pivots are device matrices made above, apart, alive until the end
        // of this case, after the queue is synchronised.
        unsafe { src.device.kernel().getrf(&src.queue, &getrf, &info) }
            .map_err(|e| e.to_string())?;
        laswp(src, trailing.raw(), ipiv)?;
        src.sync("getrf + laswp")?;
        let host_ipiv = src.download_pivots(&pm)?;
        let mut want = b.clone();
        swap_rows(&mut want, m, cols, &host_ipiv, 1, n);
        untouched(&want, &src.download(&trailing)?, 0, m, |_, _| true)
            .map_err(|e| format!("laswp behind getrf on {}: {e}", src.label()))?;
        for &other in &t.compute {
            if other == src.idx
                || !t.pool.devices()[other]
                    .kernel()
                    .supports_factor(FactorOp::Laswp, T::DTYPE)
            {
                continue;
            }
            let device = &t.pool.devices()[other];
            let dst = On {
                t,
                idx: other,
                device,
                queue: device.compute_queues()[0].clone(),
            };
            let (dpm, dpiv) = match t.pool.link(ipiv.space, device.space()) {
                Some(link) => {
                    let (dpm, dpiv) = dst.pivots(None, n)?;
                    link.copy(&ipiv.as_tile(), &dpiv.as_tile())
                        .and_then(|()| link.queue().synchronize())
                        .map_err(|e| format!("pivots over {}: {e}", link.name()))?;
                    (dpm, dpiv)
                }
                // No link between the two: through the host.
                None => dst.pivots(Some(&host_ipiv), n)?,
            };
            let copied = dst.download_pivots(&dpm)?;
            if copied != host_ipiv {
                return Err(format!(
                    "pivots copied {} -> {}: {copied:?}, sent {host_ipiv:?}",
                    src.label(),
                    dst.label()
                ));
            }
            let tile = dst.upload(&b, m, cols)?;
            laswp(&dst, tile.raw(), dpiv)?;
            dst.sync("laswp with copied pivots")?;
            untouched(&want, &dst.download(&tile)?, 0, m, |_, _| true).map_err(|e| {
                format!(
                    "laswp on {} with pivots from {}: {e}",
                    dst.label(),
                    src.label()
                )
            })?;
        }
        Ok(())
    })
}

/// Malformed tiles (shapes, pivot counts, ranges, other spaces) are errors at issue time.
pub fn factor_bad_tiles_are_refused(t: &Target) -> Case {
    each_device(t, FactorOp::Getrf, hetblas_core::DType::F64, &mut |on| {
        let dm = on.upload(&[1.0f64; 16], 4, 4)?;
        let (_pm, ipiv) = on.pivots(None, 4)?;
        let a = dm.raw();
        let info = InfoCell::new();
        let k = on.device.kernel();
        let q = &on.queue;
        let bad_potrf = PotrfTile {
            uplo: Uplo::Lower,
            a: RawTile { cols: 3, ..a },
        };
        let bad_getrf = GetrfTile {
            a,
            ipiv: RawPivots { len: 3, ..ipiv },
        };
        let zero_k1 = LaswpTile {
            a,
            k1: 0,
            k2: 2,
            ipiv,
        };
        let beyond_rows = LaswpTile {
            a: RawTile { rows: 2, ..a },
            k1: 1,
            k2: 3,
            ipiv,
        };
        // SAFETY: (the four calls) every tile fails its check before anything is issued; the
        // memory named is the device's own, alive for the case.
        let refused = unsafe {
            [
                k.potrf(q, &bad_potrf, &info).is_err(),
                k.getrf(q, &bad_getrf, &info).is_err(),
                k.laswp(q, &zero_k1).is_err(),
                k.laswp(q, &beyond_rows).is_err(),
            ]
        };
        on.sync("refused tiles")?;
        if refused != [true; 4] {
            return Err(format!(
                "{}: malformed tiles accepted: {refused:?}",
                on.label()
            ));
        }
        if info.get().is_some() {
            return Err(format!("{}: a refused op filled its info cell", on.label()));
        }
        Ok(())
    })
}

// The factorizations as calls of the pool (every device of the target, the planner's graph).

/// A Cholesky call on `t`'s devices: residual, the other triangle untouched, `info` 0.
fn potrf_call<T: Scalar>(t: &Target, uplo: Uplo, n: usize, ld: usize, nb: Option<usize>) -> Case {
    let a0 = hpd::<T>(uplo, n, ld, 900 + n as u64);
    let mut a = a0.clone();
    let opts = hetblas_core::FactorOptions::default()
        .devices(t.compute.iter().copied())
        .nb(nb);
    let what = format!(
        "{}potrf {uplo:?} n={n} ld={ld} nb={nb:?}",
        T::DTYPE.blas_prefix()
    );
    let r = t
        .pool
        .potrf(
            uplo,
            hetblas_core::MatMut::new(&mut a, n, n, ld).map_err(|e| e.to_string())?,
            &opts,
        )
        .map_err(|e| format!("{what}: {e}"))?;
    if r.info != 0 {
        return Err(format!(
            "{what}: info {} on a positive definite matrix",
            r.info
        ));
    }
    untouched(&a0, &a, n, ld, |i, j| !uplo.contains(i, j)).map_err(|e| format!("{what}: {e}"))?;
    let res = cholesky_residual(&a0, &a, uplo, n, ld);
    if res.is_nan() || res > THRESH {
        return Err(format!(
            "{what}: residual {res:.2} > {THRESH} ({:?})",
            r.devices
        ));
    }
    Ok(())
}

fn potrf_calls<T: Scalar>(t: &Target) -> Case {
    if pool_skips(t, FactorOp::Potrf, T::DTYPE)? {
        return Ok(());
    }
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for (n, pad, nb) in [
            (1, 0, None),
            (37, 2, Some(8)),
            (64, 0, Some(16)),
            (70, 1, None),
        ] {
            potrf_call::<T>(t, uplo, n, n + pad, nb)?;
        }
    }
    Ok(())
}

/// POTRF through the pool (the planner's graph on the target's devices): both triangles,
/// odd orders, lda > n, block widths that do not divide, n = 1.
pub fn factor_potrf_calls(t: &Target) -> Case {
    every_dtype!(potrf_calls, t)
}

/// A matrix that is not positive definite: `info` names the order LAPACK names, across
/// block columns.
pub fn factor_potrf_call_info(t: &Target) -> Case {
    if pool_skips(t, FactorOp::Potrf, hetblas_core::DType::F64)? {
        return Ok(());
    }
    for uplo in [Uplo::Lower, Uplo::Upper] {
        let (n, ld) = (45, 45);
        for k in [1, 9, 30, 45] {
            let mut a = hpd::<f64>(uplo, n, ld, 70 + k as u64);
            a[(k - 1) * (ld + 1)] = -1.0;
            let opts = hetblas_core::FactorOptions::default()
                .devices(t.compute.iter().copied())
                .nb(8);
            let r = t
                .pool
                .potrf(
                    uplo,
                    hetblas_core::MatMut::new(&mut a, n, n, ld).unwrap(),
                    &opts,
                )
                .map_err(|e| e.to_string())?;
            if r.info != k as i64 {
                return Err(format!(
                    "dpotrf {uplo:?}: not definite at {k}, info {}",
                    r.info
                ));
            }
        }
    }
    Ok(())
}

fn getrf_call<T: Scalar>(t: &Target, m: usize, n: usize, ld: usize, nb: Option<usize>) -> Case {
    let a0: Vec<T> = random_vec(&mut rng(500 + (m * n) as u64), ld * n.max(1));
    let mut a = a0.clone();
    let mut ipiv = vec![0i32; m.min(n)];
    let opts = hetblas_core::FactorOptions::default()
        .devices(t.compute.iter().copied())
        .nb(nb);
    let what = format!("{}getrf {m}x{n} ld={ld} nb={nb:?}", T::DTYPE.blas_prefix());
    let r = t
        .pool
        .getrf(
            hetblas_core::MatMut::new(&mut a, m, n, ld).map_err(|e| e.to_string())?,
            &mut ipiv,
            &opts,
        )
        .map_err(|e| format!("{what}: {e}"))?;
    if r.info != 0 {
        return Err(format!("{what}: info {} on a random matrix", r.info));
    }
    untouched(&a0, &a, m, ld, |_, _| false).map_err(|e| format!("{what}: {e}"))?;
    check_lu(&a0, &a, &ipiv, m, n, ld).map_err(|e| format!("{what}: {e} ({:?})", r.devices))
}

fn getrf_calls<T: Scalar>(t: &Target) -> Case {
    if pool_skips(t, FactorOp::Getrf, T::DTYPE)? {
        return Ok(());
    }
    for (m, n, pad, nb) in [
        (1, 1, 0, None),
        (37, 37, 2, Some(8)),
        (50, 23, 0, Some(8)),
        (23, 50, 1, Some(8)),
        (64, 64, 0, Some(16)),
        (70, 70, 0, None),
    ] {
        getrf_call::<T>(t, m, n, m + pad, nb)?;
    }
    Ok(())
}

/// GETRF through the pool: square, tall and wide, odd sizes, lda > m, block widths that do
/// not divide; `||P A - L U||` small and the pivots LAPACK's convention.
pub fn factor_getrf_calls(t: &Target) -> Case {
    every_dtype!(getrf_calls, t)
}

/// The matrix in a device's own memory: that device factors it in place (its copy of the
/// pivots on the device, the pivots back in host memory), residual and pivots as on the host.
fn calls_in_device_memory<T: Scalar>(t: &Target) -> Case {
    let (m, n, nb) = (45, 45, 8);
    for &idx in &t.compute {
        let device = &t.pool.devices()[idx];
        if device.space().is_host() {
            continue;
        }
        let label = device.info().label();
        let on = |op| t.pool.updates_factor(idx, op, T::DTYPE);
        let opts = hetblas_core::FactorOptions::default().devices([idx]).nb(nb);
        let upload = |host: &[T]| {
            let v = MatRef::new(host, m, n, m).map_err(|e| e.to_string())?;
            t.pool
                .upload(idx, v)
                .map_err(|e| format!("upload to {label}: {e}"))
        };
        let download = |d: &DeviceMatrix<T>| {
            let mut out = vec![T::default(); m * n];
            let v = MatMut::new(&mut out, m, n, m).map_err(|e| e.to_string())?;
            t.pool
                .download(d, v)
                .map_err(|e| format!("download from {label}: {e}"))?;
            Ok::<_, String>(out)
        };
        let what = |r: &str| format!("{}{r} {m}x{n} in {label}'s memory", T::DTYPE.blas_prefix());
        if on(FactorOp::Getrf) {
            let a0: Vec<T> = random_vec(&mut rng(77), m * n);
            let mut d = upload(&a0)?;
            let mut ipiv = vec![0i32; m.min(n)];
            let r = t
                .pool
                .getrf(MatOut::Device(&mut d), &mut ipiv, &opts)
                .map_err(|e| format!("{}: {e}", what("getrf")))?;
            if r.info != 0 {
                return Err(format!("{}: info {}", what("getrf"), r.info));
            }
            check_lu(&a0, &download(&d)?, &ipiv, m, n, m)
                .map_err(|e| format!("{}: {e}", what("getrf")))?;
        }
        if on(FactorOp::Potrf) {
            let a0 = hpd::<T>(Uplo::Lower, n, n, 78);
            let mut d = upload(&a0)?;
            let r = t
                .pool
                .potrf(Uplo::Lower, MatOut::Device(&mut d), &opts)
                .map_err(|e| format!("{}: {e}", what("potrf")))?;
            let f = download(&d)?;
            let res = cholesky_residual(&a0, &f, Uplo::Lower, n, n);
            if r.info != 0 || res.is_nan() || res > THRESH {
                return Err(format!(
                    "{}: info {}, residual {res:.2}",
                    what("potrf"),
                    r.info
                ));
            }
        }
    }
    Ok(())
}

/// POTRF and GETRF of a matrix in a device's memory, through the pool (every dtype).
pub fn factor_calls_in_device_memory(t: &Target) -> Case {
    every_dtype!(calls_in_device_memory, t)
}

/// An exactly singular matrix through the pool: `info` names the first zero pivot, and the
/// factorization completes.
pub fn factor_getrf_call_info(t: &Target) -> Case {
    for (m, n, zeros, want) in [(40, 40, vec![17], 18), (30, 30, vec![0, 29], 1)] {
        let ld = m;
        let mut a: Vec<f64> = random_vec(&mut rng(300 + m as u64), ld * n);
        for &z in &zeros {
            (0..m).for_each(|i| a[i + z * ld] = 0.0);
        }
        let a0 = a.clone();
        let mut ipiv = vec![0i32; m.min(n)];
        let opts = hetblas_core::FactorOptions::default()
            .devices(t.compute.iter().copied())
            .nb(8);
        let r = t
            .pool
            .getrf(
                hetblas_core::MatMut::new(&mut a, m, n, ld).unwrap(),
                &mut ipiv,
                &opts,
            )
            .map_err(|e| e.to_string())?;
        if r.info != want {
            return Err(format!(
                "dgetrf zero columns {zeros:?}: info {}, LAPACK's {want}",
                r.info
            ));
        }
        check_lu(&a0, &a, &ipiv, m, n, ld)?;
    }
    Ok(())
}

/// The solvers: POTRS and GETRS on the factors of the calls above solve `A X = B` (residual
/// `||A X - B|| / (n eps ||A|| ||X||)` small), B of several columns.
pub fn factor_solves(t: &Target) -> Case {
    let (n, nrhs) = (53, 3);
    let opts = hetblas_core::FactorOptions::default()
        .devices(t.compute.iter().copied())
        .nb(16);
    let b0: Vec<f64> = random_vec(&mut rng(77), n * nrhs);
    let check = |a: &[c64], x: &[f64], what: &str| -> Case {
        let xs: Vec<c64> = x.iter().map(|v| c64::new(*v, 0.0)).collect();
        let mut r = vec![c64::new(0.0, 0.0); n * nrhs];
        for j in 0..nrhs {
            for i in 0..n {
                let mut s = c64::new(0.0, 0.0);
                for k in 0..n {
                    s += a[i + k * n] * xs[k + j * n];
                }
                r[i + j * n] = s - c64::new(b0[i + j * n], 0.0);
            }
        }
        let ratio = norm1(&r, n, nrhs)
            / (n as f64 * f64::EPSILON * norm1(a, n, n) * norm1(&xs, n, nrhs))
                .max(f64::MIN_POSITIVE);
        if ratio.is_nan() || ratio > THRESH {
            return Err(format!("{what}: residual {ratio:.2} > {THRESH}"));
        }
        Ok(())
    };
    let potrf = !pool_skips(t, FactorOp::Potrf, hetblas_core::DType::F64)?;
    for uplo in [Uplo::Lower, Uplo::Upper].into_iter().filter(|_| potrf) {
        let a0 = hpd::<f64>(uplo, n, n, 11);
        let mut a = a0.clone();
        t.pool
            .potrf(
                uplo,
                hetblas_core::MatMut::new(&mut a, n, n, n).unwrap(),
                &opts,
            )
            .map_err(|e| e.to_string())?;
        let mut x = b0.clone();
        t.pool
            .potrs(
                uplo,
                hetblas_core::MatRef::new(&a, n, n, n).unwrap(),
                hetblas_core::MatMut::new(&mut x, n, nrhs, n).unwrap(),
            )
            .map_err(|e| e.to_string())?;
        check(&hermitian(&a0, uplo, n, n), &x, &format!("dpotrs {uplo:?}"))?;
    }
    let a0: Vec<f64> = random_vec(&mut rng(12), n * n);
    let mut a = a0.clone();
    let mut ipiv = vec![0i32; n];
    t.pool
        .getrf(
            hetblas_core::MatMut::new(&mut a, n, n, n).unwrap(),
            &mut ipiv,
            &opts,
        )
        .map_err(|e| e.to_string())?;
    let mut x = b0.clone();
    t.pool
        .getrs(
            hetblas_core::MatRef::new(&a, n, n, n).unwrap(),
            &ipiv,
            hetblas_core::MatMut::new(&mut x, n, nrhs, n).unwrap(),
        )
        .map_err(|e| e.to_string())?;
    let full: Vec<c64> = a0.iter().map(|v| c64::new(*v, 0.0)).collect();
    check(&full, &x, "dgetrs")
}
