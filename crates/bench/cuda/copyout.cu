// The staged write-backs of a fresh output, as the library runs them for NumPy's `a @ b`
// (issue 53): each C tile is DMA'd device->host into one of a few pinned staging slots, then
// copied out into the program's output by host threads. Where does a copy-out's time go beyond
// its bytes (calibration fitted 0.32 ms a copy-out on H200)? Per variant:
//
//   hostfn S   the copy-out in a host function on a second stream that waits for the DMA, and
//              an event after it that frees the slot for a later DMA (S slots); the library's
//              way until 2026-11-30
//   thread S   the copy-out on a thread that waits for the DMA's event on the host, and frees
//              the slot by counting (the library's way since)
//   ... spawn  copy threads started per copy-out instead of kept threads woken through a
//              condition variable
//
// and per state of the output:
//   touched  written before (a reused out= array)
//   fresh    new anonymous memory, huge pages advised (NumPy's large arrays)
//   popul    fresh, with every core touching its pages from the start up while the copies run
//            (the library's background population)
//
// Per C size N (f64, column-major N x N), tile T (N/4, N/2) and variant: the chain's median time
// over 5 repetitions (first DMA issued to last copy-out done), the DMAs alone, and per copy-out
// the median duration and the median wait between when it could start (its DMA and the
// copy-out before it done) and its start. Every output is checked against the device's data.
// Run by `compare.sh --copyout`; not part of the library.
//
//   copyout [N...]   (default 4096 8192)

#include <cuda_runtime.h>
#include <emmintrin.h>
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static unsigned cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// One copy-out: columns of a packed tile (ld rows) into the output (ld ldo), split by columns.
struct Copy {
    const double *src;
    double *dst;
    size_t rows, cols, ldo;
    void part(unsigned p, unsigned parts) const {
        size_t per = (cols + parts - 1) / parts;
        size_t c0 = std::min(cols, p * per), c1 = std::min(cols, c0 + per);
        for (size_t j = c0; j < c1; j++) {
            const double *s = src + j * rows;
            double *d = dst + j * ldo;
            size_t i = 0;
            // 16-byte streaming stores (the library's copy_streaming); d is 16-byte aligned
            // here (ldo and rows even, mmap'd base).
            for (; i + 2 <= rows; i += 2)
                _mm_stream_pd(d + i, _mm_loadu_pd(s + i));
            for (; i < rows; i++) d[i] = s[i];
        }
        _mm_sfence();
    }
    unsigned parts() const {
        size_t bytes = rows * cols * 8;
        return (unsigned)std::max<size_t>(1, std::min<size_t>({cores(), bytes >> 20, cols}));
    }
};

// Kept threads, woken per copy-out through a condition variable (as a rayon pool's are).
struct Pool {
    std::vector<std::thread> threads;
    std::mutex m;
    std::condition_variable wake, done;
    unsigned long gen = 0;
    std::atomic<unsigned> left{0}, next{0};
    bool quit = false;
    const Copy *job = nullptr;
    unsigned parts = 0;

    explicit Pool(unsigned n) {
        for (unsigned t = 0; t < n; t++) threads.emplace_back([this] { run(); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> g(m);
            quit = true;
            gen++;
        }
        wake.notify_all();
        for (auto &t : threads) t.join();
    }
    void run() {
        unsigned long seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> g(m);
                wake.wait(g, [&] { return gen != seen; });
                seen = gen;
                if (quit) return;
            }
            for (;;) {
                unsigned p = next.fetch_add(1);
                if (p >= parts) break;
                job->part(p, parts);
                if (left.fetch_sub(1) == 1) {
                    std::lock_guard<std::mutex> g(m);
                    done.notify_all();
                }
            }
        }
    }
    void copy(const Copy &c) {
        std::unique_lock<std::mutex> g(m);
        job = &c;
        parts = c.parts();
        left = parts;
        next = 0;
        gen++;
        wake.notify_all();
        done.wait(g, [&] { return left.load() == 0; });
    }
};

static void copy_spawn(const Copy &c) {
    unsigned parts = c.parts();
    std::vector<std::thread> ts;
    for (unsigned p = 0; p < parts; p++) ts.emplace_back([&, p] { c.part(p, parts); });
    for (auto &t : ts) t.join();
}

// The library's background population: every core touches a page per 4 KiB from the start up,
// in 8 MiB units; a copy claims its units first (one in progress is waited for).
struct Population {
    char *base;
    size_t bytes;
    std::vector<std::atomic<unsigned char>> units;
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    static constexpr size_t UNIT = 8 << 20;
    Population(char *b, size_t n) : base(b), bytes(n), units((n + UNIT - 1) / UNIT) {
        for (auto &u : units) u = 0;
        for (unsigned t = 0; t < cores(); t++) threads.emplace_back([this] { work(); });
    }
    void work() {
        while (!stop) {
            size_t i = next.fetch_add(1);
            if (i >= units.size()) return;
            unsigned char f = 0;
            if (!units[i].compare_exchange_strong(f, 1)) continue;
            for (size_t o = i * UNIT; o < std::min(bytes, (i + 1) * UNIT); o += 4096) {
                auto *p = reinterpret_cast<std::atomic<unsigned char> *>(base + o);
                unsigned char z = 0;
                p->compare_exchange_strong(z, 0, std::memory_order_relaxed);
            }
            units[i] = 2;
        }
    }
    void claim(const char *a, size_t n) {
        size_t s = (a - base) / UNIT, e = (a - base + n - 1) / UNIT;
        for (size_t i = s; i <= e && i < units.size(); i++)
            for (;;) {
                unsigned char f = 0;
                if (units[i].compare_exchange_strong(f, 2) || f == 2) break;
                std::this_thread::yield();
            }
    }
    ~Population() {
        stop = true;
        for (auto &t : threads) t.join();
    }
};

