//! The factorization hooks: where a LAPACK call exported by [`crate::lapack`] (Cholesky, LU,
//! and the solves built on them) may be computed by hetblas instead of the host LAPACK. One
//! function per routine family, called first by every entry of that family (S, D, C, Z; LP64,
//! ILP64 `_64_` and the `scipy_` names) with the routine's arguments exactly as the entry
//! received them: pointers, integers of the entry's width `I`.
//!
//! `true`: the hook computed the call and set `info`. `false`: the entry forwards the call,
//! untouched, to the routine it replaced (the host LAPACK: [`crate::lapack`] says which).
//!
//! **What goes to the devices.** `?potrf`, `?getrf`, `?posv` and `?gesv` on valid arguments,
//! routed as GEMM is (`offload::route_call`) by the GEMM of the same flops
//! (`n x n x n/6` for Cholesky, `m x n x k` with `2mnk = mn^2 - n^3/3` for LU): the pre-filter,
//! the model for a shape's first call, what its calls measured after it. The solves alone
//! (`?potrs`, `?getrs`: `O(n^2 nrhs)` on a factor the caller holds in host memory) stay on the
//! host. A call with a bad argument, or `n = 0`, goes to the host LAPACK, which checks the
//! arguments in LAPACK's order and reports through `xerbla_` with its own name.
//!
//! **Faults.** The factorization runs with [`hetblas::FactorOptions::preserve`]: a device
//! failure leaves A (and `ipiv`, B) as the caller passed them and the call goes to the host
//! LAPACK. Where the factorization succeeded and the solve on the devices failed, B is
//! restored and solved on the host from the factor (the pivots applied, two substitutions).
//!
//! The BLAS calls a forwarded routine makes by name (a `liblapack.so.3`'s trailing updates:
//! `dgemm_`, `dtrsm_`, `dsyrk_`, ...) reach hetblas's BLAS entries, and so the device path,
//! already; a wheel's OpenBLAS binds its LAPACK's BLAS calls to itself, so there only a hook
//! brings the devices in.

#![allow(clippy::too_many_arguments)] // reason: the LAPACK routines' own argument lists

use crate::elem::Elem;

/// The integer of a LAPACK entry: i32 (LP64) or i64 (ILP64).
pub trait LapackInt: Copy + Into<i64> + TryFrom<i64> {}
impl LapackInt for i32 {}
impl LapackInt for i64 {}

use crate::measured::Pending;
use crate::offload::{route_call, span, Routed};
use crate::route::{Outcome, Shape};
use hetblas::{FactorOptions, MatMut, Scalar, Uplo};
use std::ffi::c_char;

fn set<I: LapackInt>(out: *mut I, v: i64) {
    if let Ok(v) = I::try_from(v) {
        // SAFETY: `info` is the caller's writable integer (LAPACK's contract).
        unsafe { *out = v };
    }
}

