//! The Device trait: what a backend implements for each processor it drives, and the Backend
//! trait that discovers them.
//!
//! A device owns one memory space, allocates buffers in it, offers one or more compute queues
//! and runs tile kernels ([`Kernel`]). Copies between spaces are [`Link`]s, provided by the
//! backend that owns the DMA engine. Nothing here is vendor-specific: the CPU, the host-emulated
//! devices, CUDA and HIP GPUs all fit the same shape.

use crate::error::Result;
use crate::kernel::Kernel;
use crate::link::Link;
use crate::memory::{Buffer, HostAccess, MemorySpace};
use crate::queue::Queue;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// What kind of processor a device is; the planner treats kinds alike, reports show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DeviceKind {
    /// The host CPU, computing in place in host memory.
    Cpu,
    /// A discrete accelerator with its own memory.
    Gpu,
    /// A device emulated in host memory (tests, what-if runs on machines without GPUs).
    Emulated,
}

/// Identity and capacity of a device.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    /// Backend name: "cpu", "emulated", "cuda", "hip".
    pub backend: String,
    pub vendor: String,
    pub name: String,
    /// Index among the backend's devices (the vendor's device ordinal for GPUs).
    pub index: usize,
    pub kind: DeviceKind,
    /// Size of the device's memory in bytes.
    pub memory_bytes: u64,
    /// Free-form detail: library in use, compute capability, emulated rates.
    pub detail: String,
}

impl DeviceInfo {
    /// "cuda:0", "cpu:0", "emulated:2".
    pub fn label(&self) -> String {
        format!("{}:{}", self.backend, self.index)
    }
}

/// A processor hetblas can run tile kernels on.
pub trait Device: Send + Sync + fmt::Debug {
    fn info(&self) -> &DeviceInfo;
    /// The memory space the device computes in.
    fn space(&self) -> MemorySpace;
    /// Bytes of its memory the planner may use for tiles.
    fn memory_budget(&self) -> u64;
    /// Allocates `bytes` in the device's space.
    ///
    /// # Errors
    /// `OutOfMemory` when the space cannot provide it.
    fn allocate(&self, bytes: usize) -> Result<Box<dyn Buffer>>;
    /// The queues kernels run on (at least one). Several let independent tiles run concurrently.
    fn compute_queues(&self) -> &[Arc<dyn Queue>];
    /// The tile kernels.
    fn kernel(&self) -> &dyn Kernel;
    /// Makes the host region `[addr, addr + bytes)` ready for this device's DMA engine
    /// (page-locking for GPUs). Called once per host operand and call, while no copy is in
    /// flight; backends cache the work. `access` says whether the call will write the region.
    fn prepare_host(&self, _addr: u64, _bytes: usize, _access: HostAccess) -> Result<()> {
        Ok(())
    }
    /// Whether `[addr, addr + bytes)` is ready for this device's DMA engine as it stands:
    /// `prepare_host` would change nothing. Unlike `prepare_host`, it may run while copies of
    /// other calls are in flight (it only checks, and never registers or unregisters memory);
    /// a pool runs concurrent calls on host operands for which it returns `true`.
    fn host_prepared(&self, _addr: u64, _bytes: usize, _access: HostAccess) -> Result<bool> {
        Ok(true)
    }
    /// [`host_prepared`](Self::host_prepared) of every region: `true` when each is. A backend
    /// that verifies registrations by copies overrides it to wait for all at once.
    fn hosts_prepared(&self, regions: &[(u64, usize, HostAccess)]) -> Result<bool> {
        for &(addr, bytes, access) in regions {
            if !self.host_prepared(addr, bytes, access)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    /// Called once a call's host `regions` are ready (after `hosts_prepared` or
    /// `prepare_host`), before its first task: a backend may start work on them that runs
    /// beside the call (populating a fresh output's pages). What it returns is dropped when
    /// the call has ended, and ends that work.
    ///
    /// # Safety
    /// `regions` are the call's host operands: they stay mapped, and the program leaves them
    /// alone, until the returned value is dropped.
    unsafe fn begin_host_call(
        &self,
        _regions: &[(u64, usize, HostAccess)],
    ) -> Option<Box<dyn std::any::Any + Send>> {
        None
    }
    /// Whether this device's copies into the host output `[addr, addr + bytes)` would go
    /// through staging buffers, each write-back then copied out by host threads (a fresh result
    /// array its backend does not page-lock): the decision prices those copy-outs
    /// ([`crate::profile::StagedOut`]).
    fn stages_host_output(&self, _addr: u64, _bytes: usize) -> bool {
        false
    }
    /// Forgets whatever `prepare_host` kept for `[addr, addr + bytes)` (page-locking): call it
    /// before freeing a buffer that was passed to hetblas, while no call is running.
    fn release_host(&self, _addr: u64, _bytes: usize) -> Result<()> {
        Ok(())
    }
    /// What [`prepare_host`](Self::prepare_host) did so far (registrations, hits, drops);
    /// `None` where it keeps nothing. Devices of one runtime may share one cache.
    fn host_pin_stats(&self) -> Option<crate::pin_stats::PinStats> {
        None
    }
    /// GEMM rate (flop/s) known without calibration (emulated devices know theirs); `None`
    /// when only calibration can tell.
    fn nominal_flops(&self, _dtype: crate::scalar::DType) -> Option<f64> {
        None
    }
    /// Called before a call in which the host also feeds `accelerators` other devices: a
    /// device computing on the host (the CPU) leaves them cores for their issue threads and
    /// staging copies.
    fn share_host(&self, _accelerators: usize) {}
    /// The device's fault injector, for backends that support fault injection
    /// ([`crate::fault`]: the emulated devices and the GPU layer).
    fn fault_injector(&self) -> Option<&Arc<crate::fault::FaultInjector>> {
        None
    }

    /// Whether `addr` is an address in this device's own memory (memory it computes in and
    /// the host cannot read directly), whoever allocated it: a GPU asks its runtime
    /// (`cuPointerGetAttribute`, `hipPointerGetAttributes`), an emulated device its live
    /// allocations. Lets callers that receive raw pointers (the drop-in BLAS) find operands
    /// that must be computed where they live. Devices that compute in host memory say `false`.
    fn owns_address(&self, _addr: u64) -> bool {
        false
    }
    /// Saves what the calling thread has current in this device's runtime, which working on
    /// the device changes on the thread that calls into it (a GPU's context), and returns a
    /// guard that puts it back when dropped: a caller's own GPU code after a BLAS call must
    /// find its context as it left it. `None` (the default) for devices that change no thread
    /// state. Devices of one backend (`info().backend`) share that state: a pool keeps it
    /// once per backend and call.
    fn keep_thread_context(&self) -> Option<ThreadContext> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// A runtime's thread state saved by [`Device::keep_thread_context`], put back when dropped, on
/// the thread that saved it (it is not `Send`).
pub struct ThreadContext {
    _restore: Box<dyn Any>,
}

impl ThreadContext {
    /// Holds `guard`, whose `Drop` puts the saved state back.
    pub fn new<G: 'static>(guard: G) -> ThreadContext {
        ThreadContext {
            _restore: Box::new(guard),
        }
    }
}

impl fmt::Debug for ThreadContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ThreadContext")
    }
}

