//! Level 2 routines against an f64 / Complex64 reference, for every type, option, storage
//! (full, band, packed) and increment sign.

mod common;

use common::*;
use hetblas_refblas as rb;
use hetblas_refblas::Scalar;
use rand::rngs::StdRng;

/// (incx, incy) pairs: unit, gapped, negative.
const INCS: [(i64, i64); 3] = [(1, 1), (2, -1), (-3, 2)];

/// op(A)(i, j) of a logical dense m x n matrix (column-major, in C64).
fn op_dense(t: u8, a: &[C64], m: usize, i: usize, j: usize) -> C64 {
    match t {
        b'N' => a[i + j * m],
        b'T' => a[j + i * m],
        _ => a[j + i * m].conj(),
    }
}

fn gemv_gbmv_case<T: Scalar>() {
    let mut rng = rng(21);
    let shapes = [(0, 3), (3, 0), (1, 1), (4, 6), (7, 5)];
    // None: GEMV; Some((kl, ku)): GBMV.
    let bands = [None, Some((0, 0)), Some((1, 2)), Some((3, 1))];
    let mut case = 0;
    for band in bands {
        for trans in [b'N', b'T', b'C'] {
            for (m, n) in shapes {
                for alpha in scalars::<T>() {
                    for beta in scalars::<T>() {
                        let (incx, incy) = INCS[case % 3];
                        case += 1;
                        let ctx = format!(
                            "{} {} {} m={m} n={n} band={band:?} alpha={alpha:?} beta={beta:?} incs={incx},{incy}",
                            if band.is_some() { "gbmv" } else { "gemv" },
                            type_name::<T>(),
                            trans as char
                        );
                        // The logical matrix (zero outside the band) and its storage.
                        let (kl, ku) = band.unwrap_or((m.max(1) - 1, n.max(1) - 1));
                        let in_band = |i: usize, j: usize| i + ku >= j && i <= j + kl;
                        let mut dense = vec![C64::new(0.0, 0.0); m * n];
                        let lda = if band.is_some() { kl + ku + 3 } else { m + 2 };
                        let mut a = vec![nan::<T>(); lda * n.max(1)];
                        for j in 0..n {
                            for i in 0..m {
                                if in_band(i, j) {
                                    let v: T = rand_scalar(&mut rng);
                                    dense[i + j * m] = c(v);
                                    let k = if band.is_some() { ku + i - j } else { i };
                                    if !alpha.is_zero() {
                                        a[k + j * lda] = v;
                                    }
                                }
                            }
                        }
                        let (lx, ly) = if trans == b'N' { (n, m) } else { (m, n) };
                        let mut x = Vector::random(&mut rng, lx, incx, nan());
                        let mut y = Vector::random(&mut rng, ly, incy, sentinel());
                        if alpha.is_zero() {
                            x.fill(nan());
                        }
                        if beta.is_zero() {
                            y.fill(nan());
                        }
                        let y0 = y.clone();
                        // SAFETY: the operands have the shapes, strides and increments passed.
                        unsafe {
                            match band {
                                None => rb::gemv(
                                    trans,
                                    m as i64,
                                    n as i64,
                                    alpha,
                                    a.as_ptr(),
                                    lda as i64,
                                    x.data.as_ptr(),
                                    incx,
                                    beta,
                                    y.data.as_mut_ptr(),
                                    incy,
                                ),
                                Some((kl, ku)) => rb::gbmv(
                                    trans,
                                    m as i64,
                                    n as i64,
                                    kl as i64,
                                    ku as i64,
                                    alpha,
                                    a.as_ptr(),
                                    lda as i64,
                                    x.data.as_ptr(),
                                    incx,
                                    beta,
                                    y.data.as_mut_ptr(),
                                    incy,
                                ),
                            }
                        }
                        let quick = m == 0 || n == 0;
                        for i in 0..ly {
                            let mut want = if quick {
                                y0.cget(i)
                            } else {
                                C64::new(0.0, 0.0)
                            };
                            if !quick && !alpha.is_zero() {
                                for l in 0..lx {
                                    want += c(alpha) * op_dense(trans, &dense, m, i, l) * x.cget(l);
                                }
                            }
                            if !quick && !beta.is_zero() {
                                want += c(beta) * y0.cget(i);
                            }
                            if quick && beta.is_zero() {
                                // y is not touched at all: it still holds its NaN.
                                assert!(y.cget(i).re.is_nan(), "{ctx}");
                                continue;
                            }
                            assert_close(y.cget(i), want, bound::<T>(lx, lx as f64), &ctx);
                        }
                        assert!(y.gaps_untouched(), "{ctx}: gaps of y written");
                    }
                }
            }
        }
    }
}

