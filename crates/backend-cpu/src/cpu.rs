//! The CPU as a device: its memory space is the host, so host operands are used in place (no
//! copies); it computes with the host BLAS on one queue (the BLAS library threads internally).

use crate::blas::{choose_blas, BlasLibrary, HostBlas};
use crate::buffer::HostBuffer;
use crate::kernel::HostKernel;
use crate::lapack::{choose_lapack, HostLapack};
use hetblas_core::host_queue::HostQueue;
use hetblas_core::{
    Backend, Buffer, Device, DeviceInfo, DeviceKind, Discovery, Kernel, MemorySpace, Queue, Result,
};
use std::any::Any;
use std::sync::Arc;

/// The host CPU.
pub struct CpuDevice {
    info: DeviceInfo,
    kernel: HostKernel,
    tried: Vec<String>,
}

impl std::fmt::Debug for CpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuDevice")
            .field("info", &self.info)
            .finish()
    }
}

impl CpuDevice {
    /// The CPU with the host BLAS `library` says ([`choose_blas`]).
    ///
    /// # Errors
    /// What [`choose_blas`] reports.
    pub fn new(library: &BlasLibrary) -> Result<Arc<CpuDevice>> {
        let choice = choose_blas(library)?;
        Self::with_blas(choice.blas, choice.tried)
    }

    /// The CPU with a given host BLAS, and the host LAPACK that goes with it
    /// ([`choose_lapack`]).
    pub fn with_blas(blas: Arc<dyn HostBlas>, tried: Vec<String>) -> Result<Arc<CpuDevice>> {
        let lapack = choose_lapack(blas.as_ref());
        let mut tried = tried;
        tried.extend(lapack.tried.into_iter().map(|t| format!("LAPACK: {t}")));
        Self::with_libraries(blas, lapack.lapack, tried)
    }

    /// The CPU with a given host BLAS and LAPACK.
    pub fn with_libraries(
        blas: Arc<dyn HostBlas>,
        lapack: Arc<dyn HostLapack>,
        tried: Vec<String>,
    ) -> Result<Arc<CpuDevice>> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let info = DeviceInfo {
            backend: "cpu".into(),
            vendor: cpu_vendor(),
            name: cpu_model().unwrap_or_else(|| "host CPU".into()),
            index: 0,
            kind: DeviceKind::Cpu,
            memory_bytes: host_memory_bytes(),
            detail: format!(
                "{cores} cores; BLAS: {}; LAPACK: {}",
                blas.describe(),
                lapack.describe()
            ),
        };
        let queues = vec![HostQueue::new("cpu0/compute")?];
        Ok(Arc::new(CpuDevice {
            info,
            kernel: HostKernel::with_libraries(blas, lapack, None, queues),
            tried,
        }))
    }

    /// The host BLAS in use.
    pub fn blas(&self) -> &Arc<dyn HostBlas> {
        self.kernel.blas()
    }

    /// The host LAPACK in use.
    pub fn lapack(&self) -> &Arc<dyn HostLapack> {
        self.kernel.lapack()
    }

    /// Libraries tried before the ones in use (why OpenBLAS was not taken, for instance;
    /// the LAPACK's prefixed "LAPACK: ").
    pub fn blas_search(&self) -> &[String] {
        &self.tried
    }
}

impl Device for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        MemorySpace::HOST
    }
    fn memory_budget(&self) -> u64 {
        // Slots on the host are needed only for device-resident operands; half of RAM at most.
        host_available_bytes() / 2
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        Ok(Box::new(HostBuffer::new(bytes, MemorySpace::HOST, None)?))
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        self.kernel.queues()
    }
    fn kernel(&self) -> &dyn Kernel {
        &self.kernel
    }
    fn share_host(&self, accelerators: usize) {
        // Beside accelerators the CPU's share is small and bound by host memory, which their
        // DMA also streams through: half the cores do it as fast, and the rest keep the issue
        // threads, driver threads and host folds responsive.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = if accelerators == 0 {
            cores
        } else {
            (cores / 2).saturating_sub(accelerators).max(1)
        };
        self.kernel.blas().set_threads(threads);
        self.kernel.lapack().set_threads(threads);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Discovers the CPU (always present), computing with the host BLAS `library` says.
#[derive(Debug, Clone, Default)]
pub struct CpuBackend {
    pub library: BlasLibrary,
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn discover(&self) -> Result<Discovery> {
        Ok(Discovery {
            devices: vec![CpuDevice::new(&self.library)? as Arc<dyn Device>],
            links: vec![],
        })
    }
}

fn meminfo(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Total host RAM (bytes), 16 GiB when it cannot be read.
pub fn host_memory_bytes() -> u64 {
    meminfo("MemTotal:").unwrap_or(16 << 30)
}

fn host_available_bytes() -> u64 {
    meminfo("MemAvailable:").unwrap_or_else(host_memory_bytes)
}

fn cpuinfo(field: &str) -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim().to_string())
}

fn cpu_model() -> Option<String> {
    cpuinfo("model name")
}

fn cpu_vendor() -> String {
    cpuinfo("vendor_id").unwrap_or_else(|| "host".into())
}
