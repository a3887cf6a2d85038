/* hetblas.h: the CBLAS interface of libhetblas.so (the drop-in BLAS of hetblas).
 *
 * Link with `pkg-config --libs hetblas` (-lhetblas). Every routine of the reference CBLAS, in
 * S, D, C and Z, row- and column-major. Complex scalars and arrays are passed as pointers
 * (`void *`), as in the reference cblas.h. The Fortran interface (dgemm_, ...) is exported too.
 *
 * Integers: by default `int` (LP64, the unsuffixed symbols). Define HETBLAS_ILP64 before
 * including this header to use 64-bit integers: the names then resolve to the ILP64 symbols
 * (`cblas_dgemm64_`, OpenBLAS's suffix convention), which the same library exports.
 * Generated from the CBLAS tables of crates/capi/src/cblas.rs and cblas1.rs; do not edit.
 * Regenerate: HETBLAS_BLESS=1 cargo test -p hetblas-capi --lib header */
#ifndef HETBLAS_H
#define HETBLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HETBLAS_ILP64
typedef int64_t HETBLAS_INT;
#define HETBLAS_NAME(name) name##64_
#else
typedef int HETBLAS_INT;
#define HETBLAS_NAME(name) name
#endif

#ifndef CBLAS_ENUM_DEFINED_H
#define CBLAS_ENUM_DEFINED_H
typedef enum CBLAS_LAYOUT { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_LAYOUT;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;
typedef enum CBLAS_UPLO { CblasUpper = 121, CblasLower = 122 } CBLAS_UPLO;
typedef enum CBLAS_DIAG { CblasNonUnit = 131, CblasUnit = 132 } CBLAS_DIAG;
typedef enum CBLAS_SIDE { CblasLeft = 141, CblasRight = 142 } CBLAS_SIDE;
typedef CBLAS_LAYOUT CBLAS_ORDER;
#endif

/* Called with the parameter number of a bad argument; define your own to handle it. */
void cblas_xerbla(int info, const char *rout, const char *form, ...);

/* Level 1 */
void HETBLAS_NAME(cblas_saxpy)(HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_daxpy)(HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_caxpy)(HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zaxpy)(HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_sscal)(HETBLAS_INT n, float alpha, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dscal)(HETBLAS_INT n, double alpha, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_cscal)(HETBLAS_INT n, const void *alpha, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_zscal)(HETBLAS_INT n, const void *alpha, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_scopy)(HETBLAS_INT n, const float *x, HETBLAS_INT incx, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dcopy)(HETBLAS_INT n, const double *x, HETBLAS_INT incx, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_ccopy)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zcopy)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_sswap)(HETBLAS_INT n, float *x, HETBLAS_INT incx, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dswap)(HETBLAS_INT n, double *x, HETBLAS_INT incx, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_cswap)(HETBLAS_INT n, void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zswap)(HETBLAS_INT n, void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy);
float HETBLAS_NAME(cblas_snrm2)(HETBLAS_INT n, const float *x, HETBLAS_INT incx);
double HETBLAS_NAME(cblas_dnrm2)(HETBLAS_INT n, const double *x, HETBLAS_INT incx);
float HETBLAS_NAME(cblas_scnrm2)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
double HETBLAS_NAME(cblas_dznrm2)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
float HETBLAS_NAME(cblas_sasum)(HETBLAS_INT n, const float *x, HETBLAS_INT incx);
double HETBLAS_NAME(cblas_dasum)(HETBLAS_INT n, const double *x, HETBLAS_INT incx);
float HETBLAS_NAME(cblas_scasum)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
double HETBLAS_NAME(cblas_dzasum)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
size_t HETBLAS_NAME(cblas_isamax)(HETBLAS_INT n, const float *x, HETBLAS_INT incx);
size_t HETBLAS_NAME(cblas_idamax)(HETBLAS_INT n, const double *x, HETBLAS_INT incx);
size_t HETBLAS_NAME(cblas_icamax)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
size_t HETBLAS_NAME(cblas_izamax)(HETBLAS_INT n, const void *x, HETBLAS_INT incx);
float HETBLAS_NAME(cblas_sdot)(HETBLAS_INT n, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy);
double HETBLAS_NAME(cblas_ddot)(HETBLAS_INT n, const double *x, HETBLAS_INT incx, const double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_srot)(HETBLAS_INT n, float *x, HETBLAS_INT incx, float *y, HETBLAS_INT incy, float c, float s);
void HETBLAS_NAME(cblas_drot)(HETBLAS_INT n, double *x, HETBLAS_INT incx, double *y, HETBLAS_INT incy, double c, double s);
void HETBLAS_NAME(cblas_srotm)(HETBLAS_INT n, float *x, HETBLAS_INT incx, float *y, HETBLAS_INT incy, const float *param);
void HETBLAS_NAME(cblas_drotm)(HETBLAS_INT n, double *x, HETBLAS_INT incx, double *y, HETBLAS_INT incy, const double *param);
void HETBLAS_NAME(cblas_srotg)(float *a, float *b, float *c, float *s);
void HETBLAS_NAME(cblas_drotg)(double *a, double *b, double *c, double *s);
void HETBLAS_NAME(cblas_srotmg)(float *d1, float *d2, float *x1, float y1, float *param);
void HETBLAS_NAME(cblas_drotmg)(double *d1, double *d2, double *x1, double y1, double *param);
void HETBLAS_NAME(cblas_cdotu_sub)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *dotu);
void HETBLAS_NAME(cblas_zdotu_sub)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *dotu);
void HETBLAS_NAME(cblas_cdotc_sub)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *dotc);
void HETBLAS_NAME(cblas_zdotc_sub)(HETBLAS_INT n, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *dotc);
void HETBLAS_NAME(cblas_csscal)(HETBLAS_INT n, float alpha, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_zdscal)(HETBLAS_INT n, double alpha, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_csrot)(HETBLAS_INT n, void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy, float c, float s);
void HETBLAS_NAME(cblas_zdrot)(HETBLAS_INT n, void *x, HETBLAS_INT incx, void *y, HETBLAS_INT incy, double c, double s);
void HETBLAS_NAME(cblas_crotg)(void *a, const void *b, float *c, void *s);
void HETBLAS_NAME(cblas_zrotg)(void *a, const void *b, double *c, void *s);
float HETBLAS_NAME(cblas_scabs1)(const void *z);
double HETBLAS_NAME(cblas_dcabs1)(const void *z);
float HETBLAS_NAME(cblas_sdsdot)(HETBLAS_INT n, float sb, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy);
double HETBLAS_NAME(cblas_dsdot)(HETBLAS_INT n, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy);

