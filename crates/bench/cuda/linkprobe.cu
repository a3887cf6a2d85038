// 2D host<->device copies as a tiled GEMM issues them: tiles that are column blocks of a large
// host matrix, each copy a different tile (walking the matrix, so nothing the DMA engine or the
// IOMMU cached for the previous copy helps the next), against the calibration's way of timing
// them (the same tile again and again). Built and run by `compare.sh --linkprobe`; not part of
// the library.
//
// Per column length (bytes) and host pitch (bytes), the copy rate in GB/s of:
//   same     one tile copied host->device again and again (what calibration times)
//   h2d      host->device, each copy a new tile
//   d2h      device->host, each copy a new tile
//   both     both at once, each a new tile (the rate of each direction)
//   h2d+gemm host->device while DGEMM 4096 runs back to back on another stream
//   d2h+gemm device->host the same
//   both+gemm      both directions at once while DGEMM runs (a pipeline of late C or of a fold
//                  tail: fetches and write-backs beside products; issue 57)
//   both+gemm+fold the same while host threads fold (C = C + P over a separate 1 GiB, as many
//                  threads as the library's folds use: the cores, at most 12)
//   fold           the folds' rate beside both+gemm, GB/s of C (the model's unit)
// With `folds` (issue 57: do copies in slow beside folds by the folds' working set?): per fold
// region S (C and P of S bytes each, folded over and over), the rates of h2d+gemm, h2d+gemm
// with those folds (h2d+gemm+fold), both+gemm and both+gemm+fold, and the folds' own rate,
// for three tile shapes of the seeded sets.
// Host memory: one malloc'd region registered with cudaHostRegister (as the library registers
// user buffers), random data. Each copy moves about 32 MiB; medians of 3 passes of 12 copies.
//
//   linkprobe [HOST_GIB] [folds]   (default 2)

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "cuda_check.h"

struct Region {
    char *host;
    size_t bytes;
};

// Host offset of the i-th tile of `width` x `height` at `pitch`, walking the region; `same`
// keeps tile 0.
static size_t tile_offset(const Region &r, size_t width, size_t pitch, size_t height, size_t i,
                          bool same) {
    size_t span = pitch * (height - 1) + width;
    size_t slots = std::max<size_t>(1, r.bytes / span);
    // Rows within a slot, staggered so consecutive copies start on different pages.
    size_t slot = same ? 0 : (i * 7919) % slots;
    size_t shift = same ? 0 : ((i * 4099) % std::max<size_t>(1, (pitch - width) / 256 + 1)) * 256;
    size_t off = slot * span + shift;
    if (off + span > r.bytes) off = slot * span;
    return off;
}

struct Gemm {
    cublasHandle_t h;
    double *a, *b, *c;
    int n;
};

// Host folds beside the copies: `threads` threads each repeating C = C + P over its share of
// `c` and `p` (`n` doubles each) until `stop`; `folded` counts the bytes of C done.
struct Folds {
    double *c, *p;
    size_t n;
    int threads;
    std::atomic<bool> stop{false};
    std::atomic<size_t> folded{0};
    std::vector<std::thread> workers;

    void start() {
        stop = false;
        folded = 0;
        for (int t = 0; t < threads; t++) {
            workers.emplace_back([this, t] {
                size_t lo = n * t / threads, hi = n * (t + 1) / threads;
                // 1 MiB of C at a time, so that `stop` is seen soon after the copies end.
                const size_t chunk = (1 << 20) / sizeof(double);
                while (!stop.load(std::memory_order_relaxed)) {
                    for (size_t i = lo; i < hi && !stop.load(std::memory_order_relaxed);
                         i += chunk) {
                        size_t e = std::min(hi, i + chunk);
                        for (size_t j = i; j < e; j++) c[j] += p[j];
                        folded.fetch_add((e - i) * sizeof(double), std::memory_order_relaxed);
                    }
                }
            });
        }
    }

    // Stops the threads; the bytes of C they folded.
    size_t finish() {
        stop = true;
        for (auto &w : workers) w.join();
        workers.clear();
        return folded.load();
    }

    // GB/s of C the threads fold for `ms` milliseconds with nothing else running.
    double alone(int ms) {
        start();
        auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        size_t bytes = finish();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return bytes / s / 1e9;
    }
};