/// The routine's name in the element type's prefix ("dpotrf").
fn name<T: Elem>(names: [&'static str; 4]) -> &'static str {
    names[T::IDX]
}

/// Where a factorization of this GEMM-equivalent shape goes: the devices, or the host (`Err`,
/// with the shape's host time to measure when the routing considered it).
fn route<T: Scalar>(
    name: &'static str,
    tag: u8,
    m: i64,
    n: i64,
    k: i64,
) -> Result<crate::offload::Ticket, Outcome> {
    let shape = Shape {
        ta: tag,
        tb: b'N',
        m,
        n,
        k: k.max(1),
        dtype: <T as Scalar>::DTYPE,
    };
    match route_call(name, &shape, true) {
        Routed::Devices(t) => Ok(t),
        // Its host time teaches the routing of this shape, not the host's GEMM rate: a
        // factorization runs slower per flop than the GEMM standing for it.
        Routed::Host(p) => Err(Outcome::Host(p.map(|p| Pending {
            estimate: None,
            ..p
        }))),
    }
}

/// The GEMM depth of the same flops as an `m x n` LU (`2 m n k = m n^2 - n^3/3`, m >= n).
fn lu_depth(m: i64, n: i64) -> i64 {
    let (big, small) = (m.max(n) as f64, m.min(n) as f64);
    ((big * small * small - small * small * small / 3.0) / (2.0 * big * small)) as i64
}

/// A call the devices computed: its trace written (`HETBLAS_TRACE`), its time recorded and
/// reported.
fn finished(ticket: crate::offload::Ticket, name: &str, r: &hetblas::FactorReport) {
    crate::offload::write_trace(name, r.trace.as_ref(), r.seconds);
    #[cfg(test)]
    DEVICE_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let costs = crate::summary::OneTime {
        planning: r.planning_seconds,
        ..crate::summary::OneTime::NONE
    };
    ticket.done_with(name, &r.devices, "", costs);
}

/// A device failure: said once without `HETBLAS_VERBOSE`, the call left to the host.
fn failed(ticket: crate::offload::Ticket, what: &str, e: &hetblas::Error) {
    crate::offload::report_failure(what, e);
    ticket.failed();
}

/// Factorizations the devices computed (tests check that the device path took them).
#[cfg(test)]
pub static DEVICE_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn options() -> FactorOptions {
    FactorOptions::default()
        .preserve(true)
        .trace(crate::offload::trace_dir().is_some())
}

fn parse_uplo(c: *const c_char) -> Option<Uplo> {
    // SAFETY: LAPACK's contract: a readable character.
    Uplo::from_blas_char(unsafe { *c } as u8)
}

/// `?POTRF(UPLO, N, A, LDA, INFO)`: Cholesky factorization.
///
/// # Safety
/// The pointers are the caller's, under LAPACK's contract (unchecked).
pub unsafe fn potrf<T: Elem + Scalar, I: LapackInt>(
    uplo: *const c_char,
    n: *const I,
    a: *mut T,
    lda: *const I,
    info: *mut I,
) -> Outcome {
    // SAFETY: LAPACK's contract: readable integers.
    let (n, lda) = unsafe { ((*n).into(), (*lda).into()) };
    let Some(u) = parse_uplo(uplo) else {
        return Outcome::Host(None);
    };
    if n <= 0 || lda < n || a.is_null() {
        return Outcome::Host(None);
    }
    let name = name::<T>(["spotrf", "dpotrf", "cpotrf", "zpotrf"]);
    let ticket = match route::<T>(name, u.as_char() as u8, n, n, n / 6) {
        Ok(t) => t,
        Err(host) => return host,
    };
    // SAFETY: LAPACK's contract makes A's span readable and writable.
    let sa = unsafe { std::slice::from_raw_parts_mut(a, span(n, n, lda)) };
    let (n, lda) = (n as usize, lda as usize);
    let result = MatMut::new(sa, n, n, lda).and_then(|am| ticket.rt.potrf(u, am, &options()));
    match result {
        Ok(r) => {
            set(info, r.info);
            finished(ticket, name, &r);
            Outcome::Done
        }
        Err(e) => {
            failed(ticket, name, &e);
            Outcome::Host(None)
        }
    }
}

/// `?GETRF(M, N, A, LDA, IPIV, INFO)`: LU factorization with partial pivoting.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn getrf<T: Elem + Scalar, I: LapackInt>(
    m: *const I,
    n: *const I,
    a: *mut T,
    lda: *const I,
    ipiv: *mut I,
    info: *mut I,
) -> Outcome {
    // SAFETY: LAPACK's contract: readable integers.
    let (m, n, lda) = unsafe { ((*m).into(), (*n).into(), (*lda).into()) };
    if m <= 0 || n <= 0 || lda < m || a.is_null() || ipiv.is_null() {
        return Outcome::Host(None);
    }
    let name = name::<T>(["sgetrf", "dgetrf", "cgetrf", "zgetrf"]);
    let ticket = match route::<T>(name, b'N', m, n, lu_depth(m, n)) {
        Ok(t) => t,
        Err(host) => return host,
    };
    // SAFETY: LAPACK's contract: A's span readable and writable, min(m, n) pivots writable.
    let (sa, piv) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, span(m, n, lda)),
            std::slice::from_raw_parts_mut(ipiv, m.min(n) as usize),
        )
    };
    let mut p32 = vec![0i32; piv.len()];
    let result = MatMut::new(sa, m as usize, n as usize, lda as usize)
        .and_then(|am| ticket.rt.getrf(am, &mut p32, &options()));
    match result {
        Ok(r) => {
            for (d, s) in piv.iter_mut().zip(&p32) {
                set(d, i64::from(*s));
            }
            set(info, r.info);
            finished(ticket, name, &r);
            Outcome::Done
        }
        Err(e) => {
            failed(ticket, name, &e);
            Outcome::Host(None)
        }
    }
}

