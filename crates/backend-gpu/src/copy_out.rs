//! The copy-outs of a device->host link's staged write-backs, run in order by a thread of the
//! link: it waits on the host for each write-back's DMA, then copies the staging buffer into
//! the caller's memory.
//!
//! They ran as host functions on a stream of the link that waited for the DMA. Each then cost
//! a round trip through the GPU's stream on top of its bytes: the host function's dispatch,
//! and the event recorded after it that frees its staging slot for the next DMA. NumPy's
//! `a @ b` 4096 writes back 16 tiles of 8 MiB: on H200 the 16 copy-outs of a touched output
//! took 8.1 ms as host functions and 3.7 ms from a thread, the copies themselves 0.18-0.22 ms
//! each (2026-11-30, `compare.sh --copyout`, `crates/bench/cuda/copyout.cu`).
//!
//! An event of the link recorded while copy-outs are pending is a [`StagedEvent`]: its DMA's
//! event (what a device queue waits for: the device's memory is free once the DMA is done) and
//! the number of copy-outs that must be done before it is complete on the host.

use crate::runtime::{GpuRuntime, HostJob};
use crate::stream::GpuEvent;
use hetblas_core::{Error, Event, Result};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A link's copy-outs and the thread that runs them (started by the first).
pub(crate) struct CopyOuts {
    state: Mutex<State>,
    /// A copy-out was queued, or the thread is to stop.
    queued: Condvar,
    /// A copy-out finished.
    finished: Condvar,
}

struct State {
    jobs: VecDeque<(Arc<dyn Event>, HostJob)>,
    /// Copy-outs queued and finished since the start (a copy-out's number is its place).
    queued: u64,
    done: u64,
    /// The copy-outs that failed (their DMA failed, and they were skipped: the staging buffer
    /// may hold anything; or they panicked) and no drain has reported yet, by number: a wait for
    /// one of them or a later one reports the first.
    errors: BTreeMap<u64, Error>,
    stop: bool,
}

impl std::fmt::Debug for CopyOuts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("CopyOuts")
            .field("queued", &st.queued)
            .field("done", &st.done)
            .finish_non_exhaustive()
    }
}

