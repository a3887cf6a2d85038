// Host memory under a host-folding GEMM's traffic: what a host fold (C += P, P copied back from
// the device) costs the host->device link that copies A and B beside it, and whether folding
// each product in pieces as they land (while they may still sit in the last-level cache) costs
// it less. Built and run by `compare.sh --hostmem`; not part of the library.
//
// Variants of the fold pipeline (C tiles of ROWS x COLS doubles of a C with ld 2*ROWS, the
// products copied back into pinned staging, folded by THREADS OpenMP threads):
//   whole  each tile copied back whole into a ring of 8 tile slots, folded after its copy
//          (what the library does);
//   chunk  the same slots, each tile copied back in chunks of CHUNK columns, each chunk
//          folded as soon as it lands;
//   ring   chunks copied into a small ring of RING chunk slots, each folded as it lands and
//          its slot reused at once (the staging stays small enough to stay cached);
//   copyback  whole tiles copied back as in `whole`, not folded (the device->host traffic of
//          the folds alone; its "fold" rates are the copies' rates, GB/s of C copied back;
//          beside the batch it repeats until the batch ends).
// Each runs alone and beside a host->device batch; printed: the fold rate (GB/s of C) and the
// batch's copy rate while the folds run. Random data; every fold checked at the end.
// The batch is 32 MiB contiguous copies, or with BATCH_COL > 0 2D copies of 32 MiB in columns
// of BATCH_COL bytes at a host pitch of BATCH_PITCH (a tile of A or B as a pipeline fetches it).
//
//   hostmem [ROWS COLS CHUNK RING THREADS PASSES [BATCH_COL BATCH_PITCH]]
//   (default 4096 1024 128 4 12 4 0 0)

#include <cuda_runtime.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Setup {
    size_t rows, cols, chunk, ring, passes;
    size_t ld, ncols;  // C: ld x ncols
    double *c, *c0;    // host C (pinned) and its original
    double *prod;      // device: the products of every tile of C (ld x ncols)
    double *stage;     // pinned staging: 8 tile slots (or the ring's chunk slots)
    double *src;       // pinned host source of the H2D batch
    double *dst;       // device destination of the H2D batch
    size_t batch_bytes, batch_copies;
    size_t batch_col, batch_pitch;  // 0: contiguous batch copies
    cudaStream_t d2h, h2d;
    bool no_fold;  // the `copyback` variant
};

// A fold unit: a column range of one C tile, copied into a staging slot.
struct Unit {
    size_t i, j;       // tile origin (row, column) in C
    size_t c0, nc;     // columns within the tile
    double *slot;      // staging (packed, ld = rows)
};

static void copy_back(Setup &s, const Unit &u) {
    const double *from = s.prod + (u.j + u.c0) * s.ld + u.i;
    CK(cudaMemcpy2DAsync(u.slot, s.rows * sizeof(double), from, s.ld * sizeof(double),
                         s.rows * sizeof(double), u.nc, cudaMemcpyDeviceToHost, s.d2h));
}

static void fold(Setup &s, const Unit &u) {
    if (s.no_fold) return;
    double *c = s.c;
#pragma omp parallel for schedule(static)
    for (long q = 0; q < (long)u.nc; q++) {
        double *cc = c + (u.j + u.c0 + q) * s.ld + u.i;
        const double *p = u.slot + q * s.rows;
        for (size_t r = 0; r < s.rows; r++) cc[r] = 0.5 * cc[r] + p[r];
    }
}

