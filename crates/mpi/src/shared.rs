//! Panels in an MPI-3 shared-memory window, for a broadcast group whose processes share a node
//! ([`crate::Transport::Shared`]).
//!
//! Each process of the group owns a segment of the window holding its panel slots. The owner
//! of a k-block packs it into its own segment and tells the others (an empty message); they
//! multiply straight from the owner's segment (their runtime copies it to their GPU with its
//! own DMA) and tell the owner when their product is done, before the owner packs into that
//! slot again. Nothing is copied between processes: between two ranks of one node, Open MPI's
//! shared-memory transport moved gigabyte panels at 2 GB/s or less, a GPU reads host memory
//! at 50 GB/s.
//!
//! The window is kept in the [`crate::Workspace`] across calls (allocating and first touching
//! gigabytes, and page-locking them for the GPUs, costs more than a call).

use crate::error::{DistError, Result};
use hetblas::{HostAccess, Runtime};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{CommunicatorRelation, SimpleCommunicator};
use mpi::traits::*;
use std::os::raw::{c_int, c_void};

/// A window of panel slots shared by the processes of a group on one node.
pub struct SharedPanels<T> {
    win: ffi::MPI_Win,
    /// A duplicate of the group's communicator: later calls check theirs against it.
    comm: SimpleCommunicator,
    /// Each member's segment and its slot length in elements.
    bases: Vec<*mut T>,
    slot_lens: Vec<usize>,
    slots: usize,
    /// Every segment has been made ready for the accelerators' DMA ([`SharedPanels::prepare`]).
    prepared: bool,
}

// SAFETY: the pointers address the window's memory, which this value owns until `free`; the
// window handle is process-wide, not bound to a thread. Moving the value to another thread
// (a workspace kept by a caller) is as safe as moving a `Vec<T>`; calls into MPI from that
// thread are the caller's business, as for every MPI call.
unsafe impl<T: Send> Send for SharedPanels<T> {}

impl<T> std::fmt::Debug for SharedPanels<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SharedPanels {{ {} slots, slot lengths {:?} }}",
            self.slots, self.slot_lens
        )
    }
}

impl<T> SharedPanels<T> {
    /// Slot `s` of `member`'s segment, `len` elements (at most its slot length).
    pub(crate) fn slot(&self, member: usize, s: usize, len: usize) -> (*mut T, usize) {
        debug_assert!(s < self.slots && len <= self.slot_lens[member]);
        // SAFETY: the offset stays inside the member's segment (s < slots).
        let p = unsafe { self.bases[member].add(s * self.slot_lens[member]) };
        (p, len)
    }

    /// Orders this process's stores into the window before the signals that follow, and the
    /// loads that follow a received signal after the owner's stores.
    pub(crate) fn sync(&self) {
        // SAFETY: the window is live and in its lock_all epoch.
        unsafe { ffi::MPI_Win_sync(self.win) };
    }
}

impl<T: hetblas::Scalar> SharedPanels<T> {
    /// Whether every process of `comm` shares memory with this one. Collective over `comm`.
    pub(crate) fn one_node(comm: &SimpleCommunicator) -> bool {
        comm.split_shared(0).size() == comm.size()
    }

    /// A window of `slots` slots of `slot_len` elements per process, the one in `cached` when
    /// it fits on every process of `comm`, and whether it is new. Collective over `comm`.
    ///
    /// # Errors
    /// An MPI error allocating the window; the runtime's error unregistering a window freed.
    pub(crate) fn obtain(
        cached: Option<Self>,
        rt: &Runtime,
        comm: &SimpleCommunicator,
        slots: usize,
        slot_len: usize,
    ) -> Result<(Self, bool)> {
        let same_group = |w: &Self| {
            matches!(
                comm.compare(&w.comm),
                CommunicatorRelation::Identical | CommunicatorRelation::Congruent
            )
        };
        // The cached window is freed or kept by the whole group: all agree it fits, or all
        // know it does not (a window of another group is left allocated: freeing it is
        // collective over a group that is not here).
        let fits = cached.as_ref().is_some_and(|w| {
            same_group(w) && w.slots >= slots && w.slot_lens[comm.rank() as usize] >= slot_len
        });
        let mut all = 0i32;
        comm.all_reduce_into(
            &i32::from(fits),
            &mut all,
            mpi::collective::SystemOperation::min(),
        );
        if let Some(w) = cached {
            if all == 1 {
                return Ok((w, false));
            }
            if same_group(&w) {
                w.free(rt)?;
            }
        }
        Self::allocate(comm, slots, slot_len).map(|w| (w, true))
    }

