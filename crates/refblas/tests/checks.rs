//! Every `_check` against a table of argument combinations and the parameter number netlib's
//! reference BLAS passes to XERBLA for each (0: valid), in the reference's order of checks.

use hetblas_refblas as rb;
use hetblas_refblas::num_complex::{Complex32, Complex64};

/// Asserts each row's result, naming the routine and row on failure.
#[track_caller]
fn table<A: std::fmt::Debug + Copy>(name: &str, rows: &[(A, i32)], f: impl Fn(A) -> i32) {
    for (i, &(args, want)) in rows.iter().enumerate() {
        assert_eq!(f(args), want, "{name} row {i}: {args:?}");
    }
}

#[test]
fn gemm_check_table() {
    table(
        "gemm",
        &[
            ((b'N', b'N', 2, 3, 4, 2, 4, 2), 0),
            ((b'n', b't', 2, 3, 4, 2, 3, 2), 0),
            ((b'C', b'c', 2, 3, 4, 4, 3, 2), 0),
            ((b'T', b'N', 0, 0, 0, 1, 1, 1), 0),
            ((b'X', b'N', -1, 3, 4, 2, 4, 2), 1),
            ((b'N', b'Y', -1, 3, 4, 2, 4, 2), 2),
            ((b'N', b'N', -1, -3, 4, 2, 4, 2), 3),
            ((b'N', b'N', 2, -3, -4, 2, 4, 2), 4),
            ((b'N', b'N', 2, 3, -4, 0, 0, 0), 5),
            ((b'N', b'N', 2, 3, 4, 1, 0, 0), 8),
            ((b'T', b'N', 2, 3, 4, 3, 4, 2), 8),
            ((b'N', b'N', 2, 3, 4, 2, 3, 0), 10),
            ((b'N', b'T', 2, 3, 4, 2, 2, 2), 10),
            ((b'N', b'N', 2, 3, 4, 2, 4, 1), 13),
            ((b'N', b'N', 0, 3, 4, 0, 4, 1), 8),
            ((b'N', b'N', 0, 3, 4, 1, 4, 0), 13),
        ],
        |(ta, tb, m, n, k, lda, ldb, ldc)| rb::gemm_check(ta, tb, m, n, k, lda, ldb, ldc),
    );
}

/// GEMMT's checks, in `?gemmtr`'s order and numbers (reference BLAS 3.12).
#[test]
fn gemmt_check_table() {
    table(
        "gemmt",
        &[
            ((b'U', b'N', b'N', 3, 4, 3, 4, 3), 0),
            ((b'l', b't', b'c', 3, 4, 4, 3, 3), 0),
            ((b'L', b'N', b'N', 0, 0, 1, 1, 1), 0),
            ((b'X', b'Y', b'N', -1, 4, 3, 4, 3), 1),
            ((b'U', b'Y', b'Z', -1, 4, 3, 4, 3), 2),
            ((b'U', b'N', b'Z', -1, 4, 3, 4, 3), 3),
            ((b'U', b'N', b'N', -1, -4, 3, 4, 3), 4),
            ((b'U', b'N', b'N', 3, -4, 0, 0, 0), 5),
            ((b'U', b'N', b'N', 3, 4, 2, 0, 0), 8),
            ((b'U', b'T', b'N', 3, 4, 3, 4, 3), 8),
            ((b'L', b'N', b'N', 3, 4, 3, 3, 0), 10),
            ((b'L', b'N', b'T', 3, 4, 3, 2, 3), 10),
            ((b'L', b'N', b'N', 3, 4, 3, 4, 2), 13),
            ((b'L', b'N', b'N', 0, 4, 1, 4, 0), 13),
        ],
        |(u, ta, tb, n, k, lda, ldb, ldc)| rb::gemmt_check(u, ta, tb, n, k, lda, ldb, ldc),
    );
}

