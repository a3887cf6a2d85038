/*
 * hip_shim.c: the HIP-on-CUDA test shim of hetblas (see README.md).
 *
 * A TEST HARNESS, NOT A PRODUCT PATH. It lets the hetblas HIP backend's own code (loading,
 * error mapping, streams, events, registration cache, staging, peer links, hipBLAS kernel) run
 * on NVIDIA GPUs by providing, under the real library names and with the real exported ABI,
 * exactly the hip* and hipblas* functions the backend loads, implemented on the CUDA runtime
 * (cudart) and cuBLAS. Enum values are translated both ways: HIP's arguments to CUDA's, CUDA's
 * status codes back to HIP's codes, and hipGetErrorName / hipGetErrorString answer with HIP's
 * names ("hipErrorNoDevice").
 *
 * One source, three libraries:
 *   -DHIPSHIM_RUNTIME   libamdhip64.so.6 (the HIP runtime functions; links cudart)
 *   -DHIPSHIM_BLAS      libhipblas.so.2  (the hipBLAS functions; links cuBLAS and cudart)
 *   -DHIPSHIM_SOLVER    librocsolver.so.0 (rocSOLVER's potrf/getrf/laswp and the rocBLAS handle
 *                       functions they take, also installed as librocblas.so.4; links cuSOLVER
 *                       and cudart)
 * -DHIPSHIM_SYNTAX_ONLY replaces the CUDA headers with the few local declarations used, so the
 * file can be syntax-checked on a machine without any CUDA toolkit (build.sh --check). The
 * declarations follow the CUDA ABI (every value and the cudaDeviceProp offsets used were
 * compared with the CUDA 13 headers), so -DHIPSHIM_LOCAL_DECLS builds real libraries with them
 * where only the CUDA shared libraries are installed (build.sh falls back to it).
 *
 * The HIP values mirrored here are those of hip_runtime_api.h / driver_types.h (HIP 5.2 and
 * current ROCm agree) and hipblas-common.h; they match crates/backend-hip/src/sys.rs.
 */

#if !defined(HIPSHIM_RUNTIME) && !defined(HIPSHIM_BLAS) && !defined(HIPSHIM_SOLVER)
#error "build with -DHIPSHIM_RUNTIME (libamdhip64), -DHIPSHIM_BLAS (libhipblas) or -DHIPSHIM_SOLVER (librocsolver)"
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* CUDA declarations                                                                         */
/* ---------------------------------------------------------------------------------------- */

#if defined(HIPSHIM_SYNTAX_ONLY) || defined(HIPSHIM_LOCAL_DECLS)
/* Only what this file uses, with the CUDA runtime's / cuBLAS's names, prototypes and values
 * (driver_types.h, cuda_runtime_api.h, cublas_api.h of CUDA 13; unchanged since CUDA 11). */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorCudartUnloading = 4,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorCallRequiresNewerDriver = 36,
    cudaErrorStubLibrary = 34,
    cudaErrorDevicesUnavailable = 46,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidKernelImage = 200,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorECCUncorrectable = 214,
    cudaErrorPeerAccessUnsupported = 217,
    cudaErrorOperatingSystem = 304,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorSymbolNotFound = 500,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchTimeout = 702,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorPeerAccessNotEnabled = 705,
    cudaErrorContextIsDestroyed = 709,
    cudaErrorAssert = 710,
    cudaErrorHostMemoryAlreadyRegistered = 712,
    cudaErrorHostMemoryNotRegistered = 713,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorSystemDriverMismatch = 803,
    cudaErrorUnknown = 999
} cudaError_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
enum cudaDeviceAttr {
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrCanMapHostMemory = 19,
    cudaDevAttrPciBusId = 33,
    cudaDevAttrPciDeviceId = 34,
    cudaDevAttrPciDomainId = 50,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76
};
struct cudaDeviceProp { /* the leading members only; 1008 bytes in CUDA 13, padded here */
    char name[256];
    unsigned char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem; /* offset 288 */
    unsigned char rest_[4096];
};
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaHostRegisterIoMemory 0x04
#define cudaHostRegisterReadOnly 0x08
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                  void *userData, unsigned int flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                size_t count, cudaStream_t stream);
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaDriverGetVersion(int *driverVersion);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);

#ifdef HIPSHIM_BLAS
typedef struct cublasContext *cublasHandle_t;
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
cublasStatus_t cublasCreate_v2(cublasHandle_t *handle);
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId);
cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const double *alpha,
                              const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc);
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc);
cublasStatus_t cublasDgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const double *alpha, const double *A, int64_t lda,
                                 const double *B, int64_t ldb, const double *beta, double *C,
                                 int64_t ldc);
cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const float *alpha, const float *A, int64_t lda, const float *B,
                                 int64_t ldb, const float *beta, float *C, int64_t ldc);
cublasStatus_t cublasDgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const double *alpha,
                           const double *A, int lda, const double *beta, const double *B,
                           int ldb, double *C, int ldc);
cublasStatus_t cublasSgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const float *alpha,
                           const float *A, int lda, const float *beta, const float *B, int ldb,
                           float *C, int ldc);
/* cuComplex.h: float2 / double2, real part first. */
typedef struct { float x, y; } cuComplex;
typedef struct { double x, y; } cuDoubleComplex;
cublasStatus_t cublasCgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const cuComplex *alpha, const cuComplex *A, int lda,
                              const cuComplex *B, int ldb, const cuComplex *beta, cuComplex *C,
                              int ldc);
cublasStatus_t cublasZgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const cuDoubleComplex *alpha, const cuDoubleComplex *A, int lda,
                              const cuDoubleComplex *B, int ldb, const cuDoubleComplex *beta,
                              cuDoubleComplex *C, int ldc);
cublasStatus_t cublasCgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const cuComplex *alpha, const cuComplex *A, int64_t lda,
                                 const cuComplex *B, int64_t ldb, const cuComplex *beta,
                                 cuComplex *C, int64_t ldc);
cublasStatus_t cublasZgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                 const cuDoubleComplex *alpha, const cuDoubleComplex *A,
                                 int64_t lda, const cuDoubleComplex *B, int64_t ldb,
                                 const cuDoubleComplex *beta, cuDoubleComplex *C, int64_t ldc);
cublasStatus_t cublasCgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const cuComplex *alpha,
                           const cuComplex *A, int lda, const cuComplex *beta, const cuComplex *B,
                           int ldb, cuComplex *C, int ldc);
cublasStatus_t cublasZgeam(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, const cuDoubleComplex *alpha,
                           const cuDoubleComplex *A, int lda, const cuDoubleComplex *beta,
                           const cuDoubleComplex *B, int ldb, cuDoubleComplex *C, int ldc);
typedef enum { CUBLAS_SIDE_LEFT = 0, CUBLAS_SIDE_RIGHT = 1 } cublasSideMode_t;
typedef enum {
    CUBLAS_FILL_MODE_LOWER = 0,
    CUBLAS_FILL_MODE_UPPER = 1,
    CUBLAS_FILL_MODE_FULL = 2
} cublasFillMode_t;
typedef enum { CUBLAS_DIAG_NON_UNIT = 0, CUBLAS_DIAG_UNIT = 1 } cublasDiagType_t;
#define TRSM_DECL(name, T)                                                                     \
    cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,   \
                        cublasOperation_t trans, cublasDiagType_t diag, int m, int n,          \
                        const T *alpha, const T *A, int lda, T *B, int ldb)
#define TRMM_DECL(name, T)                                                                     \
    cublasStatus_t name(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,   \
                        cublasOperation_t trans, cublasDiagType_t diag, int m, int n,          \
                        const T *alpha, const T *A, int lda, const T *B, int ldb, T *C,        \
                        int ldc)
TRSM_DECL(cublasStrsm_v2, float);
TRSM_DECL(cublasDtrsm_v2, double);
TRSM_DECL(cublasCtrsm_v2, cuComplex);
TRSM_DECL(cublasZtrsm_v2, cuDoubleComplex);
TRMM_DECL(cublasStrmm_v2, float);
TRMM_DECL(cublasDtrmm_v2, double);
TRMM_DECL(cublasCtrmm_v2, cuComplex);
TRMM_DECL(cublasZtrmm_v2, cuDoubleComplex);
/* The symmetric/Hermitian Level 3 routines (cublas_api.h). */
#define DECL_RK(f, T, S)                                                                       \
    cublasStatus_t f(cublasHandle_t, cublasFillMode_t, cublasOperation_t, int, int, const S *,  \
                     const T *, int, const S *, T *, int)
