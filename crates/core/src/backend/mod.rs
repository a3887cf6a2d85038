//! The device abstraction: what a backend implements. A [`device::Device`] owns a memory space
//! ([`memory`]), runs [`kernel::Kernel`]s on its compute [`queue::Queue`]s and is found through a
//! [`device::Backend`]; a [`link::Link`] copies 2D tiles between two spaces on a queue.

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