#[test]
fn gemv_gbmv_every_type_and_option() {
    for_each_type!(gemv_gbmv_case);
}

/// The storages of a symmetric, Hermitian or triangular matrix.
#[derive(Clone, Copy, Debug)]
enum St {
    Full,
    Band(usize),
    Packed,
}

/// Leading dimension (2 padding rows) and length of storage `st` of an n x n matrix.
fn st_shape(st: St, n: usize) -> (usize, usize) {
    match st {
        St::Full => (n + 2, (n + 2) * n.max(1)),
        St::Band(k) => (k + 3, (k + 3) * n.max(1)),
        St::Packed => (0, (n * (n + 1) / 2).max(1)),
    }
}

/// Whether (i, j) is in the stored triangle (and band).
fn st_stored(st: St, upper: bool, i: usize, j: usize) -> bool {
    let tri = if upper { i <= j } else { i >= j };
    match st {
        St::Band(k) => tri && i.abs_diff(j) <= k,
        _ => tri,
    }
}

/// Index of stored entry (i, j).
fn st_idx(st: St, upper: bool, n: usize, lda: usize, i: usize, j: usize) -> usize {
    match st {
        St::Full => i + j * lda,
        St::Band(k) => {
            if upper {
                k + i - j + j * lda
            } else {
                i - j + j * lda
            }
        }
        St::Packed => {
            if upper {
                i + j * (j + 1) / 2
            } else {
                i + j * (2 * n - j - 1) / 2
            }
        }
    }
}

const STORAGES: [St; 5] = [St::Full, St::Band(0), St::Band(1), St::Band(3), St::Packed];

