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