/// What a backend found on this machine.
#[derive(Default)]
pub struct Discovery {
    pub devices: Vec<Arc<dyn Device>>,
    /// Links touching the backend's devices: host<->device both ways, and device<->device peers.
    pub links: Vec<Arc<dyn Link>>,
}

/// A family of devices behind one vendor library.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    /// Finds the backend's devices.
    ///
    /// # Errors
    /// `Unavailable` with the reason (library not found, no device, driver too old) when the
    /// backend cannot run here. That is a normal outcome, not a failure of hetblas.
    fn discover(&self) -> Result<Discovery>;
}

/// What discovery said about one backend, for `hetblas devices`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackendStatus {
    pub backend: String,
    /// Number of devices taken from it.
    pub devices: usize,
    /// Why it contributes no device, when it does not.
    pub reason: Option<String>,
}

/// Parses a device-ordinal filter such as `"0,2"` (`HETBLAS_CUDA_DEVICES`, `HETBLAS_HIP_DEVICES`).
///
/// # Errors
/// `InvalidInput` naming the entry that is not an ordinal.
pub fn parse_device_filter(v: &str) -> Result<Vec<i32>> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u16>().map(i32::from).map_err(|_| {
                crate::error::Error::InvalidInput(format!("bad device ordinal {s:?} in {v:?}"))
            })
        })
        .collect()
}

/// The ordinals a backend takes of its `count` devices: those `filter` (the setting `var`,
/// when given) lists that exist, in its order, else all of them.
///
/// # Errors
/// `Unavailable` when the filter selects none of the devices (naming `var` and its value).
pub fn select_ordinals(
    backend: &'static str,
    var: &str,
    filter: Option<&[i32]>,
    count: i32,
) -> Result<Vec<i32>> {
    let ordinals: Vec<i32> = match filter {
        Some(f) => f
            .iter()
            .copied()
            .filter(|o| (0..count).contains(o))
            .collect(),
        None => (0..count).collect(),
    };
    if ordinals.is_empty() {
        let list: Vec<String> = filter.unwrap_or(&[]).iter().map(i32::to_string).collect();
        return Err(crate::error::Error::Unavailable {
            backend,
            reason: format!(
                "{var}={} selects none of the {count} GPUs (ordinals 0 to {})",
                list.join(","),
                count - 1
            ),
        });
    }
    Ok(ordinals)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ordinals_follow_the_filter() {
        let sel = |f: Option<&[i32]>, n| super::select_ordinals("x", "X_DEVICES", f, n);
        assert_eq!(sel(None, 3).unwrap(), vec![0, 1, 2]);
        assert_eq!(sel(Some(&[2, 0, 7]), 3).unwrap(), vec![2, 0]);
        let none = sel(Some(&[5]), 2).unwrap_err();
        assert!(
            matches!(none, crate::error::Error::Unavailable { .. })
                && none
                    .to_string()
                    .contains("X_DEVICES=5 selects none of the 2 GPUs"),
            "{none}"
        );
    }

    #[test]
    fn device_filter() {
        assert_eq!(super::parse_device_filter("0, 2").unwrap(), vec![0, 2]);
        assert_eq!(super::parse_device_filter("").unwrap(), Vec::<i32>::new());
        assert!(super::parse_device_filter("x").is_err());
        assert!(super::parse_device_filter("-1").is_err());
    }
}
