// CK(call): a CUDA runtime call that must succeed; on an error, prints where and exits 1.
// Shared by the standalone benchmarks in this folder.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                               \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));      \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)
