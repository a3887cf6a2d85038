//! # hetblas-core
//!
//! The vendor-neutral heart of hetblas: operand views, the Device / Link / Kernel traits every
//! backend implements, and the pipeline that turns a BLAS call into work on every device of the
//! node. No vendor code and no FFI live here. The folders are the pipeline, in order.
//!
//! ## The pipeline, folder by folder
//!
//! 1. **[`backend`]: the device abstraction.** What a backend implements:
//!    [`Device`] (memory space, allocation, compute queues, [`Kernel`]), [`Link`] (async 2D
//!    copies between two memory spaces on a queue), [`Queue`] / [`Event`] (the only
//!    synchronisation vocabulary) and discovery through [`Backend`]; [`PinStats`] is what a
//!    backend that keeps host memory page-locked between calls reports (the registration cache
//!    is the GPU layer's, `hetblas-gpu`); [`host_queue`] is a ready queue run by a host thread,
//!    for backends that compute on the host.
//! 2. **[`problem`]: the problem and its operands.** Element types ([`scalar`]), column-major
//!    host views ([`MatRef`], [`MatMut`]), device-resident matrices ([`DeviceMatrix`]), and the
//!    [`problem::GemmProblem`]: routine, shape, transposes, dtype and where each operand lives
//!    ([`MemorySpace`]). Arguments are checked as reference BLAS checks them; errors carry the
//!    BLAS parameter number. [`mod@reference`] is the f64-accumulated GEMM every test compares with.
//! 3. **[`tuning`]: what the machine can do, and what to do with it.** [`calibrate`] measures
//!    links and kernels into a [`profile::MachineProfile`]; the [`autotune`]r reads it through
//!    the models to decide, per problem, the devices, their shares, the tile and whether C is
//!    folded on the host ([`autotune::decide`]). Without a profile, fixed rules decide.
//! 4. **[`model`]: the equations.** Link transfers, kernel tables, CoCoPeLia's single-device
//!    overlap models and the pipeline model of a tiled call: pure arithmetic on calibrated
//!    numbers, used by the autotuner.
//! 5. **[`plan`]: the DAG.** The tile grid ([`tiling`]), the shares ([`balance`]) and the C
//!    tiles placed on devices ([`distribute`], 2D block-cyclic), then fetch / gemm / write-back
//!    tasks per device. The planner simulates each device's tile cache (Belady eviction under
//!    its memory budget), so every A and B tile crosses a link at most once per device while it
//!    fits (forwarded over a faster peer link when another device holds it, staged through host
//!    memory between backends), every C tile is accumulated over all of K on one device and
//!    written back once, and beta == 0 never reads C. Plans carry no addresses and are cached
//!    per problem signature ([`plan::cache`]).
//! 6. **[`exec`]: running it.** The executor ([`execute`]) has one issuing thread per device
//!    put each task on its queue (link queues for copies, compute queues for kernels) with event
//!    waits for dependencies on other queues, so the copies of later tiles run ahead of the
//!    compute of earlier ones; [`trace`] records the device-side timeline as Chrome trace JSON.
//! 7. **[`pool`]: the front door.** [`DevicePool`] holds the devices, their links and the
//!    profile, and runs the call path: argument checks, quick returns, the autotuner's decision
//!    and the plan (each cached), the workspaces kept between calls, execution. It is built
//!    with [`GemmOptions`] and reports a [`GemmReport`]; [`DevicePool::calibrate`] measures its
//!    own devices.
//!
//! 8. **[`sim`]: the simulator.** The executor's plan (GEMM's, or the TRSM/TRMM tile DAG)
//!    replayed in virtual time against a profile (measured or synthetic): makespan, busy
//!    shares and a predicted trace.
//!    [`energy`] holds the power model, the objective (time, energy, energy-delay) that the
//!    device choice can follow, and joules measured per call.
//!
//! The modules keep their short paths too (`hetblas_core::queue`, `hetblas_core::profile`, ...).
//!
//! ## Guarantees
//!
//! Nothing panics across the API: every failure is an [`Error`] (a panic in a backend comes back
//! with its message); out-of-memory and device-lost errors name the device. When a call
//! returns, no queued operation still touches the caller's memory, on success or on error.
//!
//! A device that fails during a call costs no data: it stops getting work, the C tiles that
//! were not final run again on the devices left ([`GemmReport::recovered`] says from what), and
//! it is left out of later calls until [`DevicePool::reprobe`]. A tile of C is written only
//! whole and final. [`fault`] injects such failures for tests.

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

// The modules by their short paths (`crate::queue`, `hetblas_core::profile`, ...), as before the
// folders: backends and the CLI name them so.
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
