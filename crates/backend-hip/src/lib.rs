//! # hetblas-hip
//!
//! AMD GPUs for hetblas, through the HIP runtime (`libamdhip64`) and hipBLAS (`libhipblas`),
//! both loaded at run time with libloading (and rocSOLVER over rocBLAS for the factorization
//! tiles, `solver`, loaded on the first one): the crate builds on machines with no ROCm, and on a
//! machine without the libraries or a GPU, discovery reports why instead of failing.
//!
//! A thin adapter over the GPU layer (`hetblas-gpu`), cudarc-style in layers:
//! - `sys`: the raw FFI, exactly the functions used, with the header values they rely on;
//! - `result`: every call checked ([`result::check`], the one error-mapping helper), library
//!   presence and initialisation, the per-thread current device ([`result::Context`]);
//! - `runtime`: [`hetblas_gpu::GpuRuntime`] for [`Hip`]. Devices, streams, links, host
//!   registration, kernels and discovery are the GPU layer's.
//!
//! HIP's own ways: no explicit contexts (a per-thread current device set with hipSetDevice),
//! peer copies by device ordinal (hipMemcpyPeerAsync; strided ones as 2D copies with peer
//! access enabled). [`hetblas_gpu::GpuBackend::devices`] restricts the GPUs taken (ordinals;
//! the `hetblas` crate sets it from `HETBLAS_HIP_DEVICES=0,2`); `HETBLAS_HIP_LIB_DIR=DIR` (read
//! here, where the libraries load) loads `DIR/libamdhip64.so*`, `DIR/libhipblas.so*`,
//! `DIR/librocblas.so*` and `DIR/librocsolver.so*` before the system's (the HIP-on-CUDA test
//! shim in `shim/` is used that way).

pub mod result;
pub mod runtime;
pub mod solver;
pub mod sym;
pub mod sys;

use hetblas_core::Result;

/// The HIP runtime, for the GPU layer's generic types.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hip;

/// One GPU driven through HIP.
pub type HipDevice = hetblas_gpu::GpuDevice<Hip>;
/// The registration cache of the HIP devices.
pub type PinCache = hetblas_gpu::PinCache<Hip>;
pub use hetblas_gpu::PinStats;

/// Discovers HIP GPUs (`HipBackend.discover()`, or `discover_gpus()` for typed devices).
pub type HipBackend = hetblas_gpu::GpuBackend<Hip>;
#[allow(
    non_upper_case_globals,
    reason = "the value of HipBackend, as a unit struct would define it"
)]
pub const HipBackend: HipBackend = hetblas_gpu::GpuBackend::new();

/// Parses a device filter such as "0,2" (`HETBLAS_HIP_DEVICES`).
pub fn parse_filter(v: &str) -> Result<Vec<i32>> {
    hetblas_core::device::parse_device_filter(v)
}