/// `?POTRS(UPLO, N, NRHS, A, LDA, B, LDB, INFO)`: solves with a Cholesky factor (the host's).
///
/// # Safety
/// As [`potrf`].
pub unsafe fn potrs<T: Elem + Scalar, I: LapackInt>(
    _uplo: *const c_char,
    _n: *const I,
    _nrhs: *const I,
    _a: *const T,
    _lda: *const I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> Outcome {
    Outcome::Host(None)
}

/// `?GETRS(TRANS, N, NRHS, A, LDA, IPIV, B, LDB, INFO)`: solves with an LU factorization
/// (the host's).
///
/// # Safety
/// As [`potrf`].
pub unsafe fn getrs<T: Elem + Scalar, I: LapackInt>(
    _trans: *const c_char,
    _n: *const I,
    _nrhs: *const I,
    _a: *const T,
    _lda: *const I,
    _ipiv: *const I,
    _b: *mut T,
    _ldb: *const I,
    _info: *mut I,
) -> Outcome {
    Outcome::Host(None)
}

/// `?POSV(UPLO, N, NRHS, A, LDA, B, LDB, INFO)`: factor and solve, A positive definite.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn posv<T: Elem + Scalar, I: LapackInt>(
    uplo: *const c_char,
    n: *const I,
    nrhs: *const I,
    a: *mut T,
    lda: *const I,
    b: *mut T,
    ldb: *const I,
    info: *mut I,
) -> Outcome {
    // SAFETY: LAPACK's contract: readable integers.
    let (n, nrhs, lda, ldb) =
        unsafe { ((*n).into(), (*nrhs).into(), (*lda).into(), (*ldb).into()) };
    let Some(u) = parse_uplo(uplo) else {
        return Outcome::Host(None);
    };
    if n <= 0 || nrhs < 0 || lda < n || ldb < n || a.is_null() || b.is_null() {
        return Outcome::Host(None);
    }
    let name = name::<T>(["sposv", "dposv", "cposv", "zposv"]);
    let ticket = match route::<T>(name, u.as_char() as u8, n, n, n / 6) {
        Ok(t) => t,
        Err(host) => return host,
    };
    // SAFETY: LAPACK's contract: A's and B's spans readable and writable, not overlapping.
    let (sa, sb) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, span(n, n, lda)),
            std::slice::from_raw_parts_mut(b, span(n, nrhs, ldb)),
        )
    };
    let (nu, lda, ldb, nr) = (n as usize, lda as usize, ldb as usize, nrhs as usize);
    let factored =
        MatMut::new(&mut *sa, nu, nu, lda).and_then(|am| ticket.rt.potrf(u, am, &options()));
    let r = match factored {
        Ok(r) => r,
        Err(e) => {
            failed(ticket, name, &e);
            return Outcome::Host(None);
        }
    };
    if r.info == 0 && nr > 0 {
        let keep = sb.to_vec();
        let solved = MatMut::new(&mut *sb, nu, nr, ldb).and_then(|bm| {
            ticket
                .rt
                .potrs(u, hetblas::MatRef::new(&*sa, nu, nu, lda)?, bm)
        });
        if let Err(e) = solved {
            crate::offload::report_failure(name, &e);
            sb.copy_from_slice(&keep);
            host_solve::potrs(u, sa, nu, lda, sb, nr, ldb);
        }
    }
    set(info, r.info);
    finished(ticket, name, &r);
    Outcome::Done
}

