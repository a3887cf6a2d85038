// 2D host->device copies by where the tile's columns start (issue 57; crates/core's calibrate/strided.rs
// fixes the start its tables are measured from). Built and run by `compare.sh --copystart`; not part of
// the library. Output of 2026-12-01: docs/data/h200-2026-12-01-2d-copy-start.txt, section 1.
// Per start of the registration within 2 MiB (the tile 4 MiB in), alone and beside DGEMM 4096.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { printf("%s: %d\n", #x, (int)e); exit(1); } } while (0)
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
    size_t bytes = 1ull << 30, pitch = 131072;
    for (size_t sz : {1ul << 30, 200ul << 20, 3ul << 30}) { void *p = malloc(sz); printf("malloc(%zu MiB) %% 2M = %zu\n", sz >> 20, (size_t)p % (2 << 20)); free(p); }
    void *dev; CK(cudaMalloc(&dev, 256 << 20));
    cudaStream_t s, g; CK(cudaStreamCreate(&s)); CK(cudaStreamCreate(&g));
    cublasHandle_t cb; CK(cublasCreate(&cb)); CK(cublasSetStream(cb, g));
    int n = 4096; double *A, *B, *C; CK(cudaMalloc(&A, 8ul * n * n)); CK(cudaMalloc(&B, 8ul * n * n)); CK(cudaMalloc(&C, 8ul * n * n));
    CK(cudaMemset(A, 0, 8ul * n * n)); CK(cudaMemset(B, 0, 8ul * n * n));
    double one = 1, zero = 0;
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    auto rate = [&](char *h, size_t w, bool busy) {
        std::vector<double> r;
        for (int k = 0; k < 12; k++) {
            if (busy) for (int q = 0; q < 3; q++) CK(cublasDgemm(cb, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n));
            CK(cudaEventRecord(a, s));
            CK(cudaMemcpy2DAsync(dev, w, h, pitch, w, w / 8, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
            float ms; CK(cudaEventElapsedTime(&ms, a, b));
            if (k) r.push_back(w * (w / 8) / (ms * 1e6));
            if (busy) CK(cudaStreamSynchronize(g));
        }
        return med(r);
    };
    char *base = (char *)aligned_alloc(2 << 20, bytes + (8 << 20));
    memset(base, 1, bytes + (8 << 20));
    for (size_t start : {0ul, 4096ul, 16384ul, 65536ul, 1ul << 20, (2ul << 20) - 4096}) {
        char *h = base + start;
        CK(cuMemHostRegister(h, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
        printf("registration at 2M+%7zu:", start);
        for (int busy = 0; busy < 2; busy++) {
            printf(busy ? "  | beside DGEMM" : "  alone");
            for (size_t w : {4096ul, 8192ul, 12288ul, 16384ul, 24576ul}) printf(" %zuK %.1f", w >> 10, rate(h + (4 << 20), w, busy));
        }
        printf("\n"); fflush(stdout);
        CK(cuMemHostUnregister(h));
    }
    return 0;
}