fn sym_mv_case<T: Scalar>() {
    let mut rng = rng(22);
    let mut case = 0;
    for herm in [false, true] {
        for st in STORAGES {
            for uplo in [b'U', b'L'] {
                for n in [0, 1, 4, 7] {
                    for alpha in scalars::<T>() {
                        for beta in scalars::<T>() {
                            let (incx, incy) = INCS[case % 3];
                            case += 1;
                            let ctx = format!(
                                "{}{} {} {st:?} {} n={n} alpha={alpha:?} beta={beta:?} incs={incx},{incy}",
                                if herm { "he" } else { "sy" },
                                "mv",
                                type_name::<T>(),
                                uplo as char
                            );
                            let upper = uplo == b'U';
                            let (lda, len) = st_shape(st, n);
                            let mut a = vec![nan::<T>(); len];
                            // The logical full matrix.
                            let mut dense = vec![C64::new(0.0, 0.0); n * n];
                            for j in 0..n {
                                for i in 0..n {
                                    if !st_stored(st, upper, i, j) {
                                        continue;
                                    }
                                    let v: T = rand_scalar(&mut rng);
                                    let mut vc = c(v);
                                    let mut stored = v;
                                    if herm && i == j {
                                        vc = C64::new(vc.re, 0.0);
                                        if T::IS_COMPLEX {
                                            // The imaginary part of the diagonal is not read.
                                            stored = T::from_c64(C64::new(vc.re, f64::NAN));
                                        }
                                    }
                                    dense[i + j * n] = vc;
                                    dense[j + i * n] = cj(vc, herm);
                                    if !alpha.is_zero() {
                                        a[st_idx(st, upper, n, lda, i, j)] = stored;
                                    }
                                }
                            }
                            let mut x = Vector::random(&mut rng, n, incx, nan());
                            let mut y = Vector::random(&mut rng, n, incy, sentinel());
                            if alpha.is_zero() {
                                x.fill(nan());
                            }
                            if beta.is_zero() {
                                y.fill(nan());
                            }
                            let y0 = y.clone();
                            let (ni, ap, xp, yp) =
                                (n as i64, a.as_ptr(), x.data.as_ptr(), y.data.as_mut_ptr());
                            let ldai = lda as i64;
                            // SAFETY: the operands have the storage, strides and increments passed.
                            unsafe {
                                match (herm, st) {
                                    (false, St::Full) => rb::symv(
                                        uplo, ni, alpha, ap, ldai, xp, incx, beta, yp, incy,
                                    ),
                                    (true, St::Full) => rb::hemv(
                                        uplo, ni, alpha, ap, ldai, xp, incx, beta, yp, incy,
                                    ),
                                    (false, St::Band(k)) => rb::sbmv(
                                        uplo, ni, k as i64, alpha, ap, ldai, xp, incx, beta, yp,
                                        incy,
                                    ),
                                    (true, St::Band(k)) => rb::hbmv(
                                        uplo, ni, k as i64, alpha, ap, ldai, xp, incx, beta, yp,
                                        incy,
                                    ),
                                    (false, St::Packed) => {
                                        rb::spmv(uplo, ni, alpha, ap, xp, incx, beta, yp, incy)
                                    }
                                    (true, St::Packed) => {
                                        rb::hpmv(uplo, ni, alpha, ap, xp, incx, beta, yp, incy)
                                    }
                                }
                            }
                            for i in 0..n {
                                let mut want = C64::new(0.0, 0.0);
                                if !alpha.is_zero() {
                                    for l in 0..n {
                                        want += c(alpha) * dense[i + l * n] * x.cget(l);
                                    }
                                }
                                if !beta.is_zero() {
                                    want += c(beta) * y0.cget(i);
                                }
                                assert_close(y.cget(i), want, bound::<T>(n, n as f64), &ctx);
                            }
                            assert!(y.gaps_untouched(), "{ctx}: gaps of y written");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn symv_hemv_sbmv_hbmv_spmv_hpmv_every_type_and_option() {
    for_each_type!(sym_mv_case);
}

fn tri_case<T: Scalar>() {
    let mut rng = rng(23);
    let mut case = 0;
    for solve in [false, true] {
        for st in STORAGES {
            for uplo in [b'U', b'L'] {
                for trans in [b'N', b'T', b'C'] {
                    for diag in [b'U', b'N'] {
                        for n in [0, 1, 4, 7] {
                            let incx = [1, -2, 3][case % 3];
                            case += 1;
                            let ctx = format!(
                                "{} {} {st:?} {}{}{} n={n} incx={incx}",
                                if solve { "trsv" } else { "trmv" },
                                type_name::<T>(),
                                uplo as char,
                                trans as char,
                                diag as char
                            );
                            let upper = uplo == b'U';
                            let (lda, len) = st_shape(st, n);
                            let mut a = vec![nan::<T>(); len];
                            // The logical triangular matrix, well-conditioned for the solves.
                            let mut dense = vec![C64::new(0.0, 0.0); n * n];
                            for j in 0..n {
                                for i in 0..n {
                                    if !st_stored(st, upper, i, j) {
                                        continue;
                                    }
                                    let v: T = rand_scalar(&mut rng);
                                    let (stored, vc) = if i == j {
                                        if diag == b'U' {
                                            (nan(), C64::new(1.0, 0.0))
                                        } else {
                                            let d = T::from_real(v.abs1()) + T::one();
                                            (d, c(d))
                                        }
                                    } else {
                                        let s = T::from_c64(c(v) / n as f64);
                                        (s, c(s))
                                    };
                                    dense[i + j * n] = vc;
                                    a[st_idx(st, upper, n, lda, i, j)] = stored;
                                }
                            }
                            let mut x = Vector::random(&mut rng, n, incx, sentinel());
                            let x0 = x.clone();
                            let (ni, ap, xp, ldai) =
                                (n as i64, a.as_ptr(), x.data.as_mut_ptr(), lda as i64);
                            // SAFETY: the operands have the storage, strides and increments passed.
                            unsafe {
                                match (solve, st) {
                                    (false, St::Full) => {
                                        rb::trmv(uplo, trans, diag, ni, ap, ldai, xp, incx)
                                    }
                                    (true, St::Full) => {
                                        rb::trsv(uplo, trans, diag, ni, ap, ldai, xp, incx)
                                    }
                                    (false, St::Band(k)) => rb::tbmv(
                                        uplo, trans, diag, ni, k as i64, ap, ldai, xp, incx,
                                    ),
                                    (true, St::Band(k)) => rb::tbsv(
                                        uplo, trans, diag, ni, k as i64, ap, ldai, xp, incx,
                                    ),
                                    (false, St::Packed) => {
                                        rb::tpmv(uplo, trans, diag, ni, ap, xp, incx)
                                    }
                                    (true, St::Packed) => {
                                        rb::tpsv(uplo, trans, diag, ni, ap, xp, incx)
                                    }
                                }
                            }
                            // trmv: x == op(A)*x0; trsv: op(A)*x == x0 (residual).
                            let (vin, vout) = if solve { (&x, &x0) } else { (&x0, &x) };
                            for i in 0..n {
                                let mut prod = C64::new(0.0, 0.0);
                                for l in 0..n {
                                    prod += op_dense(trans, &dense, n, i, l) * vin.cget(l);
                                }
                                assert_close(prod, vout.cget(i), bound::<T>(n, 4.0), &ctx);
                            }
                            assert!(x.gaps_untouched(), "{ctx}: gaps of x written");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn trmv_tbmv_tpmv_trsv_tbsv_tpsv_every_type_and_option() {
    for_each_type!(tri_case);
}

fn ger_case<T: Scalar>() {
    let mut rng = rng(24);
    let mut case = 0;
    for conj in [false, true] {
        for (m, n) in [(0, 3), (3, 0), (1, 1), (4, 6), (7, 5)] {
            for alpha in scalars::<T>() {
                let (incx, incy) = INCS[case % 3];
                case += 1;
                let ctx = format!(
                    "{} {} m={m} n={n} alpha={alpha:?} incs={incx},{incy}",
                    if conj { "gerc" } else { "geru" },
                    type_name::<T>()
                );
                let mut a = Mat::random(&mut rng, m, n, sentinel());
                let mut x = Vector::random(&mut rng, m, incx, nan());
                let mut y = Vector::random(&mut rng, n, incy, nan());
                if alpha.is_zero() {
                    x.fill(nan());
                    y.fill(nan());
                }
                let a0 = a.clone();
                let (mi, ni, xp, yp, ap, ld) = (
                    m as i64,
                    n as i64,
                    x.data.as_ptr(),
                    y.data.as_ptr(),
                    a.data.as_mut_ptr(),
                    a.ld_i64(),
                );
                // SAFETY: the operands have the shapes and increments passed.
                unsafe {
                    if conj {
                        rb::gerc(mi, ni, alpha, xp, incx, yp, incy, ap, ld)
                    } else if T::IS_COMPLEX {
                        rb::geru(mi, ni, alpha, xp, incx, yp, incy, ap, ld)
                    } else {
                        rb::ger(mi, ni, alpha, xp, incx, yp, incy, ap, ld)
                    }
                }
                for j in 0..n {
                    for i in 0..m {
                        let mut want = a0.cget(i, j);
                        if !alpha.is_zero() {
                            want += c(alpha) * x.cget(i) * cj(y.cget(j), conj);
                        }
                        assert_close(a.cget(i, j), want, bound::<T>(2, 2.0), &ctx);
                    }
                }
                assert_padding(&a, &ctx);
            }
        }
    }
}

#[test]
fn ger_geru_gerc_every_type_and_option() {
    for_each_type!(ger_case);
}

/// One SYR/SPR/SYR2/SPR2/HER/HPR/HER2/HPR2 call, checked.
#[allow(clippy::too_many_arguments)] // reason: the options of the call under test
fn sym_rank_one<T: Scalar>(
    rng: &mut StdRng,
    herm: bool,
    two: bool,
    st: St,
    uplo: u8,
    n: usize,
    alpha: T,
    incs: (i64, i64),
) {
    let (incx, incy) = incs;
    let ctx = format!(
        "{}{} {} {st:?} {} n={n} alpha={alpha:?} incs={incx},{incy}",
        if herm { "her" } else { "syr" },
        if two { "2" } else { "" },
        type_name::<T>(),
        uplo as char
    );
    let upper = uplo == b'U';
    let (lda, len) = st_shape(st, n);
    // The stored triangle random (the diagonal complex even for herm: it must come back real),
    // everything else the sentinel.
    let mut a = vec![sentinel::<T>(); len];
    for j in 0..n {
        for i in 0..n {
            if st_stored(st, upper, i, j) {
                a[st_idx(st, upper, n, lda, i, j)] = rand_scalar(rng);
            }
        }
    }
    let mut x = Vector::random(rng, n, incx, nan());
    let mut y = Vector::random(rng, n, incy, nan());
    if alpha.is_zero() {
        x.fill(nan());
        y.fill(nan());
    }
    let a0 = a.clone();
    let (ni, xp, yp, ap, ldai) = (
        n as i64,
        x.data.as_ptr(),
        y.data.as_ptr(),
        a.as_mut_ptr(),
        lda as i64,
    );
    let ar = alpha.re();
    // SAFETY: the operands have the storage and increments passed.
    unsafe {
        match (herm, two, st) {
            (false, false, St::Full) => rb::syr(uplo, ni, alpha, xp, incx, ap, ldai),
            (false, false, _) => rb::spr(uplo, ni, alpha, xp, incx, ap),
            (true, false, St::Full) => rb::her(uplo, ni, ar, xp, incx, ap, ldai),
            (true, false, _) => rb::hpr(uplo, ni, ar, xp, incx, ap),
            (false, true, St::Full) => rb::syr2(uplo, ni, alpha, xp, incx, yp, incy, ap, ldai),
            (false, true, _) => rb::spr2(uplo, ni, alpha, xp, incx, yp, incy, ap),
            (true, true, St::Full) => rb::her2(uplo, ni, alpha, xp, incx, yp, incy, ap, ldai),
            (true, true, _) => rb::hpr2(uplo, ni, alpha, xp, incx, yp, incy, ap),
        }
    }
    let alpha_c = if herm && !two {
        C64::new(c(alpha).re, 0.0)
    } else {
        c(alpha)
    };
    for j in 0..n {
        for i in 0..n {
            if !st_stored(st, upper, i, j) {
                continue;
            }
            let k = st_idx(st, upper, n, lda, i, j);
            let mut want = c(a0[k]);
            if !alpha.is_zero() {
                if two {
                    want += alpha_c * x.cget(i) * cj(y.cget(j), herm)
                        + cj(alpha_c, herm) * y.cget(i) * cj(x.cget(j), herm);
                } else {
                    want += alpha_c * x.cget(i) * cj(x.cget(j), herm);
                }
                if herm && i == j {
                    want = C64::new(want.re, 0.0);
                    assert_eq!(c(a[k]).im, 0.0, "{ctx}: diagonal ({i}) not made real");
                }
            }
            assert_close(c(a[k]), want, bound::<T>(2, 2.0), &ctx);
        }
    }
    // Nothing outside the stored triangle (and no padding) is written.
    for (k, v) in a.iter().enumerate() {
        let stored = (0..n).any(|j| {
            (0..n).any(|i| st_stored(st, upper, i, j) && st_idx(st, upper, n, lda, i, j) == k)
        });
        assert!(
            stored || is_sentinel(*v),
            "{ctx}: element {k} outside the triangle written"
        );
    }
}

fn sym_rank_case<T: Scalar>() {
    let mut rng = rng(25);
    let mut case = 0;
    for herm in [false, true] {
        for two in [false, true] {
            for st in [St::Full, St::Packed] {
                for uplo in [b'U', b'L'] {
                    for n in [0, 1, 4, 7] {
                        for alpha in scalars::<T>() {
                            let alpha = if herm && !two {
                                T::from_real(alpha.re())
                            } else {
                                alpha
                            };
                            sym_rank_one(&mut rng, herm, two, st, uplo, n, alpha, INCS[case % 3]);
                            case += 1;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn syr_spr_syr2_spr2_her_hpr_her2_hpr2_every_type_and_option() {
    for_each_type!(sym_rank_case);
}