struct Job {
    std::function<void()> run;
    double start = 0, end = 0;
};

static void CUDART_CB host_fn(void *p) {
    auto *j = static_cast<Job *>(p);
    j->start = now();
    j->run();
    j->end = now();
}

static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A copy-out thread: takes (DMA event, job) in order, waits for the DMA on the host, runs the
// job; the issuing side learns that a slot is free from `done` instead of a CUDA event
// recorded after a host function (no round trip through the GPU's stream per copy-out).
struct CopyThread {
    struct Item {
        cudaEvent_t dma;
        Job *job;
    };
    std::mutex m;
    std::condition_variable cv;
    std::vector<Item> items;
    size_t taken = 0;
    std::atomic<size_t> done{0};
    bool quit = false;
    std::thread th;
    CopyThread() : th([this] { run(); }) {}
    ~CopyThread() {
        {
            std::lock_guard<std::mutex> g(m);
            quit = true;
        }
        cv.notify_all();
        th.join();
    }
    void reset() {
        std::lock_guard<std::mutex> g(m);
        items.clear();
        taken = 0;
        done = 0;
    }
    void push(cudaEvent_t e, Job *j) {
        {
            std::lock_guard<std::mutex> g(m);
            items.push_back({e, j});
        }
        cv.notify_one();
    }
    void run() {
        for (;;) {
            Item it;
            {
                std::unique_lock<std::mutex> g(m);
                cv.wait(g, [&] { return quit || taken < items.size(); });
                if (quit) return;
                it = items[taken++];
            }
            CK(cudaEventSynchronize(it.dma));
            host_fn(it.job);
            done.fetch_add(1, std::memory_order_release);
        }
    }
    void wait_done(size_t n) {
        while (done.load(std::memory_order_acquire) < n) std::this_thread::yield();
    }
};

