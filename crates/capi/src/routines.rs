//! Every routine of the reference BLAS, each defined once: its argument list in Fortran order
//! with each argument's kind (see `abi.rs`), the arguments the reference checks, and the
//! device hook where it has one. The macros generate the generic implementation and the
//! `xxxx_` / `xxxx_64_` entries of every precision. The CBLAS layer calls the same
//! implementations.
//!
//! Routing table: a routine with a device path names its hook in `offload(..)`, a function
//! generic over the element type with the routine's argument list (`offload::gemmt`).
//!
//! The table also gives the host symbols ([`Sym`], [`SYMBOLS`]): the names a line lists for a
//! type, in order. The Level 1 functions (`functions.rs`) have `function!` lines for theirs.

use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};

routines! {
// ---- Level 1 subroutines ------------------------------------------------------------------
subroutine!(axpy [saxpy f32, daxpy f64, caxpy C32, zaxpy C64]
    (i n, v alpha, p x, i incx, m y, i incy));
subroutine!(scal [sscal f32, dscal f64, cscal C32, zscal C64] (i n, v alpha, m x, i incx));
subroutine!(rscal [csscal C32, zdscal C64] (i n, r alpha, m x, i incx));
subroutine!(copy [scopy f32, dcopy f64, ccopy C32, zcopy C64] (i n, p x, i incx, m y, i incy));
subroutine!(swap [sswap f32, dswap f64, cswap C32, zswap C64] (i n, m x, i incx, m y, i incy));
subroutine!(rot [srot f32, drot f64, csrot C32, zdrot C64]
    (i n, m x, i incx, m y, i incy, r c, r s));
subroutine!(rotm [srotm f32, drotm f64] bound(hetblas_refblas::Real) (i n, m x, i incx, m y, i incy, p param));

// ---- Level 1 functions (their host symbols) -----------------------------------------------------
function!(dot [sdot f32, ddot f64]);
function!(nrm2 [snrm2 f32, dnrm2 f64, scnrm2 C32, dznrm2 C64]);
function!(asum [sasum f32, dasum f64, scasum C32, dzasum C64]);
function!(iamax [isamax f32, idamax f64, icamax C32, izamax C64]);
function!(rotg [srotg f32, drotg f64, crotg C32, zrotg C64]);
function!(rotmg [srotmg f32, drotmg f64]);

// ---- Level 2 ---------------------------------------------------------------------------------
subroutine!(gemv [sgemv f32, dgemv f64, cgemv C32, zgemv C64]
    check(trans, m, n, lda, incx, incy)
    (c trans, i m, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(gbmv [sgbmv f32, dgbmv f64, cgbmv C32, zgbmv C64]
    check(trans, m, n, kl, ku, lda, incx, incy)
    (c trans, i m, i n, i kl, i ku, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(hemv [chemv C32, zhemv C64] check(uplo, n, lda, incx, incy)
    (c uplo, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(symv [ssymv f32, dsymv f64] check(uplo, n, lda, incx, incy)
    (c uplo, i n, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(hbmv [chbmv C32, zhbmv C64] check(uplo, n, k, lda, incx, incy)
    (c uplo, i n, i k, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(sbmv [ssbmv f32, dsbmv f64] check(uplo, n, k, lda, incx, incy)
    (c uplo, i n, i k, v alpha, p a, i lda, p x, i incx, v beta, m y, i incy));
subroutine!(hpmv [chpmv C32, zhpmv C64] check(uplo, n, incx, incy)
    (c uplo, i n, v alpha, p ap, p x, i incx, v beta, m y, i incy));
subroutine!(spmv [sspmv f32, dspmv f64] check(uplo, n, incx, incy)
    (c uplo, i n, v alpha, p ap, p x, i incx, v beta, m y, i incy));
subroutine!(trmv [strmv f32, dtrmv f64, ctrmv C32, ztrmv C64]
    check(uplo, trans, diag, n, lda, incx)
    (c uplo, c trans, c diag, i n, p a, i lda, m x, i incx));
subroutine!(trsv [strsv f32, dtrsv f64, ctrsv C32, ztrsv C64]
    check(uplo, trans, diag, n, lda, incx)
    (c uplo, c trans, c diag, i n, p a, i lda, m x, i incx));
subroutine!(tbmv [stbmv f32, dtbmv f64, ctbmv C32, ztbmv C64]
    check(uplo, trans, diag, n, k, lda, incx)
    (c uplo, c trans, c diag, i n, i k, p a, i lda, m x, i incx));
subroutine!(tbsv [stbsv f32, dtbsv f64, ctbsv C32, ztbsv C64]
    check(uplo, trans, diag, n, k, lda, incx)
    (c uplo, c trans, c diag, i n, i k, p a, i lda, m x, i incx));
subroutine!(tpmv [stpmv f32, dtpmv f64, ctpmv C32, ztpmv C64] check(uplo, trans, diag, n, incx)
    (c uplo, c trans, c diag, i n, p ap, m x, i incx));
subroutine!(tpsv [stpsv f32, dtpsv f64, ctpsv C32, ztpsv C64] check(uplo, trans, diag, n, incx)
    (c uplo, c trans, c diag, i n, p ap, m x, i incx));
subroutine!(ger [sger f32, dger f64] check(m, n, incx, incy, lda)
    (i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda));
subroutine!(geru [cgeru C32, zgeru C64] check(m, n, incx, incy, lda)
    (i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda));
subroutine!(gerc [cgerc C32, zgerc C64] check(m, n, incx, incy, lda)
    (i m, i n, v alpha, p x, i incx, p y, i incy, m a, i lda));
subroutine!(her [cher C32, zher C64] check(uplo, n, incx, lda)
    (c uplo, i n, r alpha, p x, i incx, m a, i lda));
subroutine!(syr [ssyr f32, dsyr f64] check(uplo, n, incx, lda)
    (c uplo, i n, v alpha, p x, i incx, m a, i lda));
subroutine!(hpr [chpr C32, zhpr C64] check(uplo, n, incx) (c uplo, i n, r alpha, p x, i incx, m ap));
subroutine!(spr [sspr f32, dspr f64] check(uplo, n, incx) (c uplo, i n, v alpha, p x, i incx, m ap));
subroutine!(her2 [cher2 C32, zher2 C64] check(uplo, n, incx, incy, lda)
    (c uplo, i n, v alpha, p x, i incx, p y, i incy, m a, i lda));
subroutine!(syr2 [ssyr2 f32, dsyr2 f64] check(uplo, n, incx, incy, lda)
    (c uplo, i n, v alpha, p x, i incx, p y, i incy, m a, i lda));
subroutine!(hpr2 [chpr2 C32, zhpr2 C64] check(uplo, n, incx, incy)
    (c uplo, i n, v alpha, p x, i incx, p y, i incy, m ap));
subroutine!(spr2 [sspr2 f32, dspr2 f64] check(uplo, n, incx, incy)
    (c uplo, i n, v alpha, p x, i incx, p y, i incy, m ap));

// ---- Level 3 ---------------------------------------------------------------------------------
subroutine!(gemm [sgemm f32, dgemm f64, cgemm C32, zgemm C64]
    check(transa, transb, m, n, k, lda, ldb, ldc) offload(offload::gemm)
    (c transa, c transb, i m, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc));
// GEMMT under both of its names: reference BLAS 3.12's `?gemmtr` and OpenBLAS's and MKL's
// `?gemmt` (xerbla names the routine as the caller did).
subroutine!(gemmt [sgemmtr f32, dgemmtr f64, cgemmtr C32, zgemmtr C64,
                   sgemmt f32, dgemmt f64, cgemmt C32, zgemmt C64]
    check(uplo, transa, transb, n, k, lda, ldb, ldc) offload(offload::gemmt)
    (c uplo, c transa, c transb, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc));
subroutine!(symm [ssymm f32, dsymm f64, csymm C32, zsymm C64]
    check(side, uplo, m, n, lda, ldb, ldc) offload(offload_sym::symm)
    (c side, c uplo, i m, i n, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc));
subroutine!(hemm [chemm C32, zhemm C64] check(side, uplo, m, n, lda, ldb, ldc)
    offload(offload_sym::hemm)
    (c side, c uplo, i m, i n, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc));
subroutine!(syrk [ssyrk f32, dsyrk f64, csyrk C32, zsyrk C64]
    checkt(uplo, trans, n, k, lda, ldc) offload(offload_sym::syrk)
    (c uplo, c trans, i n, i k, v alpha, p a, i lda, v beta, m c, i ldc));
subroutine!(herk [cherk C32, zherk C64] check(uplo, trans, n, k, lda, ldc)
    offload(offload_sym::herk)
    (c uplo, c trans, i n, i k, r alpha, p a, i lda, r beta, m c, i ldc));
subroutine!(syr2k [ssyr2k f32, dsyr2k f64, csyr2k C32, zsyr2k C64]
    checkt(uplo, trans, n, k, lda, ldb, ldc) offload(offload_sym::syr2k)
    (c uplo, c trans, i n, i k, v alpha, p a, i lda, p b, i ldb, v beta, m c, i ldc));
subroutine!(her2k [cher2k C32, zher2k C64] check(uplo, trans, n, k, lda, ldb, ldc)
    offload(offload_sym::her2k)
    (c uplo, c trans, i n, i k, v alpha, p a, i lda, p b, i ldb, r beta, m c, i ldc));
subroutine!(trmm [strmm f32, dtrmm f64, ctrmm C32, ztrmm C64]
    check(side, uplo, transa, diag, m, n, lda, ldb)
    (c side, c uplo, c transa, c diag, i m, i n, v alpha, p a, i lda, m b, i ldb));
subroutine!(trsm [strsm f32, dtrsm f64, ctrsm C32, ztrsm C64]
    check(side, uplo, transa, diag, m, n, lda, ldb)
    (c side, c uplo, c transa, c diag, i m, i n, v alpha, p a, i lda, m b, i ldb));
}
