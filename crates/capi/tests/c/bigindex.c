/* Large-index acceptance checks for libhetblas.so (run on the GPU machine; needs ~40 GB RAM).
 *   bigindex sgemm64   sgemm_64_,      m = 2^31 + 7, n = k = 2, f32, sampled check
 *   bigindex cblas64   cblas_sgemm64_, the same problem
 *   bigindex dgemm     LP64 dgemm_,    m = k = 50000, n = 8 (A has 2.5e9 > 2^31 elements)
 *   bigindex negative  LP64 dgemm_ with m = -1 and m = INT_MIN: refused through xerbla_
 * Prints one line per case; exits non-zero if any fails. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sgemm_64_(const char *, const char *, const int64_t *, const int64_t *, const int64_t *,
               const float *, const float *, const int64_t *, const float *, const int64_t *,
               const float *, float *, const int64_t *, size_t, size_t);
void cblas_sgemm64_(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                    const float *, int64_t, float, float *, int64_t);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);

static int xerbla_calls = 0, xerbla_info = 0;
void xerbla_(const char *name, const int *info, size_t len) {
  (void)name; (void)len;
  xerbla_calls++;
  xerbla_info = *info;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Exactly representable values, so f32 sums of two products are exact. */
static float fa(int64_t i, int64_t l) { return (float)((i * 7 + l * 13) % 61) - 30.0f; }
static double da(int64_t i, int64_t l) { return (double)((i * 7 + l * 13) % 101) / 101.0 - 0.5; }

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static int skinny_f32(int use_cblas) {
  const int64_t m = ((int64_t)1 << 31) + 7, n = 2, k = 2;
  float *a = malloc(sizeof(float) * m * k), *c = malloc(sizeof(float) * m * n);
  float b[4] = {1, 2, 3, -4}; /* column-major k x n */
  if (!a || !c) { printf("%s: cannot allocate %.1f GB\n", use_cblas ? "cblas_sgemm64_" : "sgemm_64_", 16.0 * m / 1e9); return 1; }
  for (int64_t l = 0; l < k; l++)
    for (int64_t i = 0; i < m; i++) a[i + l * m] = fa(i, l);
  for (int64_t i = 0; i < m * n; i++) c[i] = NAN; /* beta = 0 must not read C */
  float one = 1, zero = 0;
  double t = now();
  if (use_cblas)
    cblas_sgemm64_(102, 111, 111, m, n, k, 1.0f, a, m, b, k, 0.0f, c, m);
  else
    sgemm_64_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m, 1, 1);
  t = now() - t;
  int bad = 0;
  for (int s = 0; s < 100000 && !bad; s++) {
    int64_t i = s < 16 ? m - 1 - s : (int64_t)(next() % (uint64_t)m);
    for (int64_t j = 0; j < n; j++) {
      double want = (double)fa(i, 0) * b[0 + j * k] + (double)fa(i, 1) * b[1 + j * k];
      if (c[i + j * m] != (float)want) {
        printf("  c[%lld,%lld] = %g, want %g\n", (long long)i, (long long)j, c[i + j * m], want);
        bad = 1;
      }
    }
  }
  printf("%s m=%lld n=2 k=2 f32: %.2f s, 100000 sampled rows (the last 16 included): %s\n",
         use_cblas ? "cblas_sgemm64_" : "sgemm_64_", (long long)m, t, bad ? "FAIL" : "ok");
  free(a); free(c);
  return bad;
}

static int big_a_f64(void) {
  const int m = 50000, n = 8, k = 50000;
  double *a = malloc(sizeof(double) * (size_t)m * k), *b = malloc(sizeof(double) * (size_t)k * n);
  double *c = malloc(sizeof(double) * (size_t)m * n);
  if (!a || !b || !c) { printf("dgemm_: cannot allocate 20 GB\n"); return 1; }
  for (int64_t l = 0; l < k; l++)
    for (int64_t i = 0; i < m; i++) a[i + l * (int64_t)m] = da(i, l);
  for (int64_t i = 0; i < (int64_t)k * n; i++) b[i] = da(i, 3) * 2;
  for (int64_t i = 0; i < (int64_t)m * n; i++) c[i] = 1.0;
  double alpha = 1.5, beta = -0.5;
  double t = now();
  dgemm_("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m, 1, 1);
  t = now() - t;
  double worst = 0;
  for (int s = 0; s < 400; s++) {
    int64_t i = s < 4 ? m - 1 - s : (int64_t)(next() % (uint64_t)m);
    for (int64_t j = 0; j < n; j++) {
      double acc = 0, mag = 0;
      for (int64_t l = 0; l < k; l++) {
        double p = a[i + l * (int64_t)m] * b[l + j * (int64_t)k];
        acc += p;
        mag += fabs(p);
      }
      double want = alpha * acc + beta * 1.0;
      double err = fabs(c[i + j * (int64_t)m] - want) / (fabs(alpha) * mag + 1);
      if (err > worst) worst = err;
    }
  }
  int bad = !(worst < 1e-13);
  printf("dgemm_ (LP64) m=k=50000 n=8: %.2f s (%.1f GFLOP/s), 400 sampled rows: max rel err %.2e: %s\n",
         t, 2.0 * m * n * k / t / 1e9, worst, bad ? "FAIL" : "ok");
  free(a); free(b); free(c);
  return bad;
}

static int negative(void) {
  double a[4] = {1, 2, 3, 4}, c[4] = {5, 6, 7, 8}, one = 1;
  int bad = 0;
  int ms[2] = {-1, INT_MIN};
  for (int t = 0; t < 2; t++) {
    int m = ms[t], n = 2, k = 2, ld = 2;
    int before = xerbla_calls;
    dgemm_("N", "N", &m, &n, &k, &one, a, &ld, a, &ld, &one, c, &ld, 1, 1);
    int ok = xerbla_calls == before + 1 && xerbla_info == 3 && c[0] == 5 && c[3] == 8;
    printf("dgemm_ (LP64) m=%d: xerbla_ info %d: %s\n", m, xerbla_info, ok ? "ok" : "FAIL");
    bad |= !ok;
  }
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "sgemm64")) bad |= skinny_f32(0);
    else if (!strcmp(argv[i], "cblas64")) bad |= skinny_f32(1);
    else if (!strcmp(argv[i], "dgemm")) bad |= big_a_f64();
    else if (!strcmp(argv[i], "negative")) bad |= negative();
    else { printf("unknown case %s\n", argv[i]); bad = 1; }
  }
  return bad;
}
