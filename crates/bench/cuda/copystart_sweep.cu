// The start sweep of copystart.cu: 8 and 12 KiB columns at a 128 KiB pitch, alone, by the registration's
// start modulo 2 MiB and its length (docs/data/h200-2026-12-01-2d-copy-start.txt, section 2). Built and
// run by `compare.sh --copystart`.
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
    size_t pitch = 131072;
    void *dev; CK(cudaMalloc(&dev, 64 << 20));
    cudaStream_t s; CK(cudaStreamCreate(&s));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    auto rate = [&](char *h, size_t w) {
        std::vector<double> r;
        for (int k = 0; k < 10; k++) {
            CK(cudaEventRecord(a, s));
            CK(cudaMemcpy2DAsync(dev, w, h, pitch, w, w / 8, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
            float ms; CK(cudaEventElapsedTime(&ms, a, b));
            if (k) r.push_back(w * (w / 8) / (ms * 1e6));
        }
        return med(r);
    };
    char *base = (char *)aligned_alloc(2 << 20, (3ul << 30));
    memset(base, 1, 3ul << 30);
    std::vector<size_t> starts;
    for (size_t k = 0; k < 16; k++) starts.push_back(k * 131072);
    for (size_t x : {4096ul, 8192ul, 12288ul, 65536ul}) starts.push_back((2ul << 20) - x);
    for (size_t len : {1ul << 30, (1ul << 30) + 4096, 200ul << 20, (2ul << 30) + 12288})
        for (size_t st : starts) {
            char *h = base + st;
            CK(cuMemHostRegister(h, len, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
            printf("len %5zu MiB+%5zu start 2M+%7zu: 8K %.1f 12K %.1f\n", len >> 20, len & ((1 << 20) - 1), st, rate(h + (4 << 20), 8192), rate(h + (4 << 20), 12288));
            fflush(stdout);
            CK(cuMemHostUnregister(h));
        }
    return 0;
}