static float time_copies(const Region &r, char *dev, size_t dev_bytes, size_t width, size_t pitch,
                         int mode, cudaStream_t s1, cudaStream_t s2, Gemm *g, cudaStream_t gs,
                         int copies, Folds *folds, float *fold_gbps) {
    size_t height = std::max<size_t>(1, (32u << 20) / width);
    if (width * height > dev_bytes / 2) height = dev_bytes / 2 / width;
    // Every tile's host span within a quarter of the region, so the walk has tiles to visit.
    height = std::min(height, r.bytes / 4 / pitch);
    cudaEvent_t e0, e1, f0, f1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&f0));
    CK(cudaEventCreate(&f1));
    // Mode 8: h2d+gemm+fold (only with `folds`).
    bool gemm = mode == 4 || mode == 5 || mode == 6 || mode == 7 || mode == 8;
    bool duplex = mode == 3 || mode == 6 || mode == 7;
    if (gemm) {
        // Products queued for longer than the copies take.
        double one = 1.0, zero = 0.0;
        for (int i = 0; i < 12; i++)
            cublasDgemm(g->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &one, g->a, g->n, g->b,
                        g->n, &zero, g->c, g->n);
    }
    if (mode == 7 || mode == 8) folds->start();
    auto t0 = std::chrono::steady_clock::now();
    CK(cudaEventRecord(e0, s1));
    CK(cudaEventRecord(f0, s2));
    for (int i = 0; i < copies; i++) {
        size_t off = tile_offset(r, width, pitch, height, i, mode == 0);
        char *h = r.host + off;
        char *d = dev + (size_t)(i % 2) * (dev_bytes / 2);
        if (mode == 0 || mode == 1 || mode == 4 || mode == 8 || duplex)
            CK(cudaMemcpy2DAsync(d, width, h, pitch, width, height, cudaMemcpyHostToDevice, s1));
        if (mode == 2 || mode == 5)
            CK(cudaMemcpy2DAsync(h, pitch, d, width, width, height, cudaMemcpyDeviceToHost, s1));
        if (duplex) {
            size_t off2 = tile_offset(r, width, pitch, height, i + copies * 3, false);
            // The other half of device memory, so the two directions touch different tiles.
            char *d2 = dev + (size_t)((i + 1) % 2) * (dev_bytes / 2);
            CK(cudaMemcpy2DAsync(r.host + off2, pitch, d2, width, width, height,
                                 cudaMemcpyDeviceToHost, s2));
        }
    }
    CK(cudaEventRecord(e1, s1));
    CK(cudaEventRecord(f1, s2));
    // The copies' end, not the products' (queued for longer): the folds stop with the copies.
    CK(cudaStreamSynchronize(s1));
    CK(cudaStreamSynchronize(s2));
    if (mode == 7 || mode == 8) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        size_t bytes = folds->finish();
        if (fold_gbps) *fold_gbps = (float)(bytes / s / 1e9);
    }
    CK(cudaDeviceSynchronize());
    float ms = 0, ms2 = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventElapsedTime(&ms2, f0, f1));
    if (duplex) ms = std::max(ms, ms2);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaEventDestroy(f0));
    CK(cudaEventDestroy(f1));
    (void)gs;
    return (float)(width * height * copies) / (ms * 1e-3f) / 1e9f;
}