impl CopyOuts {
    /// Starts the thread, named `name`.
    pub(crate) fn start(name: String) -> Result<Arc<CopyOuts>> {
        let outs = Arc::new(CopyOuts {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                queued: 0,
                done: 0,
                errors: BTreeMap::new(),
                stop: false,
            }),
            queued: Condvar::new(),
            finished: Condvar::new(),
        });
        let run = outs.clone();
        std::thread::Builder::new()
            .name(name)
            .spawn(move || run.run())
            .map_err(|e| Error::internal(format!("cannot start a copy-out thread: {e}")))?;
        Ok(outs)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job` to run once `dma` is complete; returns its number.
    pub(crate) fn push(&self, dma: Arc<dyn Event>, job: HostJob) -> u64 {
        let mut st = self.lock();
        st.jobs.push_back((dma, job));
        st.queued += 1;
        let n = st.queued;
        drop(st);
        self.queued.notify_one();
        n
    }

    /// The number of the last copy-out queued.
    pub(crate) fn last(&self) -> u64 {
        self.lock().queued
    }

    /// The number of the last copy-out queued while it is not done (`None` once every queued
    /// one is; an error when the DMA of one of them failed): one look at the state, for the
    /// link's every record.
    pub(crate) fn pending(&self) -> Result<Option<u64>> {
        let st = self.lock();
        let n = st.queued;
        if st.done < n {
            return Ok(Some(n));
        }
        State::outcome(&st, n).map(|()| None)
    }

    /// Whether copy-out `n` and those before it are done (an error when the DMA of one of
    /// them failed).
    pub(crate) fn is_done(&self, n: u64) -> Result<bool> {
        let st = self.lock();
        if st.done < n {
            return Ok(false);
        }
        State::outcome(&st, n).map(|()| true)
    }

    /// Blocks until copy-out `n` and those before it are done (skipped ones count).
    pub(crate) fn wait(&self, n: u64) -> Result<()> {
        let st = self.wait_for(n);
        State::outcome(&st, n)
    }

    /// As [`wait`](Self::wait), and the failures up to `n` are not reported again (the queue's
    /// synchronize); later ones still are.
    pub(crate) fn drain(&self, n: u64) -> Result<()> {
        let mut st = self.wait_for(n);
        let r = State::outcome(&st, n);
        st.errors = st.errors.split_off(&(n + 1));
        r
    }

    fn wait_for(&self, n: u64) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        while st.done < n {
            st = self.finished.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st
    }

    fn run(&self) {
        loop {
            let mut st = self.lock();
            while st.jobs.is_empty() && !st.stop {
                st = self.queued.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            let Some((dma, job)) = st.jobs.pop_front() else {
                return; // stopped, nothing left
            };
            let number = st.done + 1;
            drop(st);
            // A panic ends the copy-out, not the thread: its waiters get an error, not a hang.
            let result = dma.synchronize().and_then(|()| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
                    .map_err(|_| Error::internal("a staged copy-out panicked"))
            });
            let mut st = self.lock();
            st.done += 1;
            if let Err(e) = result {
                st.errors.insert(number, e);
            }
            drop(st);
            self.finished.notify_all();
        }
    }

    /// Lets the thread end once the copy-outs queued are done.
    pub(crate) fn stop(&self) {
        self.lock().stop = true;
        self.queued.notify_one();
    }
}

impl State {
    /// Copy-outs up to `n` (done): the first failure among them not reported yet.
    fn outcome(st: &State, n: u64) -> Result<()> {
        match st.errors.range(..=n).next() {
            Some((_, e)) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

/// An event of a device->host link recorded while copy-outs were pending: complete when its
/// DMA event is and copy-out `n` is done. Device queues wait for the DMA alone ([`GpuEvent::of`]
/// returns it), as do timings in traces (a staged write-back's copy-out is not in them).
pub struct StagedEvent<A: GpuRuntime> {
    pub(crate) dma: Arc<GpuEvent<A>>,
    n: u64,
    outs: Arc<CopyOuts>,
}

impl<A: GpuRuntime> StagedEvent<A> {
    pub(crate) fn new(dma: Arc<GpuEvent<A>>, n: u64, outs: Arc<CopyOuts>) -> Self {
        StagedEvent { dma, n, outs }
    }
}

impl<A: GpuRuntime> std::fmt::Debug for StagedEvent<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedEvent")
            .field("copy_out", &self.n)
            .finish_non_exhaustive()
    }
}

impl<A: GpuRuntime> Event for StagedEvent<A> {
    fn synchronize(&self) -> Result<()> {
        // Whatever the DMA says, the copy-outs up to `n` are over when this returns (a failed
        // DMA skips its own copy-out; those before it may still be writing).
        let dma = self.dma.synchronize();
        dma.and(self.outs.wait(self.n))
    }
    fn is_complete(&self) -> Result<bool> {
        Ok(self.dma.is_complete()? && self.outs.is_done(self.n)?)
    }
    fn elapsed_since(&self, earlier: &dyn Event) -> Option<f64> {
        self.dma.elapsed_since(earlier)
    }
    fn backend(&self) -> &'static str {
        A::NAME
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A DMA that is done (or failed) when the copy-out thread asks.
    #[derive(Debug)]
    struct Dma(Result<()>);

    impl Event for Dma {
        fn synchronize(&self) -> Result<()> {
            self.0.clone()
        }
        fn is_complete(&self) -> Result<bool> {
            self.0.clone().map(|()| true)
        }
        fn elapsed_since(&self, _: &dyn Event) -> Option<f64> {
            None
        }
        fn backend(&self) -> &'static str {
            "test"
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    fn dma(ok: bool) -> Arc<dyn Event> {
        Arc::new(Dma(if ok {
            Ok(())
        } else {
            Err(Error::internal("DMA failed"))
        }))
    }

    #[test]
    fn copy_outs_run_in_order_and_waits_see_them_done() {
        let outs = CopyOuts::start("test-out".into()).expect("thread");
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..50u64 {
            let o = order.clone();
            let n = outs.push(dma(true), Box::new(move || o.lock().unwrap().push(i)));
            assert_eq!(n, i + 1);
        }
        assert_eq!(outs.last(), 50);
        outs.wait(50).expect("all done");
        assert!(outs.is_done(50).expect("no error"));
        assert_eq!(*order.lock().unwrap(), (0..50).collect::<Vec<_>>());
        outs.stop();
    }

    /// A failed DMA skips its copy-out (its staging buffer may hold anything), not the later
    /// ones; waits up to the one before it succeed, later ones report the error until a drain
    /// has reported it.
    #[test]
    fn a_failed_dma_skips_its_copy_out_and_is_reported_once_drained() {
        let outs = CopyOuts::start("test-out".into()).expect("thread");
        let ran = Arc::new(AtomicUsize::new(0));
        for ok in [true, true, false, true] {
            let r = ran.clone();
            outs.push(
                dma(ok),
                Box::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                }),
            );
        }
        outs.wait(2).expect("the first two copied");
        assert!(outs.wait(3).is_err());
        // (is_done(4) only once copy-out 4 is done: before, it is Ok(false).)
        assert!(
            outs.wait(4).is_err(),
            "a later copy-out's wait reports it too"
        );
        assert!(outs.is_done(4).is_err());
        assert!(outs.drain(4).is_err());
        assert!(outs.wait(4).is_ok(), "reported once");
        assert_eq!(
            ran.load(Ordering::SeqCst),
            3,
            "all but the failed one copied"
        );
        outs.stop();
    }

    /// A drain reports the failures up to its number only: one after it is still reported by
    /// the next wait that covers it (it was lost when one failure was kept at a time).
    #[test]
    fn a_drain_leaves_later_failures_reported() {
        let outs = CopyOuts::start("test-out".into()).expect("thread");
        for ok in [false, true, false, true] {
            outs.push(dma(ok), Box::new(|| {}));
        }
        outs.wait(4).expect_err("failures among the four");
        assert!(outs.drain(2).is_err(), "copy-out 1 failed");
        assert!(outs.wait(2).is_ok(), "reported once");
        assert!(outs.wait(3).is_err(), "copy-out 3 is still reported");
        assert!(outs.drain(4).is_err());
        assert!(outs.wait(4).is_ok());
        outs.stop();
    }

    /// A copy-out that panics is an error for its waiters, and the thread goes on.
    #[test]
    fn a_panicking_copy_out_is_an_error_not_a_hang() {
        let outs = CopyOuts::start("test-out".into()).expect("thread");
        outs.push(dma(true), Box::new(|| panic!("a copy-out panics")));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        outs.push(
            dma(true),
            Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }),
        );
        assert!(outs.wait(1).is_err());
        assert!(outs.drain(2).is_err());
        outs.wait(2).expect("the next copy-out ran");
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        outs.stop();
    }
}
