/* Calls libhetblas.so's symbols as a program linked against a BLAS does, and checks what
 * comes back. usage: dropin <case>; exits 0 on success, prints what went wrong otherwise. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);
void sgemm_64_(const char *, const char *, const int64_t *, const int64_t *, const int64_t *,
               const float *, const float *, const int64_t *, const float *, const int64_t *,
               const float *, float *, const int64_t *, size_t, size_t);
void dgemv_(const char *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *,
            size_t);
int lsame_(const char *, const char *, size_t, size_t);
void xerbla_array_(const char *, const int *, const int *, size_t);
void cblas_dgemm(int, int, int, int, int, int, double, const double *, int, const double *,
                 int, double, double *, int);
void cblas_dgemm64_(int, int, int, int64_t, int64_t, int64_t, double, const double *, int64_t,
                    const double *, int64_t, double, double *, int64_t);

/* GEMMT's entries, found at run time (a program linked against the fixture alone has no
 * definition of most of them to link with): the Fortran names and CBLAS's. */
typedef void fgemmt(const char *, const char *, const char *, const int *, const int *,
                    const double *, const double *, const int *, const double *, const int *,
                    const double *, double *, const int *, size_t, size_t, size_t);
typedef void cgemmt(int, int, int, int, int, int, double, const double *, int, const double *,
                    int, double, double *, int);
static void *entry(const char *name) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (!f) {
    printf("%s is not exported\n", name);
    exit(1);
  }
  return f;
}

#ifdef PRELOAD_ONLY
/* The renamed family, defined by the fixture as a wheel's library does (fixture.c). */
extern int fixture_gemmt_calls;
extern int fixture_scipy_calls, fixture_scipy64_calls, fixture_scipy_cblas_calls;
void scipy_dgemm_(const char *, const char *, const int *, const int *, const int *,
                  const double *, const double *, const int *, const double *, const int *,
                  const double *, double *, const int *);
void scipy_dgemm_64_(const char *, const char *, const int64_t *, const int64_t *,
                     const int64_t *, const double *, const double *, const int64_t *,
                     const double *, const int64_t *, const double *, double *,
                     const int64_t *);
void scipy_cblas_dgemm(int, int, int, int, int, int, double, const double *, int,
                       const double *, int, double, double *, int);
void scipy_cblas_dgemm64_(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                          int64_t, const double *, int64_t, double, double *, int64_t);
void scipy_dgesv_(const int *, const int *, double *, const int *, int *, double *,
                  const int *, int *);
void scipy_dgesv_64_(const int64_t *, const int64_t *, double *, const int64_t *, int64_t *,
                     double *, const int64_t *, int64_t *);
void dpotrf_(const char *, const int *, double *, const int *, int *, size_t);

/* C = A * I (3x2 = 3x2 * 2x2) through each renamed GEMM entry, checked; then the counters of
 * the fixture's entries that received calls: `host` expects every call forwarded to the
 * fixture's Fortran names, `devices` none (the devices took them). */