#define DECL_R2K(f, T, S)                                                                      \
    cublasStatus_t f(cublasHandle_t, cublasFillMode_t, cublasOperation_t, int, int, const T *,  \
                     const T *, int, const T *, int, const S *, T *, int)
#define DECL_MM(f, T)                                                                          \
    cublasStatus_t f(cublasHandle_t, cublasSideMode_t, cublasFillMode_t, int, int, const T *,   \
                     const T *, int, const T *, int, const T *, T *, int)
DECL_RK(cublasSsyrk_v2, float, float);
DECL_RK(cublasDsyrk_v2, double, double);
DECL_RK(cublasCsyrk_v2, cuComplex, cuComplex);
DECL_RK(cublasZsyrk_v2, cuDoubleComplex, cuDoubleComplex);
DECL_RK(cublasCherk_v2, cuComplex, float);
DECL_RK(cublasZherk_v2, cuDoubleComplex, double);
DECL_R2K(cublasSsyr2k_v2, float, float);
DECL_R2K(cublasDsyr2k_v2, double, double);
DECL_R2K(cublasCsyr2k_v2, cuComplex, cuComplex);
DECL_R2K(cublasZsyr2k_v2, cuDoubleComplex, cuDoubleComplex);
DECL_R2K(cublasCher2k_v2, cuComplex, float);
DECL_R2K(cublasZher2k_v2, cuDoubleComplex, double);
DECL_MM(cublasSsymm_v2, float);
DECL_MM(cublasDsymm_v2, double);
DECL_MM(cublasCsymm_v2, cuComplex);
DECL_MM(cublasZsymm_v2, cuDoubleComplex);
DECL_MM(cublasChemm_v2, cuComplex);
DECL_MM(cublasZhemm_v2, cuDoubleComplex);
#endif /* HIPSHIM_BLAS */

#ifdef HIPSHIM_SOLVER
/* cusolverDn.h / cusolver_common.h of CUDA 13 (cuSOLVER 12). */
typedef struct cusolverDnContext *cusolverDnHandle_t;
typedef enum {
    CUSOLVER_STATUS_SUCCESS = 0,
    CUSOLVER_STATUS_NOT_INITIALIZED = 1,
    CUSOLVER_STATUS_ALLOC_FAILED = 2,
    CUSOLVER_STATUS_INVALID_VALUE = 3,
    CUSOLVER_STATUS_ARCH_MISMATCH = 4,
    CUSOLVER_STATUS_EXECUTION_FAILED = 6,
    CUSOLVER_STATUS_INTERNAL_ERROR = 7,
    CUSOLVER_STATUS_NOT_SUPPORTED = 9
} cusolverStatus_t;
typedef enum {
    CUBLAS_FILL_MODE_LOWER = 0,
    CUBLAS_FILL_MODE_UPPER = 1,
    CUBLAS_FILL_MODE_FULL = 2
} cublasFillMode_t;
typedef struct { float x, y; } cuComplex;
typedef struct { double x, y; } cuDoubleComplex;
cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle);
cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle);
cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId);
#define DECL_POTRF(x, T)                                                                       \
    cusolverStatus_t cusolverDn##x##potrf_bufferSize(cusolverDnHandle_t, cublasFillMode_t,     \
                                                     int, T *, int, int *);                    \
    cusolverStatus_t cusolverDn##x##potrf(cusolverDnHandle_t, cublasFillMode_t, int, T *, int, \
                                          T *, int, int *)
#define DECL_GETRF(x, T)                                                                       \
    cusolverStatus_t cusolverDn##x##getrf_bufferSize(cusolverDnHandle_t, int, int, T *, int,   \
                                                     int *);                                   \
    cusolverStatus_t cusolverDn##x##getrf(cusolverDnHandle_t, int, int, T *, int, T *, int *,  \
                                          int *)
DECL_POTRF(S, float);
DECL_POTRF(D, double);
DECL_POTRF(C, cuComplex);
DECL_POTRF(Z, cuDoubleComplex);
DECL_GETRF(S, float);
DECL_GETRF(D, double);
DECL_GETRF(C, cuComplex);
DECL_GETRF(Z, cuDoubleComplex);
#endif /* HIPSHIM_SOLVER */

#else /* the real headers */
#include <cuda_runtime_api.h>
#ifdef HIPSHIM_BLAS
#include <cublas_v2.h>
#endif
#ifdef HIPSHIM_SOLVER
#include <cusolverDn.h>
#endif
#endif

/* ---------------------------------------------------------------------------------------- */
/* The HIP ABI: types and values exactly as the HIP headers define them                     */
/* ---------------------------------------------------------------------------------------- */

#define HIPSHIM_API __attribute__((visibility("default")))

typedef int hipError_t; /* a C enum in hip_runtime_api.h */
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef int hipMemcpyKind;
typedef int hipDeviceAttribute_t;
typedef int hipDevice_t;
typedef void (*hipHostFn_t)(void *userData);
typedef void (*hipStreamCallback_t)(hipStream_t stream, hipError_t status, void *userData);

enum {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorNotInitialized = 3,
    hipErrorDeinitialized = 4,
    hipErrorInvalidConfiguration = 9,
    hipErrorInvalidPitchValue = 12,
    hipErrorInvalidSymbol = 13,
    hipErrorInvalidDevicePointer = 17,
    hipErrorInvalidMemcpyDirection = 21,
    hipErrorInsufficientDriver = 35,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101,
    hipErrorInvalidImage = 200,
    hipErrorNoBinaryForGpu = 209,
    hipErrorECCNotCorrectable = 214,
    hipErrorPeerAccessUnsupported = 217,
    hipErrorOperatingSystem = 304,
    hipErrorInvalidHandle = 400,
    hipErrorIllegalState = 401,
    hipErrorNotFound = 500,
    hipErrorNotReady = 600,
    hipErrorIllegalAddress = 700,
    hipErrorLaunchOutOfResources = 701,
    hipErrorLaunchTimeOut = 702,
    hipErrorPeerAccessAlreadyEnabled = 704,
    hipErrorPeerAccessNotEnabled = 705,
    hipErrorContextIsDestroyed = 709,
    hipErrorAssert = 710,
    hipErrorHostMemoryAlreadyRegistered = 712,
    hipErrorHostMemoryNotRegistered = 713,
    hipErrorLaunchFailure = 719,
    hipErrorNotSupported = 801,
    hipErrorUnknown = 999
};

/* hipMemcpyKind (driver_types.h) */
enum {
    hipMemcpyHostToHost = 0,
    hipMemcpyHostToDevice = 1,
    hipMemcpyDeviceToHost = 2,
    hipMemcpyDeviceToDevice = 3,
    hipMemcpyDefault = 4
};

/* hipDeviceAttribute_t: the members the backend queries (hip_runtime_api.h) */
enum {
    hipDeviceAttributeCanMapHostMemory = 3,
    hipDeviceAttributeComputeCapabilityMajor = 23,
    hipDeviceAttributeComputeCapabilityMinor = 61,
    hipDeviceAttributeMultiprocessorCount = 63,
    hipDeviceAttributePciBusId = 67,
    hipDeviceAttributePciDeviceId = 68,
    hipDeviceAttributePciDomainId = 69,
    hipDeviceAttributeTotalGlobalMem = 84
};

/* Flag bits (hip_runtime_api.h #defines) */
#define hipStreamNonBlocking 0x01u
#define hipEventBlockingSync 0x01u
#define hipEventDisableTiming 0x02u
#define hipEventInterprocess 0x04u
#define hipHostMallocPortable 0x01u
#define hipHostMallocMapped 0x02u
#define hipHostMallocWriteCombined 0x04u
#define hipHostRegisterPortable 0x01u
#define hipHostRegisterMapped 0x02u
#define hipHostRegisterIoMemory 0x04u
#define hipHostRegisterReadOnly 0x08u

