//! Level 3 routines against an f64 / Complex64 reference, for every type and option.

mod common;

use common::*;
use hetblas_refblas::{gemm, gemmt, hemm, her2k, herk, symm, syr2k, syrk, trmm, trsm, Scalar};

/// op(A)(i, l) in the reference arithmetic.
fn op<T: Scalar>(t: u8, a: &Mat<T>, i: usize, l: usize) -> C64 {
    match t.to_ascii_uppercase() {
        b'N' => a.cget(i, l),
        b'T' => a.cget(l, i),
        _ => a.cget(l, i).conj(),
    }
}

/// Shapes (m, n, k) with zero, unit, odd and, last, one above the blocked-GEMM threshold.
const SHAPES: [(usize, usize, usize); 7] = [
    (0, 3, 2),
    (3, 0, 2),
    (3, 2, 0),
    (1, 1, 1),
    (4, 3, 5),
    (7, 9, 6),
    (70, 50, 40),
];

fn gemm_case<T: Scalar>() {
    let mut rng = rng(31);
    for ta in [b'N', b't', b'C'] {
        for tb in [b'n', b'T', b'c'] {
            for (m, n, k) in SHAPES {
                for alpha in scalars::<T>() {
                    for beta in scalars::<T>() {
                        let ctx = format!(
                            "gemm {} {}{} m={m} n={n} k={k} alpha={alpha:?} beta={beta:?}",
                            type_name::<T>(),
                            ta as char,
                            tb as char
                        );
                        let (ar, ac) = if ta == b'N' { (m, k) } else { (k, m) };
                        let (br, bc) = if tb == b'n' { (k, n) } else { (n, k) };
                        let mut a = Mat::random(&mut rng, ar, ac, nan());
                        let mut b = Mat::random(&mut rng, br, bc, nan());
                        let mut cm = Mat::random(&mut rng, m, n, sentinel());
                        if alpha.is_zero() {
                            a.fill(nan());
                            b.fill(nan());
                        }
                        if beta.is_zero() {
                            cm.fill(nan());
                        }
                        let c0 = cm.clone();
                        // SAFETY: the operands have the shapes and leading dimensions passed.
                        unsafe {
                            gemm(
                                ta,
                                tb,
                                m as i64,
                                n as i64,
                                k as i64,
                                alpha,
                                a.data.as_ptr(),
                                a.ld_i64(),
                                b.data.as_ptr(),
                                b.ld_i64(),
                                beta,
                                cm.data.as_mut_ptr(),
                                cm.ld_i64(),
                            )
                        };
                        for j in 0..n {
                            for i in 0..m {
                                let mut want = C64::new(0.0, 0.0);
                                if !alpha.is_zero() {
                                    for l in 0..k {
                                        want += c(alpha) * op(ta, &a, i, l) * op(tb, &b, l, j);
                                    }
                                }
                                if !beta.is_zero() {
                                    want += c(beta) * c0.cget(i, j);
                                }
                                assert_close(cm.cget(i, j), want, bound::<T>(k, k as f64), &ctx);
                            }
                        }
                        assert_padding(&cm, &ctx);
                    }
                }
            }
        }
    }
}

#[test]
fn gemm_every_type_and_option() {
    for_each_type!(gemm_case);
}

/// GEMMT's (n, k): zero, unit and odd sizes in the loops, then the blocked path (n >= 128:
/// rectangles beside 64-wide diagonal blocks, the last narrower, through GEMM's loops for k = 3
/// and its blocked kernels for k = 9).
const GEMMT_SHAPES: [(usize, usize); 7] =
    [(0, 2), (3, 0), (1, 1), (4, 5), (9, 6), (130, 3), (140, 9)];

