//! The CUDA GPU as a hetblas device.

use crate::blas::CudaKernel;
use crate::driver::Context;
use crate::memory::CudaBuffer;
use crate::pinning::PinCache;
use crate::stream::CudaStream;
use cudarc::driver::sys;
use hetblas_core::{
    Buffer, Device, DeviceInfo, DeviceKind, Error, HostAccess, Kernel, MemorySpace, Queue, Result,
};
use std::any::Any;
use std::sync::Arc;

/// Compute streams per GPU: two let a small tile's GEMM overlap the next one's.
pub const COMPUTE_STREAMS: usize = 2;

/// Device memory kept free for cuBLAS workspaces and the driver.
const RESERVE_BYTES: u64 = 1 << 30;

/// One NVIDIA GPU.
pub struct CudaDevice {
    info: DeviceInfo,
    ctx: Arc<Context>,
    space: MemorySpace,
    queues: Vec<Arc<dyn Queue>>,
    kernel: CudaKernel,
    pins: Arc<PinCache>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .finish()
    }
}

impl CudaDevice {
    pub(crate) fn new(
        index: usize,
        ctx: Arc<Context>,
        pins: Arc<PinCache>,
        driver: i32,
    ) -> Result<Arc<CudaDevice>> {
        let mut name = [0 as std::ffi::c_char; 256];
        crate::driver::check(
            // SAFETY: writes at most 256 bytes, NUL-terminated.
            unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 256, ctx.device) },
            "cuDeviceGetName",
        )?;
        // SAFETY: NUL-terminated by the driver.
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut total = 0usize;
        crate::driver::check(
            // SAFETY: writes one size.
            unsafe { sys::cuDeviceTotalMem_v2(&mut total, ctx.device) },
            "cuDeviceTotalMem",
        )?;
        use sys::CUdevice_attribute as A;
        let major = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let bus = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let queues = (0..COMPUTE_STREAMS)
            .map(|q| {
                CudaStream::new(&ctx, format!("cuda{index}/compute{q}"), true)
                    .map(|s| s as Arc<dyn Queue>)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(CudaDevice {
            info: DeviceInfo {
                backend: "cuda".into(),
                vendor: "NVIDIA".into(),
                name,
                index,
                kind: DeviceKind::Gpu,
                memory_bytes: total as u64,
                detail: format!(
                    "ordinal {}, cc {major}.{minor}, {sms} SMs, PCI bus {bus:#04x}, driver CUDA {}.{}",
                    ctx.ordinal,
                    driver / 1000,
                    driver % 1000 / 10
                ),
            },
            space: MemorySpace::new_device(),
            ctx,
            queues,
            kernel: CudaKernel,
            pins,
        }))
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The registration cache (shared by every CUDA device of the runtime).
    pub fn pin_cache(&self) -> &Arc<PinCache> {
        &self.pins
    }
}

impl Device for CudaDevice {
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
        const ALREADY_MAPPED: i64 = sys::CUresult::CUDA_ERROR_ALREADY_MAPPED as i64;
        let buffer = self.pins.retry_after_unmapped(
            || CudaBuffer::new(&self.ctx, self.space, bytes),
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