int main(int argc, char **argv) {
    std::vector<size_t> sizes;
    for (int i = 1; i < argc; i++) sizes.push_back(strtoull(argv[i], nullptr, 10));
    if (sizes.empty()) sizes = {4096, 8192};
    const int REPS = 5;
    cudaStream_t dma, out;
    CK(cudaStreamCreateWithFlags(&dma, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking));
    Pool sleep_pool(cores());
    CopyThread copier;
    // Variants: how a copy-out is dispatched (0: host function on a stream that waits for the
    // DMA, the library's way; 1: a copy-out thread), how its threads run (0: kept, woken
    // through a condition variable; 1: started per copy-out), staging slots.
    struct Variant {
        const char *name;
        int dispatch, pool, slots;
    };
    const Variant variants[] = {{"hostfn 4", 0, 0, 4},
                                {"hostfn 16", 0, 0, 16},
                                {"thread 4", 1, 0, 4},
                                {"thread 16", 1, 0, 16},
                                {"hostfn 4 spawn", 0, 1, 4}};
    std::printf("copy-outs of staged write-backs, %u cores; ms: chain median of %d (DMAs alone), "
                "per copy-out median duration / wait after its DMA\n",
                cores(), REPS);
    std::printf("| N | tile | output |");
    for (auto &v : variants) std::printf(" %s |", v.name);
    std::printf("\n| --- | --- | --- |");
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) std::printf(" --- |");
    std::printf("\n");
    for (size_t n : sizes) {
        size_t bytes = n * n * 8;
        std::vector<double> host(n * n);
        std::mt19937_64 rng(n);
        std::uniform_real_distribution<double> u(-1, 1);
        for (auto &x : host) x = u(rng);
        double *dc;
        CK(cudaMalloc(&dc, bytes));
        CK(cudaMemcpy(dc, host.data(), bytes, cudaMemcpyHostToDevice));
        char *touched = static_cast<char *>(
            mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        std::memset(touched, 1, bytes);
        for (size_t t : {n / 4, n / 2}) {
            size_t tiles = (n / t) * (n / t), tb = t * t * 8;
            std::vector<double *> slot(std::min<size_t>(16, tiles));
            for (auto &s : slot) CK(cudaHostAlloc(&s, tb, cudaHostAllocDefault));
            std::vector<double> dma_only;
            for (int r = 0; r < REPS + 1; r++) {
                double t0 = now();
                for (size_t k = 0; k < tiles; k++) {
                    size_t bi = k % (n / t), bj = k / (n / t);
                    CK(cudaMemcpy2DAsync(slot[k % 4], t * 8, dc + bj * t * n + bi * t, n * 8,
                                         t * 8, t, cudaMemcpyDeviceToHost, dma));
                }
                CK(cudaStreamSynchronize(dma));
                if (r) dma_only.push_back(now() - t0);
            }
            for (const char *state : {"touched", "fresh", "popul"}) {
                std::string row;
                for (const Variant &v : variants) {
                    size_t slots = std::min<size_t>(v.slots, slot.size());
                    std::vector<double> chain, dur, wait;
                    for (int r = 0; r < REPS + 1; r++) {
                        bool fresh = std::strcmp(state, "touched") != 0;
                        char *o = touched;
                        if (fresh) {
                            o = static_cast<char *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
                            madvise(o, bytes, MADV_HUGEPAGE);
                        }
                        Population *pop =
                            std::strcmp(state, "popul") == 0 ? new Population(o, bytes) : nullptr;
                        std::vector<Job> jobs(tiles);
                        std::vector<Copy> copies(tiles);
                        std::vector<cudaEvent_t> dma_done(tiles), slot_free(slots, nullptr);
                        copier.reset();
                        cudaEvent_t start_ev;
                        CK(cudaEventCreate(&start_ev));
                        double t0 = now();
                        CK(cudaEventRecord(start_ev, dma));
                        for (size_t k = 0; k < tiles; k++) {
                            size_t bi = k % (n / t), bj = k / (n / t);
                            int s = k % slots;
                            if (v.dispatch == 1) {
                                if (k >= slots) copier.wait_done(k - slots + 1);
                            } else if (slot_free[s]) {
                                CK(cudaEventSynchronize(slot_free[s]));
                                CK(cudaEventDestroy(slot_free[s]));
                            }
                            CK(cudaMemcpy2DAsync(slot[s], t * 8, dc + bj * t * n + bi * t, n * 8,
                                                 t * 8, t, cudaMemcpyDeviceToHost, dma));
                            CK(cudaEventCreate(&dma_done[k]));
                            CK(cudaEventRecord(dma_done[k], dma));
                            copies[k] = Copy{slot[s],
                                             reinterpret_cast<double *>(o) + bj * t * n + bi * t,
                                             t, t, n};
                            const Copy *c = &copies[k];
                            char *first = reinterpret_cast<char *>(const_cast<double *>(c->dst));
                            size_t extent = ((t - 1) * n + t) * 8;
                            int pool = v.pool;
                            jobs[k].run = [=, &sleep_pool] {
                                if (pop) pop->claim(first, extent);
                                if (pool == 1) copy_spawn(*c);
                                else sleep_pool.copy(*c);
                            };
                            if (v.dispatch == 1) {
                                copier.push(dma_done[k], &jobs[k]);
                            } else {
                                CK(cudaStreamWaitEvent(out, dma_done[k], 0));
                                CK(cudaLaunchHostFunc(out, host_fn, &jobs[k]));
                                CK(cudaEventCreate(&slot_free[s]));
                                CK(cudaEventRecord(slot_free[s], out));
                            }
                        }
                        if (v.dispatch == 1) copier.wait_done(tiles);
                        else CK(cudaStreamSynchronize(out));
                        double t1 = now();
                        delete pop;
                        if (r) {
                            chain.push_back(t1 - t0);
                            for (size_t k = 0; k < tiles; k++) {
                                float ms;
                                CK(cudaEventElapsedTime(&ms, start_ev, dma_done[k]));
                                // Ready when its DMA is done and the copy-out before it is.
                                double ready = t0 + ms * 1e-3;
                                if (k) ready = std::max(ready, jobs[k - 1].end);
                                dur.push_back(jobs[k].end - jobs[k].start);
                                wait.push_back(jobs[k].start - ready);
                            }
                        }
                        const double *od = reinterpret_cast<const double *>(o);
                        for (size_t q = 0; q < 4096; q++) {
                            size_t i = (q * 7919) % n, j = (q * 104729) % n;
                            if (od[j * n + i] != host[j * n + i]) {
                                std::fprintf(stderr, "WRONG at (%zu,%zu) N=%zu T=%zu %s %s\n", i, j,
                                             n, t, state, v.name);
                                return 1;
                            }
                        }
                        for (auto e : dma_done) CK(cudaEventDestroy(e));
                        for (auto e : slot_free)
                            if (e) CK(cudaEventDestroy(e));
                        CK(cudaEventDestroy(start_ev));
                        if (fresh) munmap(o, bytes);
                        else std::memset(touched, 1, bytes);
                    }
                    char cell[96];
                    std::snprintf(cell, sizeof cell, " %.2f (%.2f) %.3f/%.3f |", median(chain) * 1e3,
                                  median(dma_only) * 1e3, median(dur) * 1e3, median(wait) * 1e3);
                    row += cell;
                }
                std::printf("| %zu | %zu | %s |%s\n", n, t, state, row.c_str());
                std::fflush(stdout);
            }
            for (auto s : slot) CK(cudaFreeHost(s));
        }
        munmap(touched, bytes);
        CK(cudaFree(dc));
    }
    return 0;
}
