//! # hetblas-core
//!
//! The vendor-neutral heart of hetblas: operand views, the Device / Link / Kernel traits every
//! backend implements, and the pipeline that turns a BLAS call into work on every device of the
//! node. No vendor code and no FFI live here. The folders are the pipeline, in order:
//!
//! 1. [`backend`]: what a backend implements: [`Device`], [`Link`], [`Kernel`], [`Queue`] /
//!    [`Event`] and discovery through [`Backend`]; [`host_queue`] for host-computing backends.
//! 2. [`problem`]: element types ([`scalar`]), host views ([`MatRef`], [`MatMut`]), device
//!    matrices ([`DeviceMatrix`]), the problems with their BLAS argument checks (errors carry
//!    the BLAS parameter number) and the f64-accumulated reference checks ([`mod@reference`]).
//! 3. [`tuning`]: [`calibrate`] measures links and kernels into a [`profile::MachineProfile`];
//!    the [`autotune`]r reads it through the models to choose devices, shares and tile.
//! 4. [`model`]: link, kernel and pipeline models: pure arithmetic on calibrated numbers.
//! 5. [`plan`]: the tile grid ([`tiling`]), the shares ([`balance`]), C tiles placed on devices
//!    ([`distribute`]) and the task DAG, each A and B tile crossing a link at most once per
//!    device while it fits; plans are cached per problem signature ([`plan::cache`]).
//! 6. [`exec`]: the executor ([`execute`]): one issuing thread per device, event waits between
//!    queues; [`trace`] records the timeline as Chrome trace JSON.
//! 7. [`pool`]: the front door: [`DevicePool`] runs the call path (checks, decision, plan,
//!    workspaces, execution), built with [`GemmOptions`], reporting a [`GemmReport`].
//! 8. [`sim`]: a plan replayed in virtual time against a profile; [`energy`]: the power model,
//!    the objective the device choice can follow, and joules measured per call.
//!
//! ## Guarantees
//!
//! Nothing panics across the API: every failure is an [`Error`]; out-of-memory and device-lost
//! errors name the device. When a call returns, no queued operation still touches the caller's
//! memory. A device that fails during a call costs no data: the C tiles that were not final run
//! again on the devices left ([`GemmReport::recovered`]), and it is left out of later calls
//! until [`DevicePool::reprobe`]; [`fault`] injects such failures for tests.

pub mod backend;
pub mod energy;
pub mod error;
pub mod exec;
pub mod model;
pub mod plan;
pub mod pool;
pub mod problem;
pub mod sim;
pub mod tuning;

// The modules by their short paths (`crate::queue`, `hetblas_core::profile`, ...).
pub use backend::{
    device, factor_kernel, fault, host_queue, kernel, link, memory, pin_stats, queue, sym_kernel,
};
pub use exec::{execute, trace, undo};
pub use plan::{balance, distribute, fold, tiling};
pub use problem::{matrix, operand, reference, scalar, sym, sym_reference};
pub use problem::{Side, SymOp, SymProblem, Uplo};
pub use tuning::{autotune, calibrate, profile};

pub use device::{
    Backend, BackendStatus, Device, DeviceInfo, DeviceKind, Discovery, ThreadContext,
};
pub use error::{Error, Result};
pub use factor_kernel::{
    first_nan_pivot, FactorOp, GetrfTile, InfoCell, LaswpTile, PotrfTile, RawPivots,
};
pub use kernel::{GemmTile, Kernel, TriTile};
pub use link::{Link, LinkKind};
pub use matrix::{DeviceMatrix, MatIn, MatOut};
pub use memory::{BorrowedBuffer, Buffer, HostAccess, MemorySpace, RawTile};
pub use operand::{MatMut, MatRef, Trans};
pub use pin_stats::PinStats;
pub use pool::{
    DeviceFault, DevicePool, FactorOptions, FactorReport, GemmOptions, GemmPrediction, GemmReport,
    SolvePlacement, TriCallOptions, TriReport,
};
pub use queue::{Event, Queue};
pub use scalar::{DType, Scalar, ScalarValue};
pub use sym_kernel::{SymTile, SYM_DTYPES};
pub use tiling::Blocking;
