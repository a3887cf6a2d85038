//! The HIP GPU as a hetblas device.

use crate::blas::HipKernel;
use crate::memory::HipBuffer;
use crate::pinning::PinCache;
use crate::result::{format_version, Context, Libraries};
use crate::stream::HipStream;
use crate::sys::attr;
use hetblas_core::{
    Buffer, Device, DeviceInfo, DeviceKind, Error, HostAccess, Kernel, MemorySpace, Queue, Result,
};
use std::any::Any;
use std::sync::Arc;

/// Compute streams per GPU: two let a small tile's GEMM overlap the next one's.
pub const COMPUTE_STREAMS: usize = 2;

/// Device memory kept free for hipBLAS workspaces and the runtime.
const RESERVE_BYTES: u64 = 1 << 30;

/// One GPU driven through HIP.
pub struct HipDevice {
    info: DeviceInfo,
    ctx: Arc<Context>,
    space: MemorySpace,
    queues: Vec<Arc<dyn Queue>>,
    kernel: HipKernel,
    pins: Arc<PinCache>,
}

impl std::fmt::Debug for HipDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDevice")
            .field("info", &self.info)
            .finish()
    }
}

impl HipDevice {
    pub(crate) fn new(
        index: usize,
        ctx: Arc<Context>,
        pins: Arc<PinCache>,
        libs: &Libraries,
    ) -> Result<Arc<HipDevice>> {
        let name = ctx.name()?;
        let total = ctx.total_mem()?;
        // Informational only: a runtime that does not answer one of these still works.
        let a = |x| ctx.attribute(x).unwrap_or(-1);
        let (major, minor) = (
            a(attr::COMPUTE_CAPABILITY_MAJOR),
            a(attr::COMPUTE_CAPABILITY_MINOR),
        );
        let (cus, bus) = (a(attr::MULTIPROCESSOR_COUNT), a(attr::PCI_BUS_ID));
        let queues = (0..COMPUTE_STREAMS)
            .map(|q| {
                HipStream::new(&ctx, format!("hip{index}/compute{q}"), true)
                    .map(|s| s as Arc<dyn Queue>)
            })
            .collect::<Result<Vec<_>>>()?;
        // HIP also runs on NVIDIA GPUs (and the test shim does); say whose GPU it is.
        let vendor = if name.to_ascii_uppercase().contains("NVIDIA") {
            "NVIDIA"
        } else {
            "AMD"
        };
        Ok(Arc::new(HipDevice {
            info: DeviceInfo {
                backend: "hip".into(),
                vendor: vendor.into(),
                name,
                index,
                kind: DeviceKind::Gpu,
                memory_bytes: total as u64,
                detail: format!(
                    "ordinal {}, arch {major}.{minor}, {cus} CUs, PCI bus {bus:#04x}, \
                     HIP runtime {} (driver {}), {} + {}",
                    ctx.ordinal,
                    format_version(libs.runtime_version),
                    format_version(libs.driver_version),
                    libs.runtime_path,
                    libs.blas_path,
                ),
            },
            space: MemorySpace::new_device(),
            ctx,
            queues,
            kernel: HipKernel,
            pins,
        }))
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The registration cache (shared by every HIP device of the runtime).
    pub fn pin_cache(&self) -> &Arc<PinCache> {
        &self.pins
    }
}

impl Device for HipDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn memory_budget(&self) -> u64 {
        match self.ctx.mem_info() {
            Ok((free, _)) => (free as u64).saturating_sub(RESERVE_BYTES),
            Err(_) => 0,
        }
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        // A freed buffer's registration can collide with the driver's new mapping.
        const ALREADY_MAPPED: i64 = crate::sys::err::ALREADY_MAPPED as i64;
        let buffer = self.pins.retry_after_unmapped(
            || HipBuffer::new(&self.ctx, self.space, bytes),
            |e| matches!(e, Error::Backend { code, .. } if *code == ALREADY_MAPPED),
        )?;
        Ok(Box::new(buffer))
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        &self.queues
    }
    fn kernel(&self) -> &dyn Kernel {
        &self.kernel
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.pins.ensure(addr, bytes, access).map(|_| ())
    }
    fn release_host(&self, addr: u64, bytes: usize) -> Result<()> {
        self.pins.release(addr, bytes)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
