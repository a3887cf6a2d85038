//! Host-emulated devices: each has its own memory space (allocated in host RAM), is reached
//! through copy links run by host threads, and computes with the host BLAS. Rates can be
//! throttled (compute FLOP/s, link bandwidth and latency), so multi-device planning, caching,
//! routing and balancing run for real, deterministically, on machines without GPUs (CI).

use crate::blas::HostBlas;
use crate::buffer::{copy_2d_host, HostBuffer};
use crate::kernel::HostKernel;
use hetblas_core::fault::{FaultInjector, FaultOp};
use hetblas_core::host_queue::HostQueue;
use hetblas_core::link::check_copy;
use hetblas_core::{
    Buffer, Device, DeviceInfo, DeviceKind, Error, Event, Kernel, Link, LinkKind, MemorySpace,
    Queue, RawTile, Result,
};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How an emulated device behaves.
#[derive(Debug, Clone)]
pub struct EmulatedConfig {
    /// Size of its memory space.
    pub memory_bytes: u64,
    /// Compute rate; `None` runs as fast as the host BLAS.
    pub flops_per_sec: Option<f64>,
    /// Bandwidth of host->device and device->host copies; `None` is memcpy speed.
    pub host_link_bytes_per_sec: Option<f64>,
    /// Bandwidth of device->device copies.
    pub peer_link_bytes_per_sec: Option<f64>,
    /// Fixed latency added to every copy.
    pub link_latency: Duration,
    /// Number of compute queues.
    pub compute_queues: usize,
}

impl Default for EmulatedConfig {
    fn default() -> Self {
        EmulatedConfig {
            memory_bytes: 1 << 30,
            flops_per_sec: None,
            host_link_bytes_per_sec: None,
            peer_link_bytes_per_sec: None,
            link_latency: Duration::ZERO,
            compute_queues: 2,
        }
    }
}

/// A device emulated in host memory.
pub struct EmulatedDevice {
    info: DeviceInfo,
    space: MemorySpace,
    config: EmulatedConfig,
    used: Arc<AtomicU64>,
    /// The live allocations (start -> length), so that the device can say which addresses are
    /// its memory ([`Device::owns_address`]) as a GPU runtime does.
    live: Arc<Mutex<BTreeMap<u64, usize>>>,
    kernel: HostKernel,
    faults: Arc<FaultInjector>,
}

/// An emulated device's allocation: host memory, registered as the device's while it lives.
#[derive(Debug)]
struct EmulatedBuffer {
    memory: HostBuffer,
    live: Arc<Mutex<BTreeMap<u64, usize>>>,
}

impl Buffer for EmulatedBuffer {
    fn space(&self) -> MemorySpace {
        self.memory.space()
    }
    fn addr(&self) -> u64 {
        self.memory.addr()
    }
    fn len(&self) -> usize {
        self.memory.len()
    }
}

impl Drop for EmulatedBuffer {
    fn drop(&mut self) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.memory.addr());
    }
}

impl std::fmt::Debug for EmulatedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatedDevice")
            .field("info", &self.info)
            .field("space", &self.space)
            .finish()
    }
}

impl EmulatedDevice {
    pub fn new(index: usize, config: EmulatedConfig, blas: Arc<dyn HostBlas>) -> Result<Arc<Self>> {
        let space = MemorySpace::new_device();
        let queues = (0..config.compute_queues.max(1))
            .map(|q| HostQueue::new(format!("emu{index}/compute{q}")))
            .collect::<Result<Vec<_>>>()?;
        let faults = Arc::new(FaultInjector::new(format!("emulated:{index}")));
        let rate = config.flops_per_sec.map_or("host speed".to_string(), |r| {
            format!("{:.2} GFLOP/s", r / 1e9)
        });
        let kernel =
            HostKernel::new(blas, config.flops_per_sec, queues).with_faults(faults.clone());
        Ok(Arc::new(EmulatedDevice {
            info: DeviceInfo {
                backend: "emulated".into(),
                vendor: "hetblas".into(),
                name: format!("emulated device {index}"),
                index,
                kind: DeviceKind::Emulated,
                memory_bytes: config.memory_bytes,
                detail: format!(
                    "{rate}; BLAS: {}; LAPACK: {}",
                    kernel.blas().describe(),
                    kernel.lapack().describe()
                ),
            },
            space,
            kernel,
            faults,
            config,
            used: Arc::new(AtomicU64::new(0)),
            live: Arc::default(),
        }))
    }

    pub fn config(&self) -> &EmulatedConfig {
        &self.config
    }

