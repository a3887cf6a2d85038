//! # hetblas-core
//!
//! The vendor-neutral heart of hetblas: operand views, the Device / Link / Kernel traits every
//! backend implements, and the pipeline that turns a BLAS call into work on every device of the
//! node. No vendor code and no FFI live here.
//!
//! ## The pipeline
//!
//! 1. **Problem** ([`problem`]): routine, shape, transposes, alpha/beta, dtype and where each
//!    operand lives ([`memory::MemorySpace`]). Arguments are checked as reference BLAS checks them;
//!    errors carry the BLAS parameter number.
//! 2. **Autotuner** ([`autotune`]): which devices take part and the tile size.
//! 3. **Decomposition** ([`tiling`], [`distribute`]): the tile grid, and each C tile assigned to
//!    one device (2D block-cyclic over a device grid).
//! 4. **Planner** ([`plan`]): a DAG of fetch / gemm / write-back tasks per device. The planner
//!    simulates each device's tile cache (Belady eviction under the device's memory budget), so
//!    every A and B tile crosses a link at most once per device while it fits, every C tile is
//!    accumulated over all of K on one device and written back once, and beta == 0 never reads C.
//!    Plans carry no addresses and are cached per problem signature ([`pool`]).
//! 5. **Executor** ([`execute`]): one issuing thread per device puts each task on its queue (link
//!    queues for copies, compute queues for kernels) with event waits for dependencies on other
//!    queues; the copies of later tiles run ahead of the compute of earlier ones.
//! 6. **Trace** ([`trace`]): optional device-side timeline of every task, as Chrome trace JSON.
//!
//! ## What a backend provides
//!
//! [`device::Device`] (memory space, allocation, compute queues, [`kernel::Kernel`]),
//! [`link::Link`] (async 2D copies between spaces on a queue) and [`queue::Queue`] /
//! [`queue::Event`]; discovery through [`device::Backend`]. [`host_queue`] gives a ready queue
//! run by a host thread for backends that compute on the host.
//!
//! ## Guarantees
//!
//! Nothing panics across the API: every failure is an [`Error`]. When a call returns, no queued
//! operation still touches the caller's memory, on success or on error.

pub mod backend;
pub mod error;
pub mod exec;
pub mod model;
pub mod plan;
pub mod pool;
pub mod problem;
pub mod tuning;

// The modules by their short paths (`crate::queue`, `hetblas_core::profile`, ...), as before the
// folders: backends and the CLI name them so.
pub use backend::{device, host_queue, kernel, link, memory, pin, queue};
pub use exec::{execute, trace};
pub use plan::{balance, distribute, fold, tiling};
pub use problem::{matrix, operand, reference, scalar};
pub use tuning::{autotune, calibrate, profile};

pub use device::{Backend, BackendStatus, Device, DeviceInfo, DeviceKind, Discovery};
pub use error::{Error, Result};
pub use kernel::{GemmTile, Kernel};
pub use link::{Link, LinkKind};
pub use matrix::{DeviceMatrix, MatIn, MatOut};
pub use memory::{Buffer, HostAccess, MemorySpace, RawTile};
pub use operand::{MatMut, MatRef, Trans};
pub use pool::{DevicePool, GemmOptions, GemmReport};
pub use queue::{Event, Queue};
pub use scalar::{DType, Scalar, ScalarValue};
pub use tiling::Blocking;