/// GEMMT: the `uplo` triangle of `alpha op(A) op(B) + beta C` against the f64 reference; the
/// other triangle holds NaN and must come back bit for bit (neither read nor written), as must
/// C's padding. NaN also fills what the reference does not read: C's triangle when beta = 0,
/// A and B when alpha = 0.
fn gemmt_case<T: Scalar>() {
    let mut rng = rng(37);
    for uplo in [b'U', b'l'] {
        for ta in [b'N', b't', b'C'] {
            for tb in [b'n', b'T', b'c'] {
                for (n, k) in GEMMT_SHAPES {
                    for alpha in scalars::<T>() {
                        for beta in scalars::<T>() {
                            let ctx = format!(
                                "gemmt {} {}{}{} n={n} k={k} alpha={alpha:?} beta={beta:?}",
                                type_name::<T>(),
                                uplo as char,
                                ta as char,
                                tb as char
                            );
                            let (ar, ac) = if ta == b'N' { (n, k) } else { (k, n) };
                            let (br, bc) = if tb == b'n' { (k, n) } else { (n, k) };
                            let mut a = Mat::random(&mut rng, ar, ac, nan());
                            let mut b = Mat::random(&mut rng, br, bc, nan());
                            let mut cm = Mat::random(&mut rng, n, n, sentinel());
                            if alpha.is_zero() {
                                a.fill(nan());
                                b.fill(nan());
                            }
                            let upper = uplo == b'U';
                            let inside = |i: usize, j: usize| if upper { i <= j } else { i >= j };
                            for j in 0..n {
                                for i in 0..n {
                                    if !inside(i, j) || beta.is_zero() {
                                        cm.set(i, j, nan());
                                    }
                                }
                            }
                            let c0 = cm.clone();
                            // SAFETY: the operands have the shapes and leading dimensions passed.
                            unsafe {
                                gemmt(
                                    uplo,
                                    ta,
                                    tb,
                                    n as i64,
                                    k as i64,
                                    alpha,
                                    a.data.as_ptr(),
                                    a.ld_i64(),
                                    b.data.as_ptr(),
                                    b.ld_i64(),
                                    beta,
                                    cm.data.as_mut_ptr(),
                                    cm.ld_i64(),
                                )
                            };
                            for j in 0..n {
                                for i in 0..n {
                                    if !inside(i, j) {
                                        let (got, was) = (cm.cget(i, j), c0.cget(i, j));
                                        assert!(
                                            got.re.to_bits() == was.re.to_bits()
                                                && got.im.to_bits() == was.im.to_bits(),
                                            "{ctx}: C({i}, {j}) outside the triangle changed"
                                        );
                                        continue;
                                    }
                                    let mut want = C64::new(0.0, 0.0);
                                    if !alpha.is_zero() {
                                        for l in 0..k {
                                            want += c(alpha) * op(ta, &a, i, l) * op(tb, &b, l, j);
                                        }
                                    }
                                    if !beta.is_zero() {
                                        want += c(beta) * c0.cget(i, j);
                                    }
                                    assert_close(
                                        cm.cget(i, j),
                                        want,
                                        bound::<T>(k, k as f64),
                                        &ctx,
                                    );
                                }
                            }
                            assert_padding(&cm, &ctx);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn gemmt_every_type_and_option() {
    for_each_type!(gemmt_case);
}

/// A random square matrix with only the `uplo` triangle stored: the other one holds NaN; with
/// `herm_diag`, the diagonal's imaginary part holds NaN too (it must not be read).
fn stored_triangle<T: Scalar>(
    rng: &mut rand::rngs::StdRng,
    n: usize,
    uplo: u8,
    herm_diag: bool,
) -> Mat<T> {
    let mut a = Mat::random(rng, n, n, nan());
    for j in 0..n {
        for i in 0..n {
            let stored = if uplo == b'U' { i <= j } else { i >= j };
            if !stored {
                a.set(i, j, nan());
            } else if i == j && herm_diag && T::IS_COMPLEX {
                let d = a.cget(i, i);
                a.set(i, i, T::from_c64(C64::new(d.re, f64::NAN)));
            }
        }
    }
    a
}

/// Entry (i, j) of the full symmetric / Hermitian matrix stored in `a`'s `uplo` triangle.
fn full_sym<T: Scalar>(a: &Mat<T>, uplo: u8, herm: bool, i: usize, j: usize) -> C64 {
    if i == j {
        let d = a.cget(i, i);
        return if herm { C64::new(d.re, 0.0) } else { d };
    }
    let stored = if uplo == b'U' { i < j } else { i > j };
    if stored {
        a.cget(i, j)
    } else {
        cj(a.cget(j, i), herm)
    }
}

const SHAPES2: [(usize, usize); 5] = [(0, 3), (3, 0), (1, 1), (5, 3), (6, 11)];

/// Shapes whose A (m x m for side 'L', n x n for 'R') is expanded in more than one panel.
const PANELLED_SYMM: [(usize, usize); 2] = [(300, 4), (4, 300)];

fn symm_hemm_case<T: Scalar>() {
    let mut rng = rng(32);
    for herm in [false, true] {
        for side in [b'L', b'r'] {
            for uplo in [b'U', b'L'] {
                for (m, n) in SHAPES2.into_iter().chain(PANELLED_SYMM) {
                    for alpha in scalars::<T>() {
                        for beta in scalars::<T>() {
                            if m.max(n) > 256 && (alpha != scalars::<T>()[2] || beta == T::one()) {
                                // The panelled shapes with a general alpha, beta 0 or general.
                                continue;
                            }
                            let name = if herm { "hemm" } else { "symm" };
                            let ctx = format!(
                                "{name} {} {}{} m={m} n={n} alpha={alpha:?} beta={beta:?}",
                                type_name::<T>(),
                                side as char,
                                uplo as char
                            );
                            let left = side == b'L';
                            let na = if left { m } else { n };
                            let mut a = stored_triangle::<T>(&mut rng, na, uplo, herm);
                            let mut b = Mat::random(&mut rng, m, n, nan());
                            let mut cm = Mat::random(&mut rng, m, n, sentinel());
                            if alpha.is_zero() {
                                a.fill(nan());
                                b.fill(nan());
                            }
                            if beta.is_zero() {
                                cm.fill(nan());
                            }
                            let c0 = cm.clone();
                            let f = if herm { hemm::<T> } else { symm::<T> };
                            // SAFETY: the operands have the shapes and leading dimensions passed.
                            unsafe {
                                f(
                                    side,
                                    uplo,
                                    m as i64,
                                    n as i64,
                                    alpha,
                                    a.data.as_ptr(),
                                    a.ld_i64(),
                                    b.data.as_ptr(),
                                    b.ld_i64(),
                                    beta,
                                    cm.data.as_mut_ptr(),
                                    cm.ld_i64(),
                                )
                            };
                            for j in 0..n {
                                for i in 0..m {
                                    let mut want = C64::new(0.0, 0.0);
                                    if !alpha.is_zero() {
                                        for l in 0..na {
                                            want += c(alpha)
                                                * if left {
                                                    full_sym(&a, uplo, herm, i, l) * b.cget(l, j)
                                                } else {
                                                    b.cget(i, l) * full_sym(&a, uplo, herm, l, j)
                                                };
                                        }
                                    }
                                    if !beta.is_zero() {
                                        want += c(beta) * c0.cget(i, j);
                                    }
                                    assert_close(
                                        cm.cget(i, j),
                                        want,
                                        bound::<T>(na, na as f64),
                                        &ctx,
                                    );
                                }
                            }
                            assert_padding(&cm, &ctx);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn symm_hemm_every_type_and_option() {
    for_each_type!(symm_hemm_case);
}

/// Runs one SYRK/HERK/SYR2K/HER2K call and checks it. `two`: rank-2k; `herm`: Hermitian.
#[allow(clippy::too_many_arguments)] // reason: the options of the call under test
fn rank_k_one<T: Scalar>(
    rng: &mut rand::rngs::StdRng,
    two: bool,
    herm: bool,
    uplo: u8,
    trans: u8,
    n: usize,
    k: usize,
    alpha: T,
    beta: T,
) {
    let name = match (two, herm) {
        (false, false) => "syrk",
        (false, true) => "herk",
        (true, false) => "syr2k",
        (true, true) => "her2k",
    };
    let ctx = format!(
        "{name} {} {}{} n={n} k={k} alpha={alpha:?} beta={beta:?}",
        type_name::<T>(),
        uplo as char,
        trans as char
    );
    let notrans = trans == b'N';
    let (ar, ac) = if notrans { (n, k) } else { (k, n) };
    let mut a = Mat::random(rng, ar, ac, nan());
    let mut b = Mat::random(rng, ar, ac, nan());
    // C: the referenced triangle random (NaN when beta == 0), the other one the sentinel.
    let mut cm = Mat::random(rng, n, n, sentinel());
    for j in 0..n {
        for i in 0..n {
            let referenced = if uplo == b'U' { i <= j } else { i >= j };
            if !referenced {
                cm.set(i, j, sentinel());
            } else if beta.is_zero() {
                cm.set(i, j, nan());
            }
        }
    }
    if alpha.is_zero() {
        a.fill(nan());
        b.fill(nan());
    }
    let c0 = cm.clone();
    let (ap, bp, cp) = (a.data.as_ptr(), b.data.as_ptr(), cm.data.as_mut_ptr());
    let (ni, ki, lda, ldb, ldc) = (n as i64, k as i64, a.ld_i64(), b.ld_i64(), cm.ld_i64());
    // SAFETY: the operands have the shapes and leading dimensions passed.
    unsafe {
        match (two, herm) {
            (false, false) => syrk(uplo, trans, ni, ki, alpha, ap, lda, beta, cp, ldc),
            (false, true) => herk(uplo, trans, ni, ki, alpha.re(), ap, lda, beta.re(), cp, ldc),
            (true, false) => syr2k(uplo, trans, ni, ki, alpha, ap, lda, bp, ldb, beta, cp, ldc),
            (true, true) => her2k(
                uplo,
                trans,
                ni,
                ki,
                alpha,
                ap,
                lda,
                bp,
                ldb,
                beta.re(),
                cp,
                ldc,
            ),
        }
    }
    // op(X)(i, l): X(i, l) for 'N', else X(l, i), conjugated for the Hermitian routines.
    let opx = |x: &Mat<T>, i: usize, l: usize| {
        if notrans {
            x.cget(i, l)
        } else {
            cj(x.cget(l, i), herm)
        }
    };
    let (alpha_c, beta_c) = if herm {
        (
            if two {
                c(alpha)
            } else {
                C64::new(alpha.re().to_c64().re, 0.0)
            },
            C64::new(c(beta).re, 0.0),
        )
    } else {
        (c(alpha), c(beta))
    };
    let quick = (alpha.is_zero() || k == 0) && beta == T::one();
    for j in 0..n {
        for i in 0..n {
            let referenced = if uplo == b'U' { i <= j } else { i >= j };
            if !referenced {
                assert!(
                    is_sentinel(cm.get(i, j)),
                    "{ctx}: ({i}, {j}) outside the triangle written"
                );
                continue;
            }
            let mut want = C64::new(0.0, 0.0);
            if !alpha.is_zero() {
                for l in 0..k {
                    // sum op(A)(i,l) * cj(op(B)(j,l)) [+ cj(alpha) op(B)(i,l) cj(op(A)(j,l))]
                    if two {
                        want += alpha_c * opx(&a, i, l) * cj(opx(&b, j, l), herm);
                        want += cj(alpha_c, herm) * opx(&b, i, l) * cj(opx(&a, j, l), herm);
                    } else {
                        want += alpha_c * opx(&a, i, l) * cj(opx(&a, j, l), herm);
                    }
                }
            }
            if !beta.is_zero() {
                want += beta_c
                    * if herm && i == j {
                        C64::new(c0.cget(i, j).re, 0.0)
                    } else {
                        c0.cget(i, j)
                    };
            }
            if herm && i == j && !quick {
                assert_eq!(cm.cget(i, i).im, 0.0, "{ctx}: diagonal ({i}) not made real");
            }
            if herm && i == j && quick {
                want = c0.cget(i, j);
            }
            assert_close(cm.cget(i, j), want, bound::<T>(2 * k, 2.0 * k as f64), &ctx);
        }
    }
    assert_padding(&cm, &ctx);
}

fn rank_k_case<T: Scalar>() {
    let mut rng = rng(33);
    // The last shape runs the blocked update (column blocks of 64, GEMM beside the diagonal).
    let shapes = [(0, 2), (3, 0), (1, 1), (5, 3), (9, 4), (150, 20)];
    for (two, herm) in [(false, false), (false, true), (true, false), (true, true)] {
        let transes: &[u8] = match (herm, T::IS_COMPLEX) {
            (true, _) => b"NC",
            (false, true) => b"NT",
            (false, false) => b"NTC",
        };
        for uplo in [b'U', b'L'] {
            for &trans in transes {
                for (n, k) in shapes {
                    for alpha in scalars::<T>() {
                        for beta in scalars::<T>() {
                            if n > 100 && (alpha.is_zero() || alpha == T::one() || beta == T::one())
                            {
                                // The large shape with a general alpha and beta 0 or general only.
                                continue;
                            }
                            // HERK's alpha and HER2K's / HERK's beta are real.
                            let alpha = if herm && !two {
                                T::from_real(alpha.re())
                            } else {
                                alpha
                            };
                            let beta = if herm { T::from_real(beta.re()) } else { beta };
                            rank_k_one(&mut rng, two, herm, uplo, trans, n, k, alpha, beta);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn syrk_herk_syr2k_her2k_every_type_and_option() {
    for_each_type!(rank_k_case);
}

/// A well-conditioned triangular matrix with only the `uplo` triangle stored (off-diagonal
/// entries below 1/n, diagonal in [1, 2)); NaN elsewhere, and on the diagonal when `diag == 'U'`.
fn triangle<T: Scalar>(rng: &mut rand::rngs::StdRng, n: usize, uplo: u8, diag: u8) -> Mat<T> {
    let mut a: Mat<T> = Mat::random(rng, n, n, nan());
    let scale = T::from_real(<T::Real as hetblas_refblas::Real>::from_f64(
        1.0 / n.max(1) as f64,
    ));
    for j in 0..n {
        for i in 0..n {
            let stored = if uplo == b'U' { i < j } else { i > j };
            if i == j {
                let v = if diag == b'U' {
                    nan()
                } else {
                    T::from_real(a.get(i, i).abs1()) + T::one()
                };
                a.set(i, i, v);
            } else if stored {
                a.set(i, j, a.get(i, j) * scale);
            } else {
                a.set(i, j, nan());
            }
        }
    }
    a
}

/// op(A)(i, l) of the triangular matrix stored in `a` (zeros outside, ones on a unit diagonal).
fn op_tri<T: Scalar>(t: u8, a: &Mat<T>, uplo: u8, diag: u8, i: usize, l: usize) -> C64 {
    let (r, col) = if t == b'N' { (i, l) } else { (l, i) };
    let v = if r == col {
        if diag == b'U' {
            C64::new(1.0, 0.0)
        } else {
            a.cget(r, col)
        }
    } else if (uplo == b'U') == (r < col) {
        a.cget(r, col)
    } else {
        C64::new(0.0, 0.0)
    };
    cj(v, t == b'C')
}

/// Shapes whose triangular order (m for side 'L', n for 'R') runs the blocked TRMM / TRSM.
const BLOCKED_TRI: [(usize, usize); 2] = [(140, 20), (20, 140)];

fn trmm_trsm_case<T: Scalar>() {
    let mut rng = rng(34);
    for solve in [false, true] {
        for side in [b'L', b'R'] {
            for uplo in [b'U', b'L'] {
                for transa in [b'N', b'T', b'C'] {
                    for diag in [b'U', b'N'] {
                        for (m, n) in SHAPES2.into_iter().chain(BLOCKED_TRI) {
                            for alpha in scalars::<T>() {
                                if m.max(n) > 100 && alpha != scalars::<T>()[2] {
                                    // The blocked shapes with a general alpha only.
                                    continue;
                                }
                                let name = if solve { "trsm" } else { "trmm" };
                                let ctx = format!(
                                    "{name} {} {}{}{}{} m={m} n={n} alpha={alpha:?}",
                                    type_name::<T>(),
                                    side as char,
                                    uplo as char,
                                    transa as char,
                                    diag as char
                                );
                                let left = side == b'L';
                                let na = if left { m } else { n };
                                let mut a = triangle::<T>(&mut rng, na, uplo, diag);
                                let mut b = Mat::random(&mut rng, m, n, sentinel());
                                if alpha.is_zero() {
                                    a.fill(nan());
                                    b.fill(nan());
                                }
                                let b0 = b.clone();
                                let f = if solve { trsm::<T> } else { trmm::<T> };
                                // SAFETY: the operands have the shapes and leading dimensions passed.
                                unsafe {
                                    f(
                                        side,
                                        uplo,
                                        transa,
                                        diag,
                                        m as i64,
                                        n as i64,
                                        alpha,
                                        a.data.as_ptr(),
                                        a.ld_i64(),
                                        b.data.as_mut_ptr(),
                                        b.ld_i64(),
                                    )
                                };
                                // trmm: B == alpha*op(A)*B0; trsm: op(A)*B == alpha*B0 (residual).
                                let (lhs_of, rhs) = if solve { (&b, &b0) } else { (&b0, &b) };
                                for j in 0..n {
                                    for i in 0..m {
                                        let mut prod = C64::new(0.0, 0.0);
                                        if !alpha.is_zero() {
                                            for l in 0..na {
                                                prod += if left {
                                                    op_tri(transa, &a, uplo, diag, i, l)
                                                        * lhs_of.cget(l, j)
                                                } else {
                                                    lhs_of.cget(i, l)
                                                        * op_tri(transa, &a, uplo, diag, l, j)
                                                };
                                            }
                                        }
                                        let (got, want) = if solve {
                                            (prod, c(alpha) * rhs.cget(i, j))
                                        } else {
                                            (rhs.cget(i, j), c(alpha) * prod)
                                        };
                                        if alpha.is_zero() {
                                            assert_eq!(b.cget(i, j), C64::new(0.0, 0.0), "{ctx}");
                                        } else {
                                            assert_close(got, want, bound::<T>(na, 4.0), &ctx);
                                        }
                                    }
                                }
                                assert_padding(&b, &ctx);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn trmm_trsm_every_type_and_option() {
    for_each_type!(trmm_trsm_case);
}
