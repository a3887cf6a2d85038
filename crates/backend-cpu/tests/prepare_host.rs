//! `DevicePool::prepare_host`: a host buffer made ready whole, by every accelerator and only by
//! them (devices computing in host memory have nothing to page-lock), with the access asked
//! for; and release forgets the same range.

use hetblas_core::memory::{Buffer, HostAccess};
use hetblas_core::{Backend, Device, DeviceInfo, DevicePool, Kernel, MemorySpace, Queue, Result};
use hetblas_cpu::{emulated_node, CpuBackend, EmulatedConfig, RustGemm};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// What a device was asked to prepare or release: (prepare?, address, bytes, access).
type Calls = Arc<Mutex<Vec<(bool, u64, usize, Option<HostAccess>)>>>;

/// A device as `inner` is, recording its host preparations.
#[derive(Debug)]
struct Recording(Arc<dyn Device>, Calls);

impl Device for Recording {
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
        self.0.kernel()
    }
    fn prepare_host(&self, addr: u64, bytes: usize, access: HostAccess) -> Result<()> {
        self.1
            .lock()
            .unwrap()
            .push((true, addr, bytes, Some(access)));
        self.0.prepare_host(addr, bytes, access)
    }
    fn release_host(&self, addr: u64, bytes: usize) -> Result<()> {
        self.1.lock().unwrap().push((false, addr, bytes, None));
        self.0.release_host(addr, bytes)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn a_host_buffer_is_prepared_whole_by_every_accelerator() {
    let node = emulated_node(
        &[EmulatedConfig::default(), EmulatedConfig::default()],
        Arc::new(RustGemm::new(1)),
    )
    .unwrap();
    let cpu = CpuBackend::default().discover().unwrap().devices;
    let calls: Vec<Calls> = (0..3).map(|_| Calls::default()).collect();
    let devices: Vec<Arc<dyn Device>> = cpu
        .into_iter()
        .take(1)
        .chain(node.devices.into_iter().map(|d| d as Arc<dyn Device>))
        .zip(&calls)
        .map(|(d, c)| Arc::new(Recording(d, c.clone())) as Arc<dyn Device>)
        .collect();
    assert!(devices[0].space().is_host() && !devices[1].space().is_host());
    let pool = DevicePool::new(devices, node.links).unwrap();

    let buf = vec![1.5f64; 3000];
    let (addr, bytes) = (buf.as_ptr() as u64, 3000 * 8);
    pool.prepare_host(&buf, HostAccess::ReadWrite).unwrap();
    // An empty buffer asks nobody.
    pool.prepare_host::<f64>(&[], HostAccess::Read).unwrap();
    assert!(
        calls[0].lock().unwrap().is_empty(),
        "the CPU prepares nothing"
    );
    for c in &calls[1..] {
        assert_eq!(
            *c.lock().unwrap(),
            vec![(true, addr, bytes, Some(HostAccess::ReadWrite))]
        );
    }
    pool.release_host(&buf).unwrap();
    for c in &calls[1..] {
        assert_eq!(c.lock().unwrap().last(), Some(&(false, addr, bytes, None)));
    }
}
