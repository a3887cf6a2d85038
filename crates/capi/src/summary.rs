//! The summary printed at exit with `HETBLAS_SUMMARY=1` (or `HETBLAS_VERBOSE=1`): the calls
//! hetblas saw, how many went to the devices, the time spent there and on the host, and the
//! one-time costs paid, so that a user can see that the preload took effect and what it gave.
//!
//! Without either variable nothing is counted: an entry point pays one relaxed load. With
//! them, each thread counts its own calls (no shared cache line on the per-call path) and the
//! counts are added up at exit. Time is measured around the outermost entry point of each call
//! (a host LAPACK routine's nested BLAS calls are inside its time); the host's share is that
//! time less what the devices took.

use crate::family::Family;
use std::cell::{Cell, OnceCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Instant;

/// One thread's counts (its own; read by the exit handler).
#[derive(Debug, Default)]
struct Counts {
    /// Calls per family, in [`Family::ALL`] order.
    seen: [AtomicU64; 3],
    /// Of them, LAPACK routines.
    lapack: AtomicU64,
    /// Of them, calls made inside another entry (a host LAPACK routine's BLAS calls).
    nested: AtomicU64,
    /// Nanoseconds inside outermost entries.
    outer_ns: AtomicU64,
}

/// What the device path adds (rare calls: a lock is cheap beside them).
#[derive(Debug, Default)]
struct DeviceTotals {
    calls: u64,
    seconds: f64,
    flops: f64,
    devices: std::collections::BTreeSet<String>,
    one_time: OneTime,
    /// Candidate calls the routing kept on the host, by what decided.
    kept_by_model: u64,
    kept_by_measurement: u64,
}

static THREADS: Mutex<Vec<Arc<Counts>>> = Mutex::new(Vec::new());
static DEVICES: Mutex<DeviceTotals> = Mutex::new(DeviceTotals {
    calls: 0,
    seconds: 0.0,
    flops: 0.0,
    devices: std::collections::BTreeSet::new(),
    one_time: OneTime::NONE,
    kept_by_model: 0,
    kept_by_measurement: 0,
});

thread_local! {
    static MINE: OnceCell<Arc<Counts>> = const { OnceCell::new() };
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the summary is on.
#[inline]
pub fn enabled() -> bool {
    crate::settings::settings().summary
}

fn mine<R>(f: impl FnOnce(&Counts) -> R) -> Option<R> {
    MINE.try_with(|cell| {
        let counts = cell.get_or_init(|| {
            let c = Arc::new(Counts::default());
            THREADS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(c.clone());
            c
        });
        f(counts)
    })
    .ok()
}

/// One entry point's call, counted while it lives (nothing when the summary is off).
pub struct Counted {
    active: bool,
    /// When the outermost entry of the thread began (`None` for a nested one).
    start: Option<Instant>,
}

impl Counted {
    /// Counts a call of `family` (`lapack`: a LAPACK routine) and, when it is the outermost
    /// entry of its thread, times it.
    #[inline]
    pub fn new(family: Family, lapack: bool) -> Counted {
        // The Runtime's own threads' BLAS calls (a host library's, inside a device's work)
        // are hetblas's, not the program's: not counted.
        if !enabled() || crate::offload::on_runtime_thread() {
            return Counted {
                active: false,
                start: None,
            };
        }
        static AT_EXIT: Once = Once::new();
        AT_EXIT.call_once(|| {
            // SAFETY: registers a plain function, run once at exit (by glibc's atexit list).
            unsafe { libc::atexit(print_at_exit) };
        });
        let depth = DEPTH.with(|d| {
            let v = d.get();
            d.set(v + 1);
            v
        });
        mine(|c| {
            let i = Family::ALL.iter().position(|&f| f == family).unwrap_or(0);
            c.seen[i].fetch_add(1, Ordering::Relaxed);
            if lapack {
                c.lapack.fetch_add(1, Ordering::Relaxed);
            }
            if depth > 0 {
                c.nested.fetch_add(1, Ordering::Relaxed);
            }
        });
        Counted {
            active: true,
            start: (depth == 0).then(Instant::now),
        }
    }
}

impl Drop for Counted {
    #[inline]
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if let Some(start) = self.start {
            let ns = start.elapsed().as_nanos() as u64;
            mine(|c| c.outer_ns.fetch_add(ns, Ordering::Relaxed));
        }
    }
}

/// The one-time costs of a device call, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OneTime {
    pub runtime_start: f64,
    pub page_locking: f64,
    pub workspaces: f64,
    /// Page-locked staging buffers allocated for tiles larger than any staged before (a fresh
    /// output is staged: on one H200 host, NumPy's first 4096 product in 2048 f64 tiles spent
    /// 79 ms on them, a first 9526x4969x383 in 3072 tiles 99 ms; 2026-12-01).
    pub staging: f64,
    pub planning: f64,
}

impl OneTime {
    pub const NONE: OneTime = OneTime {
        runtime_start: 0.0,
        page_locking: 0.0,
        workspaces: 0.0,
        staging: 0.0,
        planning: 0.0,
    };

    pub fn total(&self) -> f64 {
        self.runtime_start + self.page_locking + self.workspaces + self.staging + self.planning
    }
}