/* ======================================================================================== */
#ifdef HIPSHIM_RUNTIME
/* ======================================================================================== */

/* The last CUDA status that had no HIP equivalent, per thread, for hipGetErrorString. */
static _Thread_local cudaError_t last_unmapped = cudaSuccess;
static _Thread_local char unmapped_text[512];

/* CUDA status -> HIP status (HIP copied CUDA's numbering, but the shim never relies on that:
 * every code is named on both sides). */
static hipError_t tr(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return hipSuccess;
    case cudaErrorInvalidValue: return hipErrorInvalidValue;
    case cudaErrorMemoryAllocation: return hipErrorOutOfMemory;
    case cudaErrorInitializationError: return hipErrorNotInitialized;
    case cudaErrorCudartUnloading: return hipErrorDeinitialized;
    case cudaErrorInvalidConfiguration: return hipErrorInvalidConfiguration;
    case cudaErrorInvalidPitchValue: return hipErrorInvalidPitchValue;
    case cudaErrorInvalidSymbol: return hipErrorInvalidSymbol;
    case cudaErrorInvalidDevicePointer: return hipErrorInvalidDevicePointer;
    case cudaErrorInvalidMemcpyDirection: return hipErrorInvalidMemcpyDirection;
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorStubLibrary:
    case cudaErrorSystemDriverMismatch: return hipErrorInsufficientDriver;
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable: return hipErrorNoDevice;
    case cudaErrorInvalidDevice: return hipErrorInvalidDevice;
    case cudaErrorInvalidKernelImage: return hipErrorInvalidImage;
    case cudaErrorNoKernelImageForDevice: return hipErrorNoBinaryForGpu;
    case cudaErrorECCUncorrectable: return hipErrorECCNotCorrectable;
    case cudaErrorPeerAccessUnsupported: return hipErrorPeerAccessUnsupported;
    case cudaErrorOperatingSystem: return hipErrorOperatingSystem;
    case cudaErrorInvalidResourceHandle: return hipErrorInvalidHandle;
    case cudaErrorIllegalState: return hipErrorIllegalState;
    case cudaErrorSymbolNotFound: return hipErrorNotFound;
    case cudaErrorNotReady: return hipErrorNotReady;
    case cudaErrorIllegalAddress: return hipErrorIllegalAddress;
    case cudaErrorLaunchOutOfResources: return hipErrorLaunchOutOfResources;
    case cudaErrorLaunchTimeout: return hipErrorLaunchTimeOut;
    case cudaErrorPeerAccessAlreadyEnabled: return hipErrorPeerAccessAlreadyEnabled;
    case cudaErrorPeerAccessNotEnabled: return hipErrorPeerAccessNotEnabled;
    case cudaErrorContextIsDestroyed: return hipErrorContextIsDestroyed;
    case cudaErrorAssert: return hipErrorAssert;
    case cudaErrorHostMemoryAlreadyRegistered: return hipErrorHostMemoryAlreadyRegistered;
    case cudaErrorHostMemoryNotRegistered: return hipErrorHostMemoryNotRegistered;
    case cudaErrorLaunchFailure: return hipErrorLaunchFailure;
    case cudaErrorNotSupported: return hipErrorNotSupported;
    default:
        last_unmapped = e;
        return hipErrorUnknown;
    }
}

struct hip_error_text {
    hipError_t code;
    const char *name;
    const char *text;
};

static const struct hip_error_text hip_errors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorDeinitialized, "hipErrorDeinitialized", "runtime is shutting down"},
    {hipErrorInvalidConfiguration, "hipErrorInvalidConfiguration", "invalid configuration"},
    {hipErrorInvalidPitchValue, "hipErrorInvalidPitchValue", "invalid pitch argument"},
    {hipErrorInvalidSymbol, "hipErrorInvalidSymbol", "invalid device symbol"},
    {hipErrorInvalidDevicePointer, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {hipErrorInvalidMemcpyDirection, "hipErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {hipErrorInsufficientDriver, "hipErrorInsufficientDriver",
     "driver version is insufficient for runtime version"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no GPU device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidImage, "hipErrorInvalidImage", "device kernel image is invalid"},
    {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu", "no kernel image for the device"},
    {hipErrorECCNotCorrectable, "hipErrorECCNotCorrectable", "uncorrectable ECC error"},
    {hipErrorPeerAccessUnsupported, "hipErrorPeerAccessUnsupported",
     "peer access is not supported between these two devices"},
    {hipErrorOperatingSystem, "hipErrorOperatingSystem", "OS call failed"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorIllegalState, "hipErrorIllegalState", "operation not permitted in this state"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorNotReady, "hipErrorNotReady", "device not ready"},
    {hipErrorIllegalAddress, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {hipErrorLaunchOutOfResources, "hipErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {hipErrorLaunchTimeOut, "hipErrorLaunchTimeOut", "the launch timed out"},
    {hipErrorPeerAccessAlreadyEnabled, "hipErrorPeerAccessAlreadyEnabled",
     "peer access is already enabled"},
    {hipErrorPeerAccessNotEnabled, "hipErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {hipErrorContextIsDestroyed, "hipErrorContextIsDestroyed", "context is destroyed"},
    {hipErrorAssert, "hipErrorAssert", "device-side assert triggered"},
    {hipErrorHostMemoryAlreadyRegistered, "hipErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {hipErrorHostMemoryNotRegistered, "hipErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {hipErrorLaunchFailure, "hipErrorLaunchFailure", "unspecified launch failure"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorUnknown, "hipErrorUnknown", "unknown error"},
};

static const struct hip_error_text *find_error(hipError_t e)
{
    for (size_t i = 0; i < sizeof hip_errors / sizeof hip_errors[0]; i++)
        if (hip_errors[i].code == e)
            return &hip_errors[i];
    return NULL;
}

HIPSHIM_API const char *hipGetErrorName(hipError_t e)
{
    const struct hip_error_text *t = find_error(e);
    return t ? t->name : "hipErrorUnknown";
}

HIPSHIM_API const char *hipGetErrorString(hipError_t e)
{
    const struct hip_error_text *t = find_error(e);
    if (e == hipErrorUnknown && last_unmapped != cudaSuccess) {
        /* Say which CUDA status had no HIP equivalent (thread-local, stable until the next
         * call on this thread). */
        snprintf(unmapped_text, sizeof unmapped_text, "unknown error (CUDA %s: %s)",
                 cudaGetErrorName(last_unmapped), cudaGetErrorString(last_unmapped));
        return unmapped_text;
    }
    return t ? t->text : "unknown error";
}

static int kind_to_cuda(hipMemcpyKind k, enum cudaMemcpyKind *out)
{
    switch (k) {
    case hipMemcpyHostToHost: *out = cudaMemcpyHostToHost; return 1;
    case hipMemcpyHostToDevice: *out = cudaMemcpyHostToDevice; return 1;
    case hipMemcpyDeviceToHost: *out = cudaMemcpyDeviceToHost; return 1;
    case hipMemcpyDeviceToDevice: *out = cudaMemcpyDeviceToDevice; return 1;
    case hipMemcpyDefault: *out = cudaMemcpyDefault; return 1;
    default: return 0;
    }
}

#define CS(s) ((cudaStream_t)(s))
#define CE(e) ((cudaEvent_t)(e))

HIPSHIM_API hipError_t hipInit(unsigned int flags)
{
    int n = 0;
    if (flags != 0)
        return hipErrorInvalidValue;
    /* cudart initialises lazily; counting devices makes it initialise and report why not. */
    return tr(cudaGetDeviceCount(&n));
}

HIPSHIM_API hipError_t hipGetDeviceCount(int *count)
{
    cudaError_t e;
    if (!count)
        return hipErrorInvalidValue;
    e = cudaGetDeviceCount(count);
    if (e != cudaSuccess)
        *count = 0;
    return tr(e);
}

HIPSHIM_API hipError_t hipSetDevice(int device) { return tr(cudaSetDevice(device)); }

HIPSHIM_API hipError_t hipGetDevice(int *device)
{
    if (!device)
        return hipErrorInvalidValue;
    return tr(cudaGetDevice(device));
}

HIPSHIM_API hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr, int device)
{
    enum cudaDeviceAttr a;
    if (!value)
        return hipErrorInvalidValue;
    switch (attr) {
    case hipDeviceAttributeCanMapHostMemory: a = cudaDevAttrCanMapHostMemory; break;
    case hipDeviceAttributeComputeCapabilityMajor: a = cudaDevAttrComputeCapabilityMajor; break;
    case hipDeviceAttributeComputeCapabilityMinor: a = cudaDevAttrComputeCapabilityMinor; break;
    case hipDeviceAttributeMultiprocessorCount: a = cudaDevAttrMultiProcessorCount; break;
    case hipDeviceAttributePciBusId: a = cudaDevAttrPciBusId; break;
    case hipDeviceAttributePciDeviceId: a = cudaDevAttrPciDeviceId; break;
    case hipDeviceAttributePciDomainId: a = cudaDevAttrPciDomainId; break;
    case hipDeviceAttributeTotalGlobalMem: {
        struct cudaDeviceProp p;
        cudaError_t e = cudaGetDeviceProperties(&p, device);
        if (e == cudaSuccess)
            *value = p.totalGlobalMem > (size_t)0x7fffffff ? 0x7fffffff : (int)p.totalGlobalMem;
        return tr(e);
    }
    default: return hipErrorInvalidValue; /* not needed by hetblas */
    }
    return tr(cudaDeviceGetAttribute(value, a, device));
}

HIPSHIM_API hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device)
{
    struct cudaDeviceProp p;
    cudaError_t e;
    if (!name || len <= 0)
        return hipErrorInvalidValue;
    e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess)
        return tr(e);
    strncpy(name, p.name, (size_t)len - 1);
    name[len - 1] = '\0';
    return hipSuccess;
}

HIPSHIM_API hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device)
{
    struct cudaDeviceProp p;
    cudaError_t e;
    if (!bytes)
        return hipErrorInvalidValue;
    e = cudaGetDeviceProperties(&p, device);
    if (e == cudaSuccess)
        *bytes = p.totalGlobalMem;
    return tr(e);
}

HIPSHIM_API hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total)
{
    return tr(cudaMemGetInfo(free_bytes, total));
}

