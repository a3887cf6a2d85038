//! # hetblas-gpu
//!
//! One GPU layer for every stream-based GPU runtime (CUDA, HIP, and the next vendor). A vendor
//! adapter crate loads its libraries and implements [`GpuRuntime`]: the raw runtime and BLAS
//! calls, with the handle types as associated types (`Stream`, `Event`, `Blas`, `Context`).
//! Everything above those calls is written here once, generically:
//!
//! - [`device`]: [`GpuDevice`], the hetblas `Device` and `Kernel` (its compute streams, typed);
//! - [`kernel`]: the tile kernels (gemm, add, trsm/trmm, the symmetric ones) over the runtime's
//!   BLAS, each on a stream the device finds among its own by identity, so a kernel never tests
//!   its stream's type at run time; the factorization tiles (potrf, getrf, laswp) over its
//!   solver library, with one solver handle, workspace and `info` slot per compute stream
//!   (`factor`);
//! - [`memory`]: device buffers and page-locked host buffers;
//! - [`stream`]: streams and events as hetblas queues and events; a stream waits on the device
//!   for any event of its runtime and refuses another backend's (the executor waits for those
//!   on the host, on purpose);
//! - [`link`]: host<->device and peer links, with the ring of pinned staging buffers for host
//!   memory that is not registered;
//! - [`registration`]: host registration: the cache that keeps the caller's host buffers
//!   page-locked between calls, the runtime's registrar with the one verification of cached
//!   registrations, the parallel faulting-in of fresh host memory, and the record of host
//!   memory the program gave back;
//! - [`discovery`]: devices, links and peer access;
//! - [`current`]: the calling thread's current context, saved when a call enters and put back
//!   when it returns ([`CurrentGuard`]; the pool takes one per call through
//!   `Device::keep_thread_context`), so that the caller's own GPU code finds its context as it
//!   left it.
//!
//! Fault injection: every GPU has a [`hetblas_core::fault::FaultInjector`]
//! ([`GpuDevice::faults`], armed at discovery with [`GpuBackend::faults`]) checked before each
//! kernel and copy is issued, so a GPU can be made to fail mid-call (an error, lost, out of
//! memory, a panic) on a real machine; unarmed it costs one atomic load per operation.
//!
//! Per GPU: two compute streams with a BLAS handle each, one host->device and one
//! device->host stream (both DMA engines busy at once), and one stream per peer link.

mod copy_out;
pub mod current;
pub mod device;
pub mod discovery;
mod factor;
pub mod kernel;
pub mod link;
pub mod memory;
pub mod registration;
pub mod runtime;
pub mod stream;
pub mod sym;

pub use current::CurrentGuard;
pub use device::GpuDevice;
pub use discovery::{GpuBackend, GpuDiscovery};
pub use link::{End, GpuLink};
pub use memory::{DeviceBuffer, PinnedBuffer};
pub use registration::{GpuRegistrar, PinCache, PinPolicy, Registered};
pub use runtime::{
    run_host_job, Copy2D, CopyKind, DeviceDescription, GpuRuntime, HostJob, Workspace,
};
pub use stream::{GpuEvent, GpuStream};

pub use hetblas_core::PinStats;