#[test]
fn symm_hemm_check_table() {
    let rows = [
        ((b'L', b'U', 3, 2, 3, 3, 3), 0),
        ((b'r', b'l', 3, 2, 2, 3, 3), 0),
        ((b'X', b'U', -3, 2, 3, 3, 3), 1),
        ((b'L', b'X', -3, 2, 3, 3, 3), 2),
        ((b'L', b'U', -3, -2, 3, 3, 3), 3),
        ((b'L', b'U', 3, -2, 0, 3, 3), 4),
        ((b'L', b'U', 3, 2, 2, 3, 3), 7),
        ((b'R', b'U', 3, 2, 1, 3, 3), 7),
        ((b'R', b'U', 3, 2, 2, 2, 3), 9),
        ((b'L', b'U', 3, 2, 3, 3, 2), 12),
        ((b'L', b'U', 0, 0, 0, 1, 1), 7),
    ];
    table("symm", &rows, |(s, u, m, n, lda, ldb, ldc)| {
        rb::symm_check(s, u, m, n, lda, ldb, ldc)
    });
    table("hemm", &rows, |(s, u, m, n, lda, ldb, ldc)| {
        rb::hemm_check(s, u, m, n, lda, ldb, ldc)
    });
}

#[test]
fn syrk_herk_check_tables() {
    // (uplo, trans, n, k, lda, ldc)
    let common = [
        ((b'U', b'N', 3, 2, 3, 3), 0),
        ((b'l', b'n', 3, 2, 3, 3), 0),
        ((b'X', b'N', -3, 2, 3, 3), 1),
        ((b'U', b'N', -3, -2, 3, 3), 3),
        ((b'U', b'N', 3, -2, 3, 3), 4),
        ((b'U', b'N', 3, 2, 2, 3), 7),
        ((b'U', b'N', 3, 2, 3, 2), 10),
        ((b'U', b'X', -3, 2, 3, 3), 2),
    ];
    let f_real = |(u, t, n, k, lda, ldc)| rb::syrk_check::<f64>(u, t, n, k, lda, ldc);
    let f_cplx = |(u, t, n, k, lda, ldc)| rb::syrk_check::<Complex32>(u, t, n, k, lda, ldc);
    let f_herk = |(u, t, n, k, lda, ldc)| rb::herk_check(u, t, n, k, lda, ldc);
    table("syrk f64", &common, f_real);
    table("syrk c32", &common, f_cplx);
    table("herk", &common, f_herk);
    // TRANS: SSYRK/DSYRK take N, T, C; CSYRK/ZSYRK N, T; CHERK/ZHERK N, C. With 'T' or 'C', A is k x n.
    table(
        "syrk f32",
        &[((b'T', 2, 3), 0), ((b'c', 2, 3), 0), ((b'T', 1, 3), 7)],
        |(t, lda, ldc)| rb::syrk_check::<f32>(b'U', t, 3, 2, lda, ldc),
    );
    table(
        "syrk c64",
        &[((b'T', 2, 3), 0), ((b'C', 2, 3), 2)],
        |(t, lda, ldc)| rb::syrk_check::<Complex64>(b'U', t, 3, 2, lda, ldc),
    );
    table(
        "herk trans",
        &[((b'C', 2, 3), 0), ((b'T', 2, 3), 2), ((b'c', 1, 3), 7)],
        |(t, lda, ldc)| rb::herk_check(b'U', t, 3, 2, lda, ldc),
    );
}

#[test]
fn syr2k_her2k_check_tables() {
    // (uplo, trans, n, k, lda, ldb, ldc)
    let common = [
        ((b'U', b'N', 3, 2, 3, 3, 3), 0),
        ((b'L', b'n', 0, 0, 1, 1, 1), 0),
        ((b'X', b'N', -3, 2, 3, 3, 3), 1),
        ((b'U', b'X', -3, 2, 3, 3, 3), 2),
        ((b'U', b'N', -3, -2, 3, 3, 3), 3),
        ((b'U', b'N', 3, -2, 3, 3, 3), 4),
        ((b'U', b'N', 3, 2, 2, 2, 2), 7),
        ((b'U', b'N', 3, 2, 3, 2, 2), 9),
        ((b'U', b'N', 3, 2, 3, 3, 2), 12),
        ((b'U', b'N', 0, 2, 0, 1, 1), 7),
    ];
    table("syr2k f32", &common, |(u, t, n, k, a, b, c)| {
        rb::syr2k_check::<f32>(u, t, n, k, a, b, c)
    });
    table("syr2k c64", &common, |(u, t, n, k, a, b, c)| {
        rb::syr2k_check::<Complex64>(u, t, n, k, a, b, c)
    });
    table("her2k", &common, |(u, t, n, k, a, b, c)| {
        rb::her2k_check(u, t, n, k, a, b, c)
    });
    table(
        "syr2k f64 trans",
        &[((b'C', 2, 2), 0), ((b'T', 2, 1), 9)],
        |(t, lda, ldb)| rb::syr2k_check::<f64>(b'U', t, 3, 2, lda, ldb, 3),
    );
    table(
        "syr2k c32 trans",
        &[((b'T', 2, 2), 0), ((b'C', 2, 2), 2)],
        |(t, lda, ldb)| rb::syr2k_check::<Complex32>(b'U', t, 3, 2, lda, ldb, 3),
    );
    table(
        "her2k trans",
        &[((b'C', 2, 2), 0), ((b'T', 2, 2), 2)],
        |(t, lda, ldb)| rb::her2k_check(b'U', t, 3, 2, lda, ldb, 3),
    );
}

