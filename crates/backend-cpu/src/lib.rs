//! # hetblas-cpu
//!
//! The CPU backend of hetblas, and the host-emulated devices.
//!
//! - [`CpuDevice`]: the CPU as a device. Its memory space is the host, so host operands are used
//!   in place and no copy is ever made; it computes with a CBLAS library loaded at run time
//!   (OpenBLAS first: `libopenblas.so.0`, `libopenblas.so`; then BLIS; then any `libcblas` /
//!   `libblas` exporting `cblas_dgemm`; [`BlasLibrary`] names another, or the fallback), or
//!   with the pure-Rust `gemm` crate when none is found. Nothing is linked at build time.
//! - [`EmulatedDevice`]: a device with its own memory space inside host RAM, reached through
//!   [`EmulatedLink`]s run by host threads, optionally throttled to chosen rates. They exist so
//!   the planner, the tile caches and the executor run for real on machines without GPUs.
//!
//! Emulated devices inject faults for tests: [`EmulatedDevice::faults`] (or the faults the
//! [`EmulatedBackend`] is given, see [`hetblas_core::fault`]) makes a device fail at its n-th
//! kernel or copy (an error, a lost device, out of memory, a panic, or an `async` failure
//! raised when the operation runs on its queue), so that the executor's recovery runs for real
//! in CI.
//!
//! The runtime finds both through the same [`hetblas_core::Backend`] trait as the GPUs:
//! [`CpuBackend`] (always one device) and [`EmulatedBackend`] (the devices asked for).
//!
//! The factorization tiles (Cholesky, LU, row interchanges) run on a host LAPACK loaded the same
//! way ([`lapack`]: the BLAS library's own LAPACK, OpenBLAS's for one; else `liblapack.so.3`),
//! or on the pure-Rust fallback ([`lapack_rust`], faer) when none is found.
//!
//! Layout, as in every backend crate: `blas` and `lapack` (the library loading), `kernel` (the
//! Kernel impl), `cpu` / `emulated` (the Device and Link impls), `buffer` (memory).

pub mod blas;
pub mod buffer;
pub mod cpu;
pub mod emulated;
pub mod kernel;
pub mod lapack;
pub mod lapack_rust;
pub mod rapl;
mod same_object;
pub mod sym;
pub mod tri;

pub use blas::{choose_blas, BlasLibrary, Cblas, HostBlas, RustGemm};
pub use cpu::{CpuBackend, CpuDevice};
pub use emulated::{
    emulated_node, EmulatedBackend, EmulatedConfig, EmulatedDevice, EmulatedLink, EmulatedNode,
};
pub use kernel::HostKernel;
pub use lapack::{choose_lapack, FortranLapack, HostLapack, LapackChoice};
pub use lapack_rust::RustLapack;