/// `?GESV(N, NRHS, A, LDA, IPIV, B, LDB, INFO)`: factor and solve, A general.
///
/// # Safety
/// As [`potrf`].
pub unsafe fn gesv<T: Elem + Scalar, I: LapackInt>(
    n: *const I,
    nrhs: *const I,
    a: *mut T,
    lda: *const I,
    ipiv: *mut I,
    b: *mut T,
    ldb: *const I,
    info: *mut I,
) -> Outcome {
    // SAFETY: LAPACK's contract: readable integers.
    let (n, nrhs, lda, ldb) =
        unsafe { ((*n).into(), (*nrhs).into(), (*lda).into(), (*ldb).into()) };
    if n <= 0 || nrhs < 0 || lda < n || ldb < n || a.is_null() || b.is_null() || ipiv.is_null() {
        return Outcome::Host(None);
    }
    let name = name::<T>(["sgesv", "dgesv", "cgesv", "zgesv"]);
    let ticket = match route::<T>(name, b'N', n, n, lu_depth(n, n)) {
        Ok(t) => t,
        Err(host) => return host,
    };
    // SAFETY: LAPACK's contract: A, B and the n pivots writable, not overlapping.
    let (sa, sb, piv) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, span(n, n, lda)),
            std::slice::from_raw_parts_mut(b, span(n, nrhs, ldb)),
            std::slice::from_raw_parts_mut(ipiv, n as usize),
        )
    };
    let (nu, lda, ldb, nr) = (n as usize, lda as usize, ldb as usize, nrhs as usize);
    let mut p32 = vec![0i32; nu];
    let factored =
        MatMut::new(&mut *sa, nu, nu, lda).and_then(|am| ticket.rt.getrf(am, &mut p32, &options()));
    let r = match factored {
        Ok(r) => r,
        Err(e) => {
            failed(ticket, name, &e);
            return Outcome::Host(None);
        }
    };
    for (d, s) in piv.iter_mut().zip(&p32) {
        set(d, i64::from(*s));
    }
    if r.info == 0 && nr > 0 {
        let keep = sb.to_vec();
        let solved = MatMut::new(&mut *sb, nu, nr, ldb).and_then(|bm| {
            ticket
                .rt
                .getrs(hetblas::MatRef::new(&*sa, nu, nu, lda)?, &p32, bm)
        });
        if let Err(e) = solved {
            crate::offload::report_failure(name, &e);
            sb.copy_from_slice(&keep);
            host_solve::getrs(sa, nu, lda, &p32, sb, nr, ldb);
        }
    }
    set(info, r.info);
    finished(ticket, name, &r);
    Outcome::Done
}

/// The solves on the host from a factor, for when the devices failed after factoring: the
/// substitutions written out (`O(n^2 nrhs)`, like the solve itself), in f64/c64 accumulation.
mod host_solve {
    use hetblas::{Scalar, Uplo};
    use hetblas_core::scalar::c64;

    fn at<T: Scalar>(a: &[T], lda: usize, i: usize, j: usize) -> c64 {
        a[j * lda + i].to_c64()
    }

    /// Solves `op(T) x = x` for each column, `T` triangular in `a` (lower or upper, unit or
    /// not), `conj_t`: op = T^H.
    fn substitute<T: Scalar>(
        a: &[T],
        n: usize,
        lda: usize,
        b: &mut [T],
        nrhs: usize,
        ldb: usize,
        (lower, unit, conj_t): (bool, bool, bool),
    ) {
        // op(T) is lower triangular when T is lower and not transposed, or upper and
        // transposed.
        let forward = lower != conj_t;
        let elem = |i: usize, j: usize| {
            if conj_t {
                at(a, lda, j, i).conj()
            } else {
                at(a, lda, i, j)
            }
        };
        for r in 0..nrhs {
            let col = &mut b[r * ldb..r * ldb + n];
            let mut x: Vec<c64> = col.iter().map(|v| v.to_c64()).collect();
            let order: Vec<usize> = if forward {
                (0..n).collect()
            } else {
                (0..n).rev().collect()
            };
            for &i in &order {
                let mut s = x[i];
                let range: Vec<usize> = if forward {
                    (0..i).collect()
                } else {
                    (i + 1..n).collect()
                };
                for k in range {
                    s -= elem(i, k) * x[k];
                }
                x[i] = if unit { s } else { s / elem(i, i) };
            }
            for (c, v) in col.iter_mut().zip(x) {
                *c = T::from_c64(v);
            }
        }
    }

    pub fn potrs<T: Scalar>(
        uplo: Uplo,
        a: &[T],
        n: usize,
        lda: usize,
        b: &mut [T],
        nrhs: usize,
        ldb: usize,
    ) {
        let lower = uplo == Uplo::Lower;
        // L L^H x = b: L y = b, L^H x = y (upper: U^H y = b, U x = y).
        let steps = if lower { [false, true] } else { [true, false] };
        for conj_t in steps {
            substitute(a, n, lda, b, nrhs, ldb, (lower, false, conj_t));
        }
    }

    pub fn getrs<T: Scalar>(
        a: &[T],
        n: usize,
        lda: usize,
        ipiv: &[i32],
        b: &mut [T],
        nrhs: usize,
        ldb: usize,
    ) {
        for r in 0..nrhs {
            for (i, &p) in ipiv.iter().enumerate().take(n) {
                let p = (p - 1) as usize;
                if p != i && p < n {
                    b.swap(r * ldb + i, r * ldb + p);
                }
            }
        }
        substitute(a, n, lda, b, nrhs, ldb, (true, true, false));
        substitute(a, n, lda, b, nrhs, ldb, (false, false, false));
    }
}

