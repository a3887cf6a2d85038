// What a fresh output costs the host before any data lands in it: first-touch faults of a new
// anonymous mapping (NumPy's `a @ b` hands the BLAS a fresh C each call), by thread count, with
// and without transparent huge pages, beside a copy into memory already touched and the kernel's
// own population (MADV_POPULATE_WRITE, which hetblas runs in the background on a staged fresh
// output: crates/backend-gpu/src/registration/prefault.rs picks its thread count from this).
// The floor it gives bounds a drop-in call whose output is fresh, whatever the device does. Not
// part of the library; built and run by `bash scripts/gpu/dropin.sh firsttouch`.
//
//   first_touch [MIB...]   (default 128 512 2048)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct part {
    char *p;
    size_t len;
    const char *src;
    int populate;
};

// Writes one byte per 4 KiB page (a first touch), or copies `src` over the part.
static void *work(void *arg) {
    struct part *w = arg;
    if (w->populate) {
        if (w->len && madvise(w->p, w->len, MADV_POPULATE_WRITE) != 0) w->len = 0;
    } else if (w->src) {
        memcpy(w->p, w->src, w->len);
    } else {
        for (size_t i = 0; i < w->len; i += 4096) w->p[i] = 1;
    }
    return NULL;
}

static double run(char *p, size_t len, const char *src, int threads, int populate) {
    pthread_t t[64];
    struct part w[64];
    size_t step = (len / threads + 4095) / 4096 * 4096;
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        size_t s = i * step, e = s + step < len ? s + step : len;
        w[i] = (struct part){p + s, e > s ? e - s : 0, src ? src + s : NULL, populate};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    return now() - t0;
}

int main(int argc, char **argv) {
    int sizes[8] = {128, 512, 2048}, n = 3;
    if (argc > 1) {
        n = 0;
        for (int i = 1; i < argc && n < 8; i++) sizes[n++] = atoi(argv[i]);
    }
    int threads[] = {1, 4, 8, 16};
    printf("%-6s %-5s %-8s %s\n", "MiB", "THP", "threads",
           "first touch GB/s | copy into touched memory GB/s | MADV_POPULATE_WRITE GB/s");
    for (int s = 0; s < n; s++) {
        size_t len = (size_t)sizes[s] << 20;
        char *src = malloc(len);
        memset(src, 7, len);
        for (int huge = 0; huge < 2; huge++) {
            for (int ti = 0; ti < 4; ti++) {
                char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) return 1;
                madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
                double fault = run(p, len, NULL, threads[ti], 0);
                double copy = run(p, len, src, threads[ti], 0);
                // Checked: the copy landed whole.
                if (p[0] != 7 || p[len - 1] != 7) return 2;
                munmap(p, len);
                p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) return 1;
                madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
                double pop = run(p, len, NULL, threads[ti], 1);
                printf("%-6d %-5s %-8d %.1f | %.1f | %.1f\n", sizes[s], huge ? "on" : "off",
                       threads[ti], len / fault / 1e9, len / copy / 1e9, len / pop / 1e9);
                munmap(p, len);
            }
        }
        free(src);
    }
    return 0;
}
