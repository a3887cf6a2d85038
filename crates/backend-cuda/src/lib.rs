//! # hetblas-cuda
//!
//! NVIDIA GPUs for hetblas, through the CUDA driver API, cuBLAS and cuSOLVER, all loaded at run
//! time (cudarc with dynamic loading; cuSOLVER only when a factorization tile first asks): the crate builds on machines with no CUDA toolkit, and on a
//! machine without the libraries or a GPU, discovery reports why instead of failing.
//!
//! A thin adapter over the GPU layer (`hetblas-gpu`): `driver` loads the libraries, maps error
//! codes and holds the device contexts; `runtime` implements [`hetblas_gpu::GpuRuntime`] for
//! [`Cuda`] with the raw driver and cuBLAS calls, `solver` the cuSOLVER ones, `laswp` the
//! one kernel of our own (row interchanges, shipped as PTX). Devices,
//! streams, links, host registration, kernels and discovery are the GPU layer's.
//! [`hetblas_gpu::GpuBackend::devices`] restricts the GPUs taken (ordinals; the `hetblas` crate
//! sets it from `HETBLAS_CUDA_DEVICES=0,2`); `HETBLAS_CUDA_LIB_DIR=DIR` is searched for the
//! libraries (read here, where they load).

pub mod driver;
mod laswp;
pub mod nvml;
pub mod runtime;
mod solver;
mod sym;

use hetblas_core::Result;

/// The CUDA runtime, for the GPU layer's generic types.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cuda;

/// One NVIDIA GPU.
pub type CudaDevice = hetblas_gpu::GpuDevice<Cuda>;
/// The registration cache of the CUDA devices.
pub type PinCache = hetblas_gpu::PinCache<Cuda>;
pub use hetblas_gpu::PinStats;

/// Discovers CUDA GPUs (`CudaBackend.discover()`, or `discover_gpus()` for typed devices).
pub type CudaBackend = hetblas_gpu::GpuBackend<Cuda>;
#[allow(
    non_upper_case_globals,
    reason = "the value of CudaBackend, as a unit struct would define it"
)]
pub const CudaBackend: CudaBackend = hetblas_gpu::GpuBackend::new();

/// Parses a device filter such as "0,2" (`HETBLAS_CUDA_DEVICES`).
pub fn parse_filter(v: &str) -> Result<Vec<i32>> {
    hetblas_core::device::parse_device_filter(v)
}