/* Level 2 and 3 */
void HETBLAS_NAME(cblas_sgemv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, float alpha, const float *a, HETBLAS_INT lda, const float *x, HETBLAS_INT incx, float beta, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dgemv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, double alpha, const double *a, HETBLAS_INT lda, const double *x, HETBLAS_INT incx, double beta, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_cgemv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zgemv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_sgbmv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT kl, HETBLAS_INT ku, float alpha, const float *a, HETBLAS_INT lda, const float *x, HETBLAS_INT incx, float beta, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dgbmv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT kl, HETBLAS_INT ku, double alpha, const double *a, HETBLAS_INT lda, const double *x, HETBLAS_INT incx, double beta, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_cgbmv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT kl, HETBLAS_INT ku, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zgbmv)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE trans, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT kl, HETBLAS_INT ku, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_chemv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zhemv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_ssymv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *a, HETBLAS_INT lda, const float *x, HETBLAS_INT incx, float beta, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dsymv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *a, HETBLAS_INT lda, const double *x, HETBLAS_INT incx, double beta, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_chbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zhbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_ssbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, const float *x, HETBLAS_INT incx, float beta, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dsbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, const double *x, HETBLAS_INT incx, double beta, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_chpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *ap, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_zhpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *ap, const void *x, HETBLAS_INT incx, const void *beta, void *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_sspmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *ap, const float *x, HETBLAS_INT incx, float beta, float *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_dspmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *ap, const double *x, HETBLAS_INT incx, double beta, double *y, HETBLAS_INT incy);
void HETBLAS_NAME(cblas_strmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const float *a, HETBLAS_INT lda, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtrmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const double *a, HETBLAS_INT lda, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctrmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztrmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_strsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const float *a, HETBLAS_INT lda, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtrsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const double *a, HETBLAS_INT lda, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctrsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztrsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_stbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const float *a, HETBLAS_INT lda, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const double *a, HETBLAS_INT lda, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztbmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_stbsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const float *a, HETBLAS_INT lda, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtbsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const double *a, HETBLAS_INT lda, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctbsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztbsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, HETBLAS_INT k, const void *a, HETBLAS_INT lda, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_stpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const float *ap, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const double *ap, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *ap, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztpmv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *ap, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_stpsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const float *ap, float *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_dtpsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const double *ap, double *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ctpsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *ap, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_ztpsv)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, HETBLAS_INT n, const void *ap, void *x, HETBLAS_INT incx);
void HETBLAS_NAME(cblas_sger)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy, float *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_dger)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, const double *y, HETBLAS_INT incy, double *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_cgeru)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_zgeru)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_cgerc)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_zgerc)(CBLAS_LAYOUT order, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_cher)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const void *x, HETBLAS_INT incx, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_zher)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const void *x, HETBLAS_INT incx, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_chpr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const void *x, HETBLAS_INT incx, void *ap);
void HETBLAS_NAME(cblas_zhpr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const void *x, HETBLAS_INT incx, void *ap);
void HETBLAS_NAME(cblas_cher2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_zher2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_chpr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *ap);
void HETBLAS_NAME(cblas_zhpr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, const void *alpha, const void *x, HETBLAS_INT incx, const void *y, HETBLAS_INT incy, void *ap);
void HETBLAS_NAME(cblas_ssyr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, float *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_dsyr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, double *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_sspr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, float *ap);
void HETBLAS_NAME(cblas_dspr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, double *ap);
void HETBLAS_NAME(cblas_ssyr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy, float *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_dsyr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, const double *y, HETBLAS_INT incy, double *a, HETBLAS_INT lda);
void HETBLAS_NAME(cblas_sspr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, float alpha, const float *x, HETBLAS_INT incx, const float *y, HETBLAS_INT incy, float *ap);
void HETBLAS_NAME(cblas_dspr2)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, HETBLAS_INT n, double alpha, const double *x, HETBLAS_INT incx, const double *y, HETBLAS_INT incy, double *ap);
void HETBLAS_NAME(cblas_sgemm)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, const float *b, HETBLAS_INT ldb, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dgemm)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, const double *b, HETBLAS_INT ldb, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_cgemm)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zgemm)(CBLAS_LAYOUT order, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT m, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
/* GEMMT: C's uplo triangle of alpha op(A) op(B) + beta C (OpenBLAS's and MKL's
 * cblas_?gemmt, reference CBLAS 3.12's cblas_?gemmtr: one routine under both names). */
void HETBLAS_NAME(cblas_sgemmt)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, const float *b, HETBLAS_INT ldb, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dgemmt)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, const double *b, HETBLAS_INT ldb, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_cgemmt)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zgemmt)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_sgemmtr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, const float *b, HETBLAS_INT ldb, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dgemmtr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, const double *b, HETBLAS_INT ldb, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_cgemmtr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zgemmtr)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_ssymm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, float alpha, const float *a, HETBLAS_INT lda, const float *b, HETBLAS_INT ldb, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dsymm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, double alpha, const double *a, HETBLAS_INT lda, const double *b, HETBLAS_INT ldb, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_csymm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zsymm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_chemm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zhemm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_ssyrk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dsyrk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_csyrk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zsyrk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_cherk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, float alpha, const void *a, HETBLAS_INT lda, float beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zherk)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, double alpha, const void *a, HETBLAS_INT lda, double beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_ssyr2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, float alpha, const float *a, HETBLAS_INT lda, const float *b, HETBLAS_INT ldb, float beta, float *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_dsyr2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, double alpha, const double *a, HETBLAS_INT lda, const double *b, HETBLAS_INT ldb, double beta, double *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_csyr2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zsyr2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, const void *beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_cher2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, float beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_zher2k)(CBLAS_LAYOUT order, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, HETBLAS_INT n, HETBLAS_INT k, const void *alpha, const void *a, HETBLAS_INT lda, const void *b, HETBLAS_INT ldb, double beta, void *c, HETBLAS_INT ldc);
void HETBLAS_NAME(cblas_strmm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, float alpha, const float *a, HETBLAS_INT lda, float *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_dtrmm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, double alpha, const double *a, HETBLAS_INT lda, double *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_ctrmm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, void *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_ztrmm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, void *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_strsm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, float alpha, const float *a, HETBLAS_INT lda, float *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_dtrsm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, double alpha, const double *a, HETBLAS_INT lda, double *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_ctrsm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, void *b, HETBLAS_INT ldb);
void HETBLAS_NAME(cblas_ztrsm)(CBLAS_LAYOUT order, CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE transa, CBLAS_DIAG diag, HETBLAS_INT m, HETBLAS_INT n, const void *alpha, const void *a, HETBLAS_INT lda, void *b, HETBLAS_INT ldb);

