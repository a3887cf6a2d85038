// Row interchanges of one column-major tile in place, as LAPACK's ?laswp with incx = 1: for
// i = k1, ..., k2 in that order, row i is interchanged with row ipiv[i - 1] (1-based, relative
// to the tile's first row) in every column. One kernel per element size: an interchange moves
// bytes, so f32 uses the 4-byte kernel, f64 and c32 the 8-byte one, c64 the 16-byte one.
//
// Why not one thread per column walking the pivots: each step waits on a global load, and a
// tile of 512 columns gives too few threads to hide it. Instead each round of up to CHUNK
// pivots is first turned into the permutation it makes (a few hundred steps in shared memory),
// then every moved row of every column is copied in parallel: read all, barrier, write all.
//
// A block owns whole columns (a grid-stride loop over groups of COLS columns) and goes through
// the rounds in order, so the interchanges of a column happen in LAPACK's order. Every block
// computes the round's permutation itself: no global workspace and one launch per tile.
//
// A pivot that names no row of the tile (outside 1..rows) is skipped instead of writing
// outside the tile; the caller's contract rules such pivots out (LAPACK does not check them).
//
// The PTX beside this file is generated from it by scripts/gen-ptx.py (NVRTC 12.0, compute_70);
// run that after editing, and commit both.

#define THREADS 256
#define CHUNK 512
#define HASH_BITS 10
#define HASH (1 << HASH_BITS)
#define COLS 4
#define MOVED_PER_THREAD ((2 * CHUNK + THREADS - 1) / THREADS)
static_assert(HASH >= 2 * CHUNK, "the row table must stay at most half full");

// The element types: plain words of the element's size (8-byte alignment for the 16-byte
// type, as Rust's complex<f64> has).
struct Word4 {
    unsigned int x;
};
struct Word8 {
    unsigned long long x;
};
struct Word16 {
    unsigned long long x, y;
};

// The slot of `row` (a row outside the round's range) in the open-addressing table `keys`,
// inserting it when new; at most CHUNK keys in HASH = 2 CHUNK slots, so a free slot exists.
__device__ __forceinline__ int slot_of_row(int* keys, int row) {
    unsigned int h = ((unsigned int)row * 2654435761u) >> (32 - HASH_BITS);
    for (;;) {
        int old = atomicCAS(&keys[h], -1, row);
        if (old == -1 || old == row) {
            return (int)h;
        }
        h = (h + 1) & (HASH - 1);
    }
}

template <typename T>
__device__ __forceinline__ void laswp(T* a, long long lda, int rows, int cols, int k1, int k2,
                                      const int* ipiv) {
    // Slots: 0 .. CHUNK - 1 are the round's own rows (first + s), CHUNK + h the row keys[h].
    __shared__ int keys[HASH];
    __shared__ int target[CHUNK];          // per pivot: the slot of the row it names
    __shared__ int holds[CHUNK + HASH];    // per slot: the row whose entries end up there
    __shared__ int dst[2 * CHUNK];         // the rows that change, and where from
    __shared__ int src[2 * CHUNK];
    __shared__ int moved;
    const int tid = threadIdx.x;

    // 64-bit round start: k2 may come within CHUNK of the largest int.
    for (long long round = k1 - 1; round < k2; round += CHUNK) {
        const int first = (int)round;
        const int n = min(CHUNK, k2 - first);
        for (int h = tid; h < HASH; h += THREADS) {
            keys[h] = -1;
        }
        if (tid == 0) {
            moved = 0;
        }
        __syncthreads();
        for (int j = tid; j < n; j += THREADS) {
            const int p = ipiv[first + j] - 1;
            int s = j;
            if (p < 0 || p >= rows || p == first + j) {
                s = j;
            } else if (p >= first && p < first + n) {
                s = p - first;
            } else {
                s = CHUNK + slot_of_row(keys, p);
            }
            target[j] = s;
        }
        __syncthreads();
        for (int s = tid; s < CHUNK + HASH; s += THREADS) {
            holds[s] = s < CHUNK ? first + s : keys[s - CHUNK];
        }
        __syncthreads();
        // The interchanges in order, on row numbers: LAPACK's sequence, once.
        if (tid == 0) {
            for (int j = 0; j < n; ++j) {
                const int s = target[j];
                const int t = holds[j];
                holds[j] = holds[s];
                holds[s] = t;
            }
        }
        __syncthreads();
        for (int s = tid; s < CHUNK + HASH; s += THREADS) {
            const int row = s < CHUNK ? (s < n ? first + s : -1) : keys[s - CHUNK];
            if (row >= 0 && holds[s] != row) {
                const int k = atomicAdd(&moved, 1);
                dst[k] = row;
                src[k] = holds[s];
            }
        }
        __syncthreads();
        const int count = moved;
        for (long long c0 = (long long)blockIdx.x * COLS; c0 < cols;
             c0 += (long long)gridDim.x * COLS) {
            T v[MOVED_PER_THREAD][COLS];
#pragma unroll
            for (int e = 0; e < MOVED_PER_THREAD; ++e) {
                const int k = tid + e * THREADS;
#pragma unroll
                for (int c = 0; c < COLS; ++c) {
                    if (k < count && c0 + c < cols) {
                        v[e][c] = a[(long long)src[k] + (c0 + c) * lda];
                    }
                }
            }
            // Every read of these columns before any write: a row read here may be written by
            // another thread.
            __syncthreads();
#pragma unroll
            for (int e = 0; e < MOVED_PER_THREAD; ++e) {
                const int k = tid + e * THREADS;
#pragma unroll
                for (int c = 0; c < COLS; ++c) {
                    if (k < count && c0 + c < cols) {
                        a[(long long)dst[k] + (c0 + c) * lda] = v[e][c];
                    }
                }
            }
        }
        // The next round reuses the shared arrays and reads rows written here.
        __syncthreads();
    }
}

// The entry points: the tile at `a` (rows x cols, leading dimension lda elements), the
// interchanges k1..k2 (1-based) of the i32 pivots at `ipiv`. Launch with THREADS threads.
extern "C" __global__ void __launch_bounds__(THREADS)
    hetblas_laswp_4(Word4* a, long long lda, int rows, int cols, int k1, int k2,
                    const int* ipiv) {
    laswp(a, lda, rows, cols, k1, k2, ipiv);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    hetblas_laswp_8(Word8* a, long long lda, int rows, int cols, int k1, int k2,
                    const int* ipiv) {
    laswp(a, lda, rows, cols, k1, k2, ipiv);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    hetblas_laswp_16(Word16* a, long long lda, int rows, int cols, int k1, int k2,
                     const int* ipiv) {
    laswp(a, lda, rows, cols, k1, k2, ipiv);
}
