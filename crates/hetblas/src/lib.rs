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
//! [`Runtime::discover`] asks every backend compiled in (all of them, always: the GPU vendors,
//! the CPU, and the host-emulated devices when asked for) for its devices; a backend whose
//! library or hardware is absent reports why and the others run. [`Runtime::calibrate`]
//! measures the node for the models; [`Runtime::set_profile`] puts a profile in use.
//!
//! This crate is the library only; the `hetblas` command is the `hetblas-cli` package.

mod builder;
pub mod energy;
pub mod runtime;
pub mod settings;
mod sym;

pub use builder::{RuntimeBuilder, Survey, MAX_EMULATED};
pub use hetblas_core::calibrate::{CalibrationOptions, Progress};
pub use hetblas_core::pool::{
    FactorAlternative, FactorDecision, FactorOptions, FactorReport, SolvePlacement, TriAlternative,
    TriCallOptions, TriDecision, TriReport,
};
pub use hetblas_core::problem::triangular::{Diag, TriOptions, TriProblem, TriRoutine};
pub use hetblas_core::profile::MachineProfile;
/// The complex element types (num-complex's `Complex32` / `Complex64`), for CGEMM / ZGEMM.
pub use hetblas_core::scalar::{c32, c64};
pub use hetblas_core::{
    BackendStatus, DType, DeviceMatrix, Error, GemmOptions, GemmPrediction, GemmReport, HostAccess,
    MatIn, MatMut, MatOut, MatRef, Result, Scalar, Trans,
};
pub use hetblas_core::{Side, SymOp, SymProblem, Uplo};
pub use hetblas_cpu::{BlasLibrary, EmulatedConfig};
pub use hetblas_gpu::PinPolicy;
pub use runtime::Runtime;
pub use settings::Settings;