HIPSHIM_API hipError_t hipMalloc(void **ptr, size_t size) { return tr(cudaMalloc(ptr, size)); }

HIPSHIM_API hipError_t hipFree(void *ptr) { return tr(cudaFree(ptr)); }

HIPSHIM_API hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
    unsigned int f = cudaHostAllocDefault;
    if (flags & hipHostMallocPortable)
        f |= cudaHostAllocPortable;
    if (flags & hipHostMallocMapped)
        f |= cudaHostAllocMapped;
    if (flags & hipHostMallocWriteCombined)
        f |= cudaHostAllocWriteCombined;
    /* HIP-only bits (coherent / non-coherent / NUMA placement) have no CUDA meaning. */
    return tr(cudaHostAlloc(ptr, size, f));
}

HIPSHIM_API hipError_t hipHostFree(void *ptr) { return tr(cudaFreeHost(ptr)); }

HIPSHIM_API hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags)
{
    unsigned int f = cudaHostRegisterDefault;
    if (flags & hipHostRegisterPortable)
        f |= cudaHostRegisterPortable;
    if (flags & hipHostRegisterMapped)
        f |= cudaHostRegisterMapped;
    if (flags & hipHostRegisterIoMemory)
        f |= cudaHostRegisterIoMemory;
    if (flags & hipHostRegisterReadOnly)
        f |= cudaHostRegisterReadOnly;
    return tr(cudaHostRegister(ptr, size, f));
}

HIPSHIM_API hipError_t hipHostUnregister(void *ptr) { return tr(cudaHostUnregister(ptr)); }

HIPSHIM_API hipError_t hipHostGetDevicePointer(void **dev, void *host, unsigned int flags)
{
    return tr(cudaHostGetDevicePointer(dev, host, flags));
}

/* hipPointerAttribute_t, with HIP 5's memory types: the shim's hipRuntimeGetVersion reports
 * the CUDA runtime's version, below HIP 6's 60000000, so hetblas reads HIP 5 numbering. */
typedef struct {
    int memoryType; /* HIP 5: hipMemoryTypeHost 0, hipMemoryTypeDevice 1, hipMemoryTypeManaged 4 */
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned int allocationFlags;
} hipPointerAttribute_t;

HIPSHIM_API hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr, const void *ptr)
{
    struct cudaPointerAttributes a;
    cudaError_t r = cudaPointerGetAttributes(&a, ptr);
    if (r != cudaSuccess)
        return tr(r);
    /* HIP 5 fails on memory it does not know, as CUDA before 11 did. */
    if (a.type == cudaMemoryTypeUnregistered)
        return hipErrorInvalidValue;
    memset(attr, 0, sizeof *attr);
    attr->memoryType = a.type == cudaMemoryTypeDevice ? 1 : a.type == cudaMemoryTypeManaged ? 4 : 0;
    attr->device = a.device;
    attr->devicePointer = a.devicePointer;
    attr->hostPointer = a.hostPointer;
    attr->isManaged = a.type == cudaMemoryTypeManaged;
    return hipSuccess;
}

HIPSHIM_API hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags)
{
    unsigned int f = (flags & hipStreamNonBlocking) ? cudaStreamNonBlocking : cudaStreamDefault;
    return tr(cudaStreamCreateWithFlags((cudaStream_t *)stream, f));
}

HIPSHIM_API hipError_t hipStreamDestroy(hipStream_t s) { return tr(cudaStreamDestroy(CS(s))); }

HIPSHIM_API hipError_t hipStreamSynchronize(hipStream_t s)
{
    return tr(cudaStreamSynchronize(CS(s)));
}

HIPSHIM_API hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags)
{
    if (flags != 0)
        return hipErrorInvalidValue;
    return tr(cudaStreamWaitEvent(CS(s), CE(e), 0));
}

HIPSHIM_API hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags)
{
    unsigned int f = cudaEventDefault;
    if (flags & hipEventBlockingSync)
        f |= cudaEventBlockingSync;
    if (flags & hipEventDisableTiming)
        f |= cudaEventDisableTiming;
    if (flags & hipEventInterprocess)
        f |= cudaEventInterprocess;
    return tr(cudaEventCreateWithFlags((cudaEvent_t *)event, f));
}

HIPSHIM_API hipError_t hipEventRecord(hipEvent_t e, hipStream_t s)
{
    return tr(cudaEventRecord(CE(e), CS(s)));
}

HIPSHIM_API hipError_t hipEventSynchronize(hipEvent_t e)
{
    return tr(cudaEventSynchronize(CE(e)));
}

HIPSHIM_API hipError_t hipEventQuery(hipEvent_t e) { return tr(cudaEventQuery(CE(e))); }

HIPSHIM_API hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop)
{
    return tr(cudaEventElapsedTime(ms, CE(start), CE(stop)));
}

HIPSHIM_API hipError_t hipEventDestroy(hipEvent_t e) { return tr(cudaEventDestroy(CE(e))); }

HIPSHIM_API hipError_t hipMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                        size_t spitch, size_t width, size_t height,
                                        hipMemcpyKind kind, hipStream_t s)
{
    enum cudaMemcpyKind k;
    if (!kind_to_cuda(kind, &k))
        return hipErrorInvalidMemcpyDirection;
    return tr(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, k, CS(s)));
}

HIPSHIM_API hipError_t hipMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, hipMemcpyKind kind)
{
    enum cudaMemcpyKind k;
    if (!kind_to_cuda(kind, &k))
        return hipErrorInvalidMemcpyDirection;
    return tr(cudaMemcpy2D(dst, dpitch, src, spitch, width, height, k));
}

HIPSHIM_API hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes,
                                      hipMemcpyKind kind, hipStream_t s)
{
    enum cudaMemcpyKind k;
    if (!kind_to_cuda(kind, &k))
        return hipErrorInvalidMemcpyDirection;
    return tr(cudaMemcpyAsync(dst, src, bytes, k, CS(s)));
}

HIPSHIM_API hipError_t hipMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                          size_t bytes, hipStream_t s)
{
    return tr(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, CS(s)));
}

