//! Test helpers shared by this crate's integration tests.

use hetblas_core::memory::{Buffer, HostAccess};
use hetblas_core::{Device, DeviceInfo, Kernel, MemorySpace, Queue, Result};
use std::any::Any;
use std::sync::Arc;

/// `inner` under another name (and, for the GPU, the H200's memory).
#[derive(Debug)]
pub struct Labelled {
    pub info: DeviceInfo,
    pub inner: Arc<dyn Device>,
}

impl Device for Labelled {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        self.inner.space()
    }
    fn memory_budget(&self) -> u64 {
        self.info.memory_bytes / 10 * 9
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        self.inner.allocate(bytes)
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        self.inner.compute_queues()
    }
    fn kernel(&self) -> &dyn Kernel {
        self.inner.kernel()
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.inner.prepare_host(addr, bytes, access)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