int main(int argc, char **argv) {
    size_t gib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 2;
    Region r{(char *)malloc(gib << 30), gib << 30};
    if (!r.host) return 1;
    {
        std::mt19937_64 rng(7);
        uint64_t *p = (uint64_t *)r.host;
        for (size_t i = 0; i < r.bytes / 8; i++) p[i] = rng();
    }
    CK(cudaHostRegister(r.host, r.bytes, cudaHostRegisterDefault));
    size_t dev_bytes = 256u << 20;
    char *dev;
    CK(cudaMalloc(&dev, dev_bytes));
    CK(cudaMemset(dev, 1, dev_bytes));
    cudaStream_t s1, s2, gs;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
    Gemm g;
    g.n = 4096;
    cublasCreate(&g.h);
    cublasSetStream(g.h, gs);
    size_t gb = (size_t)g.n * g.n * 8;
    CK(cudaMalloc(&g.a, gb));
    CK(cudaMalloc(&g.b, gb));
    CK(cudaMalloc(&g.c, gb));
    {
        std::vector<double> v((size_t)g.n * g.n);
        std::mt19937_64 rng(11);
        std::uniform_real_distribution<double> u(-1, 1);
        for (auto &x : v) x = u(rng);
        CK(cudaMemcpy(g.a, v.data(), gb, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(g.b, v.data(), gb, cudaMemcpyHostToDevice));
    }
    // Folds over 1 GiB of C and of products, neither registered (C is the caller's memory;
    // the products' staging slots are page-locked, a difference this probe leaves out).
    Folds folds;
    folds.n = (size_t(1) << 30) / sizeof(double);
    folds.c = (double *)malloc(folds.n * sizeof(double));
    folds.p = (double *)malloc(folds.n * sizeof(double));
    if (!folds.c || !folds.p) return 1;
    for (size_t i = 0; i < folds.n; i++) folds.c[i] = folds.p[i] = 1e-9 * (double)(i % 1000);
    folds.threads =
        (int)std::min<unsigned>(12, std::max<unsigned>(1, std::thread::hardware_concurrency()));
    // The median of 3 passes of 12 copies after a 4-copy warm-up, in GB/s per direction; with
    // folds (modes 7 and 8) `fold` gets the median of their rates.
    auto median = [&](size_t width, size_t pitch, int mode, float *fold) {
        float f = 0;
        time_copies(r, dev, dev_bytes, width, pitch, mode, s1, s2, &g, gs, 4, &folds, &f);
        std::vector<float> v, fr;
        for (int rep = 0; rep < 3; rep++) {
            v.push_back(
                time_copies(r, dev, dev_bytes, width, pitch, mode, s1, s2, &g, gs, 12, &folds, &f));
            fr.push_back(f);
        }
        std::sort(v.begin(), v.end());
        std::sort(fr.begin(), fr.end());
        if (fold) *fold = fr[1];
        return v[1];
    };
    if (argc > 2 && strcmp(argv[2], "folds") == 0) {
        const size_t full = folds.n;
        const size_t sizes_mib[] = {4, 8, 16, 32, 64, 128, 512};
        // (column bytes, pitch bytes): 1536-row f64 tiles of a 7592-row matrix, 1024-row f64
        // tiles of a 3697-row one, contiguous 32 KiB columns.
        const size_t shapes[][2] = {{12288, 60736}, {8192, 29576}, {32768, 32768}};
        const int fmodes[] = {4, 8, 6, 7};
        printf("folds: %d threads; GB/s per direction of ~32 MiB copies\n", folds.threads);
        printf("| fold MiB | column bytes | pitch bytes | h2d+gemm | h2d+gemm+fold | both+gemm | "
               "both+gemm+fold | fold alone | fold beside h2d | fold beside both |\n");
        printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for (size_t mib : sizes_mib) {
            folds.n = std::min(full, (mib << 20) / sizeof(double));
            double alone = folds.alone(200);
            for (auto &sh : shapes) {
                printf("| %zu | %zu | %zu |", mib, sh[0], sh[1]);
                float beside[2] = {0, 0};
                for (int mode : fmodes) {
                    float *fold = mode == 8 ? &beside[0] : mode == 7 ? &beside[1] : nullptr;
                    printf(" %.1f |", median(sh[0], sh[1], mode, fold));
                }
                printf(" %.1f | %.1f | %.1f |\n", alone, beside[0], beside[1]);
                fflush(stdout);
            }
        }
        CK(cudaHostUnregister(r.host));
        return 0;
    }
    const char *names[] = {"same",     "h2d",      "d2h",       "both",
                           "h2d+gemm", "d2h+gemm", "both+gemm", "both+gemm+fold"};
    const int modes = 8;
    const size_t widths[] = {4096, 8192, 16384, 32768, 65536};
    const size_t pitches[] = {0, 1024, 32768, 65536, 131072, 262144, 524288};
    printf("host region %zu GiB (cudaHostRegister of malloc), copies of ~32 MiB, GB/s per direction\n",
           gib);
    // The folds alone (no copy, no product) for the fold column's reference.
    printf("folds: %d threads, alone %.1f GB/s of C\n", folds.threads, folds.alone(300));
    printf("| column bytes | pitch bytes |");
    for (auto n : names) printf(" %s |", n);
    printf(" fold |\n| --- | --- |");
    for (int i = 0; i <= modes; i++) printf(" --- |");
    printf("\n");
    for (size_t w : widths) {
        for (size_t pc : pitches) {
            // 0: contiguous (pitch = width); 1024: nearly contiguous (pitch = width + 1 KiB).
            size_t pitch = pc == 0 ? w : pc == 1024 ? w + 1024 : pc;
            if (pitch < w || (pc > 1024 && pitch <= w + 1024)) continue;
            printf("| %zu | %zu |", w, pitch);
            float fold = 0;
            for (int mode = 0; mode < modes; mode++)
                printf(" %.1f |", median(w, pitch, mode, mode == 7 ? &fold : nullptr));
            printf(" %.1f |\n", fold);
            fflush(stdout);
        }
    }
    CK(cudaHostUnregister(r.host));
    free(folds.c);
    free(folds.p);
    return 0;
}