#[test]
fn trmm_trsm_check_table() {
    // (side, uplo, transa, diag, m, n, lda, ldb)
    let rows = [
        ((b'L', b'U', b'N', b'N', 3, 2, 3, 3), 0),
        ((b'r', b'l', b'c', b'u', 3, 2, 2, 3), 0),
        ((b'R', b'U', b'T', b'U', 0, 0, 1, 1), 0),
        ((b'X', b'U', b'N', b'N', -3, 2, 3, 3), 1),
        ((b'L', b'X', b'N', b'N', -3, 2, 3, 3), 2),
        ((b'L', b'U', b'X', b'N', -3, 2, 3, 3), 3),
        ((b'L', b'U', b'N', b'X', -3, 2, 3, 3), 4),
        ((b'L', b'U', b'N', b'N', -3, -2, 3, 3), 5),
        ((b'L', b'U', b'N', b'N', 3, -2, 0, 0), 6),
        ((b'L', b'U', b'N', b'N', 3, 2, 2, 3), 9),
        ((b'R', b'U', b'N', b'N', 3, 2, 1, 3), 9),
        ((b'L', b'U', b'N', b'N', 3, 2, 3, 2), 11),
        ((b'R', b'U', b'N', b'N', 3, 2, 2, 2), 11),
    ];
    table("trmm", &rows, |(s, u, t, d, m, n, lda, ldb)| {
        rb::trmm_check(s, u, t, d, m, n, lda, ldb)
    });
    table("trsm", &rows, |(s, u, t, d, m, n, lda, ldb)| {
        rb::trsm_check(s, u, t, d, m, n, lda, ldb)
    });
}

#[test]
fn gemv_gbmv_check_tables() {
    // (trans, m, n, lda, incx, incy)
    table(
        "gemv",
        &[
            ((b'N', 3, 2, 3, 1, 1), 0),
            ((b'c', 3, 2, 3, -2, -1), 0),
            ((b'T', 0, 0, 1, 1, 1), 0),
            ((b'X', -3, 2, 3, 1, 1), 1),
            ((b'N', -3, -2, 3, 1, 1), 2),
            ((b'N', 3, -2, 2, 1, 1), 3),
            ((b'N', 3, 2, 2, 0, 0), 6),
            ((b'N', 0, 2, 0, 1, 1), 6),
            ((b'N', 3, 2, 3, 0, 0), 8),
            ((b'N', 3, 2, 3, 1, 0), 11),
        ],
        |(t, m, n, lda, ix, iy)| rb::gemv_check(t, m, n, lda, ix, iy),
    );
    // (trans, m, n, kl, ku, lda, incx, incy)
    table(
        "gbmv",
        &[
            ((b'N', 3, 2, 1, 1, 3, 1, 1), 0),
            ((b't', 3, 2, 0, 0, 1, -1, 2), 0),
            ((b'X', -3, 2, 1, 1, 3, 1, 1), 1),
            ((b'N', -3, 2, -1, 1, 3, 1, 1), 2),
            ((b'N', 3, -2, -1, 1, 3, 1, 1), 3),
            ((b'N', 3, 2, -1, -1, 3, 1, 1), 4),
            ((b'N', 3, 2, 1, -1, 0, 1, 1), 5),
            ((b'N', 3, 2, 1, 1, 2, 0, 0), 8),
            ((b'N', 3, 2, 1, 1, 3, 0, 0), 10),
            ((b'N', 3, 2, 1, 1, 3, 1, 0), 13),
        ],
        |(t, m, n, kl, ku, lda, ix, iy)| rb::gbmv_check(t, m, n, kl, ku, lda, ix, iy),
    );
}

