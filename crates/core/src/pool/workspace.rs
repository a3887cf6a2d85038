//! What the pool keeps between calls for the devices to work in: one buffer of tile slots per
//! device, the host staging slots of two-hop routes and host folds, and the host folder. Kept,
//! because allocating device memory and page-locking host memory cost more than a small GEMM.

use crate::device::Device;
use crate::error::Result;
use crate::fold::HostFolder;
use crate::memory::{Buffer, HostAccess};
use crate::plan::Plan;
use std::sync::{Arc, Mutex, MutexGuard};

pub(super) type DeviceSlots<'a> = MutexGuard<'a, Option<Box<dyn Buffer>>>;
pub(super) type HostSlots<'a> = MutexGuard<'a, Option<Vec<u64>>>;

pub(super) struct Workspaces {
    /// Per pool device, its tile slots.
    device: Vec<Mutex<Option<Box<dyn Buffer>>>>,
    /// Host staging slots (u64 for 8-byte alignment).
    host: Mutex<Option<Vec<u64>>>,
    /// What host folds run on, started on first use.
    folder: Mutex<Option<Arc<HostFolder>>>,
}

impl Workspaces {
    pub(super) fn new(devices: usize) -> Workspaces {
        Workspaces {
            device: (0..devices).map(|_| Mutex::new(None)).collect(),
            host: Mutex::new(None),
            folder: Mutex::new(None),
        }
    }

    /// Bytes held on pool device `i`: the autotuner counts them as free (they are ours).
    pub(super) fn held(&self, i: usize) -> u64 {
        lock(&self.device[i]).as_ref().map_or(0, |b| b.len() as u64)
    }

    /// The slots of every plan device (`ids`: their pool indices), grown to what `plan` needs;
    /// returns the guards (the slots are the caller's until dropped) and the base addresses.
    ///
    /// # Errors
    /// `OutOfMemory` naming the device that cannot hold its slots.
    pub(super) fn device_slots(
        &self,
        devices: &[Arc<dyn Device>],
        ids: &[usize],
        plan: &Plan,
    ) -> Result<(Vec<DeviceSlots<'_>>, Vec<u64>)> {
        let mut guards = Vec::with_capacity(ids.len());
        let mut addrs = Vec::with_capacity(ids.len());
        for (pd, &di) in plan.devices.iter().zip(ids) {
            let need = pd.slots as usize * plan.slot_bytes;
            let mut g = lock(&self.device[di]);
            if need > 0 && g.as_ref().is_none_or(|b| b.len() < need) {
                *g = None; // free the old one first: device memory is precious
                let d = &devices[di];
                *g = Some(
                    d.allocate(need)
                        .map_err(|e| e.on_device(&d.info().label()))?,
                );
            }
            addrs.push(g.as_ref().map_or(0, |b| b.addr()));
            guards.push(g);
        }
        Ok((guards, addrs))
    }

    /// The host staging slots `plan` needs, grown when short, page-locked for the accelerators
    /// among `users`; `all` are every device of the pool (an old buffer is released from each).
    /// Returns the guard and the base address (0 when the plan stages nothing).
    pub(super) fn host_slots(
        &self,
        all: &[Arc<dyn Device>],
        users: &[Arc<dyn Device>],
        plan: &Plan,
    ) -> Result<(HostSlots<'_>, u64)> {
        let mut guard = lock(&self.host);
        let need = plan.host_slots as usize * plan.slot_bytes;
        if need > 0 && guard.as_ref().is_none_or(|v| v.len() * 8 < need) {
            if let Some(old) = guard.take() {
                for d in all {
                    d.release_host(old.as_ptr() as u64, old.len() * 8)?;
                }
            }
            *guard = Some(vec![0u64; need.div_ceil(8)]);
        }
        let addr = guard.as_ref().map_or(0, |v| v.as_ptr() as u64);
        if let Some(v) = guard.as_ref().filter(|_| need > 0) {
            for d in users.iter().filter(|d| !d.space().is_host()) {
                d.prepare_host(v.as_ptr() as u64, v.len() * 8, HostAccess::ReadWrite)
                    .map_err(|e| e.on_device(&d.info().label()))?;
            }
        }
        Ok((guard, addr))
    }

    /// The host folder, started on first use.
    pub(super) fn folder(&self) -> Result<Arc<HostFolder>> {
        let mut f = lock(&self.folder);
        if let Some(folder) = f.as_ref() {
            return Ok(folder.clone());
        }
        let folder = Arc::new(HostFolder::new()?);
        *f = Some(folder.clone());
        Ok(folder)
    }

    /// Releases the staging slots from every device that may have page-locked them.
    pub(super) fn release_host(&self, devices: &[Arc<dyn Device>]) {
        if let Some(v) = lock(&self.host).take() {
            for d in devices {
                let _ = d.release_host(v.as_ptr() as u64, v.len() * 8);
            }
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (caches, workspaces) stays valid.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