static int renamed(int on_devices) {
  double a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {1, 0, 0, 1}, one = 1, zero = 0;
  int m = 3, n = 2, k = 2;
  int64_t m64 = 3, n64 = 2, k64 = 2;
  for (int entry = 0; entry < 4; entry++) {
    double c[6] = {0};
    switch (entry) {
      case 0: scipy_dgemm_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m); break;
      case 1: scipy_cblas_dgemm(102, 111, 111, 3, 2, 2, 1.0, a, 3, b, 2, 0.0, c, 3); break;
      case 2:
        scipy_dgemm_64_("N", "N", &m64, &n64, &k64, &one, a, &m64, b, &k64, &zero, c, &m64);
        break;
      default: scipy_cblas_dgemm64_(102, 111, 111, 3, 2, 2, 1.0, a, 3, b, 2, 0.0, c, 3);
    }
    for (int i = 0; i < 6; i++)
      if (c[i] != a[i]) {
        printf("renamed GEMM entry %d: c[%d] = %g, want %g\n", entry, i, c[i], a[i]);
        return 1;
      }
  }
  int want = on_devices ? 0 : 2;
  if (fixture_scipy_calls != want || fixture_scipy64_calls != want ||
      fixture_scipy_cblas_calls != 0) {
    printf("the wheel's scipy_dgemm_ got %d calls, scipy_dgemm_64_ %d, its CBLAS %d "
           "(want %d, %d, 0)\n",
           fixture_scipy_calls, fixture_scipy64_calls, fixture_scipy_cblas_calls, want, want);
    return 1;
  }
  /* LAPACK: on the host path forwarded untouched to the routine of the same name (the
     stand-ins mark info); forced to the devices (HETBLAS_OFFLOAD_FLOPS=0), computed there:
     A = [4 1; 1 3], A x = (1, 2) gives x = (1/11, 7/11), its Cholesky factor
     L = [2 0; 0.5 sqrt(2.75)]. */
  double s[4] = {4, 1, 1, 3}, r[2] = {1, 2}, s64[4] = {4, 1, 1, 3}, r64[2] = {1, 2};
  double p[4] = {4, 1, 1, 3};
  int ipiv[2], info = -1, two = 2, nrhs = 1;
  int64_t ipiv64[2], info64 = -1, two64 = 2, nrhs64 = 1;
  scipy_dgesv_(&two, &nrhs, s, &two, ipiv, r, &two, &info);
  scipy_dgesv_64_(&two64, &nrhs64, s64, &two64, ipiv64, r64, &two64, &info64);
  int pinfo = -1;
  dpotrf_("L", &two, p, &two, &pinfo, 1);
  if (on_devices) {
    double x0 = 1.0 / 11, x1 = 7.0 / 11;
    int bad = info != 0 || info64 != 0 || pinfo != 0 || ipiv[0] != 1 || ipiv64[0] != 1 ||
              fabs(r[0] - x0) > 1e-14 || fabs(r[1] - x1) > 1e-14 ||
              fabs(r64[0] - x0) > 1e-14 || fabs(r64[1] - x1) > 1e-14 || fabs(p[0] - 2) > 1e-14 ||
              fabs(p[1] - 0.5) > 1e-14 || fabs(p[3] - sqrt(2.75)) > 1e-14 || p[2] != 1;
    if (bad) {
      printf("LAPACK on the devices: info %d, %ld, %d, x (%g, %g), (%g, %g), L (%g, %g, %g)\n",
             info, (long)info64, pinfo, r[0], r[1], r64[0], r64[1], p[0], p[1], p[3]);
      return 1;
    }
    return 0;
  }
  if (info != 4242 || info64 != 4243 || pinfo != 4244) {
    printf("LAPACK forwarding: info %d, %ld, %d (want 4242, 4243, 4244)\n", info, (long)info64,
           pinfo);
    return 1;
  }
  return 0;
}
#endif

#ifndef PRELOAD_ONLY
/* The program's own error handlers: hetblas must call these, not its defaults. */
static char seen_name[16];
static long seen_info = 0;
static int seen_calls = 0;
void xerbla_(const char *name, const int *info, size_t len) {
  size_t n = len < 15 ? len : 15;
  memcpy(seen_name, name, n);
  seen_name[n] = 0;
  for (int i = (int)n - 1; i >= 0 && seen_name[i] == ' '; i--) seen_name[i] = 0;
  seen_info = *info;
  seen_calls++;
}
void xerbla_64_(const char *name, const int64_t *info, size_t len) {
  int i = (int)*info;
  xerbla_(name, &i, len);
}
void cblas_xerbla(int info, const char *rout, const char *form, ...) {
  (void)form;
  snprintf(seen_name, sizeof seen_name, "%s", rout);
  seen_info = info;
  seen_calls++;
}

#endif

static double rnd(void) { return (double)rand() / RAND_MAX - 0.5; }

