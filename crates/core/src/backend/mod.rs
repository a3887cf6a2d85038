//! The device abstraction: what a backend implements. A [`device::Device`] owns a memory space
//! ([`memory`]), runs [`kernel::Kernel`]s on its compute [`queue::Queue`]s and is found through a
//! [`device::Backend`]; a [`link::Link`] copies 2D tiles between two spaces on a queue. A backend
//! that keeps host memory page-locked between calls reports what its cache did as
//! [`pin_stats::PinStats`] (the cache is the GPU layer's); [`host_queue`] is a ready queue run by
//! a host thread, for backends that compute on the host; [`fault`] injects device failures for
//! tests. [`factor_kernel`] holds the tiles of the factorizations (Cholesky, LU, row
//! interchanges) and how their `info` and pivots come back.

pub mod device;
pub mod factor_kernel;
pub mod fault;
pub mod host_queue;
pub mod kernel;
pub mod link;
pub mod memory;
pub mod pin_stats;
pub mod queue;
pub mod sym_kernel;