impl std::ops::AddAssign<&OneTime> for OneTime {
    /// The costs of two calls together (the exit summary's totals).
    fn add_assign(&mut self, other: &OneTime) {
        self.runtime_start += other.runtime_start;
        self.page_locking += other.page_locking;
        self.workspaces += other.workspaces;
        self.staging += other.staging;
        self.planning += other.planning;
    }
}

impl std::fmt::Display for OneTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            ("runtime start", self.runtime_start),
            ("page-locking host operands", self.page_locking),
            ("device workspaces", self.workspaces),
            ("staging buffers", self.staging),
            ("planning", self.planning),
        ]
        .iter()
        .filter(|(_, s)| *s >= 5e-4)
        .map(|(what, s)| format!("{what} {s:.3} s"))
        .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

fn devices() -> std::sync::MutexGuard<'static, DeviceTotals> {
    DEVICES.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call computed on `labels` in `seconds` (`flops` of work), with its one-time costs.
pub fn device_call(seconds: f64, flops: f64, labels: &[String], one_time: OneTime) {
    if !enabled() {
        return;
    }
    let mut d = devices();
    d.calls += 1;
    d.seconds += seconds;
    d.flops += flops;
    d.devices.extend(labels.iter().cloned());
    d.one_time += &one_time;
}

/// The Runtime started in `seconds` for a call that then stayed on the host.
pub fn runtime_started(seconds: f64) {
    if enabled() {
        devices().one_time.runtime_start += seconds;
    }
}

/// A call the routing considered kept on the host (`measured`: by measured calls, else by the
/// model or rule).
pub fn kept_on_host(measured: bool) {
    if !enabled() {
        return;
    }
    let mut d = devices();
    if measured {
        d.kept_by_measurement += 1;
    } else {
        d.kept_by_model += 1;
    }
}

/// The summary's text.
pub fn text() -> String {
    let (mut seen, mut lapack, mut nested, mut outer_ns) = ([0u64; 3], 0, 0, 0);
    // At exit in a forked child the lock may be held by a thread of the parent that does not
    // exist here: report what can be read rather than wait forever.
    let threads = match THREADS.try_lock() {
        Ok(t) => t.clone(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => Vec::new(),
    };
    for c in &threads {
        for (s, x) in seen.iter_mut().zip(&c.seen) {
            *s += x.load(Ordering::Relaxed);
        }
        lapack += c.lapack.load(Ordering::Relaxed);
        nested += c.nested.load(Ordering::Relaxed);
        outer_ns += c.outer_ns.load(Ordering::Relaxed);
    }
    let d = match DEVICES.try_lock() {
        Ok(d) => d,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return "summary unavailable".into(),
    };
    let total: u64 = seen.iter().sum();
    let by_family: Vec<String> = Family::ALL
        .iter()
        .zip(seen)
        .filter(|(_, n)| *n > 0)
        .map(|(f, n)| format!("{n} under {}", f.describe()))
        .collect();
    let outer = outer_ns as f64 * 1e-9;
    let host = (outer - d.seconds).max(0.0);
    let hosts = crate::host::in_use();
    let mut s = format!(
        "hetblas summary (pid {}): {total} calls seen ({}; {lapack} LAPACK; {nested} made inside \
         other routines); {} on the devices{} in {:.3} s",
        std::process::id(),
        if by_family.is_empty() {
            "none".to_string()
        } else {
            by_family.join(", ")
        },
        d.calls,
        if d.devices.is_empty() {
            String::new()
        } else {
            format!(
                " [{}]",
                d.devices.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        },
        d.seconds
    );
    if d.seconds > 0.0 && d.flops > 0.0 {
        s += &format!(" ({:.2} TFLOP/s)", d.flops / d.seconds * 1e-12);
    }
    s += &format!(
        "; {} on the host BLAS in {host:.3} s ({} kept there by the model or rule, {} by \
         measured calls; host BLAS: {})",
        total - d.calls,
        d.kept_by_model,
        d.kept_by_measurement,
        if hosts.is_empty() {
            "none loaded".to_string()
        } else {
            hosts.join(", ")
        }
    );
    let one_time = d.one_time;
    if one_time.total() > 0.0 {
        s += &format!("; one-time costs: {one_time}");
    }
    if crate::offload::forked() {
        s += "; a forked child (counts include its parent's before the fork)";
    }
    s
}

extern "C" fn print_at_exit() {
    // Nothing may unwind out of an exit handler.
    let _ = std::panic::catch_unwind(|| eprintln!("hetblas: {}", text()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_time_costs_name_what_was_paid() {
        let o = OneTime {
            runtime_start: 0.9,
            page_locking: 0.61,
            workspaces: 0.0001,
            staging: 0.0,
            planning: 0.0,
        };
        assert_eq!(
            o.to_string(),
            "runtime start 0.900 s, page-locking host operands 0.610 s"
        );
        assert!((o.total() - 1.5101).abs() < 1e-12);
        let staged = OneTime {
            staging: 0.146,
            ..OneTime::default()
        };
        assert_eq!(staged.to_string(), "staging buffers 0.146 s");
        assert!((staged.total() - 0.146).abs() < 1e-12);
        assert_eq!(OneTime::default().to_string(), "none");
    }
}