// The fold pipeline of one variant over PASSES passes of every tile of C: returns seconds.
static double pipeline(Setup &s, const char *variant) {
    s.no_fold = !strcmp(variant, "copyback");
    bool whole = !strcmp(variant, "whole") || s.no_fold, ring = !strcmp(variant, "ring");
    size_t per_tile = whole ? 1 : s.cols / s.chunk;
    size_t unit_cols = whole ? s.cols : s.chunk;
    size_t slots = ring ? s.ring : 8 * per_tile;
    std::vector<Unit> units;
    size_t tile = 0;
    for (size_t p = 0; p < s.passes; p++)
        for (size_t j = 0; j < s.ncols; j += s.cols)
            for (size_t i = 0; i < s.ld; i += s.rows, tile++)
                for (size_t q = 0; q < per_tile; q++) {
                    size_t slot = ring ? units.size() % slots : (tile % 8) * per_tile + q;
                    units.push_back({i, j, q * unit_cols, unit_cols,
                                     s.stage + slot * s.rows * unit_cols});
                }
    std::vector<cudaEvent_t> ev(units.size());
    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    double t0 = now();
    size_t issued = 0;
    auto issue_upto = [&](size_t n) {
        for (; issued < std::min(n, units.size()); issued++) {
            copy_back(s, units[issued]);
            CK(cudaEventRecord(ev[issued], s.d2h));
        }
    };
    issue_upto(slots);
    for (size_t u = 0; u < units.size(); u++) {
        CK(cudaEventSynchronize(ev[u]));
        fold(s, units[u]);
        issue_upto(u + 1 + slots);  // unit u's slot is free again
    }
    double t = now() - t0;
    for (auto &e : ev) CK(cudaEventDestroy(e));
    return t;
}

// Starts the host->device batch; returns its start and end events.
static void start_batch(Setup &s, cudaEvent_t a, cudaEvent_t b) {
    CK(cudaEventRecord(a, s.h2d));
    if (s.batch_col) {
        size_t height = s.batch_bytes / s.batch_col, span = s.batch_pitch * height;
        for (size_t r = 0; r < s.batch_copies; r++)
            CK(cudaMemcpy2DAsync(s.dst, s.batch_col, (char *)s.src + (r % 4) * span, s.batch_pitch,
                                 s.batch_col, height, cudaMemcpyHostToDevice, s.h2d));
    } else {
        size_t n = s.batch_bytes / sizeof(double);
        for (size_t r = 0; r < s.batch_copies; r++)
            CK(cudaMemcpyAsync(s.dst, s.src + (r % 4) * n, s.batch_bytes, cudaMemcpyHostToDevice,
                               s.h2d));
    }
    CK(cudaEventRecord(b, s.h2d));
}