#[test]
fn symmetric_matrix_vector_check_tables() {
    // (uplo, n, lda, incx, incy)
    let full = [
        ((b'U', 3, 3, 1, 1), 0),
        ((b'l', 0, 1, -1, 2), 0),
        ((b'X', -3, 3, 1, 1), 1),
        ((b'U', -3, 3, 1, 1), 2),
        ((b'U', 3, 2, 0, 0), 5),
        ((b'U', 3, 3, 0, 0), 7),
        ((b'U', 3, 3, 1, 0), 10),
    ];
    table("symv", &full, |(u, n, lda, ix, iy)| {
        rb::symv_check(u, n, lda, ix, iy)
    });
    table("hemv", &full, |(u, n, lda, ix, iy)| {
        rb::hemv_check(u, n, lda, ix, iy)
    });
    // (uplo, n, k, lda, incx, incy)
    let band = [
        ((b'U', 3, 1, 2, 1, 1), 0),
        ((b'X', -3, 1, 2, 1, 1), 1),
        ((b'U', -3, -1, 2, 1, 1), 2),
        ((b'U', 3, -1, 0, 1, 1), 3),
        ((b'U', 3, 1, 1, 0, 0), 6),
        ((b'U', 3, 1, 2, 0, 0), 8),
        ((b'U', 3, 1, 2, 1, 0), 11),
    ];
    table("sbmv", &band, |(u, n, k, lda, ix, iy)| {
        rb::sbmv_check(u, n, k, lda, ix, iy)
    });
    table("hbmv", &band, |(u, n, k, lda, ix, iy)| {
        rb::hbmv_check(u, n, k, lda, ix, iy)
    });
    // (uplo, n, incx, incy)
    let packed = [
        ((b'U', 3, 1, 1), 0),
        ((b'X', -3, 0, 0), 1),
        ((b'U', -3, 0, 0), 2),
        ((b'U', 3, 0, 0), 6),
        ((b'L', 3, 1, 0), 9),
    ];
    table("spmv", &packed, |(u, n, ix, iy)| {
        rb::spmv_check(u, n, ix, iy)
    });
    table("hpmv", &packed, |(u, n, ix, iy)| {
        rb::hpmv_check(u, n, ix, iy)
    });
}

#[test]
fn triangular_matrix_vector_check_tables() {
    // (uplo, trans, diag, n, lda, incx)
    let full = [
        ((b'U', b'N', b'N', 3, 3, 1), 0),
        ((b'l', b'c', b'u', 3, 3, -1), 0),
        ((b'X', b'N', b'N', -3, 3, 1), 1),
        ((b'U', b'X', b'N', -3, 3, 1), 2),
        ((b'U', b'N', b'X', -3, 3, 1), 3),
        ((b'U', b'N', b'N', -3, 3, 1), 4),
        ((b'U', b'N', b'N', 3, 2, 0), 6),
        ((b'U', b'N', b'N', 3, 3, 0), 8),
    ];
    table("trmv", &full, |(u, t, d, n, lda, ix)| {
        rb::trmv_check(u, t, d, n, lda, ix)
    });
    table("trsv", &full, |(u, t, d, n, lda, ix)| {
        rb::trsv_check(u, t, d, n, lda, ix)
    });
    // (uplo, trans, diag, n, k, lda, incx)
    let band = [
        ((b'U', b'T', b'N', 3, 1, 2, 1), 0),
        ((b'X', b'N', b'N', -3, -1, 2, 1), 1),
        ((b'U', b'X', b'N', -3, -1, 2, 1), 2),
        ((b'U', b'N', b'X', -3, -1, 2, 1), 3),
        ((b'U', b'N', b'N', -3, -1, 2, 1), 4),
        ((b'U', b'N', b'N', 3, -1, 0, 0), 5),
        ((b'U', b'N', b'N', 3, 1, 1, 0), 7),
        ((b'U', b'N', b'N', 3, 1, 2, 0), 9),
    ];
    table("tbmv", &band, |(u, t, d, n, k, lda, ix)| {
        rb::tbmv_check(u, t, d, n, k, lda, ix)
    });
    table("tbsv", &band, |(u, t, d, n, k, lda, ix)| {
        rb::tbsv_check(u, t, d, n, k, lda, ix)
    });
    // (uplo, trans, diag, n, incx)
    let packed = [
        ((b'L', b'C', b'U', 3, 2), 0),
        ((b'X', b'N', b'N', -3, 0), 1),
        ((b'U', b'X', b'N', -3, 0), 2),
        ((b'U', b'N', b'X', -3, 0), 3),
        ((b'U', b'N', b'N', -3, 0), 4),
        ((b'U', b'N', b'N', 3, 0), 7),
    ];
    table("tpmv", &packed, |(u, t, d, n, ix)| {
        rb::tpmv_check(u, t, d, n, ix)
    });
    table("tpsv", &packed, |(u, t, d, n, ix)| {
        rb::tpsv_check(u, t, d, n, ix)
    });
}

