//! GEMM against an f64-accumulated reference of its own (independent of any BLAS library):
//! every valid call of `?gemm_`, `?gemm_64_`, `cblas_?gemm` and `cblas_?gemm64_` (S, D, C, Z,
//! column- and row-major) leaves C within the dtype's error bound of the reference, and
//! bit-identical where the math is (quick returns: m or n 0, or alpha or k 0 with beta 1),
//! with the padding rows of C untouched; every invalid call reports hetblas-refblas's
//! parameter number (the reference's checks, in its order) and leaves C as it was.

use super::libs::{hetblas_addr, take_report, with_prefix, PREFIXES};
use super::values::{Api, El, Int, Rng};
use hetblas_refblas::gemm_check;
use hetblas_refblas::num_complex::Complex64 as C64;
use std::ffi::{c_int, c_void};

const BUF: usize = 160;

/// libhetblas.so's symbol `name` as the function type `F`.
fn sym<F: Copy>(name: &str) -> F {
    let p = hetblas_addr(name)
        .unwrap_or_else(|| panic!("libhetblas.so lacks {}{name}", super::libs::prefix()));
    // SAFETY: the caller names the symbol's C type as F, a function pointer.
    unsafe { std::mem::transmute_copy::<*const c_void, F>(&p) }
}

/// Calls `cblas_?gemm` (`f`, integers of type `I`).
///
/// # Safety
/// `f` is cblas_?gemm of this type and integer width; the buffers hold the call.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe fn cblas_gemm<T: El, I: Copy>(
    f: *const c_void,
    o: c_int,
    ta: c_int,
    tb: c_int,
    m: I,
    n: I,
    k: I,
    alpha: &T,
    a: *const T,
    lda: I,
    b: *const T,
    ldb: I,
    beta: &T,
    c: *mut T,
    ldc: I,
) {
    type F<I, T, S> = unsafe extern "C" fn(
        c_int,
        c_int,
        c_int,
        I,
        I,
        I,
        S,
        *const T,
        I,
        *const T,
        I,
        S,
        *mut T,
        I,
    );
    // SAFETY: the caller's.
    unsafe {
        let f: F<I, T, T::Arg> = std::mem::transmute(f);
        let (alpha, beta) = (T::arg(alpha), T::arg(beta));
        f(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    }
}

/// What a case was, for its message.
#[allow(dead_code)] // reason: read through Debug only
#[derive(Debug)]
struct GemmCase<T> {
    api: Api,
    /// CBLAS layout (101 row, 102 column, other invalid); Fortran: column.
    layout: c_int,
    ta: u8,
    tb: u8,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
    alpha: T,
    beta: T,
}

fn cblas_trans(t: u8) -> c_int {
    match t {
        b'N' | b'n' => 111,
        b'T' | b't' => 112,
        b'C' | b'c' => 113,
        _ => 110,
    }
}

/// Column-major GEMM reference, f64-accumulated, with its elementwise error bound; writes
/// nothing, returns (value, bound) per entry of the m x n C.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
fn gemm_ref<T: El>(
    ta: u8,
    tb: u8,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &[T],
    lda: usize,
    b: &[T],
    ldb: usize,
    beta: T,
    c: &[T],
    ldc: usize,
) -> Vec<(C64, f64)> {
    let op = |t: u8, x: &[T], ld: usize, r: usize, s: usize| -> C64 {
        match t.to_ascii_uppercase() {
            b'N' => x[r + s * ld].c(),
            b'T' => x[s + r * ld].c(),
            _ => x[s + r * ld].c().conj(),
        }
    };
    let (al, be) = (alpha.c(), beta.c());
    let mut out = Vec::with_capacity(m * n);
    for j in 0..n {
        for i in 0..m {
            let (mut s, mut mag) = (C64::new(0.0, 0.0), 0.0);
            for l in 0..k {
                let p = op(ta, a, lda, i, l) * op(tb, b, ldb, l, j);
                s += p;
                mag += p.norm();
            }
            // beta 0: C is not read (NaN there does not survive).
            let c0 = if be == C64::new(0.0, 0.0) {
                C64::new(0.0, 0.0)
            } else {
                c[i + j * ldc].c()
            };
            let v = al * s + be * c0;
            let bound = 4.0 * (k as f64 + 2.0) * T::EPS * (al.norm() * mag + be.norm() * c0.norm())
                + f64::MIN_POSITIVE;
            out.push((v, bound));
        }
    }
    out
}

/// One GEMM case through `api`; `Err` describes a wrong outcome.
/// `Ok(true)` for an invalid call reported as it should be.
fn gemm_case<T: El>(rng: &mut Rng, api: Api) -> Result<bool, String> {
    let wide = matches!(api, Api::Fortran64 | Api::Cblas64);
    let dims: &[i64] = if wide {
        &[-(1 << 33), -1, 0, 1, 2, 3, 4, 5, 7]
    } else {
        &[-7, -1, 0, 1, 2, 3, 4, 5, 7]
    };
    let trans = [b'N', b'T', b'C', b'n', b't', b'c', b'X'];
    let (m, n, k) = (rng.pick(dims), rng.pick(dims), rng.pick(dims));
    let (ta, tb) = if rng.below(8) == 0 {
        (rng.pick(&trans), rng.pick(&trans))
    } else {
        (rng.pick(&trans[..6]), rng.pick(&trans[..6]))
    };
    let layout = match api {
        Api::Fortran | Api::Fortran64 => 102,
        _ => rng.pick(&[101, 102, 101, 102, 101, 102, 101, 102, 0]),
    };
    let row = layout == 101;
    // In row-major the column-major call is the transposed one: (tb, ta, n, m, ...).
    let (fm, fn_) = if row { (n, m) } else { (m, n) };
    let (fa_t, fb_t) = if row { (tb, ta) } else { (ta, tb) };
    let min_ld = |t: u8, r: i64, s: i64| if t.eq_ignore_ascii_case(&b'N') { r } else { s }.max(1);
    // Minimum leading dimensions of A and B as the caller stores them.
    let (a_rows, b_rows) = if row {
        (min_ld(ta, k, m), min_ld(tb, n, k))
    } else {
        (min_ld(ta, m, k), min_ld(tb, k, n))
    };
    let c_rows = if row { n.max(1) } else { m.max(1) };
    let mut ld = |min: i64| match rng.below(10) {
        0 => min - 1,
        1 => 0,
        2 | 3 => min + 2,
        _ => min,
    };
    let (lda, ldb, ldc) = (ld(a_rows), ld(b_rows), ld(c_rows));
    let scalar = |rng: &mut Rng| match rng.below(5) {
        0 => T::make(0.0, 0.0),
        1 => T::make(1.0, 0.0),
        _ => T::make(rng.unit(), rng.unit()),
    };
    let (alpha, beta) = (scalar(rng), scalar(rng));
    let case = GemmCase {
        api,
        layout,
        ta,
        tb,
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
        alpha,
        beta,
    };

    // The expected report: (name, parameter), or none.
    let name = format!("{}GEMM", T::P.to_ascii_uppercase());
    let fortran = |ta, tb, m, n, k, lda, ldb, ldc| gemm_check(ta, tb, m, n, k, lda, ldb, ldc);
    let expected: Option<(String, i64)> = match api {
        Api::Fortran | Api::Fortran64 => {
            let p = fortran(ta, tb, m, n, k, lda, ldb, ldc);
            (p != 0).then(|| (name.clone(), p as i64))
        }
        Api::Cblas | Api::Cblas64 => {
            let cname = format!("cblas_{}gemm", T::P);
            let p = if layout != 101 && layout != 102 {
                1
            } else if cblas_trans(ta) == 110 {
                2
            } else if cblas_trans(tb) == 110 {
                // The reference numbers a row-major call's bad TransB 2 (the A of the
                // column-major call it makes).
                if row {
                    2
                } else {
                    3
                }
            } else {
                let ca = |t: u8| t.to_ascii_uppercase();
                let p = if row {
                    fortran(ca(tb), ca(ta), n, m, k, ldb, lda, ldc)
                } else {
                    fortran(ca(ta), ca(tb), m, n, k, lda, ldb, ldc)
                };
                if p == 0 {
                    0
                } else {
                    p + 1
                }
            };
            (p != 0).then_some((cname, p as i64))
        }
    };
    // A valid call reads only within these; an invalid one reads nothing.
    if expected.is_none() {
        let need = |ld: i64, cols: i64| (ld * (cols.max(1) - 1) + ld) as usize;
        let (a_cols, b_cols) = if row {
            (a_cols_row(ta, m, k), a_cols_row(tb, k, n))
        } else {
            (a_cols_col(ta, m, k), a_cols_col(tb, k, n))
        };
        assert!(
            need(lda, a_cols) <= BUF
                && need(ldb, b_cols) <= BUF
                && need(ldc, if row { m } else { n }) <= BUF,
            "buffers too small for {case:?}"
        );
    }
    let fill =
        |rng: &mut Rng| -> Vec<T> { (0..BUF).map(|_| T::make(rng.unit(), rng.unit())).collect() };
    let (a, b) = (fill(rng), fill(rng));
    let mut c0 = fill(rng);
    if rng.below(4) == 0 {
        c0[0] = T::make(f64::NAN, f64::NAN);
    }
    let mut c = c0.clone();
    let p = T::P;
    // SAFETY: each symbol is called with its C signature and buffers of BUF elements, enough
    // for every valid shape generated (checked above).
    unsafe {
        match api {
            Api::Fortran | Api::Fortran64 => {
                macro_rules! call {
                    ($I:ty, $suffix:literal) => {{
                        type F<I, T> = unsafe extern "C" fn(
                            *const u8,
                            *const u8,
                            *const I,
                            *const I,
                            *const I,
                            *const T,
                            *const T,
                            *const I,
                            *const T,
                            *const I,
                            *const T,
                            *mut T,
                            *const I,
                            usize,
                            usize,
                        );
                        let f: F<$I, T> = sym(&format!("{p}gemm{}", $suffix));
                        let (m, n, k, lda, ldb, ldc) = (
                            <$I>::of(m),
                            <$I>::of(n),
                            <$I>::of(k),
                            <$I>::of(lda),
                            <$I>::of(ldb),
                            <$I>::of(ldc),
                        );
                        f(
                            &ta,
                            &tb,
                            &m,
                            &n,
                            &k,
                            &alpha,
                            a.as_ptr(),
                            &lda,
                            b.as_ptr(),
                            &ldb,
                            &beta,
                            c.as_mut_ptr(),
                            &ldc,
                            1,
                            1,
                        )
                    }};
                }
                if api == Api::Fortran {
                    call!(i32, "_")
                } else {
                    call!(i64, "_64_")
                }
            }
            Api::Cblas => {
                let f: *const c_void = sym(&format!("cblas_{p}gemm"));
                cblas_gemm::<T, i32>(
                    f,
                    layout,
                    cblas_trans(ta),
                    cblas_trans(tb),
                    m as i32,
                    n as i32,
                    k as i32,
                    &alpha,
                    a.as_ptr(),
                    lda as i32,
                    b.as_ptr(),
                    ldb as i32,
                    &beta,
                    c.as_mut_ptr(),
                    ldc as i32,
                )
            }
            Api::Cblas64 => {
                let f: *const c_void = sym(&format!("cblas_{p}gemm64_"));
                cblas_gemm::<T, i64>(
                    f,
                    layout,
                    cblas_trans(ta),
                    cblas_trans(tb),
                    m,
                    n,
                    k,
                    &alpha,
                    a.as_ptr(),
                    lda,
                    b.as_ptr(),
                    ldb,
                    &beta,
                    c.as_mut_ptr(),
                    ldc,
                )
            }
        }
    }
    let rep = take_report();
    let (calls, got_name, got_info) = (rep.calls, rep.name, rep.info);
    let untouched = |c: &[T]| c.iter().zip(&c0).all(|(x, y)| x.same_bits(*y));
    match expected {
        Some((want_name, want_info)) => {
            if calls != 1 || got_name != want_name || got_info != want_info {
                return Err(format!(
                    "{case:?}: expected one report {want_name} {want_info}, got {calls} (last {got_name} {got_info})"
                ));
            }
            if !untouched(&c) {
                return Err(format!("{case:?}: an invalid call wrote C"));
            }
            return Ok(true);
        }
        None => {
            if calls != 0 {
                return Err(format!(
                    "{case:?}: a valid call reported {got_name} {got_info}"
                ));
            }
            let (fm, fn_, fk) = (fm as usize, fn_ as usize, k as usize);
            let (fa, fb, flda, fldb) = if row {
                (&b, &a, ldb, lda)
            } else {
                (&a, &b, lda, ldb)
            };
            let zero = T::make(0.0, 0.0);
            let one = T::make(1.0, 0.0);
            let quick = fm == 0 || fn_ == 0 || ((alpha == zero || fk == 0) && beta == one);
            if quick {
                if !untouched(&c) {
                    return Err(format!("{case:?}: a quick return changed C"));
                }
                return Ok(false);
            }
            let want = gemm_ref(
                fa_t,
                fb_t,
                fm,
                fn_,
                fk,
                alpha,
                fa,
                flda as usize,
                fb,
                fldb as usize,
                beta,
                &c0,
                ldc as usize,
            );
            let ldc = ldc as usize;
            for (x, (&got, &orig)) in c.iter().zip(&c0).enumerate() {
                let (i, j) = (x % ldc, x / ldc);
                if i < fm && j < fn_ {
                    let (v, bound) = want[i + j * fm];
                    let g = got.c();
                    let ok = if v.re.is_finite() && v.im.is_finite() {
                        (g - v).norm() <= bound
                    } else {
                        // NaN in C with beta != 0 propagates.
                        g.re.is_nan() || g.im.is_nan() || g == v
                    };
                    if !ok {
                        return Err(format!(
                            "{case:?}: C({i}, {j}) = {g}, expected {v} +- {bound:e}"
                        ));
                    }
                } else if !got.same_bits(orig) {
                    return Err(format!(
                        "{case:?}: C({i}, {j}) outside the matrix was written"
                    ));
                }
            }
        }
    }
    Ok(false)
}

fn a_cols_col(t: u8, r: i64, s: i64) -> i64 {
    if t.eq_ignore_ascii_case(&b'N') {
        s
    } else {
        r
    }
}
fn a_cols_row(t: u8, r: i64, s: i64) -> i64 {
    if t.eq_ignore_ascii_case(&b'N') {
        r
    } else {
        s
    }
}

/// `per` cases of each precision through each entry of each name family: (cases, invalid
/// calls, failures).
pub fn run(per: usize) -> (usize, usize, Vec<String>) {
    let (mut cases, mut invalid, mut wrong) = (0usize, 0usize, Vec::new());
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for (prefix, api) in PREFIXES
        .iter()
        .flat_map(|&p| Api::ALL.into_iter().map(move |a| (p, a)))
    {
        with_prefix(prefix, || {
            for p in 0..4 {
                for _ in 0..per {
                    let r = match p {
                        0 => gemm_case::<f32>(&mut rng, api),
                        1 => gemm_case::<f64>(&mut rng, api),
                        2 => gemm_case::<hetblas_refblas::num_complex::Complex32>(&mut rng, api),
                        _ => gemm_case::<C64>(&mut rng, api),
                    };
                    cases += 1;
                    match r {
                        Ok(true) => invalid += 1,
                        Ok(false) => {}
                        Err(e) => wrong.push(format!("{prefix}{api:?}: {e}")),
                    }
                }
            }
        });
    }
    (cases, invalid, wrong)
}
