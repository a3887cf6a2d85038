//! A GPU of runtime `A` as a hetblas device.

use crate::current::CurrentGuard;
use crate::factor::Solvers;
use crate::memory::DeviceBuffer;
use crate::registration::PinCache;
use crate::runtime::GpuRuntime;
use crate::stream::GpuStream;
use hetblas_core::fault::{FaultInjector, FaultOp};
use hetblas_core::{
    Buffer, Device, DeviceInfo, DeviceKind, Error, HostAccess, Kernel, MemorySpace, Queue, Result,
    ThreadContext,
};
use std::any::Any;
use std::sync::Arc;

/// Compute streams per GPU: two let a small tile's GEMM overlap the next one's.
pub const COMPUTE_STREAMS: usize = 2;

/// Device memory kept free for BLAS workspaces and the runtime.
const RESERVE_BYTES: u64 = 1 << 30;

/// One GPU.
pub struct GpuDevice<A: GpuRuntime> {
    pub(crate) info: DeviceInfo,
    ctx: Arc<A::Context>,
    space: MemorySpace,
    /// The solver state of each compute stream (index for index), made on first use; before
    /// `streams` so that it goes first (it synchronises its stream and destroys its handle).
    pub(crate) solvers: Solvers<A>,
    /// The compute streams, typed (kernels run on them) and as core queues (the same objects).
    pub(crate) streams: Vec<Arc<GpuStream<A>>>,
    queues: Vec<Arc<dyn Queue>>,
    pins: Arc<PinCache<A>>,
    /// Fault injection ([`hetblas_core::fault`]; armed at discovery): checked before each kernel
    /// and copy is issued; unarmed, one atomic load.
    pub(crate) faults: Arc<FaultInjector>,
}

impl<A: GpuRuntime> std::fmt::Debug for GpuDevice<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("info", &self.info)
            .finish()
    }
}

impl<A: GpuRuntime> GpuDevice<A> {
    /// Device `index` of the runtime's devices taken, on `ctx`.
    pub fn new(
        lib: &A::Library,
        index: usize,
        ctx: Arc<A::Context>,
        pins: Arc<PinCache<A>>,
    ) -> Result<Arc<Self>> {
        let d = A::describe(lib, &ctx)?;
        let streams = (0..COMPUTE_STREAMS)
            .map(|q| GpuStream::new(&ctx, format!("{}{index}/compute{q}", A::NAME), true))
            .collect::<Result<Vec<_>>>()?;
        let faults = Arc::new(FaultInjector::new(format!("{}:{index}", A::NAME)));
        Ok(Arc::new(GpuDevice {
            faults,
            info: DeviceInfo {
                backend: A::NAME.into(),
                vendor: d.vendor,
                name: d.name,
                index,
                kind: DeviceKind::Gpu,
                memory_bytes: d.memory_bytes,
                detail: d.detail,
            },
            space: MemorySpace::new_device(),
            solvers: streams.iter().map(|_| Default::default()).collect(),
            ctx,
            queues: streams
                .iter()
                .map(|s| s.clone() as Arc<dyn Queue>)
                .collect(),
            streams,
            pins,
        }))
    }

    /// The device's context (its ordinal, for libraries that take one).
    pub fn context(&self) -> &Arc<A::Context> {
        &self.ctx
    }

    /// The device's fault injector: arm it to make this GPU fail at its n-th kernel or copy,
    /// or be lost ([`hetblas_core::fault`]; discovery arms the faults its backend is given).
    pub fn faults(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    /// The registration cache (shared by every device of the runtime).
    pub fn pin_cache(&self) -> &Arc<PinCache<A>> {
        &self.pins
    }

    /// The device behind `device` when it is a GPU of runtime `A` (tools and tests that reach
    /// a runtime's own services, such as its registration cache).
    pub fn of(device: &dyn Device) -> Option<&Self> {
        device.as_any().downcast_ref::<Self>()
    }
}

impl<A: GpuRuntime> Device for GpuDevice<A> {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn memory_budget(&self) -> u64 {
        match A::mem_info(&self.ctx) {
            Ok((free, _)) => (free as u64).saturating_sub(RESERVE_BYTES),
            Err(_) => 0,
        }
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        self.faults.check(FaultOp::Alloc)?;
        // A freed buffer's registration can collide with the runtime's new mapping.
        let buffer = self.pins.retry_after_unmapped(
            || DeviceBuffer::<A>::new(&self.ctx, self.space, bytes),
            |e| matches!(e, Error::Backend { code, .. } if *code == A::ALREADY_MAPPED),
        )?;
        Ok(Box::new(buffer))
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        &self.queues
    }
    fn kernel(&self) -> &dyn Kernel {
        self
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.pins.ensure(addr, bytes, access).map(|_| ())
    }
    fn host_prepared(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<bool> {
        self.pins.check(addr, bytes, access)
    }
    fn hosts_prepared(&self, regions: &[(u64, usize, HostAccess)]) -> Result<bool> {
        self.pins.check_all(regions)
    }
    unsafe fn begin_host_call(
        &self,
        regions: &[(u64, usize, HostAccess)],
    ) -> Option<Box<dyn std::any::Any + Send>> {
        // SAFETY: forwarded contract; this backend's staged copies claim their ranges first
        // (`GpuLink::copy_h2d_staged`, `copy_d2h_staged`).
        let population = unsafe { self.pins.begin_call(regions) }?;
        Some(Box::new(population))
    }
    fn stages_host_output(&self, addr: u64, bytes: usize) -> bool {
        self.pins.stages_output(addr, bytes)
    }
    fn release_host(&self, addr: u64, bytes: usize) -> Result<()> {
        self.pins.release(addr, bytes)
    }
    fn host_pin_stats(&self) -> Option<hetblas_core::PinStats> {
        Some(self.pins.stats())
    }
    fn fault_injector(&self) -> Option<&Arc<FaultInjector>> {
        Some(&self.faults)
    }
    fn owns_address(&self, addr: u64) -> bool {
        A::device_of_address(addr) == Some(A::ordinal(&self.ctx))
    }
    fn keep_thread_context(&self) -> Option<ThreadContext> {
        Some(ThreadContext::new(CurrentGuard::<A>::save()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