#ifdef HETBLAS_ILP64
/* The reference names, mapped to the ILP64 symbols. */
#define cblas_saxpy cblas_saxpy64_
#define cblas_daxpy cblas_daxpy64_
#define cblas_caxpy cblas_caxpy64_
#define cblas_zaxpy cblas_zaxpy64_
#define cblas_sscal cblas_sscal64_
#define cblas_dscal cblas_dscal64_
#define cblas_cscal cblas_cscal64_
#define cblas_zscal cblas_zscal64_
#define cblas_scopy cblas_scopy64_
#define cblas_dcopy cblas_dcopy64_
#define cblas_ccopy cblas_ccopy64_
#define cblas_zcopy cblas_zcopy64_
#define cblas_sswap cblas_sswap64_
#define cblas_dswap cblas_dswap64_
#define cblas_cswap cblas_cswap64_
#define cblas_zswap cblas_zswap64_
#define cblas_snrm2 cblas_snrm264_
#define cblas_dnrm2 cblas_dnrm264_
#define cblas_scnrm2 cblas_scnrm264_
#define cblas_dznrm2 cblas_dznrm264_
#define cblas_sasum cblas_sasum64_
#define cblas_dasum cblas_dasum64_
#define cblas_scasum cblas_scasum64_
#define cblas_dzasum cblas_dzasum64_
#define cblas_isamax cblas_isamax64_
#define cblas_idamax cblas_idamax64_
#define cblas_icamax cblas_icamax64_
#define cblas_izamax cblas_izamax64_
#define cblas_sdot cblas_sdot64_
#define cblas_ddot cblas_ddot64_
#define cblas_srot cblas_srot64_
#define cblas_drot cblas_drot64_
#define cblas_srotm cblas_srotm64_
#define cblas_drotm cblas_drotm64_
#define cblas_srotg cblas_srotg64_
#define cblas_drotg cblas_drotg64_
#define cblas_srotmg cblas_srotmg64_
#define cblas_drotmg cblas_drotmg64_
#define cblas_cdotu_sub cblas_cdotu_sub64_
#define cblas_zdotu_sub cblas_zdotu_sub64_
#define cblas_cdotc_sub cblas_cdotc_sub64_
#define cblas_zdotc_sub cblas_zdotc_sub64_
#define cblas_csscal cblas_csscal64_
#define cblas_zdscal cblas_zdscal64_
#define cblas_csrot cblas_csrot64_
#define cblas_zdrot cblas_zdrot64_
#define cblas_crotg cblas_crotg64_
#define cblas_zrotg cblas_zrotg64_
#define cblas_scabs1 cblas_scabs164_
#define cblas_dcabs1 cblas_dcabs164_
#define cblas_sdsdot cblas_sdsdot64_
#define cblas_dsdot cblas_dsdot64_
#define cblas_sgemv cblas_sgemv64_
#define cblas_dgemv cblas_dgemv64_
#define cblas_cgemv cblas_cgemv64_
#define cblas_zgemv cblas_zgemv64_
#define cblas_sgbmv cblas_sgbmv64_
#define cblas_dgbmv cblas_dgbmv64_
#define cblas_cgbmv cblas_cgbmv64_
#define cblas_zgbmv cblas_zgbmv64_
#define cblas_chemv cblas_chemv64_
#define cblas_zhemv cblas_zhemv64_
#define cblas_ssymv cblas_ssymv64_
#define cblas_dsymv cblas_dsymv64_
#define cblas_chbmv cblas_chbmv64_
#define cblas_zhbmv cblas_zhbmv64_
#define cblas_ssbmv cblas_ssbmv64_
#define cblas_dsbmv cblas_dsbmv64_
#define cblas_chpmv cblas_chpmv64_
#define cblas_zhpmv cblas_zhpmv64_
#define cblas_sspmv cblas_sspmv64_
#define cblas_dspmv cblas_dspmv64_
#define cblas_strmv cblas_strmv64_
#define cblas_dtrmv cblas_dtrmv64_
#define cblas_ctrmv cblas_ctrmv64_
#define cblas_ztrmv cblas_ztrmv64_
#define cblas_strsv cblas_strsv64_
#define cblas_dtrsv cblas_dtrsv64_
#define cblas_ctrsv cblas_ctrsv64_
#define cblas_ztrsv cblas_ztrsv64_
#define cblas_stbmv cblas_stbmv64_
#define cblas_dtbmv cblas_dtbmv64_
#define cblas_ctbmv cblas_ctbmv64_
#define cblas_ztbmv cblas_ztbmv64_
#define cblas_stbsv cblas_stbsv64_
#define cblas_dtbsv cblas_dtbsv64_
#define cblas_ctbsv cblas_ctbsv64_
#define cblas_ztbsv cblas_ztbsv64_
#define cblas_stpmv cblas_stpmv64_
#define cblas_dtpmv cblas_dtpmv64_
#define cblas_ctpmv cblas_ctpmv64_
#define cblas_ztpmv cblas_ztpmv64_
#define cblas_stpsv cblas_stpsv64_
#define cblas_dtpsv cblas_dtpsv64_
#define cblas_ctpsv cblas_ctpsv64_
#define cblas_ztpsv cblas_ztpsv64_
#define cblas_sger cblas_sger64_
#define cblas_dger cblas_dger64_
#define cblas_cgeru cblas_cgeru64_
#define cblas_zgeru cblas_zgeru64_
#define cblas_cgerc cblas_cgerc64_
#define cblas_zgerc cblas_zgerc64_
#define cblas_cher cblas_cher64_
#define cblas_zher cblas_zher64_
#define cblas_chpr cblas_chpr64_
#define cblas_zhpr cblas_zhpr64_
#define cblas_cher2 cblas_cher264_
#define cblas_zher2 cblas_zher264_
#define cblas_chpr2 cblas_chpr264_
#define cblas_zhpr2 cblas_zhpr264_
#define cblas_ssyr cblas_ssyr64_
#define cblas_dsyr cblas_dsyr64_
#define cblas_sspr cblas_sspr64_
#define cblas_dspr cblas_dspr64_
#define cblas_ssyr2 cblas_ssyr264_
#define cblas_dsyr2 cblas_dsyr264_
#define cblas_sspr2 cblas_sspr264_
#define cblas_dspr2 cblas_dspr264_
#define cblas_sgemm cblas_sgemm64_
#define cblas_dgemm cblas_dgemm64_
#define cblas_cgemm cblas_cgemm64_
#define cblas_zgemm cblas_zgemm64_
#define cblas_sgemmt cblas_sgemmt64_
#define cblas_dgemmt cblas_dgemmt64_
#define cblas_cgemmt cblas_cgemmt64_
#define cblas_zgemmt cblas_zgemmt64_
#define cblas_sgemmtr cblas_sgemmtr64_
#define cblas_dgemmtr cblas_dgemmtr64_
#define cblas_cgemmtr cblas_cgemmtr64_
#define cblas_zgemmtr cblas_zgemmtr64_
#define cblas_ssymm cblas_ssymm64_
#define cblas_dsymm cblas_dsymm64_
#define cblas_csymm cblas_csymm64_
#define cblas_zsymm cblas_zsymm64_
#define cblas_chemm cblas_chemm64_
#define cblas_zhemm cblas_zhemm64_
#define cblas_ssyrk cblas_ssyrk64_
#define cblas_dsyrk cblas_dsyrk64_
#define cblas_csyrk cblas_csyrk64_
#define cblas_zsyrk cblas_zsyrk64_
#define cblas_cherk cblas_cherk64_
#define cblas_zherk cblas_zherk64_
#define cblas_ssyr2k cblas_ssyr2k64_
#define cblas_dsyr2k cblas_dsyr2k64_
#define cblas_csyr2k cblas_csyr2k64_
#define cblas_zsyr2k cblas_zsyr2k64_
#define cblas_cher2k cblas_cher2k64_
#define cblas_zher2k cblas_zher2k64_
#define cblas_strmm cblas_strmm64_
#define cblas_dtrmm cblas_dtrmm64_
#define cblas_ctrmm cblas_ctrmm64_
#define cblas_ztrmm cblas_ztrmm64_
#define cblas_strsm cblas_strsm64_
#define cblas_dtrsm cblas_dtrsm64_
#define cblas_ctrsm cblas_ctrsm64_
#define cblas_ztrsm cblas_ztrsm64_
#endif

#ifdef __cplusplus
}
#endif

#endif /* HETBLAS_H */
