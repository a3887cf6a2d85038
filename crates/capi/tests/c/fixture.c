/* A stand-in host BLAS for the tests: naive column-major GEMM behind cblas_dgemm/cblas_sgemm,
 * and Fortran dgemm_/sgemm_ that call the CBLAS symbols *by global name*, as some BLAS
 * libraries layer one interface over the other. Preloaded in front of it, a drop-in library
 * that resolved its host symbols by global name, or loaded this library without
 * RTLD_DEEPBIND, would recurse forever: dgemm_ (hetblas) -> dgemm_ (here) -> cblas_dgemm
 * (hetblas) -> dgemm_ (here) -> ... `fixture_calls` counts the Fortran calls that arrive. */
#include <stddef.h>

int fixture_calls = 0;

static int trans(int t) { return t != 111; }

#define GEMM(NAME, T)                                                                         \
  void NAME(int order, int ta, int tb, int m, int n, int k, T alpha, const T *a, int lda,     \
            const T *b, int ldb, T beta, T *c, int ldc) {                                     \
    (void)order;                                                                              \
    for (int j = 0; j < n; j++)                                                               \
      for (int i = 0; i < m; i++) {                                                           \
        T s = 0;                                                                              \
        for (int l = 0; l < k; l++) {                                                         \
          T x = trans(ta) ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];                  \
          T y = trans(tb) ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];                  \
          s += x * y;                                                                         \
        }                                                                                     \
        T *z = &c[i + (size_t)j * ldc];                                                       \
        *z = alpha * s + (beta == 0 ? 0 : beta * *z);                                         \
      }                                                                                       \
  }
GEMM(cblas_dgemm, double)
GEMM(cblas_sgemm, float)

static int ct(const char *t) { return (*t == 'N' || *t == 'n') ? 111 : 112; }

#define FGEMM(NAME, CNAME, T)                                                                 \
  void NAME(const char *ta, const char *tb, const int *m, const int *n, const int *k,         \
            const T *alpha, const T *a, const int *lda, const T *b, const int *ldb,           \
            const T *beta, T *c, const int *ldc) {                                            \
    fixture_calls++;                                                                          \
    CNAME(102, ct(ta), ct(tb), *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc);         \
  }
FGEMM(dgemm_, cblas_dgemm, double)
FGEMM(sgemm_, cblas_sgemm, float)

/* The renamed family of pip's NumPy and SciPy wheels (scipy-openblas), as a wheel's bundled
 * library defines it: a preloaded libhetblas.so takes these names and forwards the calls it
 * keeps on the host here, to the library the program would have called. The counters say
 * which arrived; the CBLAS forms must not (hetblas's CBLAS layer forwards through the Fortran
 * names). The LAPACK stand-ins only mark `info`, to show the call was forwarded. */
#include <stdint.h>
int fixture_scipy_calls = 0, fixture_scipy64_calls = 0, fixture_scipy_cblas_calls = 0;

#define SCIPY_GEMM(NAME, I, COUNTER)                                                          \
  void NAME(const char *ta, const char *tb, const I *m, const I *n, const I *k,              \
            const double *alpha, const double *a, const I *lda, const double *b,              \
            const I *ldb, const double *beta, double *c, const I *ldc) {                      \
    COUNTER++;                                                                                \
    for (I j = 0; j < *n; j++)                                                                \
      for (I i = 0; i < *m; i++) {                                                            \
        double s = 0;                                                                         \
        for (I l = 0; l < *k; l++) {                                                          \
          double x = (*ta == 'N' || *ta == 'n') ? a[i + l * *lda] : a[l + i * *lda];          \
          double y = (*tb == 'N' || *tb == 'n') ? b[l + j * *ldb] : b[j + l * *ldb];          \
          s += x * y;                                                                         \
        }                                                                                     \
        double *z = &c[i + j * *ldc];                                                         \
        *z = *alpha * s + (*beta == 0 ? 0 : *beta * *z);                                      \
      }                                                                                       \
  }
SCIPY_GEMM(scipy_dgemm_, int, fixture_scipy_calls)
SCIPY_GEMM(scipy_dgemm_64_, int64_t, fixture_scipy64_calls)

void scipy_cblas_dgemm(int o, int ta, int tb, int m, int n, int k, double alpha,
                       const double *a, int lda, const double *b, int ldb, double beta,
                       double *c, int ldc) {
  (void)o, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
  (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
  fixture_scipy_cblas_calls++;
}
void scipy_cblas_dgemm64_(int o, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                          const double *a, int64_t lda, const double *b, int64_t ldb,
                          double beta, double *c, int64_t ldc) {
  (void)o, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
  (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
  fixture_scipy_cblas_calls++;
}
void scipy_dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv,
                  double *b, const int *ldb, int *info) {
  (void)n, (void)nrhs, (void)a, (void)lda, (void)ipiv, (void)b, (void)ldb;
  *info = 4242;
}
void scipy_dgesv_64_(const int64_t *n, const int64_t *nrhs, double *a, const int64_t *lda,
                     int64_t *ipiv, double *b, const int64_t *ldb, int64_t *info) {
  (void)n, (void)nrhs, (void)a, (void)lda, (void)ipiv, (void)b, (void)ldb;
  *info = 4243;
}
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t len) {
  (void)uplo, (void)n, (void)a, (void)lda, (void)len;
  *info = 4244;
}

/* GEMMT under OpenBLAS's and MKL's name (reference BLAS 3.12's dgemmtr_ absent): hetblas must
 * forward its dgemmtr_ and dgemmt_ calls here, to the host's own routine, when it keeps them on
 * the host. `fixture_gemmt_calls` counts those that arrive. */
int fixture_gemmt_calls = 0;
void dgemmt_(const char *uplo, const char *ta, const char *tb, const int *n, const int *k,
             const double *alpha, const double *a, const int *lda, const double *b,
             const int *ldb, const double *beta, double *c, const int *ldc) {
  fixture_gemmt_calls++;
  int upper = *uplo == 'U' || *uplo == 'u';
  for (int j = 0; j < *n; j++)
    for (int i = upper ? 0 : j; i < (upper ? j + 1 : *n); i++) {
      double s = 0;
      for (int l = 0; l < *k; l++) {
        double x = (*ta == 'N' || *ta == 'n') ? a[i + l * *lda] : a[l + i * *lda];
        double y = (*tb == 'N' || *tb == 'n') ? b[l + j * *ldb] : b[j + l * *ldb];
        s += x * y;
      }
      double *z = &c[i + j * *ldc];
      *z = *alpha * s + (*beta == 0 ? 0 : *beta * *z);
    }
}