    /// The device's fault injector: arm it to make this device fail at its n-th kernel or
    /// copy, or be lost ([`hetblas_core::fault`]; [`EmulatedBackend`] arms its faults at
    /// discovery).
    pub fn faults(&self) -> &Arc<FaultInjector> {
        &self.faults
    }
}

impl Device for EmulatedDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn space(&self) -> MemorySpace {
        self.space
    }
    fn memory_budget(&self) -> u64 {
        self.config
            .memory_bytes
            .saturating_sub(self.used.load(Ordering::SeqCst))
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>> {
        self.faults.check(FaultOp::Alloc)?;
        let out_of_memory = |used: u64| Error::OutOfMemory {
            device: self.info.label(),
            detail: format!(
                "{bytes} B requested, {} of {} B free",
                self.config.memory_bytes.saturating_sub(used),
                self.config.memory_bytes
            ),
        };
        // Reserve first (calls on several threads allocate at once), then allocate; the
        // buffer's own accounting takes the reservation's place.
        let wanted = bytes as u64;
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(wanted)
                    .filter(|&total| total <= self.config.memory_bytes)
            })
            .map_err(out_of_memory)?;
        let buffer = HostBuffer::new(bytes, self.space, Some(self.used.clone()));
        self.used.fetch_sub(wanted, Ordering::SeqCst);
        let memory = buffer?;
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(memory.addr(), memory.len().max(1));
        Ok(Box::new(EmulatedBuffer {
            memory,
            live: self.live.clone(),
        }))
    }
    fn owns_address(&self, addr: u64) -> bool {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.range(..=addr)
            .next_back()
            .is_some_and(|(&start, &len)| addr - start < len as u64)
    }
    fn compute_queues(&self) -> &[Arc<dyn Queue>] {
        self.kernel.queues()
    }
    fn kernel(&self) -> &dyn Kernel {
        &self.kernel
    }
    fn nominal_flops(&self, _dtype: hetblas_core::DType) -> Option<f64> {
        self.config.flops_per_sec
    }
    fn fault_injector(&self) -> Option<&Arc<FaultInjector>> {
        Some(&self.faults)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A copy link between two host-resident spaces, run by its own host thread.
#[derive(Debug)]
pub struct EmulatedLink {
    src: MemorySpace,
    dst: MemorySpace,
    kind: LinkKind,
    name: String,
    /// The link's thread, typed (copies are enqueued on it) and as a core queue.
    host: Arc<HostQueue>,
    queue: Arc<dyn Queue>,
    bytes_per_sec: Option<f64>,
    latency: Duration,
    /// Fault injectors of the devices at its ends: the copy counts for the first, and fails
    /// when either end is lost.
    faults: Vec<Arc<FaultInjector>>,
}

impl EmulatedLink {
    pub fn new(
        src: MemorySpace,
        dst: MemorySpace,
        kind: LinkKind,
        name: String,
        bytes_per_sec: Option<f64>,
        latency: Duration,
    ) -> Result<Arc<EmulatedLink>> {
        let host = HostQueue::new(name.clone())?;
        Ok(Arc::new(EmulatedLink {
            queue: host.clone(),
            host,
            src,
            dst,
            kind,
            name,
            bytes_per_sec,
            latency,
            faults: Vec::new(),
        }))
    }

    /// The same link, failing where the injectors of its end devices say: `faults[0]` (the
    /// device that issues on it) counts its copies, any lost end fails them.
    pub fn with_faults(self: Arc<Self>, faults: Vec<Arc<FaultInjector>>) -> Arc<EmulatedLink> {
        let mut link = Arc::try_unwrap(self).unwrap_or_else(|shared| EmulatedLink {
            src: shared.src,
            dst: shared.dst,
            kind: shared.kind,
            name: shared.name.clone(),
            host: shared.host.clone(),
            queue: shared.queue.clone(),
            bytes_per_sec: shared.bytes_per_sec,
            latency: shared.latency,
            faults: shared.faults.clone(),
        });
        link.faults = faults;
        Arc::new(link)
    }
}

impl Link for EmulatedLink {
    fn src(&self) -> MemorySpace {
        self.src
    }
    fn dst(&self) -> MemorySpace {
        self.dst
    }
    fn kind(&self) -> LinkKind {
        self.kind
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }
    fn nominal_bandwidth(&self) -> Option<f64> {
        self.bytes_per_sec
    }
    fn copy(&self, src: &RawTile, dst: &RawTile) -> Result<()> {
        self.host.enqueue(self.copy_job(src, dst)?)
    }
    fn copy_recorded(&self, src: &RawTile, dst: &RawTile) -> Result<Arc<dyn Event>> {
        Ok(self.host.enqueue_recorded(self.copy_job(src, dst)?)?)
    }
}

impl EmulatedLink {
    /// The queue job of a copy (its checks and injected faults done here, as a device would
    /// at issue).
    fn copy_job(
        &self,
        src: &RawTile,
        dst: &RawTile,
    ) -> Result<impl FnOnce() -> Result<()> + Send + 'static> {
        check_copy(self, src, dst)?;
        let mut deferred = None;
        for (i, f) in self.faults.iter().enumerate() {
            if i == 0 {
                deferred = f.check_queued(FaultOp::Copy)?;
            } else {
                f.alive()?;
            }
        }
        let (src, dst) = (*src, *dst);
        let min_time = self.latency
            + self.bytes_per_sec.map_or(Duration::ZERO, |bw| {
                Duration::from_secs_f64(src.bytes() as f64 / bw)
            });
        Ok(move || {
            if let Some(e) = deferred {
                return Err(e);
            }
            let start = Instant::now();
            // SAFETY: both tiles are host memory (emulated spaces live in host RAM) that the
            // executor keeps alive until this queue is synchronised; check_copy matched shapes.
            unsafe { copy_2d_host(&src, &dst) };
            let spent = start.elapsed();
            if spent < min_time {
                std::thread::sleep(min_time - spent);
            }
            Ok(())
        })
    }
}

