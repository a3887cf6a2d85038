//! Host registration: the caller's host buffers page-locked once and kept so between calls,
//! so that copies DMA them directly.
//!
//! - [`cache`]: the registration cache ([`cache::PinCache`]) and the policy it follows
//!   ([`PinPolicy`]), over the driver operations of a [`cache::Registrar`];
//! - [`registrar`]: the runtime's registrar ([`GpuRegistrar`]): register, unregister, and the
//!   one verification of cached registrations;
//! - [`prefault`]: fresh host memory faulted in, in parallel, before it is page-locked, or
//!   while a call stages it ([`prefault::Background`]);
//! - [`released`]: the process-wide record of host memory the program gave back
//!   ([`released::PROCESS`], fed by the drop-in library's allocator hooks), whose
//!   registrations the caches drop before they next use one.

pub mod cache;
pub mod prefault;
pub mod registrar;
pub mod released;

pub use cache::{PinPolicy, Registered, FRESH_STAGED_BYTES, PAGE};
pub use registrar::{GpuRegistrar, PinCache};
