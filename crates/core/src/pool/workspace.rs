//! What the pool keeps between calls for the devices to work in (tile slot buffers, host
//! staging buffers, host folders): allocating device memory and page-locking host memory cost
//! more than a small GEMM. Each call takes its own buffers, idle ones when large enough; a call
//! out of memory waits for another to give its buffers back ([`Workspaces::wait_for_release`]),
//! so concurrency delays a call but never fails one that would succeed alone.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::fold::HostFolder;
use crate::memory::Buffer;
use crate::plan::Plan;
use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};

pub(super) struct Workspaces {
    /// Per pool device, its idle slot buffers.
    idle: Vec<Mutex<Vec<Box<dyn Buffer>>>>,
    /// Per pool device, bytes of every slot buffer the pool owns there (idle or in use).
    owned: Vec<Mutex<u64>>,
    /// Idle host staging buffers.
    idle_host: Mutex<Vec<HostStaging>>,
    /// Idle host folders: each call that folds takes one, so that the folds of calls running
    /// at once do not queue behind each other.
    idle_folders: Mutex<Vec<Arc<HostFolder>>>,
    /// The threads every folder folds on, started on first use.
    fold_workers: Mutex<Option<Arc<rayon::ThreadPool>>>,
    /// What every folder's folds achieved.
    fold_speed: Arc<crate::tuning::fold_speed::FoldSpeed>,
    usage: Mutex<Usage>,
    released: Condvar,
}

/// Calls holding buffers, and how many times a call that had all its buffers gave them back.
#[derive(Default)]
struct Usage {
    holding: usize,
    releases: u64,
}

thread_local! {
    /// Releases of complete workspaces by this thread: a call's workspace is taken and given
    /// back on the thread that runs the call, so these are the call's own.
    static OWN_RELEASES: Cell<u64> = const { Cell::new(0) };
}

/// Where the releases stood when an attempt began ([`Workspaces::epoch`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Epoch {
    releases: u64,
    own: u64,
}

/// A host staging buffer of the pool (u64 words for 8-byte alignment), and the pool devices
/// for whose DMA it was made ready.
struct HostStaging {
    words: Vec<u64>,
    /// The pool's own memory, never freed while registered: once ready for a device, its
    /// registration needs no verifying (an evicted one only makes the links stage).
    ready_for: Vec<usize>,
}

/// The buffers one call works in; back to the idle lists when dropped.
pub(super) struct CallWorkspace<'a> {
    pool: &'a Workspaces,
    /// (pool device index, its slot buffer).
    device: Vec<(usize, Box<dyn Buffer>)>,
    host: Option<HostStaging>,
    /// Whether the call got every buffer it asked for. Only such a call's release counts as
    /// one that others may wait for: a call that failed to get its buffers gives back what it
    /// took and then waits itself, and counting that would wake it at once, over and over.
    complete: bool,
}

impl CallWorkspace<'_> {
    /// The base address of the host staging buffer (0 when the plan stages nothing).
    pub(super) fn host_addr(&self) -> u64 {
        self.host.as_ref().map_or(0, |h| h.words.as_ptr() as u64)
    }

    /// The host staging buffer as (address, bytes), when there is one and it is not yet known
    /// ready for the DMA of every device of `accelerators` (pool indices).
    pub(super) fn host_region_to_prepare(&self, accelerators: &[usize]) -> Option<(u64, usize)> {
        self.host
            .as_ref()
            .filter(|h| accelerators.iter().any(|d| !h.ready_for.contains(d)))
            .map(|h| (h.words.as_ptr() as u64, h.words.len() * 8))
    }

    /// Records that the host staging buffer is ready for the DMA of `accelerators`.
    pub(super) fn host_ready_for(&mut self, accelerators: &[usize]) {
        if let Some(h) = self.host.as_mut() {
            for &d in accelerators {
                if !h.ready_for.contains(&d) {
                    h.ready_for.push(d);
                }
            }
        }
    }
}

/// A host folder one call folds on; back to the idle list when dropped (the executor has
/// synchronised its queue by then).
pub(super) struct FolderLease<'a> {
    pool: &'a Workspaces,
    pub folder: Arc<HostFolder>,
}

impl Drop for FolderLease<'_> {
    fn drop(&mut self) {
        lock(&self.pool.idle_folders).push(self.folder.clone());
    }
}

impl Drop for CallWorkspace<'_> {
    fn drop(&mut self) {
        for (i, b) in self.device.drain(..) {
            lock(&self.pool.idle[i]).push(b);
        }
        if let Some(h) = self.host.take() {
            lock(&self.pool.idle_host).push(h);
        }
        let mut u = lock(&self.pool.usage);
        u.holding -= 1;
        if self.complete {
            u.releases += 1;
            OWN_RELEASES.with(|n| n.set(n.get() + 1));
            self.pool.released.notify_all();
        }
    }
}