    fn allocate(comm: &SimpleCommunicator, slots: usize, slot_len: usize) -> Result<Self> {
        let size = std::mem::size_of::<T>();
        let bytes = (slots * slot_len * size) as ffi::MPI_Aint;
        let mut base: *mut T = std::ptr::null_mut();
        let mut win = std::mem::MaybeUninit::<ffi::MPI_Win>::uninit();
        // SAFETY: the out-pointers are valid for writes; `comm` is a live communicator; the
        // call is collective and every process of `comm` makes it.
        let rc = unsafe {
            ffi::MPI_Win_allocate_shared(
                bytes,
                size as c_int,
                ffi::RSMPI_INFO_NULL,
                comm.as_raw(),
                (&mut base as *mut *mut T).cast::<c_void>(),
                win.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(DistError::Grid(format!(
                "MPI_Win_allocate_shared of {bytes} bytes failed ({rc})"
            )));
        }
        // SAFETY: MPI_Win_allocate_shared succeeded and wrote the handle.
        let win = unsafe { win.assume_init() };
        // A passive-target epoch on every segment for the whole life of the window, so that
        // MPI_Win_sync orders the owner's stores before its signal (the unified memory model).
        // SAFETY: `win` is the live window just created.
        unsafe { ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win) };
        let p = comm.size() as usize;
        let mut bases = Vec::with_capacity(p);
        let mut slot_lens = Vec::with_capacity(p);
        for r in 0..p {
            let mut seg_bytes: ffi::MPI_Aint = 0;
            let mut unit: c_int = 0;
            let mut ptr: *mut T = std::ptr::null_mut();
            // SAFETY: `win` is live, `r` a rank of its group, the out-pointers valid.
            unsafe {
                ffi::MPI_Win_shared_query(
                    win,
                    r as c_int,
                    &mut seg_bytes,
                    &mut unit,
                    (&mut ptr as *mut *mut T).cast::<c_void>(),
                )
            };
            bases.push(ptr);
            slot_lens.push(seg_bytes as usize / size / slots.max(1));
        }
        Ok(SharedPanels {
            win,
            comm: comm.duplicate(),
            bases,
            slot_lens,
            slots,
            prepared: false,
        })
    }

    /// Every member's segment, whole.
    fn segments(&self) -> impl Iterator<Item = (*mut T, usize)> + '_ {
        self.bases
            .iter()
            .zip(&self.slot_lens)
            .map(|(&base, &len)| (base, len * self.slots))
            .filter(|&(base, len)| !base.is_null() && len > 0)
    }

    /// Page-locks every member's segment for the runtime's accelerators, once per window: the
    /// products then read their panels from registered memory, and no product pays a
    /// registration of the slot it meets first. Not collective (each process registers its
    /// own mapping of the window).
    ///
    /// # Errors
    /// The runtime's error registering a segment.
    pub(crate) fn prepare(&mut self, rt: &Runtime) -> Result<()> {
        if self.prepared {
            return Ok(());
        }
        for (base, len) in self.segments() {
            // SAFETY: the segment is live until `free`; only its address range is used (the
            // runtime page-locks it; no element is read here).
            let seg = unsafe { std::slice::from_raw_parts(base as *const T, len) };
            rt.prepare_host(seg, HostAccess::Read)?;
        }
        self.prepared = true;
        Ok(())
    }

    /// Whether every segment has been made ready for the accelerators' DMA.
    pub fn is_prepared(&self) -> bool {
        self.prepared
    }

    /// The number of segments (one per member with a part) and their bytes together.
    pub(crate) fn segments_count(&self) -> usize {
        self.segments().count()
    }
    pub(crate) fn bytes(&self) -> usize {
        self.segments().map(|(_, len)| len * size_of::<T>()).sum()
    }

    /// Gives back the runtime's page-locking of every segment and frees the window.
    /// Collective over the group.
    ///
    /// # Errors
    /// The runtime's error unregistering a segment (the window is freed anyway).
    pub fn free(mut self, rt: &Runtime) -> Result<()> {
        let mut first_err = Ok(());
        for (base, len) in self.segments() {
            // SAFETY: the segment is live until MPI_Win_free below; only read here.
            let seg = unsafe { std::slice::from_raw_parts(base as *const T, len) };
            if let Err(e) = rt.release_host(seg) {
                first_err = first_err.and(Err(e.into()));
            }
        }
        // SAFETY: the window is live and no request or slice into it outlives this call.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
        first_err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<X: Send>() {}

    #[test]
    fn a_workspace_holding_windows_can_move_between_threads() {
        assert_send::<SharedPanels<f64>>();
        assert_send::<crate::Workspace<f64>>();
    }
}