/* C = alpha*A*B + beta*C, column-major, checked against a double-precision loop. */
static int check_dgemm(int m, int n, int k, double beta, int row_major) {
  double *a = malloc(sizeof(double) * m * k), *b = malloc(sizeof(double) * k * n);
  double *c = malloc(sizeof(double) * m * n), *r = malloc(sizeof(double) * m * n);
  for (int i = 0; i < m * k; i++) a[i] = rnd();
  for (int i = 0; i < k * n; i++) b[i] = rnd();
  for (int i = 0; i < m * n; i++) c[i] = r[i] = rnd();
  double alpha = 0.7;
  /* reference, column-major (for row-major the same numbers are read transposed) */
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int l = 0; l < k; l++)
        s += row_major ? a[i * k + l] * b[l * n + j] : a[i + l * m] * b[l + j * k];
      double *z = row_major ? &r[i * n + j] : &r[i + j * m];
      *z = alpha * s + beta * *z;
    }
  if (row_major)
    cblas_dgemm(101, 111, 111, m, n, k, alpha, a, k, b, n, beta, c, n);
  else
    dgemm_("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m, 1, 1);
  double err = 0;
  for (int i = 0; i < m * n; i++) err = fmax(err, fabs(c[i] - r[i]));
  free(a); free(b); free(c); free(r);
  if (err > 1e-12 * k) {
    printf("dgemm %dx%dx%d: max error %g\n", m, n, k, err);
    return 1;
  }
  return 0;
}

/* C's `uplo` triangle of alpha*A*B^T + beta*C (A and B n x k) through `which` (0 dgemmtr_,
 * 1 dgemmt_, 2 cblas_dgemmt column-major, 3 cblas_dgemmtr row-major), checked against a
 * double-precision loop. The other triangle holds NaN and must keep it; with beta = 0 so does
 * the triangle, which must not be read. */
static int check_dgemmt(int which, char uplo, int n, int k, double beta) {
  int rm = which == 3;
  double *a = malloc(sizeof(double) * n * k), *b = malloc(sizeof(double) * n * k);
  double *c = malloc(sizeof(double) * n * n), *r = malloc(sizeof(double) * n * n);
  for (int i = 0; i < n * k; i++) a[i] = rnd(), b[i] = rnd();
  double alpha = 0.7;
  int upper = uplo == 'U', failed = 0;
#define IN(i, j) (upper ? (i) <= (j) : (i) >= (j))
#define CI(i, j) (rm ? (i) * n + (j) : (i) + (j) * n)
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      c[CI(i, j)] = (!IN(i, j) || beta == 0) ? NAN : rnd();
      double s = 0;
      for (int l = 0; l < k; l++)
        s += rm ? a[i * k + l] * b[j * k + l] : a[i + l * n] * b[j + l * n];
      r[CI(i, j)] = alpha * s + (beta == 0 ? 0 : beta * c[CI(i, j)]);
    }
  int lead = rm ? k : n;
  int cu = upper ? 121 : 122;
  switch (which) {
    case 0:
    case 1:
      ((fgemmt *)entry(which ? "dgemmt_" : "dgemmtr_"))(&uplo, "N", "T", &n, &k, &alpha, a, &n,
                                                         b, &n, &beta, c, &n, 1, 1, 1);
      break;
    case 2:
      ((cgemmt *)entry("cblas_dgemmt"))(102, cu, 111, 112, n, k, alpha, a, lead, b, lead, beta,
                                        c, n);
      break;
    default:
      ((cgemmt *)entry("cblas_dgemmtr"))(101, cu, 111, 112, n, k, alpha, a, lead, b, lead, beta,
                                         c, n);
  }
  double err = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      double x = c[CI(i, j)];
      if (!IN(i, j)) {
        if (!isnan(x)) failed = printf("gemmt %d %c: C(%d,%d) outside the triangle written\n",
                                       which, uplo, i, j);
      } else {
        err = fmax(err, isnan(x) ? INFINITY : fabs(x - r[CI(i, j)]));
      }
    }
#undef IN
#undef CI
  free(a); free(b); free(c); free(r);
  if (failed || err > 1e-12 * k) {
    printf("gemmt %d %c %dx%d beta %g: max error %g\n", which, uplo, n, k, beta, err);
    return 1;
  }
  return 0;
}

/* dsyrk_ (lower, A not transposed): C := alpha A A^T + beta C against a direct sum; the upper
 * triangle must stay as it was. Found at run time, as GEMMT's entries are. */
typedef void fsyrk(const char *, const char *, const int *, const int *, const double *,
                   const double *, const int *, const double *, double *, const int *, size_t,
                   size_t);