/// Emulated devices and the links between them and the host.
pub struct EmulatedNode {
    pub devices: Vec<Arc<EmulatedDevice>>,
    pub links: Vec<Arc<dyn Link>>,
}

/// Creates `configs.len()` emulated devices with links host<->each and each<->each.
pub fn emulated_node(configs: &[EmulatedConfig], blas: Arc<dyn HostBlas>) -> Result<EmulatedNode> {
    let devices = configs
        .iter()
        .enumerate()
        .map(|(i, c)| EmulatedDevice::new(i, c.clone(), blas.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut links: Vec<Arc<dyn Link>> = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let c = &d.config;
        links.push(
            EmulatedLink::new(
                MemorySpace::HOST,
                d.space,
                LinkKind::HostToDevice,
                format!("host->emu{i}"),
                c.host_link_bytes_per_sec,
                c.link_latency,
            )?
            .with_faults(vec![d.faults.clone()]),
        );
        links.push(
            EmulatedLink::new(
                d.space,
                MemorySpace::HOST,
                LinkKind::DeviceToHost,
                format!("emu{i}->host"),
                c.host_link_bytes_per_sec,
                c.link_latency,
            )?
            .with_faults(vec![d.faults.clone()]),
        );
        for (j, e) in devices.iter().enumerate() {
            if i != j {
                let bw = match (c.peer_link_bytes_per_sec, e.config.peer_link_bytes_per_sec) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // A peer copy is issued by the destination device and counts as its copy.
                links.push(
                    EmulatedLink::new(
                        d.space,
                        e.space,
                        LinkKind::Peer,
                        format!("emu{i}->emu{j}"),
                        bw,
                        c.link_latency,
                    )?
                    .with_faults(vec![e.faults.clone(), d.faults.clone()]),
                );
            }
        }
    }
    Ok(EmulatedNode { devices, links })
}

/// Discovers host-emulated devices: the ones asked for, with the host BLAS `library` says
/// ([`crate::choose_blas`]), and the links between them and the host; the `faults` for each
/// device are armed on it.
#[derive(Debug, Clone, Default)]
pub struct EmulatedBackend {
    configs: Vec<EmulatedConfig>,
    pub library: crate::BlasLibrary,
    pub faults: Vec<hetblas_core::fault::FaultSpec>,
}

impl EmulatedBackend {
    /// One emulated device per configuration.
    pub fn new(configs: Vec<EmulatedConfig>) -> EmulatedBackend {
        EmulatedBackend {
            configs,
            ..Default::default()
        }
    }
}

impl hetblas_core::Backend for EmulatedBackend {
    fn name(&self) -> &'static str {
        "emulated"
    }
    fn discover(&self) -> Result<hetblas_core::Discovery> {
        if self.configs.is_empty() {
            return Ok(hetblas_core::Discovery::default());
        }
        let node = emulated_node(&self.configs, crate::choose_blas(&self.library)?.blas)?;
        for (i, d) in node.devices.iter().enumerate() {
            d.faults().arm_matching(i, &self.faults);
        }
        Ok(hetblas_core::Discovery {
            devices: node
                .devices
                .into_iter()
                .map(|d| d as Arc<dyn Device>)
                .collect(),
            links: node.links,
        })
    }
}