impl Workspaces {
    pub(super) fn new(devices: usize) -> Workspaces {
        Workspaces {
            idle: (0..devices).map(|_| Mutex::new(Vec::new())).collect(),
            owned: (0..devices).map(|_| Mutex::new(0)).collect(),
            idle_host: Mutex::new(Vec::new()),
            idle_folders: Mutex::new(Vec::new()),
            fold_workers: Mutex::new(None),
            fold_speed: Arc::default(),
            usage: Mutex::new(Usage::default()),
            released: Condvar::new(),
        }
    }

    /// What the pool's host folds achieved.
    pub(super) fn fold_speed(&self) -> &crate::tuning::fold_speed::FoldSpeed {
        &self.fold_speed
    }

    /// Bytes the pool owns on pool device `i`, idle or in use by a call: the autotuner counts
    /// them as free, so that a decision does not depend on what other calls hold at the time
    /// (tiles, and so rounding, are the same whatever the interleaving).
    pub(super) fn held(&self, i: usize) -> u64 {
        *lock(&self.owned[i])
    }

    /// Buffers for one call: per plan device (`ids`: their pool indices), slots of what `plan`
    /// needs, and a host staging buffer when the plan stages.
    ///
    /// # Errors
    /// `OutOfMemory` naming the device that cannot hold its slots (after freeing its idle
    /// buffers); what was taken goes back.
    pub(super) fn acquire(
        &self,
        devices: &[Arc<dyn Device>],
        ids: &[usize],
        plan: &Plan,
    ) -> Result<CallWorkspace<'_>> {
        lock(&self.usage).holding += 1;
        let mut ws = CallWorkspace {
            pool: self,
            device: Vec::with_capacity(ids.len()),
            host: None,
            complete: false,
        };
        for (d, &di) in ids.iter().enumerate().take(plan.devices.len()) {
            let need = plan.workspace_bytes(d);
            if need > 0 {
                let buffer = self.device_buffer(&devices[di], di, need)?;
                ws.device.push((di, buffer));
            }
        }
        let need = plan.host_slots as usize * plan.slot_bytes;
        if need > 0 {
            ws.host = Some(self.host_buffer(need)?);
        }
        ws.complete = true;
        Ok(ws)
    }

    /// Base addresses of a call's slot buffers, per plan device (0 for a device with none).
    pub(super) fn addresses(ws: &CallWorkspace<'_>, ids: &[usize]) -> Vec<u64> {
        ids.iter()
            .map(|i| {
                ws.device
                    .iter()
                    .find(|(d, _)| d == i)
                    .map_or(0, |(_, b)| b.addr())
            })
            .collect()
    }

    /// The smallest idle buffer of at least `need` bytes on device `i`, else a new one (the
    /// idle buffers smaller than `need` are freed first: device memory is precious, and so
    /// the pool keeps at most one buffer per call that ran at once).
    fn device_buffer(&self, d: &Arc<dyn Device>, i: usize, need: usize) -> Result<Box<dyn Buffer>> {
        let smaller: Vec<Box<dyn Buffer>> = {
            let mut idle = lock(&self.idle[i]);
            let best = (0..idle.len())
                .filter(|&j| idle[j].len() >= need)
                .min_by_key(|&j| idle[j].len());
            if let Some(j) = best {
                return Ok(idle.swap_remove(j));
            }
            std::mem::take(&mut *idle)
        };
        self.free(i, smaller);
        let buffer = match d.allocate(need) {
            Ok(b) => b,
            Err(Error::OutOfMemory { .. }) => {
                // The idle buffers there are ours: free them and try once more.
                self.free_idle(i);
                d.allocate(need)
                    .map_err(|e| e.on_device(&d.info().label()))?
            }
            Err(e) => return Err(e.on_device(&d.info().label())),
        };
        *lock(&self.owned[i]) += buffer.len() as u64;
        Ok(buffer)
    }

    /// Frees the idle slot buffers of pool device `i`.
    fn free_idle(&self, i: usize) {
        self.free(i, std::mem::take(&mut *lock(&self.idle[i])));
    }

    /// Frees `buffers`, slot buffers of pool device `i`.
    fn free(&self, i: usize, buffers: Vec<Box<dyn Buffer>>) {
        let bytes: u64 = buffers.iter().map(|b| b.len() as u64).sum();
        drop(buffers);
        let mut owned = lock(&self.owned[i]);
        *owned = owned.saturating_sub(bytes);
    }

    /// The smallest idle host staging buffer of at least `need` bytes, else a new one.
    fn host_buffer(&self, need: usize) -> Result<HostStaging> {
        let mut idle = lock(&self.idle_host);
        let best = (0..idle.len())
            .filter(|&j| idle[j].words.len() * 8 >= need)
            .min_by_key(|&j| idle[j].words.len());
        if let Some(j) = best {
            return Ok(idle.swap_remove(j));
        }
        drop(idle);
        let words = need.div_ceil(8);
        let mut v = Vec::new();
        v.try_reserve_exact(words).map_err(|e| Error::OutOfMemory {
            device: "host".into(),
            detail: format!("{need} B of host staging slots: {e}"),
        })?;
        v.resize(words, 0);
        Ok(HostStaging {
            words: v,
            ready_for: Vec::new(),
        })
    }

    /// Where the releases stand: a call takes it before it tries, and passes it to
    /// [`Workspaces::wait_for_release`] when it runs out of memory.
    pub(super) fn epoch(&self) -> Epoch {
        Epoch {
            releases: lock(&self.usage).releases,
            own: OWN_RELEASES.with(Cell::get),
        }
    }

    /// After an out-of-memory error of an attempt that began at `epoch`: `true` (try again) once
    /// another call has given its buffers back since `epoch` (waiting while others hold some);
    /// `false` when none holds any and none was released. The caller's own releases don't count.
    pub(super) fn wait_for_release(&self, epoch: Epoch) -> bool {
        let own = OWN_RELEASES.with(Cell::get) - epoch.own;
        let mut u = lock(&self.usage);
        loop {
            if u.releases - epoch.releases > own {
                return true;
            }
            if u.holding == 0 {
                return false;
            }
            u = self.released.wait(u).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A host folder for one call: an idle one, else a new one (its queue's thread started;
    /// the fold threads are shared by all and started on first use).
    pub(super) fn folder(&self) -> Result<FolderLease<'_>> {
        if let Some(folder) = lock(&self.idle_folders).pop() {
            return Ok(FolderLease { pool: self, folder });
        }
        let workers = {
            let mut w = lock(&self.fold_workers);
            match w.as_ref() {
                Some(w) => w.clone(),
                None => w.insert(Arc::new(crate::fold::fold_workers()?)).clone(),
            }
        };
        Ok(FolderLease {
            pool: self,
            folder: Arc::new(HostFolder::with_workers(workers, self.fold_speed.clone())?),
        })
    }

    /// Frees every idle buffer (device slots and host staging, released from every device that
    /// may have page-locked it). The caller makes sure no call runs.
    pub(super) fn release_idle(&self, devices: &[Arc<dyn Device>]) -> Result<()> {
        for i in 0..self.idle.len() {
            self.free_idle(i);
        }
        let hosts: Vec<HostStaging> = std::mem::take(&mut *lock(&self.idle_host));
        let mut result = Ok(());
        for (h, d) in hosts
            .iter()
            .flat_map(|h| devices.iter().map(move |d| (h, d)))
        {
            result = result.and(d.release_host(h.words.as_ptr() as u64, h.words.len() * 8));
        }
        result
    }
}

// A poisoned lock only means a panic elsewhere; the data (caches, workspaces) stays valid.
pub(super) use crate::error::lock;

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's buffers given back on this thread: `complete` when it had got all of them.
    fn give_back(w: &Workspaces, complete: bool) {
        drop(CallWorkspace {
            pool: w,
            device: Vec::new(),
            host: None,
            complete,
        });
    }

    /// A call's buffers taken whole and given back on this thread.
    fn hold_and_release(w: &Workspaces) {
        lock(&w.usage).holding += 1;
        give_back(w, true);
    }

    #[test]
    fn a_calls_own_release_does_not_make_it_try_again() {
        // An attempt that got its buffers, then ran out of memory: with no other call, giving
        // up is the answer (counting its own release, it would try again forever).
        let w = Workspaces::new(1);
        let epoch = w.epoch();
        hold_and_release(&w);
        assert!(!w.wait_for_release(epoch));
    }

    #[test]
    fn another_calls_release_since_the_attempt_began_makes_it_try_again() {
        let w = Workspaces::new(1);
        let epoch = w.epoch();
        std::thread::scope(|s| {
            s.spawn(|| hold_and_release(&w));
        });
        // Released before the wait began, and no call holds any now: still a reason to try.
        assert!(w.wait_for_release(epoch));
        // A failed attempt's partial buffers are not a release.
        let epoch = w.epoch();
        lock(&w.usage).holding += 1;
        give_back(&w, false);
        assert!(!w.wait_for_release(epoch));
    }

    #[test]
    fn a_waiting_call_wakes_when_another_gives_its_buffers_back() {
        let w = Workspaces::new(1);
        lock(&w.usage).holding += 1; // another call holds buffers
        let epoch = w.epoch();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                give_back(&w, true);
            });
            assert!(w.wait_for_release(epoch));
        });
    }
}