#[test]
fn rank_update_check_tables() {
    // (m, n, incx, incy, lda)
    let ger = [
        ((3, 2, 1, 1, 3), 0),
        ((0, 0, -1, -1, 1), 0),
        ((-3, -2, 0, 0, 0), 1),
        ((3, -2, 0, 0, 0), 2),
        ((3, 2, 0, 0, 0), 5),
        ((3, 2, 1, 0, 0), 7),
        ((3, 2, 1, 1, 2), 9),
    ];
    table("ger", &ger, |(m, n, ix, iy, lda)| {
        rb::ger_check(m, n, ix, iy, lda)
    });
    table("geru", &ger, |(m, n, ix, iy, lda)| {
        rb::geru_check(m, n, ix, iy, lda)
    });
    table("gerc", &ger, |(m, n, ix, iy, lda)| {
        rb::gerc_check(m, n, ix, iy, lda)
    });
    // (uplo, n, incx, lda)
    let r1 = [
        ((b'U', 3, 1, 3), 0),
        ((b'X', -3, 0, 0), 1),
        ((b'l', -3, 0, 0), 2),
        ((b'U', 3, 0, 0), 5),
        ((b'U', 3, -1, 2), 7),
    ];
    table("syr", &r1, |(u, n, ix, lda)| rb::syr_check(u, n, ix, lda));
    table("her", &r1, |(u, n, ix, lda)| rb::her_check(u, n, ix, lda));
    // (uplo, n, incx)
    let p1 = [
        ((b'U', 3, 1), 0),
        ((b'X', -3, 0), 1),
        ((b'U', -3, 0), 2),
        ((b'U', 3, 0), 5),
    ];
    table("spr", &p1, |(u, n, ix)| rb::spr_check(u, n, ix));
    table("hpr", &p1, |(u, n, ix)| rb::hpr_check(u, n, ix));
    // (uplo, n, incx, incy, lda)
    let r2 = [
        ((b'L', 3, 1, -1, 3), 0),
        ((b'X', -3, 0, 0, 0), 1),
        ((b'U', -3, 0, 0, 0), 2),
        ((b'U', 3, 0, 0, 0), 5),
        ((b'U', 3, 1, 0, 0), 7),
        ((b'U', 3, 1, 1, 2), 9),
    ];
    table("syr2", &r2, |(u, n, ix, iy, lda)| {
        rb::syr2_check(u, n, ix, iy, lda)
    });
    table("her2", &r2, |(u, n, ix, iy, lda)| {
        rb::her2_check(u, n, ix, iy, lda)
    });
    // (uplo, n, incx, incy)
    let p2 = [
        ((b'U', 3, 1, 1), 0),
        ((b'X', -3, 0, 0), 1),
        ((b'U', -3, 0, 0), 2),
        ((b'U', 3, 0, 0), 5),
        ((b'U', 3, 1, 0), 7),
    ];
    table("spr2", &p2, |(u, n, ix, iy)| rb::spr2_check(u, n, ix, iy));
    table("hpr2", &p2, |(u, n, ix, iy)| rb::hpr2_check(u, n, ix, iy));
}