// After PASSES folds of p = c0 into c = c0: c = c0 * (2^-P + 2 - 2^(1-P)).
static bool checked(const Setup &s, const char *variant, size_t c_elems) {
    double scale = std::ldexp(1.0, -(int)s.passes), want_p = 2.0 - 2.0 * scale;
    for (size_t x = 0; x < c_elems; x += 9973) {
        double want = s.c0[x] * (scale + want_p);
        if (std::fabs(s.c[x] - want) > 1e-12 * (1 + std::fabs(want))) {
            fprintf(stderr, "%s: C[%zu] = %g, want %g\n", variant, x, s.c[x], want);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv) {
    Setup s{};
    s.rows = argc > 1 ? atol(argv[1]) : 4096;
    s.cols = argc > 2 ? atol(argv[2]) : 1024;
    s.chunk = argc > 3 ? atol(argv[3]) : 128;
    s.ring = argc > 4 ? atol(argv[4]) : 4;
    int threads = argc > 5 ? atoi(argv[5]) : 12;
    s.passes = argc > 6 ? atol(argv[6]) : 4;
    s.batch_col = argc > 7 ? atol(argv[7]) : 0;
    s.batch_pitch = argc > 8 ? atol(argv[8]) : s.batch_col;
    if (s.batch_col && (s.batch_pitch < s.batch_col || (32u << 20) % s.batch_col)) {
        fprintf(stderr, "BATCH_PITCH must be at least BATCH_COL, which must divide 32 MiB\n");
        return 2;
    }
    if (s.chunk == 0 || s.cols % s.chunk || s.ring == 0 || s.ring * s.chunk > 8 * s.cols) {
        fprintf(stderr, "COLS must be a multiple of CHUNK, and RING chunks fit in 8 tiles\n");
        return 2;
    }
    omp_set_num_threads(threads);
    s.ld = 2 * s.rows;
    s.ncols = 8 * s.cols;
    size_t c_elems = s.ld * s.ncols;
    CK(cudaHostAlloc(&s.c, c_elems * 8, cudaHostAllocDefault));
    s.c0 = (double *)malloc(c_elems * 8);
    CK(cudaMalloc(&s.prod, c_elems * 8));
    CK(cudaHostAlloc(&s.stage, 8 * s.rows * s.cols * 8, cudaHostAllocDefault));
    s.batch_bytes = 32u << 20;
    s.batch_copies = 24;
    size_t src_bytes = s.batch_col ? 4 * s.batch_pitch * (s.batch_bytes / s.batch_col) : 4 * s.batch_bytes;
    CK(cudaHostAlloc(&s.src, src_bytes, cudaHostAllocDefault));
    CK(cudaMalloc(&s.dst, s.batch_bytes));
    srand(7);
    for (size_t x = 0; x < c_elems; x++) s.c0[x] = rand() / (double)RAND_MAX;
    for (size_t x = 0; x < src_bytes / 8; x++) s.src[x] = rand() / (double)RAND_MAX;
    // The products: random, on the device.
    CK(cudaMemcpy(s.prod, s.c0, c_elems * 8, cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&s.d2h, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s.h2d, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    double c_bytes = (double)c_elems * 8 * s.passes;
    printf("C %zux%zu f64, tiles %zux%zu, chunk %zu columns (%.1f MiB), ring %zu, %d threads, %zu passes (%.2f GB folded)\n",
           s.ld, s.ncols, s.rows, s.cols, s.chunk, s.rows * s.chunk * 8 / 1048576.0, s.ring, threads,
           s.passes, c_bytes / 1e9);
    // The batch alone.
    std::vector<double> alone;
    for (int r = 0; r < 4; r++) {
        start_batch(s, a, b);
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r) alone.push_back(s.batch_bytes * s.batch_copies / (ms * 1e-3) / 1e9);
    }
    std::sort(alone.begin(), alone.end());
    const char *variants[] = {"whole", "chunk", "ring", "copyback"};
    const int nv = 4;
    double fa[nv], fb[nv], hb[nv], tmin = 1e9;
    for (int v = 0; v < nv; v++) {
        std::vector<double> t;
        for (int r = 0; r < 4; r++) {
            memcpy(s.c, s.c0, c_elems * 8);
            t.push_back(pipeline(s, variants[v]));
            if (!s.no_fold && !checked(s, variants[v], c_elems)) return 1;
        }
        std::sort(t.begin() + 1, t.end());
        fa[v] = c_bytes / t[2] / 1e9;
        if (!s.no_fold) tmin = std::min(tmin, t[2]);
    }
    // A batch that copies for about 90% of the fastest pipeline at the lone rate.
    s.batch_copies = std::max<size_t>(4, (size_t)(0.9 * tmin * alone[1] * 1e9 / s.batch_bytes));
    for (int v = 0; v < nv; v++) {
        std::vector<double> f, h;
        for (int r = 0; r < 4; r++) {
            memcpy(s.c, s.c0, c_elems * 8);
            start_batch(s, a, b);
            double t = pipeline(s, variants[v]);
            // Copying back alone ends long before the batch: keep it going while the batch
            // runs, so that no part of the batch runs alone.
            while (s.no_fold && cudaEventQuery(b) == cudaErrorNotReady) pipeline(s, variants[v]);
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (!s.no_fold && !checked(s, variants[v], c_elems)) return 1;
            if (r) {
                f.push_back(c_bytes / t / 1e9);
                h.push_back(s.batch_bytes * s.batch_copies / (ms * 1e-3) / 1e9);
            }
        }
        std::sort(f.begin(), f.end());
        std::sort(h.begin(), h.end());
        fb[v] = f[1];
        hb[v] = h[1];
    }
    printf("H2D batch: %zu copies of 32 MiB (%.2f GB), %s\n", s.batch_copies,
           s.batch_copies * (double)s.batch_bytes / 1e9,
           s.batch_col ? "2D" : "contiguous");
    if (s.batch_col) printf("  columns of %zu bytes at a host pitch of %zu\n", s.batch_col, s.batch_pitch);
    printf("| variant | fold alone GB/s | fold beside H2D GB/s | H2D beside folds GB/s | H2D alone GB/s |\n");
    printf("| --- | --- | --- | --- | --- |\n");
    for (int v = 0; v < nv; v++)
        printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", variants[v], fa[v], fb[v], hb[v], alone[1]);
    return 0;
}
