//! # hetblas
//!
//! Heterogeneous BLAS: one GEMM call runs on every useful device of the node at once (NVIDIA
//! GPUs through CUDA, AMD GPUs through HIP, the CPU through a CBLAS library), with operands in
//! host memory, in GPU memory, or both.
//!
//! ```
//! use hetblas::{MatMut, MatRef, Runtime, Trans};
//! let rt = Runtime::discover().unwrap();
//! let (m, n, k) = (64, 48, 32);
//! let a = vec![1.0f64; m * k];
//! let b = vec![0.5f64; k * n];
//! let mut c = vec![0.0f64; m * n];
//! rt.gemm(
//!     Trans::N, Trans::N, 1.0,
//!     MatRef::packed(&a, m, k).unwrap(),
//!     MatRef::packed(&b, k, n).unwrap(),
//!     0.0,
//!     MatMut::packed(&mut c, m, n).unwrap(),
//! ).unwrap();
//! assert!(c.iter().all(|&x| (x - 16.0).abs() < 1e-12));
//! ```
//!
//! [`Runtime::discover`] asks every backend compiled in (all of them, always) for its devices;
//! a backend whose library or hardware is absent reports why and the others run. The runtime
//! derefs to [`hetblas_core::DevicePool`], which holds the whole pipeline.

pub mod runtime;

pub use hetblas_core::{
    DType, DeviceMatrix, DevicePool, Error, GemmOptions, GemmReport, MatIn, MatMut, MatOut, MatRef,
    Result, Scalar, Trans,
};
pub use runtime::{Runtime, RuntimeBuilder};