#[cfg(test)]
mod tests {
    //! The hooks on the unit tests' Runtime (two emulated devices, no profile: the built-in
    //! rule sends a factorization of order 1600 to the devices, as the GEMM of its flops).
    use super::*;
    use std::sync::atomic::Ordering;

    const N: usize = 1600;
    const LDA: usize = N + 3;

    fn value(i: usize, j: usize) -> f64 {
        let (lo, hi) = (i.min(j) as u64, i.max(j) as u64);
        let x = (lo.wrapping_mul(2_654_435_761) ^ hi.wrapping_mul(40_503)) % 2001;
        x as f64 / 1000.0 - 1.0
    }

    /// Symmetric, diagonal `N + 1` (positive definite) unless `spd` is false, then general;
    /// padding rows NaN (never read).
    fn matrix(spd: bool) -> Vec<f64> {
        let mut a = vec![f64::NAN; LDA * N];
        for j in 0..N {
            for i in 0..N {
                a[j * LDA + i] = match (spd, i == j) {
                    (true, true) => N as f64 + 1.0,
                    (true, false) => value(i, j),
                    (false, _) if i < j => value(i + 7, j),
                    (false, _) => value(i, j),
                };
            }
        }
        a
    }

    fn calls() -> usize {
        DEVICE_CALLS.load(Ordering::Relaxed)
    }

    #[test]
    fn dpotrf_on_the_devices_factors_and_reports_lapack_info() {
        let a0 = matrix(true);
        let mut a = a0.clone();
        let (n, lda, mut info) = (N as i32, LDA as i32, -7i32);
        let before = calls();
        // SAFETY: valid arguments and arrays of the stated sizes.
        let took = unsafe { potrf::<f64, i32>(c"L".as_ptr(), &n, a.as_mut_ptr(), &lda, &mut info) };
        assert!(
            matches!(took, Outcome::Done) && calls() > before,
            "the device path did not take dpotrf"
        );
        assert_eq!(info, 0);
        // A = L L^T on sampled columns, the upper triangle and the padding untouched.
        for j in [0, 1, 799, N - 1] {
            for i in 0..N {
                let x = a[j * LDA + i];
                if i < j {
                    assert_eq!(x.to_bits(), a0[j * LDA + i].to_bits());
                    continue;
                }
                let s: f64 = (0..=j).map(|k| a[k * LDA + i] * a[k * LDA + j]).sum();
                let err = (s - a0[j * LDA + i]).abs();
                assert!(
                    err <= 1e-9 * N as f64,
                    "({i},{j}): {s} vs {}",
                    a0[j * LDA + i]
                );
            }
            assert!(a[j * LDA + N].is_nan());
        }
        // A minor that is not positive definite: LAPACK's info names its order. (Order
        // N - 1: a shape of its own, which the routing decides afresh rather than by what
        // order N measured on the slow emulated devices.)
        let mut bad = a0.clone();
        bad[700 * LDA + 700] = -1.0;
        let n = n - 1;
        // SAFETY: as above.
        let took =
            unsafe { potrf::<f64, i32>(c"L".as_ptr(), &n, bad.as_mut_ptr(), &lda, &mut info) };
        assert!(matches!(took, Outcome::Done));
        assert_eq!(info, 701);
    }

