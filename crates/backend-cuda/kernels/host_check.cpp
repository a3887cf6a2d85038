// Runs the CUDA source laswp.cu on the CPU, one OS thread per CUDA thread and one block at a
// time, against a plain LAPACK-order reference; exits 1 on the first difference. Built and run
// by tests/laswp_kernel.rs (this machine has no GPU: it checks the kernel's logic, its
// barriers and its rounds; the GPU conformance suite checks the PTX on a device).
//
// The shim maps CUDA's few built-ins used there onto C++: __shared__ variables become statics
// (shared by the block's threads; blocks run one after the other), __syncthreads a barrier.

#include <algorithm>
#include <barrier>
#include <optional>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static

struct Dim {
    unsigned int x = 0;
};
static thread_local Dim threadIdx, blockIdx;
static Dim gridDim;
static std::barrier<>* block_barrier = nullptr;

static void __syncthreads() { block_barrier->arrive_and_wait(); }
static int atomicCAS(int* p, int expected, int desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
static int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
using std::min;

#include "laswp.cu"

// Runs `kernel` on `grid` blocks of THREADS threads.
template <typename K>
static void launch(unsigned int grid, K kernel) {
    gridDim.x = grid;
    // The block's barrier lives beyond this scope: a local's address in the global
    // block_barrier is a dangling pointer to GCC 13's -Wall (-Werror here).
    static std::optional<std::barrier<>> bar;
    for (unsigned int b = 0; b < grid; ++b) {
        bar.emplace(THREADS);
        block_barrier = &*bar;
        std::vector<std::thread> threads;
        for (unsigned int t = 0; t < THREADS; ++t) {
            threads.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = b;
                kernel();
            });
        }
        for (auto& th : threads) th.join();
    }
}

struct Case {
    int rows, cols, lda, k1, k2, size;
    unsigned int grid;
    const char* pivots;  // "any", "below" (getrf's: at or below the row), "bad" (some invalid)
};

static bool run(const Case& c, std::mt19937_64& rng) {
    const size_t bytes = (size_t)c.lda * c.cols * c.size;
    std::vector<unsigned char> a(bytes);
    for (auto& x : a) x = (unsigned char)rng();
    std::vector<int> ipiv(c.k2 + 3);
    for (int i = 0; i < (int)ipiv.size(); ++i) {
        int p;
        if (!strcmp(c.pivots, "below")) {
            p = i >= c.rows ? c.rows : i + 1 + (int)(rng() % (uint64_t)(c.rows - i));
        } else if (rng() % 4 == 0) {
            // A few rows named again and again: repeated targets in and out of the round.
            p = 1 + (int)(rng() % 7) * (c.rows / 7 + 1) % c.rows;
        } else {
            p = 1 + (int)(rng() % (uint64_t)c.rows);
        }
        if (!strcmp(c.pivots, "bad") && rng() % 5 == 0) p = rng() % 2 ? 0 : c.rows + 1;
        ipiv[i] = p;
    }
    std::vector<unsigned char> want = a;
    for (int col = 0; col < c.cols; ++col) {
        unsigned char* base = want.data() + (size_t)col * c.lda * c.size;
        for (int i = c.k1; i <= c.k2; ++i) {
            int p = ipiv[i - 1];
            if (p < 1 || p > c.rows || p == i) continue;
            std::swap_ranges(base + (size_t)(i - 1) * c.size, base + (size_t)i * c.size,
                             base + (size_t)(p - 1) * c.size);
        }
    }
    void* pa = a.data();
    const int* pp = ipiv.data();
    const long long lda = c.lda;
    switch (c.size) {
        case 4: launch(c.grid, [=] { hetblas_laswp_4((Word4*)pa, lda, c.rows, c.cols, c.k1, c.k2, pp); }); break;
        case 8: launch(c.grid, [=] { hetblas_laswp_8((Word8*)pa, lda, c.rows, c.cols, c.k1, c.k2, pp); }); break;
        default: launch(c.grid, [=] { hetblas_laswp_16((Word16*)pa, lda, c.rows, c.cols, c.k1, c.k2, pp); });
    }
    if (a != want) {
        size_t at = 0;
        while (a[at] == want[at]) ++at;
        size_t e = at / c.size;
        fprintf(stderr,
                "FAIL rows=%d cols=%d lda=%d k1=%d k2=%d size=%d grid=%u pivots=%s: first "
                "difference at row %zu column %zu\n",
                c.rows, c.cols, c.lda, c.k1, c.k2, c.size, c.grid, c.pivots, e % c.lda,
                e / c.lda);
        return false;
    }
    return true;
}

int main() {
    std::mt19937_64 rng(54);
    const Case cases[] = {
        // One round: the tile LU's shape (a panel's 512 pivots), narrow and odd widths.
        {1500, 9, 1503, 1, 512, 8, 2, "below"},
        {1500, 9, 1500, 1, 512, 8, 1, "any"},
        // Several rounds (CHUNK = 512), a range not starting at 1, pivots into earlier rounds.
        {1400, 6, 1401, 3, 1300, 8, 2, "any"},
        {1400, 5, 1400, 1, 1400, 4, 3, "below"},
        {1400, 7, 1410, 200, 1030, 16, 2, "any"},
        // Small tiles, one column, one pivot, more blocks than column groups.
        {19, 7, 22, 1, 12, 4, 4, "any"},
        {19, 1, 19, 12, 12, 16, 1, "any"},
        {19, 33, 22, 1, 1, 8, 3, "any"},
        {3, 2, 3, 1, 3, 16, 1, "any"},
        // Pivots naming no row are skipped (never a write outside the tile).
        {600, 5, 610, 1, 600, 8, 2, "bad"},
        {600, 5, 600, 1, 600, 4, 1, "bad"},
    };
    int n = 0;
    for (const Case& c : cases) {
        if (!run(c, rng)) return 1;
        ++n;
    }
    printf("laswp.cu on the host: %d cases, every byte as LAPACK's order leaves it\n", n);
    return 0;
}
