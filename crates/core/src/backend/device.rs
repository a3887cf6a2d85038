//! The Device trait: what a backend implements for each processor it drives (a memory space,
//! compute queues, tile kernels), and the Backend trait that discovers them. Copies between
//! spaces are [`Link`]s, provided by the backend that owns the DMA engine.

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
    fn kernel(&self) -> &dyn Kernel;
    /// Makes the host region `[addr, addr + bytes)` ready for this device's DMA engine
    /// (page-locking for GPUs), while no copy is in flight; backends cache the work.
    fn prepare_host(&self, _addr: u64, _bytes: usize, _access: HostAccess) -> Result<()> {
        Ok(())
    }
    /// Whether `prepare_host` would change nothing for `[addr, addr + bytes)`. It only checks,
    /// so it may run while other calls' copies are in flight (a pool runs concurrent calls so).
    fn host_prepared(&self, _addr: u64, _bytes: usize, _access: HostAccess) -> Result<bool> {
        Ok(true)
    }
    /// [`host_prepared`](Self::host_prepared) of every region (overridden to verify all at once).
    fn hosts_prepared(&self, regions: &[(u64, usize, HostAccess)]) -> Result<bool> {
        for &(addr, bytes, access) in regions {
            if !self.host_prepared(addr, bytes, access)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    /// Called once a call's host `regions` are ready, before its first task: a backend may start
    /// work beside the call (populating a fresh output's pages), ended when what it returns is
    /// dropped at the call's end.
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
    /// Whether copies into the host output `[addr, addr + bytes)` would be staged, then copied
    /// out by host threads (the decision prices that: [`crate::profile::StagedOut`]).
    fn stages_host_output(&self, _addr: u64, _bytes: usize) -> bool {
        false
    }
    /// Forgets what `prepare_host` kept for `[addr, addr + bytes)`: call it before freeing a
    /// buffer passed to hetblas, while no call is running.
    fn release_host(&self, _addr: u64, _bytes: usize) -> Result<()> {
        Ok(())
    }
    /// What [`prepare_host`](Self::prepare_host) did so far; `None` where it keeps nothing.
    fn host_pin_stats(&self) -> Option<crate::pin_stats::PinStats> {
        None
    }
    /// GEMM rate (flop/s) known without calibration (emulated devices know theirs).
    fn nominal_flops(&self, _dtype: crate::scalar::DType) -> Option<f64> {
        None
    }
    /// Called before a call in which the host also feeds `accelerators` other devices: the CPU
    /// leaves them cores for their issue threads and staging copies.
    fn share_host(&self, _accelerators: usize) {}
    /// The device's fault injector ([`crate::fault`]), where the backend supports one.
    fn fault_injector(&self) -> Option<&Arc<crate::fault::FaultInjector>> {
        None
    }

    /// Whether `addr` lies in this device's own memory, whoever allocated it (a GPU asks its
    /// runtime): the drop-in BLAS finds operands to compute where they live. `false` for
    /// devices computing in host memory.
    fn owns_address(&self, _addr: u64) -> bool {
        false
    }
    /// Saves the calling thread's current state in this device's runtime (a GPU's context) in a
    /// guard that puts it back when dropped, so the caller's own GPU code finds it as it left
    /// it. `None` for devices changing no thread state. Devices of one backend share that state.
    fn keep_thread_context(&self) -> Option<ThreadContext> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// A runtime's thread state saved by [`Device::keep_thread_context`], put back when dropped, on
/// the thread that saved it (it is not `Send`).
#[derive(Debug)]
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
    /// Finds the backend's devices; `Unavailable` with the reason when it cannot run here.
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

/// The ordinals a backend takes of its `count` devices: those `filter` (the setting `var`, when
/// given) lists that exist, in its order, else all; `Unavailable` when it selects none.
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