    #[test]
    fn dgesv_and_dgetrf_on_the_devices_solve_with_lapack_pivots() {
        let a0 = matrix(false);
        let (n, lda, nrhs, ldb) = (N as i64, LDA as i64, 3i64, N as i64 + 1);
        let b0: Vec<f64> = (0..(ldb as usize) * 3)
            .map(|i| value(i, 3 * i + 1))
            .collect();
        let (mut a, mut b) = (a0.clone(), b0.clone());
        let (mut ipiv, mut info) = (vec![0i64; N], -7i64);
        let before = calls();
        // SAFETY: valid arguments and arrays of the stated sizes.
        let took = unsafe {
            gesv::<f64, i64>(
                &n,
                &nrhs,
                a.as_mut_ptr(),
                &lda,
                ipiv.as_mut_ptr(),
                b.as_mut_ptr(),
                &ldb,
                &mut info,
            )
        };
        assert!(
            matches!(took, Outcome::Done) && calls() > before,
            "the device path did not take dgesv"
        );
        assert_eq!(info, 0);
        assert!(ipiv
            .iter()
            .enumerate()
            .all(|(i, &p)| p as usize > i && p as usize <= N));
        for r in 0..3 {
            let x = &b[r * ldb as usize..r * ldb as usize + N];
            let mut worst = 0.0f64;
            for i in 0..N {
                let ax: f64 = (0..N).map(|k| a0[k * LDA + i] * x[k]).sum();
                worst = worst.max((ax - b0[r * ldb as usize + i]).abs());
            }
            assert!(worst < 1e-8, "residual {worst}");
        }
        // dgetrf alone gives the same factors and pivots as dgesv's.
        let mut f = a0.clone();
        let mut piv2 = vec![0i32; N];
        let (n32, lda32, mut info32) = (N as i32, LDA as i32, -7);
        // SAFETY: as above.
        let took = unsafe {
            getrf::<f64, i32>(
                &n32,
                &n32,
                f.as_mut_ptr(),
                &lda32,
                piv2.as_mut_ptr(),
                &mut info32,
            )
        };
        assert!(matches!(took, Outcome::Done) && info32 == 0);
        assert!(piv2.iter().zip(&ipiv).all(|(&p, &q)| i64::from(p) == q));
        assert!(f
            .iter()
            .zip(&a)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())));
    }

    #[test]
    fn a_factorization_left_to_the_host_has_its_host_time_measured() {
        // Its first call on the devices was slow (recorded here): the routing sends the next
        // one to the host to measure it. That measurement must come back to the entry, or
        // every later call of the shape stays on the host to be measured again.
        let n = N as i64 + 1;
        let key = crate::measured::Key {
            routine: "dpotrf",
            dtype: hetblas::DType::F64,
            ta: b'U',
            tb: b'N',
            m: n,
            n,
            k: n / 6,
        };
        let routes = crate::measured::routes();
        routes.record_devices(key, 100.0, 0.0);
        let mut a = vec![0.0f64; (n * n) as usize];
        let (ni, mut info) = (n as i32, -7i32);
        // SAFETY: valid arguments and an array of the stated size.
        let took = unsafe { potrf::<f64, i32>(c"U".as_ptr(), &ni, a.as_mut_ptr(), &ni, &mut info) };
        let Outcome::Host(Some(pending)) = took else {
            panic!("not left to the host to be measured: {took:?}");
        };
        assert_eq!(pending.key, key);
        // Not taken as a measure of the host's GEMM rate.
        assert!(pending.estimate.is_none());
        pending.record(0.01);
        assert_eq!(routes.get(&key).and_then(|r| r.host), Some(0.01));
        assert_eq!(info, -7, "the host's call, not the hook, writes info");
    }

    #[test]
    fn small_and_bad_calls_stay_with_the_host_lapack() {
        let mut a = vec![4.0f64; 16];
        let (mut info, lda) = (-7i32, 4i32);
        for (n, uplo) in [(4i32, c"L"), (0, c"L"), (-1, c"L"), (N as i32, c"X")] {
            // SAFETY: the hook reads n, uplo and lda only before declining.
            let took =
                unsafe { potrf::<f64, i32>(uplo.as_ptr(), &n, a.as_mut_ptr(), &lda, &mut info) };
            assert!(matches!(took, Outcome::Host(_)), "n = {n}");
        }
        assert_eq!(info, -7, "a declined call writes nothing");
    }

    #[test]
    fn the_host_solves_match_a_direct_solve() {
        // L = [[2, 0], [1, 3]]: L L^T x = b for x = (1, -1): b = L (L^T x) = L (1, -3) = (2, -8).
        let l = [2.0f64, 1.0, 0.0, 3.0];
        let mut b = [2.0f64, -8.0];
        host_solve::potrs(Uplo::Lower, &l, 2, 2, &mut b, 1, 2);
        assert!(
            (b[0] - 1.0).abs() < 1e-14 && (b[1] + 1.0).abs() < 1e-14,
            "{b:?}"
        );
        // LU of [[0, 1], [2, 3]] with the rows swapped: L = [[1, 0], [0, 1]], U = [[2, 3], [0, 1]].
        let lu = [2.0f64, 0.0, 3.0, 1.0];
        let mut b = [1.0f64, 5.0]; // A x for x = (1, 1)
        host_solve::getrs(&lu, 2, 2, &[2, 2], &mut b, 1, 2);
        assert!(
            (b[0] - 1.0).abs() < 1e-14 && (b[1] - 1.0).abs() < 1e-14,
            "{b:?}"
        );
    }
}