static int check_dsyrk(int n, int k, double alpha, double beta) {
  fsyrk *f = (fsyrk *)entry("dsyrk_");
  double *a = malloc(sizeof(double) * n * k), *c = malloc(sizeof(double) * n * n);
  double *c0 = malloc(sizeof(double) * n * n);
  for (int i = 0; i < n * k; i++) a[i] = rand() / (double)RAND_MAX - 0.5;
  for (int i = 0; i < n * n; i++) c0[i] = c[i] = rand() / (double)RAND_MAX - 0.5;
  f("L", "N", &n, &k, &alpha, a, &n, &beta, c, &n, 1, 1);
  int bad = 0;
  for (int j = 0; j < n && !bad; j++) {
    for (int i = 0; i < n && !bad; i++) {
      double want = c0[i + j * n];
      if (i >= j) {
        double s = 0;
        for (int l = 0; l < k; l++) s += a[i + l * n] * a[j + l * n];
        want = alpha * s + beta * want;
      }
      if (fabs(c[i + j * n] - want) > 1e-12 * (k + 1)) {
        printf("dsyrk %dx%d: C(%d,%d) = %g, want %g\n", n, k, i, j, c[i + j * n], want);
        bad = 1;
      }
    }
  }
  free(a);
  free(c);
  free(c0);
  return bad;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  srand(7);
  if (!strcmp(what, "syrk")) return check_dsyrk(90, 40, 1.0, 0.5) | check_dsyrk(33, 70, -2.0, 0.0);
  if (!strcmp(what, "gemm")) {
    /* beta != 0: a failed device run must be redone from the original C */
    return check_dgemm(300, 200, 250, 0.5, 0) | check_dgemm(64, 48, 40, 0.0, 0) |
           check_dgemm(120, 90, 70, 1.5, 1) | check_dgemmt(0, 'L', 150, 70, 0.5) |
           check_dgemmt(1, 'U', 130, 40, 0.0) | check_dgemmt(2, 'U', 90, 33, -1.5) |
           check_dgemmt(3, 'L', 110, 21, 0.0);
  }
#ifdef PRELOAD_ONLY
  if (!strcmp(what, "gemmt-host")) {
    /* Kept on the host, both names reach the host's own dgemmt_ (the fixture's), and the
     * CBLAS forms go through them. */
    int bad = check_dgemmt(0, 'L', 9, 4, 0.5) | check_dgemmt(1, 'U', 7, 3, 0.0) |
              check_dgemmt(3, 'U', 5, 6, 2.0);
    if (fixture_gemmt_calls != 3) {
      printf("the host's dgemmt_ got %d calls (want 3)\n", fixture_gemmt_calls);
      return 1;
    }
    return bad;
  }
#endif
#ifdef PRELOAD_ONLY
  if (!strcmp(what, "renamed-host")) return renamed(0);
  if (!strcmp(what, "renamed-devices")) return renamed(1);
#endif
#ifndef PRELOAD_ONLY
  if (!strcmp(what, "xerbla")) {
    double a[4] = {1, 2, 3, 4}, c[4] = {9, 9, 9, 9};
    double one = 1;
    int m = -1, n = 2, k = 2, ld = 2;
    dgemm_("N", "N", &m, &n, &k, &one, a, &ld, a, &ld, &one, c, &ld, 1, 1);
    if (seen_calls != 1 || strcmp(seen_name, "DGEMM") || seen_info != 3) {
      printf("dgemm_ m=-1: xerbla saw %d calls, %s, %ld (want 1, DGEMM, 3)\n", seen_calls,
             seen_name, seen_info);
      return 1;
    }
    int lda = 1;
    m = 2;
    dgemm_("T", "N", &m, &n, &k, &one, a, &lda, a, &ld, &one, c, &ld, 1, 1);
    if (seen_calls != 2 || seen_info != 8) {
      printf("dgemm_ lda=1 with k=2, trans: xerbla saw info %ld (want 8)\n", seen_info);
      return 1;
    }
    char bad = 'X';
    dgemv_(&bad, &m, &n, &one, a, &ld, a, &n, &one, c, &n, 1);
    if (seen_calls != 3 || strcmp(seen_name, "DGEMV") || seen_info != 1) {
      printf("dgemv_ trans=X: xerbla saw %s %ld (want DGEMV 1)\n", seen_name, seen_info);
      return 1;
    }
    int64_t m64 = -5, n64 = 2, k64 = 2, ld64 = 2;
    float fa[4] = {1, 2, 3, 4}, fc[4] = {9, 9, 9, 9}, fone = 1;
    sgemm_64_("N", "N", &m64, &n64, &k64, &fone, fa, &ld64, fa, &ld64, &fone, fc, &ld64, 1, 1);
    if (seen_calls != 4 || strcmp(seen_name, "SGEMM") || seen_info != 3) {
      printf("sgemm_64_ m=-5: xerbla saw %s %ld (want SGEMM 3)\n", seen_name, seen_info);
      return 1;
    }
    cblas_dgemm(7, 111, 111, 2, 2, 2, 1.0, a, 2, a, 2, 1.0, c, 2);
    if (seen_calls != 5 || strcmp(seen_name, "cblas_dgemm") || seen_info != 1) {
      printf("cblas_dgemm order=7: saw %s %ld (want cblas_dgemm 1)\n", seen_name, seen_info);
      return 1;
    }
    cblas_dgemm64_(102, 111, 111, 2, 2, 2, 1.0, a, 1, a, 2, 1.0, c, 2);
    if (seen_calls != 6 || seen_info != 9) {
      printf("cblas_dgemm64_ lda=1: saw %ld (want 9)\n", seen_info);
      return 1;
    }
    if (!lsame_("t", "T", 1, 1) || lsame_("N", "T", 1, 1)) {
      printf("lsame_ is wrong\n");
      return 1;
    }
    int len = 6, info = 4;
    xerbla_array_("ZGEQRFXX", &len, &info, 8);
    if (seen_calls != 7 || strcmp(seen_name, "ZGEQRF") || seen_info != 4) {
      printf("xerbla_array_: saw %s %ld (want ZGEQRF 4)\n", seen_name, seen_info);
      return 1;
    }
    /* GEMMT, named as the caller named it, with reference BLAS 3.12's parameter numbers. */
    char lo = 'L', bad_uplo = 'X';
    n = -1;
    ((fgemmt *)entry("dgemmtr_"))(&lo, "N", "N", &n, &k, &one, a, &ld, a, &ld, &one, c, &ld, 1,
                                  1, 1);
    if (seen_calls != 8 || strcmp(seen_name, "DGEMMTR") || seen_info != 4) {
      printf("dgemmtr_ n=-1: saw %s %ld (want DGEMMTR 4)\n", seen_name, seen_info);
      return 1;
    }
    n = 2;
    ((fgemmt *)entry("dgemmt_"))(&bad_uplo, "N", "N", &n, &k, &one, a, &ld, a, &ld, &one, c,
                                 &ld, 1, 1, 1);
    if (seen_calls != 9 || strcmp(seen_name, "DGEMMT") || seen_info != 1) {
      printf("dgemmt_ uplo=X: saw %s %ld (want DGEMMT 1)\n", seen_name, seen_info);
      return 1;
    }
    ((cgemmt *)entry("cblas_dgemmtr"))(102, 122, 112, 111, 2, 3, 1.0, a, 2, a, 3, 1.0, c, 2);
    if (seen_calls != 10 || strcmp(seen_name, "cblas_dgemmtr") || seen_info != 9) {
      printf("cblas_dgemmtr lda=2 < k=3: saw %s %ld (want cblas_dgemmtr 9)\n", seen_name,
             seen_info);
      return 1;
    }
    for (int i = 0; i < 4; i++)
      if (c[i] != 9 || fc[i] != 9) {
        printf("a refused call wrote C\n");
        return 1;
      }
    return 0;
  }
  if (!strcmp(what, "ilp64")) {
    int64_t m = 3, n = 2, k = 2, lda = 3, ldb = 2, ldc = 3;
    float a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {1, 0, 0, 1}, c[6] = {0};
    float one = 1, zero = 0;
    sgemm_64_("N", "N", &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc, 1, 1);
    for (int i = 0; i < 6; i++)
      if (c[i] != a[i]) {
        printf("sgemm_64_ with B = I: c[%d] = %g, want %g\n", i, c[i], a[i]);
        return 1;
      }
    return 0;
  }
#endif
  printf("unknown case %s\n", what);
  return 2;
}
