//! The symmetric routines on devices whose kernels have GEMM only (as a new backend starts):
//! the pool computes each diagonal tile by the GEMM pipeline and combines it on the host. The
//! same conformance cases as every backend's, on emulated devices wrapped to hide their
//! symmetric kernel.

use hetblas_conformance::sym_cases;
use hetblas_conformance::Target;
use hetblas_core::memory::{Buffer, HostAccess};
use hetblas_core::{
    DType, Device, DeviceInfo, DevicePool, GemmTile, Kernel, MemorySpace, Queue, RawTile, Result,
    ScalarValue,
};
use hetblas_cpu::{emulated_node, EmulatedConfig, RustGemm};
use std::any::Any;
use std::sync::Arc;

/// A device as `inner` is, with a kernel that has no symmetric tiles.
#[derive(Debug)]
struct GemmOnly(Arc<dyn Device>);

impl Kernel for GemmOnly {
    fn supports(&self, dtype: DType) -> bool {
        self.0.kernel().supports(dtype)
    }
    fn gemm(&self, queue: &Arc<dyn Queue>, op: &GemmTile) -> Result<()> {
        self.0.kernel().gemm(queue, op)
    }
    fn supports_add(&self) -> bool {
        self.0.kernel().supports_add()
    }
    fn add(
        &self,
        queue: &Arc<dyn Queue>,
        beta: ScalarValue,
        x: &RawTile,
        y: &RawTile,
    ) -> Result<()> {
        self.0.kernel().add(queue, beta, x, y)
    }
}

impl Device for GemmOnly {
    fn info(&self) -> &DeviceInfo {
        self.0.info()
    }
    fn space(&self) -> MemorySpace {
        self.0.space()
    }
    fn memory_budget(&self) -> u64 {
        self.0.memory_budget()
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        self.0.allocate(bytes)
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        self.0.compute_queues()
    }
    fn kernel(&self) -> &dyn Kernel {
        self
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.0.prepare_host(addr, bytes, access)
    }
    fn host_prepared(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<bool> {
        self.0.host_prepared(addr, bytes, access)
    }
    fn owns_address(&self, addr: u64) -> bool {
        self.0.owns_address(addr)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn target() -> Target {
    let config = EmulatedConfig {
        memory_bytes: 64 << 20,
        ..Default::default()
    };
    let node = emulated_node(&[config.clone(), config], Arc::new(RustGemm::new(1))).unwrap();
    let devices: Vec<Arc<dyn Device>> = node
        .devices
        .into_iter()
        .map(|d| Arc::new(GemmOnly(d as Arc<dyn Device>)) as Arc<dyn Device>)
        .collect();
    assert!(devices.iter().all(|d| !d.kernel().supports_sym(DType::F64)));
    Target {
        name: "emulated x2, GEMM only".into(),
        pool: Arc::new(DevicePool::new(devices, node.links).unwrap()),
        compute: vec![0, 1],
        homes: vec![0, 1],
        small_tile: 8,
    }
}

#[test]
fn every_option_by_gemm() {
    let t = target();
    sym_cases::sym_every_option_f64(&t).unwrap();
    sym_cases::sym_every_option_c32(&t).unwrap();
}

#[test]
fn device_operands_and_nan_by_gemm() {
    let t = target();
    sym_cases::sym_device_operands(&t).unwrap();
    sym_cases::sym_beta_zero_overwrites_nan(&t).unwrap();
    sym_cases::sym_alpha_zero_reads_no_operands(&t).unwrap();
}