HIPSHIM_API hipError_t hipDeviceCanAccessPeer(int *can, int device, int peer)
{
    return tr(cudaDeviceCanAccessPeer(can, device, peer));
}

HIPSHIM_API hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    return tr(cudaDeviceEnablePeerAccess(peer, flags));
}

HIPSHIM_API hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn, void *user)
{
    /* Same prototype on both sides: void (*)(void*). */
    return tr(cudaLaunchHostFunc(CS(s), (cudaHostFn_t)fn, user));
}

/* hipStreamAddCallback: the callback receives the HIP stream handle and a HIP status. */
struct callback_job {
    hipStreamCallback_t fn;
    void *user;
};

static void run_callback(cudaStream_t s, cudaError_t status, void *p)
{
    struct callback_job job = *(struct callback_job *)p;
    free(p);
    job.fn((hipStream_t)s, tr(status), job.user);
}

HIPSHIM_API hipError_t hipStreamAddCallback(hipStream_t s, hipStreamCallback_t fn, void *user,
                                            unsigned int flags)
{
    struct callback_job *job;
    cudaError_t e;
    if (!fn || flags != 0)
        return hipErrorInvalidValue;
    job = malloc(sizeof *job);
    if (!job)
        return hipErrorOutOfMemory;
    job->fn = fn;
    job->user = user;
    e = cudaStreamAddCallback(CS(s), run_callback, job, 0);
    if (e != cudaSuccess)
        free(job);
    return tr(e);
}

HIPSHIM_API hipError_t hipDriverGetVersion(int *v) { return tr(cudaDriverGetVersion(v)); }

HIPSHIM_API hipError_t hipRuntimeGetVersion(int *v) { return tr(cudaRuntimeGetVersion(v)); }

#endif /* HIPSHIM_RUNTIME */

/* ======================================================================================== */
#ifdef HIPSHIM_BLAS
/* ======================================================================================== */

typedef void *hipblasHandle_t;
typedef int hipblasStatus_t;    /* a C enum in hipblas-common.h */
typedef int hipblasOperation_t; /* a C enum in hipblas-common.h */

enum {
    HIPBLAS_STATUS_SUCCESS = 0,
    HIPBLAS_STATUS_NOT_INITIALIZED = 1,
    HIPBLAS_STATUS_ALLOC_FAILED = 2,
    HIPBLAS_STATUS_INVALID_VALUE = 3,
    HIPBLAS_STATUS_MAPPING_ERROR = 4,
    HIPBLAS_STATUS_EXECUTION_FAILED = 5,
    HIPBLAS_STATUS_INTERNAL_ERROR = 6,
    HIPBLAS_STATUS_NOT_SUPPORTED = 7,
    HIPBLAS_STATUS_ARCH_MISMATCH = 8,
    HIPBLAS_STATUS_HANDLE_IS_NULLPTR = 9,
    HIPBLAS_STATUS_INVALID_ENUM = 10,
    HIPBLAS_STATUS_UNKNOWN = 11
};

enum { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 };

static hipblasStatus_t btr(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return HIPBLAS_STATUS_SUCCESS;
    case CUBLAS_STATUS_NOT_INITIALIZED: return HIPBLAS_STATUS_NOT_INITIALIZED;
    case CUBLAS_STATUS_ALLOC_FAILED: return HIPBLAS_STATUS_ALLOC_FAILED;
    case CUBLAS_STATUS_INVALID_VALUE: return HIPBLAS_STATUS_INVALID_VALUE;
    case CUBLAS_STATUS_ARCH_MISMATCH: return HIPBLAS_STATUS_ARCH_MISMATCH;
    case CUBLAS_STATUS_MAPPING_ERROR: return HIPBLAS_STATUS_MAPPING_ERROR;
    case CUBLAS_STATUS_EXECUTION_FAILED: return HIPBLAS_STATUS_EXECUTION_FAILED;
    case CUBLAS_STATUS_INTERNAL_ERROR: return HIPBLAS_STATUS_INTERNAL_ERROR;
    case CUBLAS_STATUS_NOT_SUPPORTED: return HIPBLAS_STATUS_NOT_SUPPORTED;
    default: return HIPBLAS_STATUS_UNKNOWN;
    }
}

static int op_to_cuda(hipblasOperation_t op, cublasOperation_t *out)
{
    switch (op) {
    case HIPBLAS_OP_N: *out = CUBLAS_OP_N; return 1;
    case HIPBLAS_OP_T: *out = CUBLAS_OP_T; return 1;
    case HIPBLAS_OP_C: *out = CUBLAS_OP_C; return 1;
    default: return 0;
    }
}

#define CH(h) ((cublasHandle_t)(h))

HIPSHIM_API hipblasStatus_t hipblasCreate(hipblasHandle_t *handle)
{
    if (!handle)
        return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    return btr(cublasCreate_v2((cublasHandle_t *)handle));
}

HIPSHIM_API hipblasStatus_t hipblasDestroy(hipblasHandle_t handle)
{
    if (!handle)
        return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    return btr(cublasDestroy_v2(CH(handle)));
}

HIPSHIM_API hipblasStatus_t hipblasSetStream(hipblasHandle_t handle, void *stream)
{
    if (!handle)
        return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;
    /* A shim hipStream_t is the cudaStream_t created by the runtime shim. */
    return btr(cublasSetStream_v2(CH(handle), (cudaStream_t)stream));
}

#define GEMM_OPS()                                                                             \
    cublasOperation_t ta, tb;                                                                  \
    if (!handle)                                                                               \
        return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;                                               \
    if (!op_to_cuda(transa, &ta) || !op_to_cuda(transb, &tb))                                  \
        return HIPBLAS_STATUS_INVALID_ENUM

