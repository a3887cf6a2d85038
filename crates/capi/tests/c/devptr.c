/* A CUDA program handing device pointers to BLAS, as cuBLAS users do: it cuMemAllocs A, B and
 * C on GPU 0 (through the CUDA driver, loaded at run time: no toolkit needed to build it),
 * calls the LP64 dgemm_ of libhetblas.so with those pointers, copies C back and checks it
 * against an f64 reference computed here. libhetblas.so must compute where the operands live
 * and never read them on the host (which would crash: they are not host addresses).
 *
 *   devptr            exit 0: passed; 1: wrong result or a CUDA error; 77: no CUDA driver or
 *                     GPU (skipped), unless HETBLAS_REQUIRE=cuda, which turns that into 1.
 * Cases: every operand on the GPU (beta != 0, transposed B, ldc > m), then A in host memory
 * beside device B and C, each small (far below any offload threshold). A host product runs
 * before the driver is loaded, as in a program whose first BLAS call precedes its CUDA use. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);

static int skip(const char *why) {
  const char *req = getenv("HETBLAS_REQUIRE");
  if (req && strstr(req, "cuda")) {
    printf("devptr: FAILED: %s (HETBLAS_REQUIRE=%s)\n", why, req);
    return 1;
  }
  printf("devptr: skipped: %s\n", why);
  return 77;
}

#define CK(call)                                                                  \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != 0) { printf("devptr: FAILED: %s returned %d\n", #call, r_); return 1; } \
  } while (0)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double rnd(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* One case: A on the device when a_dev, else in host memory; B (n x k, op = T) and C
 * (ldc = m + 3) on the device. */
static int run_case(int a_dev) {
  const int m = 97, n = 61, k = 43, lda = m, ldb = n, ldc = m + 3;
  const double alpha = 1.25, beta = -0.75;
  size_t na = (size_t)lda * k, nb = (size_t)ldb * k, nc = (size_t)ldc * n;
  double *a = malloc(8 * na), *b = malloc(8 * nb), *c0 = malloc(8 * nc), *c = malloc(8 * nc);
  for (size_t i = 0; i < na; i++) a[i] = rnd();
  for (size_t i = 0; i < nb; i++) b[i] = rnd();
  for (size_t i = 0; i < nc; i++) c0[i] = rnd();
  CUdeviceptr da = 0, db, dc;
  if (a_dev) { CK(cuMemAlloc(&da, 8 * na)); CK(cuMemcpyHtoD(da, a, 8 * na)); }
  CK(cuMemAlloc(&db, 8 * nb));
  CK(cuMemAlloc(&dc, 8 * nc));
  CK(cuMemcpyHtoD(db, b, 8 * nb));
  CK(cuMemcpyHtoD(dc, c0, 8 * nc));
  dgemm_("N", "T", &m, &n, &k, &alpha, a_dev ? (const double *)(uintptr_t)da : a, &lda,
         (const double *)(uintptr_t)db, &ldb, &beta, (double *)(uintptr_t)dc, &ldc, 1, 1);
  CK(cuMemcpyDtoH(c, dc, 8 * nc));
  double worst = 0;
  int bad = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < ldc; i++) {
      double got = c[i + (size_t)j * ldc];
      if (i >= m) { /* beyond m: never written */
        if (got != c0[i + (size_t)j * ldc]) bad++;
        continue;
      }
      double ref = beta * c0[i + (size_t)j * ldc], mag = fabs(ref);
      for (int l = 0; l < k; l++) {
        double p = alpha * a[i + (size_t)l * lda] * b[j + (size_t)l * ldb];
        ref += p;
        mag += fabs(p);
      }
      double err = fabs(got - ref) / (2.0 * (k + 2) * 1.1102230246251565e-16 * mag + 1e-300);
      if (err > worst) worst = err;
      if (!(err <= 1.0)) bad++;
    }
  printf("devptr: dgemm_ %dx%dx%d, A %s, B and C device pointers: %s (worst error %.3g of "
         "the bound)\n", m, n, k, a_dev ? "device" : "host", bad ? "FAILED" : "ok", worst);
  if (a_dev) cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
  free(a); free(b); free(c0); free(c);
  return bad != 0;
}

/* Host products before the CUDA driver is loaded: hetblas then learns that no GPU runtime is
 * there, and must still see the driver arrive before the device pointers below. Two: the first
 * loads the settings and the host BLAS, the second takes the small path (crates/capi/src/
 * small.rs), which must not outlive the driver's arrival either. */
static int host_call_first(void) {
  const int n = 3;
  const double one = 1.0, zero = 0.0;
  double a[9], b[9], c[9];
  for (int rep = 0; rep < 2; rep++) {
    for (int i = 0; i < 9; i++) { a[i] = rnd(); b[i] = rnd(); c[i] = NAN; }
    dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n, 1, 1);
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        double ref = 0.0;
        for (int l = 0; l < n; l++) ref += a[i + l * n] * b[l + j * n];
        if (!(fabs(c[i + j * n] - ref) <= 1e-14 * (1.0 + fabs(ref)))) {
          printf("devptr: FAILED: host product %d before CUDA loaded is wrong\n", rep + 1);
          return 1;
        }
      }
  }
  return 0;
}

int main(void) {
  if (host_call_first()) return 1;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cuda) return skip("no CUDA driver (libcuda.so.1)");
#define SYM(f, name) if (!(*(void **)&f = dlsym(cuda, name))) return skip("CUDA driver lacks " name)
  SYM(cuInit, "cuInit");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuMemAlloc, "cuMemAlloc_v2");
  SYM(cuMemFree, "cuMemFree_v2");
  SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0) return skip("no CUDA GPU");
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  int failed = run_case(1) | run_case(0);
  return failed;
}