HIPSHIM_API hipblasStatus_t hipblasDgemm(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         const double *B, int ldb, const double *beta, double *C,
                                         int ldc)
{
    GEMM_OPS();
    return btr(cublasDgemm_v2(CH(handle), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasSgemm(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         const float *B, int ldb, const float *beta, float *C,
                                         int ldc)
{
    GEMM_OPS();
    return btr(cublasSgemm_v2(CH(handle), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasDgemm_64(hipblasHandle_t handle, hipblasOperation_t transa,
                                            hipblasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const double *alpha, const double *A,
                                            int64_t lda, const double *B, int64_t ldb,
                                            const double *beta, double *C, int64_t ldc)
{
    GEMM_OPS();
    return btr(
        cublasDgemm_v2_64(CH(handle), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasSgemm_64(hipblasHandle_t handle, hipblasOperation_t transa,
                                            hipblasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const float *alpha, const float *A,
                                            int64_t lda, const float *B, int64_t ldb,
                                            const float *beta, float *C, int64_t ldc)
{
    GEMM_OPS();
    return btr(
        cublasSgemm_v2_64(CH(handle), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasDgeam(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n,
                                         const double *alpha, const double *A, int lda,
                                         const double *beta, const double *B, int ldb, double *C,
                                         int ldc)
{
    GEMM_OPS();
    return btr(cublasDgeam(CH(handle), ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasSgeam(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n,
                                         const float *alpha, const float *A, int lda,
                                         const float *beta, const float *B, int ldb, float *C,
                                         int ldc)
{
    GEMM_OPS();
    return btr(cublasSgeam(CH(handle), ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc));
}

/* hipblasComplex / hipblasDoubleComplex: two floats / doubles, real part first, the layout of
 * cuComplex / cuDoubleComplex, so pointers are passed through. */
typedef struct { float x, y; } hipblasComplex;
typedef struct { double x, y; } hipblasDoubleComplex;
#define CU_C(p) ((const cuComplex *)(p))
#define CU_Z(p) ((const cuDoubleComplex *)(p))

HIPSHIM_API hipblasStatus_t hipblasCgemm(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n, int k,
                                         const hipblasComplex *alpha, const hipblasComplex *A,
                                         int lda, const hipblasComplex *B, int ldb,
                                         const hipblasComplex *beta, hipblasComplex *C, int ldc)
{
    GEMM_OPS();
    return btr(cublasCgemm_v2(CH(handle), ta, tb, m, n, k, CU_C(alpha), CU_C(A), lda, CU_C(B), ldb,
                              CU_C(beta), (cuComplex *)C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasZgemm(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n, int k,
                                         const hipblasDoubleComplex *alpha,
                                         const hipblasDoubleComplex *A, int lda,
                                         const hipblasDoubleComplex *B, int ldb,
                                         const hipblasDoubleComplex *beta,
                                         hipblasDoubleComplex *C, int ldc)
{
    GEMM_OPS();
    return btr(cublasZgemm_v2(CH(handle), ta, tb, m, n, k, CU_Z(alpha), CU_Z(A), lda, CU_Z(B), ldb,
                              CU_Z(beta), (cuDoubleComplex *)C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasCgemm_64(hipblasHandle_t handle, hipblasOperation_t transa,
                                            hipblasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const hipblasComplex *alpha,
                                            const hipblasComplex *A, int64_t lda,
                                            const hipblasComplex *B, int64_t ldb,
                                            const hipblasComplex *beta, hipblasComplex *C,
                                            int64_t ldc)
{
    GEMM_OPS();
    return btr(cublasCgemm_v2_64(CH(handle), ta, tb, m, n, k, CU_C(alpha), CU_C(A), lda, CU_C(B),
                                 ldb, CU_C(beta), (cuComplex *)C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasZgemm_64(hipblasHandle_t handle, hipblasOperation_t transa,
                                            hipblasOperation_t transb, int64_t m, int64_t n,
                                            int64_t k, const hipblasDoubleComplex *alpha,
                                            const hipblasDoubleComplex *A, int64_t lda,
                                            const hipblasDoubleComplex *B, int64_t ldb,
                                            const hipblasDoubleComplex *beta,
                                            hipblasDoubleComplex *C, int64_t ldc)
{
    GEMM_OPS();
    return btr(cublasZgemm_v2_64(CH(handle), ta, tb, m, n, k, CU_Z(alpha), CU_Z(A), lda, CU_Z(B),
                                 ldb, CU_Z(beta), (cuDoubleComplex *)C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasCgeam(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n,
                                         const hipblasComplex *alpha, const hipblasComplex *A,
                                         int lda, const hipblasComplex *beta,
                                         const hipblasComplex *B, int ldb, hipblasComplex *C,
                                         int ldc)
{
    GEMM_OPS();
    return btr(cublasCgeam(CH(handle), ta, tb, m, n, CU_C(alpha), CU_C(A), lda, CU_C(beta), CU_C(B),
                           ldb, (cuComplex *)C, ldc));
}

HIPSHIM_API hipblasStatus_t hipblasZgeam(hipblasHandle_t handle, hipblasOperation_t transa,
                                         hipblasOperation_t transb, int m, int n,
                                         const hipblasDoubleComplex *alpha,
                                         const hipblasDoubleComplex *A, int lda,
                                         const hipblasDoubleComplex *beta,
                                         const hipblasDoubleComplex *B, int ldb,
                                         hipblasDoubleComplex *C, int ldc)
{
    GEMM_OPS();
    return btr(cublasZgeam(CH(handle), ta, tb, m, n, CU_Z(alpha), CU_Z(A), lda, CU_Z(beta), CU_Z(B),
                           ldb, (cuDoubleComplex *)C, ldc));
}

/* TRSM and TRMM: hipblasSideMode_t / hipblasFillMode_t / hipblasDiagType_t (the CBLAS numbers)
 * to CUDA's; hipBLAS 2's TRMM is out of place like cuBLAS's, so it passes straight through. */
#define HIPBLAS_SIDE_LEFT 141
#define HIPBLAS_SIDE_RIGHT 142
#define HIPBLAS_FILL_MODE_UPPER 121
#define HIPBLAS_FILL_MODE_LOWER 122
#define HIPBLAS_DIAG_NON_UNIT 131
#define HIPBLAS_DIAG_UNIT 132

static int tri_to_cuda(int side, int uplo, hipblasOperation_t trans, int diag,
                       cublasSideMode_t *s, cublasFillMode_t *u, cublasOperation_t *t,
                       cublasDiagType_t *d)
{
    if (side == HIPBLAS_SIDE_LEFT) *s = CUBLAS_SIDE_LEFT;
    else if (side == HIPBLAS_SIDE_RIGHT) *s = CUBLAS_SIDE_RIGHT;
    else return 0;
    if (uplo == HIPBLAS_FILL_MODE_LOWER) *u = CUBLAS_FILL_MODE_LOWER;
    else if (uplo == HIPBLAS_FILL_MODE_UPPER) *u = CUBLAS_FILL_MODE_UPPER;
    else return 0;
    if (diag == HIPBLAS_DIAG_UNIT) *d = CUBLAS_DIAG_UNIT;
    else if (diag == HIPBLAS_DIAG_NON_UNIT) *d = CUBLAS_DIAG_NON_UNIT;
    else return 0;
    return op_to_cuda(trans, t);
}

#define TRI_ENUMS()                                                                            \
    cublasSideMode_t cs;                                                                       \
    cublasFillMode_t cu;                                                                       \
    cublasOperation_t ct;                                                                      \
    cublasDiagType_t cd;                                                                       \
    if (!handle)                                                                               \
        return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;                                               \
    if (!tri_to_cuda(side, uplo, transa, diag, &cs, &cu, &ct, &cd))                            \
        return HIPBLAS_STATUS_INVALID_ENUM

#define HIP_TRSM(name, cuname, T, CT)                                                          \
    HIPSHIM_API hipblasStatus_t name(hipblasHandle_t handle, int side, int uplo,               \
                                     hipblasOperation_t transa, int diag, int m, int n,        \
                                     const T *alpha, const T *A, int lda, T *B, int ldb)       \
    {                                                                                          \
        TRI_ENUMS();                                                                           \
        return btr(cuname(CH(handle), cs, cu, ct, cd, m, n, (const CT *)alpha, (const CT *)A,  \
                          lda, (CT *)B, ldb));                                                 \
    }
#define HIP_TRMM(name, cuname, T, CT)                                                          \
    HIPSHIM_API hipblasStatus_t name(hipblasHandle_t handle, int side, int uplo,               \
                                     hipblasOperation_t transa, int diag, int m, int n,        \
                                     const T *alpha, const T *A, int lda, const T *B, int ldb, \
                                     T *C, int ldc)                                            \
    {                                                                                          \
        TRI_ENUMS();                                                                           \
        return btr(cuname(CH(handle), cs, cu, ct, cd, m, n, (const CT *)alpha, (const CT *)A,  \
                          lda, (const CT *)B, ldb, (CT *)C, ldc));                             \
    }

HIP_TRSM(hipblasStrsm, cublasStrsm_v2, float, float)
HIP_TRSM(hipblasDtrsm, cublasDtrsm_v2, double, double)
HIP_TRSM(hipblasCtrsm, cublasCtrsm_v2, hipblasComplex, cuComplex)
HIP_TRSM(hipblasZtrsm, cublasZtrsm_v2, hipblasDoubleComplex, cuDoubleComplex)
HIP_TRMM(hipblasStrmm, cublasStrmm_v2, float, float)
HIP_TRMM(hipblasDtrmm, cublasDtrmm_v2, double, double)
HIP_TRMM(hipblasCtrmm, cublasCtrmm_v2, hipblasComplex, cuComplex)
HIP_TRMM(hipblasZtrmm, cublasZtrmm_v2, hipblasDoubleComplex, cuDoubleComplex)
/* SYRK/HERK, SYR2K/HER2K, SYMM/HEMM: hipblasFillMode_t and hipblasSideMode_t take the CBLAS
 * numbers (upper 121, lower 122; left 141, right 142). */
static int fill_to_cuda(int uplo, cublasFillMode_t *out)
{
    switch (uplo) {
    case 121: *out = CUBLAS_FILL_MODE_UPPER; return 1;
    case 122: *out = CUBLAS_FILL_MODE_LOWER; return 1;
    default: return 0;
    }
}

static int side_to_cuda(int side, cublasSideMode_t *out)
{
    switch (side) {
    case 141: *out = CUBLAS_SIDE_LEFT; return 1;
    case 142: *out = CUBLAS_SIDE_RIGHT; return 1;
    default: return 0;
    }
}

/* hipblasXsyrk / Xherk: elements H (cuBLAS type T), scalars HS (cuBLAS type S). */
#define SHIM_RK(name, cuname, H, HS, T, S)                                                     \
    HIPSHIM_API hipblasStatus_t name(hipblasHandle_t handle, int uplo, hipblasOperation_t trans, \
                                     int n, int k, const HS *alpha, const H *A, int lda,         \
                                     const HS *beta, H *C, int ldc)                              \
    {                                                                                            \
        cublasFillMode_t fm;                                                                     \
        cublasOperation_t op;                                                                    \
        if (!handle)                                                                             \
            return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;                                             \
        if (!fill_to_cuda(uplo, &fm) || !op_to_cuda(trans, &op))                                 \
            return HIPBLAS_STATUS_INVALID_ENUM;                                                  \
        return btr(cuname(CH(handle), fm, op, n, k, (const S *)alpha, (const T *)A, lda,         \
                          (const S *)beta, (T *)C, ldc));                                        \
    }

/* hipblasXsyr2k / Xher2k: alpha of the element type, beta HS (real for HER2K). */
#define SHIM_R2K(name, cuname, H, HS, T, S)                                                    \
    HIPSHIM_API hipblasStatus_t name(hipblasHandle_t handle, int uplo, hipblasOperation_t trans, \
                                     int n, int k, const H *alpha, const H *A, int lda,          \
                                     const H *B, int ldb, const HS *beta, H *C, int ldc)         \
    {                                                                                            \
        cublasFillMode_t fm;                                                                     \
        cublasOperation_t op;                                                                    \
        if (!handle)                                                                             \
            return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;                                             \
        if (!fill_to_cuda(uplo, &fm) || !op_to_cuda(trans, &op))                                 \
            return HIPBLAS_STATUS_INVALID_ENUM;                                                  \
        return btr(cuname(CH(handle), fm, op, n, k, (const T *)alpha, (const T *)A, lda,         \
                          (const T *)B, ldb, (const S *)beta, (T *)C, ldc));                     \
    }

/* hipblasXsymm / Xhemm. */
#define SHIM_MM(name, cuname, H, T)                                                            \
    HIPSHIM_API hipblasStatus_t name(hipblasHandle_t handle, int side, int uplo, int m, int n,   \
                                     const H *alpha, const H *A, int lda, const H *B, int ldb,   \
                                     const H *beta, H *C, int ldc)                               \
    {                                                                                            \
        cublasSideMode_t sm;                                                                     \
        cublasFillMode_t fm;                                                                     \
        if (!handle)                                                                             \
            return HIPBLAS_STATUS_HANDLE_IS_NULLPTR;                                             \
        if (!side_to_cuda(side, &sm) || !fill_to_cuda(uplo, &fm))                                \
            return HIPBLAS_STATUS_INVALID_ENUM;                                                  \
        return btr(cuname(CH(handle), sm, fm, m, n, (const T *)alpha, (const T *)A, lda,         \
                          (const T *)B, ldb, (const T *)beta, (T *)C, ldc));                     \
    }

SHIM_RK(hipblasSsyrk, cublasSsyrk_v2, float, float, float, float)
SHIM_RK(hipblasDsyrk, cublasDsyrk_v2, double, double, double, double)
SHIM_RK(hipblasCsyrk, cublasCsyrk_v2, hipblasComplex, hipblasComplex, cuComplex, cuComplex)
SHIM_RK(hipblasZsyrk, cublasZsyrk_v2, hipblasDoubleComplex, hipblasDoubleComplex,
        cuDoubleComplex, cuDoubleComplex)
SHIM_RK(hipblasCherk, cublasCherk_v2, hipblasComplex, float, cuComplex, float)
SHIM_RK(hipblasZherk, cublasZherk_v2, hipblasDoubleComplex, double, cuDoubleComplex, double)
SHIM_R2K(hipblasSsyr2k, cublasSsyr2k_v2, float, float, float, float)
SHIM_R2K(hipblasDsyr2k, cublasDsyr2k_v2, double, double, double, double)
SHIM_R2K(hipblasCsyr2k, cublasCsyr2k_v2, hipblasComplex, hipblasComplex, cuComplex, cuComplex)
SHIM_R2K(hipblasZsyr2k, cublasZsyr2k_v2, hipblasDoubleComplex, hipblasDoubleComplex,
         cuDoubleComplex, cuDoubleComplex)
SHIM_R2K(hipblasCher2k, cublasCher2k_v2, hipblasComplex, float, cuComplex, float)
SHIM_R2K(hipblasZher2k, cublasZher2k_v2, hipblasDoubleComplex, double, cuDoubleComplex, double)
SHIM_MM(hipblasSsymm, cublasSsymm_v2, float, float)
SHIM_MM(hipblasDsymm, cublasDsymm_v2, double, double)
SHIM_MM(hipblasCsymm, cublasCsymm_v2, hipblasComplex, cuComplex)
SHIM_MM(hipblasZsymm, cublasZsymm_v2, hipblasDoubleComplex, cuDoubleComplex)
SHIM_MM(hipblasChemm, cublasChemm_v2, hipblasComplex, cuComplex)
SHIM_MM(hipblasZhemm, cublasZhemm_v2, hipblasDoubleComplex, cuDoubleComplex)

HIPSHIM_API const char *hipblasStatusToString(hipblasStatus_t s)
{
    switch (s) {
    case HIPBLAS_STATUS_SUCCESS: return "HIPBLAS_STATUS_SUCCESS";
    case HIPBLAS_STATUS_NOT_INITIALIZED: return "HIPBLAS_STATUS_NOT_INITIALIZED";
    case HIPBLAS_STATUS_ALLOC_FAILED: return "HIPBLAS_STATUS_ALLOC_FAILED";
    case HIPBLAS_STATUS_INVALID_VALUE: return "HIPBLAS_STATUS_INVALID_VALUE";
    case HIPBLAS_STATUS_MAPPING_ERROR: return "HIPBLAS_STATUS_MAPPING_ERROR";
    case HIPBLAS_STATUS_EXECUTION_FAILED: return "HIPBLAS_STATUS_EXECUTION_FAILED";
    case HIPBLAS_STATUS_INTERNAL_ERROR: return "HIPBLAS_STATUS_INTERNAL_ERROR";
    case HIPBLAS_STATUS_NOT_SUPPORTED: return "HIPBLAS_STATUS_NOT_SUPPORTED";
    case HIPBLAS_STATUS_ARCH_MISMATCH: return "HIPBLAS_STATUS_ARCH_MISMATCH";
    case HIPBLAS_STATUS_HANDLE_IS_NULLPTR: return "HIPBLAS_STATUS_HANDLE_IS_NULLPTR";
    case HIPBLAS_STATUS_INVALID_ENUM: return "HIPBLAS_STATUS_INVALID_ENUM";
    case HIPBLAS_STATUS_UNKNOWN: return "HIPBLAS_STATUS_UNKNOWN";
    default: return "<undefined hipblasStatus_t value>";
    }
}

#endif /* HIPSHIM_BLAS */

/* ======================================================================================== */
#ifdef HIPSHIM_SOLVER
/* ======================================================================================== */

/* rocSOLVER on cuSOLVER. rocSOLVER's functions take a rocblas_handle and no workspace (the
 * rocBLAS handle manages device memory); here a "rocblas_handle" is a cuSOLVER handle, its
 * stream, and a device workspace grown to what cuSOLVER's _bufferSize asks (after the stream
 * is done with the old one). The values are those of rocblas-types.h: rocblas_status (a C
 * enum), rocblas_fill (121 upper, 122 lower), rocblas_int = int32_t; complex types are two
 * floats or doubles, as cuComplex. cusolverDn?laswp is declared in cusolverDn.h (and here,
 * for builds with the local declarations), exported by libcusolver. */

typedef int rocblas_status;
typedef int rocblas_fill;
typedef int rocblas_int;

enum {
    rocblas_status_success = 0,
    rocblas_status_invalid_handle = 1,
    rocblas_status_not_implemented = 2,
    rocblas_status_invalid_pointer = 3,
    rocblas_status_invalid_size = 4,
    rocblas_status_memory_error = 5,
    rocblas_status_internal_error = 6,
    rocblas_status_invalid_value = 11
};

cusolverStatus_t cusolverDnSlaswp(cusolverDnHandle_t, int, float *, int, int, int, const int *,
                                  int);
cusolverStatus_t cusolverDnDlaswp(cusolverDnHandle_t, int, double *, int, int, int, const int *,
                                  int);
cusolverStatus_t cusolverDnClaswp(cusolverDnHandle_t, int, cuComplex *, int, int, int,
                                  const int *, int);
cusolverStatus_t cusolverDnZlaswp(cusolverDnHandle_t, int, cuDoubleComplex *, int, int, int,
                                  const int *, int);

typedef struct {
    cusolverDnHandle_t dn;
    cudaStream_t stream;
    void *work;
    size_t work_bytes;
} shim_handle;

typedef shim_handle *rocblas_handle;

static rocblas_status str(cusolverStatus_t s)
{
    switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return rocblas_status_success;
    case CUSOLVER_STATUS_NOT_INITIALIZED: return rocblas_status_invalid_handle;
    case CUSOLVER_STATUS_ALLOC_FAILED: return rocblas_status_memory_error;
    case CUSOLVER_STATUS_INVALID_VALUE: return rocblas_status_invalid_value;
    case CUSOLVER_STATUS_NOT_SUPPORTED: return rocblas_status_not_implemented;
    default: return rocblas_status_internal_error;
    }
}

static int fill_to_cuda(rocblas_fill uplo, cublasFillMode_t *out)
{
    switch (uplo) {
    case 121: *out = CUBLAS_FILL_MODE_UPPER; return 1;
    case 122: *out = CUBLAS_FILL_MODE_LOWER; return 1;
    default: return 0;
    }
}

/* A workspace of at least `elems` elements of `size` bytes. */
static rocblas_status workspace(rocblas_handle h, int elems, size_t size)
{
    size_t bytes = (size_t)(elems > 0 ? elems : 0) * size;
    if (bytes <= h->work_bytes)
        return rocblas_status_success;
    if (cudaStreamSynchronize(h->stream) != cudaSuccess)
        return rocblas_status_internal_error;
    cudaFree(h->work);
    h->work = NULL;
    h->work_bytes = 0;
    if (cudaMalloc(&h->work, bytes) != cudaSuccess)
        return rocblas_status_memory_error;
    h->work_bytes = bytes;
    return rocblas_status_success;
}

HIPSHIM_API rocblas_status rocblas_create_handle(rocblas_handle *handle)
{
    if (!handle)
        return rocblas_status_invalid_pointer;
    shim_handle *h = calloc(1, sizeof *h);
    if (!h)
        return rocblas_status_memory_error;
    rocblas_status s = str(cusolverDnCreate(&h->dn));
    if (s != rocblas_status_success) {
        free(h);
        return s;
    }
    *handle = h;
    return rocblas_status_success;
}

HIPSHIM_API rocblas_status rocblas_destroy_handle(rocblas_handle h)
{
    if (!h)
        return rocblas_status_invalid_handle;
    if (h->stream)
        cudaStreamSynchronize(h->stream);
    cudaFree(h->work);
    rocblas_status s = str(cusolverDnDestroy(h->dn));
    free(h);
    return s;
}

/* hipStream_t is cudaStream_t under the runtime part of the shim. */
HIPSHIM_API rocblas_status rocblas_set_stream(rocblas_handle h, void *stream)
{
    if (!h)
        return rocblas_status_invalid_handle;
    h->stream = (cudaStream_t)stream;
    return str(cusolverDnSetStream(h->dn, h->stream));
}

HIPSHIM_API const char *rocblas_status_to_string(rocblas_status s)
{
    switch (s) {
    case rocblas_status_success: return "rocblas_status_success";
    case rocblas_status_invalid_handle: return "rocblas_status_invalid_handle";
    case rocblas_status_not_implemented: return "rocblas_status_not_implemented";
    case rocblas_status_invalid_pointer: return "rocblas_status_invalid_pointer";
    case rocblas_status_invalid_size: return "rocblas_status_invalid_size";
    case rocblas_status_memory_error: return "rocblas_status_memory_error";
    case rocblas_status_internal_error: return "rocblas_status_internal_error";
    case rocblas_status_invalid_value: return "rocblas_status_invalid_value";
    default: return "<undefined rocblas_status value>";
    }
}

/* rocsolver_Xpotrf(handle, uplo, n, A, lda, info): cuSOLVER's with a workspace. */
#define SHIM_POTRF(x, X, H, T)                                                                 \
    HIPSHIM_API rocblas_status rocsolver_##x##potrf(rocblas_handle h, rocblas_fill uplo,         \
                                                    rocblas_int n, H *A, rocblas_int lda,        \
                                                    rocblas_int *info)                           \
    {                                                                                            \
        cublasFillMode_t fm;                                                                     \
        int lwork = 0;                                                                           \
        rocblas_status s;                                                                        \
        if (!h)                                                                                  \
            return rocblas_status_invalid_handle;                                                \
        if (!fill_to_cuda(uplo, &fm))                                                            \
            return rocblas_status_invalid_value;                                                 \
        s = str(cusolverDn##X##potrf_bufferSize(h->dn, fm, n, (T *)A, lda, &lwork));             \
        if (s == rocblas_status_success)                                                         \
            s = workspace(h, lwork, sizeof(T));                                                  \
        if (s != rocblas_status_success)                                                         \
            return s;                                                                            \
        return str(cusolverDn##X##potrf(h->dn, fm, n, (T *)A, lda, (T *)h->work, lwork, info));  \
    }

/* rocsolver_Xgetrf(handle, m, n, A, lda, ipiv, info). */
#define SHIM_GETRF(x, X, H, T)                                                                 \
    HIPSHIM_API rocblas_status rocsolver_##x##getrf(rocblas_handle h, rocblas_int m,             \
                                                    rocblas_int n, H *A, rocblas_int lda,        \
                                                    rocblas_int *ipiv, rocblas_int *info)        \
    {                                                                                            \
        int lwork = 0;                                                                           \
        rocblas_status s;                                                                        \
        if (!h)                                                                                  \
            return rocblas_status_invalid_handle;                                                \
        s = str(cusolverDn##X##getrf_bufferSize(h->dn, m, n, (T *)A, lda, &lwork));              \
        if (s == rocblas_status_success)                                                         \
            s = workspace(h, lwork, sizeof(T));                                                  \
        if (s != rocblas_status_success)                                                         \
            return s;                                                                            \
        return str(cusolverDn##X##getrf(h->dn, m, n, (T *)A, lda, (T *)h->work, ipiv, info));   \
    }

/* rocsolver_Xlaswp(handle, n, A, lda, k1, k2, ipiv, incx). */
#define SHIM_LASWP(x, X, H, T)                                                                 \
    HIPSHIM_API rocblas_status rocsolver_##x##laswp(rocblas_handle h, rocblas_int n, H *A,       \
                                                    rocblas_int lda, rocblas_int k1,             \
                                                    rocblas_int k2, const rocblas_int *ipiv,     \
                                                    rocblas_int incx)                            \
    {                                                                                            \
        if (!h)                                                                                  \
            return rocblas_status_invalid_handle;                                                \
        return str(cusolverDn##X##laswp(h->dn, n, (T *)A, lda, k1, k2, ipiv, incx));            \
    }

typedef struct { float x, y; } rocblas_float_complex;
typedef struct { double x, y; } rocblas_double_complex;

SHIM_POTRF(s, S, float, float)
SHIM_POTRF(d, D, double, double)
SHIM_POTRF(c, C, rocblas_float_complex, cuComplex)
SHIM_POTRF(z, Z, rocblas_double_complex, cuDoubleComplex)
SHIM_GETRF(s, S, float, float)
SHIM_GETRF(d, D, double, double)
SHIM_GETRF(c, C, rocblas_float_complex, cuComplex)
SHIM_GETRF(z, Z, rocblas_double_complex, cuDoubleComplex)
SHIM_LASWP(s, S, float, float)
SHIM_LASWP(d, D, double, double)
SHIM_LASWP(c, C, rocblas_float_complex, cuComplex)
SHIM_LASWP(z, Z, rocblas_double_complex, cuDoubleComplex)

#endif /* HIPSHIM_SOLVER */
