//! The device path: the Runtime's lazy start, the routing of host-operand calls
//! (`route_call`: the model for a shape's first call, what was measured afterwards), real
//! GEMM and GEMMT of every type on the devices (host operands when routed there; device
//! operands always, where they live), and the fall back to the host when a device fails.
//!
//! Calls that fail the route's pre-filter and have no device operand never touch the Runtime
//! (no start, no lock, no allocation). The Runtime starts on the first call that needs it,
//! once, thread-safely; a node without an accelerator turns the device path off for the rest
//! of the process.
//!
//! The drop-in's Runtime has no CPU device: the host's cores belong to the program's own BLAS
//! (a wheel's OpenBLAS runs its own threads), which is the alternative every call is measured
//! against, so a CPU device beside the GPUs would only compete with it for the same cores.
//!
//! Concurrent callers share the devices: each call enters the Runtime, which runs calls beside
//! one another (and alone when one must page-lock memory). Calls made on the Runtime's own
//! threads (a host BLAS library calling BLAS by global name from inside a device's kernel)
//! go to the host directly, never back into the Runtime.
//!
//! A forked child (`fork()`, Python's multiprocessing with fork, R's `mclapply`) inherits the
//! Runtime without its threads or device contexts: once the parent has started it, the child
//! runs every call on the host BLAS ([`forked`]), and says so once with `HETBLAS_VERBOSE=1`.

use crate::measured::{self, Key, Pending};
use crate::route::{self, trans, Outcome, Shape, Verdict};
use crate::summary::{self, OneTime};
use crate::tiling::{self, Forced};
use hetblas::{
    DType, DeviceMatrix, GemmOptions, GemmReport, MatIn, MatMut, MatOut, MatRef, Runtime, Uplo,
};
use hetblas_core::{DeviceKind, PinStats};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// `HETBLAS_VERBOSE=1`: one stderr line per routing decision.
pub fn verbose() -> bool {
    crate::settings::settings().verbose
}

/// `HETBLAS_TRACE=DIR`: every call computed on the devices writes its Chrome trace to
/// `DIR/hetblas-<pid>-<n>-<routine>.json`, and (with `HETBLAS_VERBOSE=1`) a line of where its
/// time went: the span of the device queues within the call, and each queue's busy time.
pub fn trace_dir() -> Option<&'static std::path::Path> {
    crate::settings::settings().trace.as_deref()
}
/// Writes `report`'s trace under [`trace_dir`] and, when verbose, its summary against the
/// call's `elapsed` seconds. A trace that cannot be written is reported, never an error of
/// the call.
pub fn write_trace(name: &str, trace: Option<&hetblas_core::trace::Trace>, elapsed: f64) {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let (Some(dir), Some(tr)) = (trace_dir(), trace) else {
        return;
    };
    let path = dir.join(format!(
        "hetblas-{}-{}-{name}.json",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = std::fs::write(&path, tr.to_chrome_json()) {
        eprintln!("hetblas: cannot write the trace {}: {e}", path.display());
        return;
    }
    if verbose() {
        eprintln!(
            "hetblas: {name} trace {}: {}",
            path.display(),
            trace_summary(tr, elapsed)
        );
    }
}

/// Where a call's time went: its queues' span within the call's `elapsed` seconds (before it:
/// planning and preparing host memory; after it: the wait for the last copy and the clean-up)
/// and each queue's busy time.
fn trace_summary(tr: &hetblas_core::trace::Trace, elapsed: f64) -> String {
    let (s, e) = tr.span();
    let queues: Vec<String> = tr
        .usage()
        .iter()
        .map(|u| format!("{} {:.1} ms", u.queue, 1e3 * u.busy))
        .collect();
    format!(
        "queues from {:.1} to {:.1} ms of the call's {:.1} ms; busy: {}",
        1e3 * s,
        1e3 * e,
        1e3 * elapsed,
        queues.join(", ")
    )
}

/// Discovery: every backend, as the settings say, but the CPU (see the module
/// documentation). Unit tests run on two emulated devices, whatever the machine has. A
/// profile that cannot be used is one line on stderr and the built-in rules.
fn start() -> hetblas::Result<Runtime> {
    let mut settings = crate::settings::settings().clone();
    // A host BLAS named that does not load was said on stderr (`host`); the devices compute
    // as the host calls do, with the pure-Rust fallback.
    if matches!(settings.host_blas, hetblas::BlasLibrary::Path(_)) && crate::host::host().is_none()
    {
        settings.host_blas = hetblas::BlasLibrary::Rust;
    }
    let builder = || {
        let b = Runtime::builder().settings(settings.clone());
        if cfg!(test) {
            b.only(&[]).emulated(2).without_profile()
        } else if crate::release_hooks::live() {
            // Every release of memory is noted (`release_hooks`): callers' buffers are
            // page-locked once and kept, as the Runtime does by default.
            b.without_cpu()
        } else {
            // Host copies go through pinned staging buffers: the caller's memory is never
            // page-locked. Measured on nvidia-h200 with pip NumPy 2.5 (2026-11-29) before the
            // release hooks: with the registration cache, a fresh `a @ b` output reused an
            // address whose registration was stale (CUDA_ERROR_ALREADY_MAPPED at n = 16384,
            // the GPU then left out; one run gave a wrong 4096 product).
            b.without_cpu().pin_policy(hetblas::PinPolicy::Staging)
        }
    };
    match builder().build() {
        Err(e @ hetblas::Error::Profile(_)) => {
            eprintln!("hetblas: {e}; using the built-in rules");
            builder().without_profile().build()
        }
        other => other,
    }
}

/// Set in a child process forked after the Runtime began to start (by the `pthread_atfork`
/// handler registered then).
static FORKED: AtomicBool = AtomicBool::new(false);
/// Whether this process announced that it is a forked child.
static SAID_FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    // Only flags here: the child has one thread and may hold nothing else.
    FORKED.store(true, Ordering::Relaxed);
    SAID_FORKED.store(false, Ordering::Relaxed);
}

/// Whether this process is a child forked from one whose Runtime had started (or was
/// starting): its devices, threads and locks are the parent's, so it uses none of them.
#[inline]
pub fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// Says once (verbose) that this forked child keeps every call on the host.
fn note_forked() {
    if verbose() && !SAID_FORKED.swap(true, Ordering::Relaxed) {
        // Written with one write(2): the stderr lock may be held by a thread that did not
        // survive the fork.
        let line = format!(
            "hetblas: pid {}: a forked child of a process whose runtime had started: every call \
             runs on the host BLAS\n",
            std::process::id()
        );
        // SAFETY: writes a valid buffer to file descriptor 2.
        unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    }
}

/// The Runtime, started on first use; `None` when it could not start, has no accelerator, or
/// this is a forked child ([`forked`]).
pub fn runtime() -> Option<&'static Runtime> {
    runtime_timed().map(|(rt, _)| rt)
}

/// [`runtime`], with the seconds this call spent starting it (0 when it was already started).
fn runtime_timed() -> Option<(&'static Runtime, f64)> {
    static RT: OnceLock<Option<Runtime>> = OnceLock::new();
    if forked() {
        note_forked();
        return None;
    }
    let mut started = 0.0;
    let _inside = InDevicePath::enter();
    let rt = RT.get_or_init(|| {
        static AT_FORK: std::sync::Once = std::sync::Once::new();
        AT_FORK.call_once(|| {
            // SAFETY: registers a handler that only stores to atomics, run in fork children.
            unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
        });
        let t = std::time::Instant::now();
        let rt = start_runtime();
        started = t.elapsed().as_secs_f64();
        rt
    });
    rt.as_ref().map(|rt| (rt, started)).or_else(|| {
        if started > 0.0 {
            summary::runtime_started(started);
        }
        None
    })
}

fn start_runtime() -> Option<Runtime> {
    match start() {
        Ok(rt) => {
            let kind = |k| rt.devices().iter().any(|d| d.info().kind == k);
            if kind(DeviceKind::Emulated) {
                crate::device_ptr::note_emulated_devices();
            }
            if verbose() {
                let devs: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
                let host_memory = if crate::release_hooks::live() {
                    "host buffers page-locked and kept (every release of memory is watched)"
                } else {
                    "host copies staged (this library's free/munmap are not the process's)"
                };
                eprintln!(
                    "hetblas: runtime started: devices [{}]; {}; host BLAS: {}; {host_memory}",
                    devs.join(", "),
                    rt.profile_status(),
                    crate::host::describe()
                );
            }
            if kind(DeviceKind::Gpu) || kind(DeviceKind::Emulated) {
                Some(rt)
            } else {
                if verbose() {
                    eprintln!("hetblas: no accelerator: every call stays on the host BLAS");
                }
                None
            }
        }
        Err(e) => {
            if verbose() {
                eprintln!("hetblas: no accelerator ({e}): every call stays on the host BLAS");
            }
            None
        }
    }
}

/// The first device failure is reported even without `HETBLAS_VERBOSE`.
static FAILED_ONCE: AtomicBool = AtomicBool::new(false);
#[cfg(test)]
thread_local! {
    /// Calls computed on device operands from this thread (tests check that the device path
    /// took theirs; per thread, as a process-wide count also saw the calls of tests running
    /// beside them: dgemmt's check once read 2 for its 1).
    pub static DEVICE_OPERAND_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Host-operand calls the devices computed on this thread (the unit tests check that the
    /// device path took theirs; the call runs on the devices from the calling thread).
    pub static HOST_OPERAND_DEVICE_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether this BLAS call is made from inside the device path: on one of the Runtime's own
/// threads (its device queues, issue and fold threads are all named `hetblas-...`: a host
/// library's BLAS call from inside a device's kernel, whose operands may even be an emulated
/// device's memory), or on a thread that is in the device path already (a call made while the
/// Runtime starts, or while it runs a call on this thread). Such a call goes to the host BLAS:
/// entering the Runtime again from inside it would wait for itself.
fn nested() -> bool {
    IN_DEVICE_PATH.with(|c| c.get()) || on_runtime_thread()
}

/// Whether this is one of the Runtime's own threads (named `hetblas-...`); asked once per
/// thread.
pub fn on_runtime_thread() -> bool {
    RUNTIME_THREAD
        .try_with(|r| {
            *r.get_or_init(|| {
                std::thread::current()
                    .name()
                    .is_some_and(|n| n.starts_with("hetblas-"))
            })
        })
        .unwrap_or(false)
}

thread_local! {
    static IN_DEVICE_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static RUNTIME_THREAD: std::cell::OnceCell<bool> = const { std::cell::OnceCell::new() };
}

/// This thread is in the device path while the value lives.
struct InDevicePath(bool);

impl InDevicePath {
    fn enter() -> InDevicePath {
        InDevicePath(IN_DEVICE_PATH.with(|c| c.replace(true)))
    }
}

impl Drop for InDevicePath {
    fn drop(&mut self) {
        IN_DEVICE_PATH.with(|c| c.set(self.0));
    }
}

/// Where a host-operand call that has a device path goes.
pub(crate) enum Routed {
    /// To the host BLAS; `Some` when the routing considered it (its time is then measured).
    Host(Option<Pending>),
    /// To the devices.
    Devices(Ticket),
}

/// A call sent to the devices: what [`Ticket::done`] needs to record it.
pub(crate) struct Ticket {
    pub rt: &'static Runtime,
    key: Key,
    /// Why it went there (for the verbose line).
    pub why: String,
    /// Seconds this call spent starting the Runtime.
    runtime_start: f64,
    /// Whether its time teaches the routing (not when `HETBLAS_OFFLOAD_FLOPS` forced it).
    learn: bool,
    /// A plain GEMM whose time teaches the learned tilings ([`crate::tiling`]), and the tile
    /// they forced on it.
    tilings: bool,
    forced: Option<Forced>,
    started: std::time::Instant,
    /// The host registrations' counters when the call began (verbose only).
    pins_before: Option<PinStats>,
    _inside: InDevicePath,
}

/// What the host registrations did between `before` and `after`, for the verbose line.
fn pin_delta(before: &PinStats, after: &PinStats) -> String {
    let n = |a: u64, b: u64| a.saturating_sub(b);
    let mut parts = vec![format!(
        "{} registered ({:.2} GB), {} hits",
        n(after.registrations, before.registrations),
        n(after.bytes_registered, before.bytes_registered) as f64 / 1e9,
        n(after.hits, before.hits)
    )];
    for (what, a, b) in [
        (
            "dropped as released",
            after.released_freed,
            before.released_freed,
        ),
        ("stale", after.stale, before.stale),
        ("refused", after.failures, before.failures),
        ("evicted", after.evictions, before.evictions),
    ] {
        if a > b {
            parts.push(format!("{} {what}", a - b));
        }
    }
    parts.join(", ")
}

/// The routing of a call named `name` (`"dgemm"`) whose work is the GEMM `shape` (for the
/// symmetric routines, the GEMM of the same flops): the pre-filter, the Runtime's start, the
/// model's verdict for its shape's first call and the measured calls after it.
pub(crate) fn route_call(name: &'static str, shape: &Shape, beta_zero: bool) -> Routed {
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let rule = route::rule();
    if !route::prefilter(rule, shape) {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS (below the offload rule)");
        }
        return Routed::Host(None);
    }
    if nested() {
        return Routed::Host(None);
    }
    let inside = InDevicePath::enter();
    let Some((rt, runtime_start)) = runtime_timed() else {
        if verbose() {
            let why = if forked() {
                "forked child"
            } else {
                "no accelerator"
            };
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS ({why})");
        }
        return Routed::Host(None);
    };
    let key = Key {
        routine: name,
        dtype: shape.dtype,
        ta: shape.ta,
        tb: shape.tb,
        m,
        n,
        k,
    };
    let ticket = |why: String, learn: bool| Ticket {
        rt,
        key,
        why,
        runtime_start,
        learn,
        tilings: false,
        forced: None,
        started: std::time::Instant::now(),
        pins_before: verbose().then(|| rt.host_pin_stats()).flatten(),
        _inside: inside,
    };
    let record = measured::routes().get(&key);
    // A table lookup; it also feeds the host scale when the call stays on the host.
    let estimate = route::host_seconds(rt, &shape.problem(beta_zero));
    let (choice, why) = match record.filter(measured::settled) {
        // Both routes measured: the model's plans are not evaluated (at n = 1024 that would
        // be paid on every call, beside a host BLAS call of a few milliseconds).
        Some(r) => {
            let choice = measured::choose(Some(r), false, None, 0.0);
            (choice, choice.to_string())
        }
        None => {
            let scale = measured::host_scale(shape.dtype);
            let verdict = route::decide(rule, rt, shape, beta_zero, scale);
            if verdict == Verdict::Forced {
                return Routed::Devices(ticket(verdict.to_string(), false));
            }
            let predicted = match verdict {
                Verdict::Model { devices, .. } => Some(devices),
                _ => None,
            };
            let choice = measured::choose(record, verdict.offload(), predicted, estimate * scale);
            let why = if choice.measured() {
                choice.to_string()
            } else {
                verdict.to_string()
            };
            (choice, why)
        }
    };
    if choice.offload() {
        return Routed::Devices(ticket(why, true));
    }
    if verbose() {
        eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS ({why})");
    }
    if runtime_start > 0.0 {
        summary::runtime_started(runtime_start);
    }
    summary::kept_on_host(choice.measured());
    Routed::Host(Some(Pending {
        key,
        estimate: Some(estimate),
    }))
}

impl Ticket {
    /// The call finished on the devices with `report`: its time (one-time costs taken out of
    /// the shape's first) teaches the routing, and is reported.
    pub(crate) fn done(self, label: &str, report: &GemmReport) {
        let planning = if report.plan_cached {
            0.0
        } else {
            report.planning_seconds
        };
        let costs = OneTime {
            page_locking: report.host_check_seconds,
            workspaces: report.workspace_seconds,
            staging: report.staging_seconds,
            planning,
            ..OneTime::NONE
        };
        // The plan's choice, so a user (and a sweep) can see which tiling ran.
        let plan = match report.tile {
            Some((tm, tn, tk)) if verbose() => {
                let fold = if report.host_fold { ", host folds" } else { "" };
                let why = match self.forced {
                    Some(Forced { trial: true, .. }) => {
                        ", tried: the model's tile ran slower than predicted"
                    }
                    Some(Forced { trial: false, .. }) => ", measured faster than the model's",
                    None => "",
                };
                format!(", tile {tm}x{tn}x{tk}{fold}{why}")
            }
            _ => String::new(),
        };
        if self.learn && self.tilings {
            // What the tiling decides: the call less its waits, page-locking (a fresh output
            // below the staging size is page-locked on every call, whatever the tile) and
            // staging buffers allocated (a tile larger than any staged before pays them once:
            // a trial of one would be judged by them).
            let secs = report.seconds
                - report.host_check_seconds
                - report.waited_seconds
                - report.staging_seconds;
            let forced = self.forced.map(|f| f.tile);
            tiling::tilings().record(
                self.key,
                report.tile,
                forced,
                secs.max(0.0),
                report.prices.as_ref(),
            );
        }
        self.done_with(label, &report.devices, &plan, costs);
    }

    /// [`Ticket::done`] for a call that is not a GEMM (a factorization): the devices that
    /// took part, what the plan chose (for the verbose line; may be empty) and its one-time
    /// costs besides the Runtime's start, which the ticket adds.
    pub(crate) fn done_with(self, label: &str, devices: &[String], plan: &str, costs: OneTime) {
        let elapsed = self.started.elapsed().as_secs_f64();
        let one_time = OneTime {
            runtime_start: self.runtime_start,
            ..costs
        };
        // A tile on trial may be slow: its time teaches the tilings, not the route.
        let trial = self.forced.is_some_and(|f| f.trial);
        let counted = if self.learn && !trial {
            measured::routes().record_devices(
                self.key,
                elapsed + self.runtime_start,
                one_time.total(),
            )
        } else {
            elapsed
        };
        let k = &self.key;
        let flops = flops(k.dtype, None, k.m, k.n, k.k);
        summary::device_call(elapsed, flops, devices, one_time);
        if verbose() {
            let costs = if one_time.total() >= 1e-3 {
                format!(
                    "; one-time costs: {one_time}; the shape counted at {:.3} s",
                    counted
                )
            } else {
                String::new()
            };
            let pins = match (&self.pins_before, self.rt.host_pin_stats()) {
                (Some(b), Some(a)) => format!("; host memory: {}", pin_delta(b, &a)),
                _ => String::new(),
            };
            eprintln!(
                "hetblas: {label} {}x{}x{}: devices [{}] ({}{plan}), {elapsed:.3} s{costs}{pins}",
                k.m,
                k.n,
                k.k,
                devices.join(", "),
                self.why,
            );
        }
    }

    /// The devices failed: the call goes to the host (its time is not recorded).
    pub(crate) fn failed(self) {
        if self.runtime_start > 0.0 {
            summary::runtime_started(self.runtime_start);
        }
    }
}

/// Elements a column-major `rows x cols` array with leading dimension `ld` spans.
pub(crate) fn span(rows: i64, cols: i64, ld: i64) -> usize {
    if rows <= 0 || cols <= 0 {
        0
    } else {
        ((cols - 1) * ld + rows) as usize
    }
}

/// The devices owning A, B and C, when some operand is device memory (asked only when
/// [`crate::device_ptr::worth_asking`]); `None` for host operands.
fn device_operands(ptrs: [u64; 3]) -> Option<(&'static Runtime, [Option<usize>; 3])> {
    if !crate::device_ptr::worth_asking() {
        return None;
    }
    let rt = runtime()?;
    let owners = ptrs.map(|p| rt.device_owning(p));
    owners.iter().any(Option::is_some).then_some((rt, owners))
}

/// Real GEMM on the devices: device operands always, host operands when the routing says so.
/// [`Outcome::Host`] leaves the call to the host path. GEMM's hook (its table line in
/// `routines.rs` names it), called for every type.
///
/// # Safety
/// The arguments passed the reference checks; the arrays satisfy the BLAS contract (in host
/// memory, or in a device's memory for operands given as device pointers) and `c` does not
/// overlap `a` or `b`.
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gemm<T: hetblas::Scalar + crate::elem::Elem>(
    ta: u8,
    tb: u8,
    m: i64,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> Outcome {
    let ops = Operands {
        a,
        lda,
        b,
        ldb,
        c,
        ldc,
        triangle: None,
    };
    // Complex GEMM on host operands has no routed device path yet (a constant the compiler
    // folds away); operands in device memory are computed where they live all the same: the
    // host BLAS cannot read them.
    let host_routing = !<T as hetblas_refblas::Scalar>::IS_COMPLEX;
    // SAFETY: forwarded contract.
    unsafe { product(ta, tb, m, n, k, alpha, beta, &ops, host_routing) }
}

/// GEMMT (C's `uplo` triangle of `alpha op(A) op(B) + beta C`, C `n x n`) on the devices as
/// [`gemm`]: device operands always, host operands when the routing sends it there (routed as
/// the GEMM of the same flops, `n x (n + 1)/2 x k`). [`Outcome::Host`] leaves the call to the
/// host path. GEMMT's hook, every type.
///
/// # Safety
/// As [`gemm`].
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
pub unsafe fn gemmt<T: hetblas::Scalar + crate::elem::Elem>(
    uplo: u8,
    ta: u8,
    tb: u8,
    n: i64,
    k: i64,
    alpha: T,
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    beta: T,
    c: *mut T,
    ldc: i64,
) -> Outcome {
    let Some(uplo) = Uplo::from_blas_char(uplo) else {
        return Outcome::Host(None);
    };
    let ops = Operands {
        a,
        lda,
        b,
        ldb,
        c,
        ldc,
        triangle: Some(uplo),
    };
    // SAFETY: forwarded contract.
    unsafe { product(ta, tb, n, n, k, alpha, beta, &ops, true) }
}

/// GEMM, or GEMMT where `o.triangle` says, on the devices: operands in device memory always,
/// host operands where the routing sends them and `host_routing` allows it.
///
/// # Safety
/// As [`gemm`].
#[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
unsafe fn product<T: hetblas::Scalar + crate::elem::Elem>(
    ta: u8,
    tb: u8,
    m: i64,
    n: i64,
    k: i64,
    alpha: T,
    beta: T,
    o: &Operands<T>,
    host_routing: bool,
) -> Outcome {
    if m <= 0 || n <= 0 || nested() {
        return Outcome::Host(None); // nothing is read or written, or called from inside
    }
    let shape = Shape {
        ta,
        tb,
        m,
        n,
        k,
        dtype: T::DTYPE,
    };
    const NAMES: [[&str; 4]; 2] = [
        ["sgemm", "dgemm", "cgemm", "zgemm"],
        ["sgemmtr", "dgemmtr", "cgemmtr", "zgemmtr"],
    ];
    let name = NAMES[usize::from(o.triangle.is_some())][T::IDX];
    if let Some((rt, owners)) = device_operands([o.a as u64, o.b as u64, o.c as u64]) {
        // SAFETY: forwarded contract; `owners` says where each operand lives.
        unsafe { on_device_operands(rt, name, &shape, owners, alpha, beta, o) };
        return Outcome::Done;
    }
    if !host_routing {
        return Outcome::Host(None);
    }
    // The routing prices GEMMT as the GEMM of the same flops.
    let routed = match o.triangle {
        None => shape,
        Some(_) => Shape {
            n: (n + 1) / 2,
            ..shape
        },
    };
    match route_call(name, &routed, beta == T::default()) {
        Routed::Host(pending) => Outcome::Host(pending),
        // SAFETY: forwarded contract, all operands in host memory.
        Routed::Devices(ticket) => unsafe {
            on_host_operands(ticket, name, &shape, alpha, beta, o)
        },
    }
}

/// GEMM's arrays and leading dimensions as the caller passed them, and GEMMT's triangle.
struct Operands<T> {
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    c: *mut T,
    ldc: i64,
    triangle: Option<Uplo>,
}

/// The entries of column `j` of the `m`-row, column-major C (leading dimension `ldc`) that a
/// call writes, as indices into C: all its rows for GEMM, the triangle's for GEMMT.
fn written(triangle: Option<Uplo>, m: usize, ldc: usize, j: usize) -> std::ops::Range<usize> {
    let rows = match triangle {
        None => 0..m,
        Some(Uplo::Lower) => j.min(m)..m,
        Some(Uplo::Upper) => 0..(j + 1).min(m),
    };
    j * ldc + rows.start..j * ldc + rows.end
}

/// GEMMT with beta = 0: C's triangle set to zero first, as the devices' host folds of the
/// diagonal tiles read C whatever beta (`0 * NaN` would keep a NaN that beta = 0 must not
/// read; reported to core). Nothing for GEMM or beta != 0.
fn zero_triangle<T: Copy + Default + PartialEq>(
    c: &mut [T],
    triangle: Option<Uplo>,
    beta: T,
    (m, n, ldc): (usize, usize, usize),
) {
    if triangle.is_some() && beta == T::default() {
        (0..n).for_each(|j| c[written(triangle, m, ldc, j)].fill(T::default()));
    }
}

/// The flops of a GEMM, or of GEMMT's triangle (diagonal included).
/// Real floating-point operations of a GEMM (of `triangle` of C only, for GEMMT): a complex
/// multiply-add is four real ones.
fn flops(dtype: DType, triangle: Option<Uplo>, m: i64, n: i64, k: i64) -> f64 {
    let per = if dtype.is_complex() { 8.0 } else { 2.0 };
    let full = per * m as f64 * n as f64 * k as f64;
    match triangle {
        None => full,
        Some(_) => full * (n + 1) as f64 / (2 * n.max(1)) as f64,
    }
}

/// Host operands on the devices; on a device failure C is restored and the call left to the
/// host BLAS.
///
/// # Safety
/// As [`gemm`], every operand in host memory.
unsafe fn on_host_operands<T: hetblas::Scalar + crate::elem::Elem>(
    mut ticket: Ticket,
    name: &str,
    s: &Shape,
    alpha: T,
    beta: T,
    o: &Operands<T>,
) -> Outcome {
    let (m, n, k) = (s.m, s.n, s.k);
    let ((ar, ac), (br, bc)) = s.stored();
    // SAFETY: the BLAS contract makes these spans readable (A, B) and writable (C).
    let (sa, sb, sc) = unsafe {
        (
            std::slice::from_raw_parts(o.a, span(ar, ac, o.lda)),
            std::slice::from_raw_parts(o.b, span(br, bc, o.ldb)),
            std::slice::from_raw_parts_mut(o.c, span(m, n, o.ldc)),
        )
    };
    let (ldc, cols) = (o.ldc as usize, n as usize);
    let rows = |j: usize| written(o.triangle, m as usize, ldc, j);
    let zero = T::default();
    zero_triangle(sc, o.triangle, beta, (m as usize, cols, ldc));
    // A device failure may leave some tiles of C written; with beta != 0 the host must redo
    // the call from the original C, so keep what the call writes of it (beta == 0 never reads
    // C).
    let saved: Option<Vec<T>> =
        (beta != zero).then(|| (0..cols).flat_map(|j| sc[rows(j)].to_vec()).collect());
    // A plain GEMM's shape may run at a tile its earlier calls measured faster.
    if ticket.learn && o.triangle.is_none() {
        ticket.tilings = true;
        ticket.forced = tiling::tilings().next_tile(&ticket.key);
    }
    let started = std::time::Instant::now();
    // No undo log in the Runtime: a failed call goes to the host BLAS, which recomputes C from
    // `saved` (beta != 0) or from nothing (beta = 0). Without a CPU device the Runtime would
    // keep one, a single-threaded host copy of each C tile before its write-back: at n = 4096
    // 2.4 ms per 8 MiB tile where the write-back itself takes 0.19 ms (nvidia-h200, pip NumPy,
    // 2026-11-29), the whole of the drop-in's gap to the CLI.
    let opts = GemmOptions::default()
        .trace(trace_dir().is_some())
        .preserve_c(false)
        .tile(ticket.forced.map(|f| f.tile));
    let r = match o.triangle {
        None => ticket.rt.gemm_blas(
            s.ta, s.tb, m, n, k, alpha, sa, o.lda, sb, o.ldb, beta, sc, o.ldc, &opts,
        ),
        Some(uplo) => ticket.rt.gemmt_blas(
            uplo.as_char() as u8,
            s.ta,
            s.tb,
            n,
            k,
            alpha,
            sa,
            o.lda,
            sb,
            o.ldb,
            beta,
            sc,
            o.ldc,
            &opts,
        ),
    };
    match r {
        Ok(report) => {
            #[cfg(test)]
            HOST_OPERAND_DEVICE_CALLS.with(|c| c.set(c.get() + 1));
            write_trace(name, report.trace.as_ref(), started.elapsed().as_secs_f64());
            ticket.done(name, &report);
            Outcome::Done
        }
        Err(e) => {
            if let Some(saved) = saved {
                let mut from = saved.iter();
                for j in 0..cols {
                    for (x, y) in sc[rows(j)].iter_mut().zip(&mut from) {
                        *x = *y;
                    }
                }
            }
            if verbose() || !FAILED_ONCE.swap(true, Ordering::Relaxed) {
                eprintln!("hetblas: {name} {m}x{n}x{k}: device path failed ({e}); completed on the host BLAS");
            }
            ticket.failed();
            Outcome::Host(None)
        }
    }
}

/// A device failure of a call `what` that the host completes: said once, and every time
/// with `HETBLAS_VERBOSE`.
pub(crate) fn report_failure(what: &str, e: &hetblas::Error) {
    if verbose() || !FAILED_ONCE.swap(true, Ordering::Relaxed) {
        eprintln!("hetblas: {what}: device path failed ({e}); completed on the host");
    }
}

/// A GEMM with at least one operand in device memory, run where the operands live. The host
/// cannot complete it after a failure (it cannot read device memory), so a failure is always
/// reported, loudly, and C is left as the devices left it.
///
/// # Safety
/// As [`gemm`]; `owners[i]` is the device whose memory operand `i` (A, B, C) is, `None` for
/// host memory.
unsafe fn on_device_operands<T: hetblas::Scalar + crate::elem::Elem>(
    rt: &Runtime,
    name: &str,
    s: &Shape,
    owners: [Option<usize>; 3],
    alpha: T,
    beta: T,
    o: &Operands<T>,
) {
    let (m, n, k) = (s.m, s.n, s.k);
    let _inside = InDevicePath::enter();
    #[cfg(test)]
    DEVICE_OPERAND_CALLS.with(|c| c.set(c.get() + 1));
    let ((ar, ac), (br, bc)) = s.stored();
    let dims = |x: i64| x.max(0) as usize;
    let lent = |owner: usize, p: u64, rows: i64, cols: i64, ld: i64| {
        // SAFETY: `p` is memory of device `owner` (the Runtime said so) holding the
        // `rows x cols` matrix with leading dimension `ld` that the BLAS contract promises,
        // which the caller does not free or touch during the call.
        unsafe { rt.borrow_matrix::<T>(owner, p, dims(rows), dims(cols), dims(ld)) }
    };
    let input = |owner: Option<usize>, p: *const T, rows: i64, cols: i64, ld: i64| {
        owner
            .map(|d| lent(d, p as u64, rows, cols, ld).map(Lent::Device))
            .unwrap_or_else(|| {
                // An empty operand (k = 0) may come as a null pointer: no slice of it.
                let len = span(rows, cols, ld);
                let slice: &[T] = if len == 0 {
                    &[]
                } else {
                    // SAFETY: host memory under the BLAS contract, readable for this span.
                    unsafe { std::slice::from_raw_parts(p, len) }
                };
                MatRef::new(slice, dims(rows), dims(cols), dims(ld)).map(Lent::Host)
            })
    };
    let started = std::time::Instant::now();
    let result = (|| {
        let a = input(owners[0], o.a, ar, ac, o.lda)?;
        let b = input(owners[1], o.b, br, bc, o.ldb)?;
        let mut c_dev: Option<DeviceMatrix<T>> = None;
        let c_out: MatOut<'_, T> = match owners[2] {
            Some(d) => MatOut::Device(c_dev.insert(lent(d, o.c as u64, m, n, o.ldc)?)),
            None => {
                // SAFETY: host memory under the BLAS contract, writable for this span and not
                // overlapping A or B.
                let slice = unsafe { std::slice::from_raw_parts_mut(o.c, span(m, n, o.ldc)) };
                zero_triangle(
                    slice,
                    o.triangle,
                    beta,
                    (m as usize, n as usize, o.ldc as usize),
                );
                MatOut::Host(MatMut::new(slice, dims(m), dims(n), dims(o.ldc))?)
            }
        };
        rt.gemm_with(
            trans(s.ta),
            trans(s.tb),
            alpha,
            a.input(),
            b.input(),
            beta,
            c_out,
            &GemmOptions::default().c_region(o.triangle),
        )
    })();
    let place = |w: Option<usize>| w.map_or("host".to_string(), |d| rt.devices()[d].info().label());
    match result {
        Ok(report) => {
            let flops = flops(T::DTYPE, o.triangle, m, n, k);
            let elapsed = started.elapsed().as_secs_f64();
            summary::device_call(elapsed, flops, &report.devices, OneTime::default());
            if verbose() {
                eprintln!(
                    "hetblas: {name} {m}x{n}x{k}: operands in [{}, {}, {}] computed where they \
                     live: devices [{}], {:.3} s",
                    place(owners[0]),
                    place(owners[1]),
                    place(owners[2]),
                    report.devices.join(", "),
                    started.elapsed().as_secs_f64()
                );
            }
        }
        Err(e) => eprintln!(
            "hetblas: {name} {m}x{n}x{k}: operands in device memory ([{}, {}, {}]); the device \
             path failed ({e}) and the host cannot read them: C is not computed",
            place(owners[0]),
            place(owners[1]),
            place(owners[2]),
        ),
    }
}

/// A GEMM input as lent by the caller.
enum Lent<'a, T> {
    Host(MatRef<'a, T>),
    Device(DeviceMatrix<T>),
}

impl<T: hetblas::Scalar> Lent<'_, T> {
    fn input(&self) -> MatIn<'_, T> {
        match self {
            Lent::Host(m) => MatIn::Host(*m),
            Lent::Device(m) => MatIn::Device(m),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_counts_real_flops() {
        use super::{flops, DType, Uplo};
        assert_eq!(flops(DType::F64, None, 2, 3, 4), 48.0);
        // A complex multiply-add is four real ones.
        assert_eq!(flops(DType::C64, None, 2, 3, 4), 192.0);
        assert_eq!(flops(DType::C32, None, 2, 3, 4), 192.0);
        // GEMMT: the triangle's (n + 1) / 2n of the products.
        assert_eq!(
            flops(DType::F32, Some(Uplo::Lower), 3, 3, 2),
            36.0 * 4.0 / 6.0
        );
    }

    #[test]
    fn a_trace_summary_names_every_queue_and_the_span_within_the_call() {
        use hetblas_core::trace::{Activity, Interval, Trace};
        let iv = |queue: &str, start: f64, end: f64| Interval {
            device: "cuda:0".into(),
            queue: queue.into(),
            activity: Activity::Gemm,
            label: String::new(),
            start,
            end,
            bytes: 0,
            flops: 0.0,
        };
        let tr = Trace {
            intervals: vec![iv("h2d", 0.002, 0.010), iv("compute", 0.010, 0.150)],
        };
        let s = trace_summary(&tr, 0.2);
        assert_eq!(
            s,
            "queues from 2.0 to 150.0 ms of the call's 200.0 ms; busy: compute 140.0 ms, h2d 8.0 ms"
        );
    }

    use super::{pin_delta, runtime, span, trace_summary, DEVICE_OPERAND_CALLS};
    use crate::abi::LpInt;
    use hetblas::{MatMut, MatRef, Trans};
    use hetblas_core::reference::check_sampled;
    use hetblas_core::DeviceKind;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn the_verbose_line_says_what_the_host_registrations_did() {
        let before = hetblas_core::PinStats {
            registrations: 3,
            hits: 10,
            bytes_registered: 1_000_000_000,
            ..Default::default()
        };
        let after = hetblas_core::PinStats {
            registrations: 4,
            hits: 12,
            bytes_registered: 3_150_000_000,
            released_freed: 1,
            ..before.clone()
        };
        assert_eq!(
            pin_delta(&before, &after),
            "1 registered (2.15 GB), 2 hits, 1 dropped as released"
        );
    }

    fn random(seed: u64, len: usize) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    /// `dgemm_` given addresses of emulated devices' memory (as a CUDA program passes device
    /// pointers): a call far below every offload rule is computed by the Runtime where the
    /// operands live, with a host A beside device B and C, and C's rows beyond m untouched.
    #[test]
    fn dgemm_computes_device_operands_where_they_live() {
        let rt = runtime().expect("the unit tests' runtime has two emulated devices");
        let emu: Vec<usize> = (0..rt.devices().len())
            .filter(|&i| rt.devices()[i].info().kind == DeviceKind::Emulated)
            .collect();
        assert_eq!(emu.len(), 2);
        let (m, n, k) = (37usize, 29usize, 23usize);
        let ldc = m + 2;
        let a = random(21, m * k);
        let b = random(22, n * k); // stored n x k: op(B) = B^T
        let c0 = random(23, ldc * n);
        let (alpha, beta) = (1.5f64, -0.5f64);
        let db = rt
            .upload(emu[1], MatRef::packed(&b, n, k).unwrap())
            .unwrap();
        let dc = rt
            .upload(emu[0], MatRef::packed(&c0, ldc, n).unwrap())
            .unwrap();
        let before = DEVICE_OPERAND_CALLS.with(|c| c.get());
        let dim = |x: usize| x as LpInt;
        // SAFETY: A is a host array and B, C device arrays of the shapes passed, all alive for
        // the call; the Fortran convention passes everything by reference.
        unsafe {
            crate::routines::dgemm_(
                c"N".as_ptr(),
                c"T".as_ptr(),
                &dim(m),
                &dim(n),
                &dim(k),
                &alpha,
                a.as_ptr(),
                &dim(m),
                db.raw().addr as *const f64,
                &dim(n),
                &beta,
                dc.raw().addr as *mut f64,
                &dim(ldc),
            )
        };
        assert_eq!(
            DEVICE_OPERAND_CALLS.with(|c| c.get()),
            before + 1,
            "the call did not take the device-operand path"
        );
        let mut back = vec![f64::NAN; ldc * n];
        rt.download(&dc, MatMut::packed(&mut back, ldc, n).unwrap())
            .unwrap();
        check_sampled(
            Trans::N,
            Trans::T,
            alpha,
            MatRef::packed(&a, m, k).unwrap(),
            MatRef::packed(&b, n, k).unwrap(),
            beta,
            MatRef::new(&c0, m, n, ldc).unwrap(),
            MatRef::new(&back, m, n, ldc).unwrap(),
            m * n,
            3,
        )
        .expect("C within the reference bound");
        for j in 0..n {
            for i in m..ldc {
                assert_eq!(
                    back[i + j * ldc],
                    c0[i + j * ldc],
                    "C({i}, {j}) beyond m written"
                );
            }
        }
        // Host operands of the same small call stay off the device path.
        let mut c = c0.clone();
        // SAFETY: host arrays of the shapes passed.
        unsafe {
            crate::routines::dgemm_(
                c"N".as_ptr(),
                c"T".as_ptr(),
                &dim(m),
                &dim(n),
                &dim(k),
                &alpha,
                a.as_ptr(),
                &dim(m),
                b.as_ptr(),
                &dim(n),
                &beta,
                c.as_mut_ptr(),
                &dim(ldc),
            )
        };
        assert_eq!(DEVICE_OPERAND_CALLS.with(|c| c.get()), before + 1);
        for j in 0..n {
            for i in 0..m {
                let (x, y) = (c[i + j * ldc], back[i + j * ldc]);
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                    "host {x} vs devices {y}"
                );
            }
        }
    }

    /// `c`, the result of GEMMT (`uplo` triangle of `alpha A op(B) + beta c0`, A n x k with
    /// `lda`, B stored n x k with `ldb` and used transposed, C with `ldc`), checked entry by
    /// entry against an f64 sum within the GEMM bound; everything else of `c` (the other
    /// triangle, the padding) bit for bit against `c0`. `beta == 0` ignores `c0`'s triangle.
    #[allow(clippy::too_many_arguments)] // the routine's operands
    fn check_gemmt<T: hetblas::Scalar>(
        upper: bool,
        (n, k): (usize, usize),
        alpha: T,
        (a, lda): (&[T], usize),
        (b, ldb): (&[T], usize),
        beta: T,
        (c0, c, ldc): (&[T], &[T], usize),
    ) {
        use hetblas_core::reference::gemm_error_bound;
        use hetblas_core::sym_reference::same_bits;
        let zero = T::default().to_c64();
        for j in 0..n {
            for i in 0..ldc {
                let (got, was) = (c[i + j * ldc], c0[i + j * ldc]);
                let inside = i < n && if upper { i <= j } else { i >= j };
                if !inside {
                    assert!(
                        same_bits(&got, &was),
                        "C({i},{j}) outside the triangle written"
                    );
                    continue;
                }
                // Sampled: every 7th entry of the triangle (the rest is the same arithmetic).
                if (i + 3 * j) % 7 != 0 {
                    continue;
                }
                let (mut sum, mut abs) = (zero, 0.0);
                for l in 0..k {
                    let p = a[i + l * lda].to_c64() * b[j + l * ldb].to_c64();
                    sum += p;
                    abs += p.norm();
                }
                let old = if beta.to_c64() == zero {
                    zero
                } else {
                    beta.to_c64() * was.to_c64()
                };
                let want = alpha.to_c64() * sum + old;
                let bound =
                    gemm_error_bound(T::DTYPE, k, alpha.to_c64().norm() * abs + old.norm(), 4.0);
                let err = (got.to_c64() - want).norm();
                assert!(
                    err <= bound,
                    "C({i},{j}) = {got:?}, want {want}: error {err:e} > {bound:e}"
                );
            }
        }
    }

    /// `dgemmtr_` and `dgemmt_` (both names of GEMMT) and `zgemmt_` of about 1 GFLOP (the
    /// built-in rule prices GEMMT as the GEMM of the same flops) go to the unit tests' emulated
    /// devices: the triangle within the reference bound, the other triangle and C's padding rows
    /// bit for bit as they were; with beta = 0 a NaN in the triangle is not read.
    #[test]
    fn gemmt_goes_to_the_devices_under_both_names() {
        use hetblas::c64;
        let n = 1024usize;
        let (lda, ldb, ldc) = (n + 1, n + 2, n + 3);
        let dim = |x: usize| x as LpInt;
        let on_devices = |name: &str, call: &mut dyn FnMut()| {
            let before = super::HOST_OPERAND_DEVICE_CALLS.with(|c| c.get());
            call();
            assert_eq!(
                super::HOST_OPERAND_DEVICE_CALLS.with(|c| c.get()),
                before + 1,
                "{name} did not take the device path"
            );
        };
        // Each call its own k: a shape's later calls follow what its first measured.
        for (k, name, uplo, beta) in [
            (1024usize, "dgemmtr_", c"L", -0.5f64),
            (1025, "dgemmt_", c"U", 0.0),
        ] {
            let (a, b) = (random(31 + k as u64, lda * k), random(32, ldb * k));
            let mut c0 = random(33, ldc * n);
            if beta == 0.0 {
                c0.iter_mut().step_by(5).for_each(|x| *x = f64::NAN);
            }
            let mut c = c0.clone();
            let alpha = 0.75f64;
            let f = if name == "dgemmtr_" {
                crate::routines::dgemmtr_
            } else {
                crate::routines::dgemmt_
            };
            on_devices(name, &mut || {
                // SAFETY: host arrays of the shapes passed, alive for the call; the Fortran
                // convention passes everything by reference.
                unsafe {
                    f(
                        uplo.as_ptr(),
                        c"N".as_ptr(),
                        c"T".as_ptr(),
                        &dim(n),
                        &dim(k),
                        &alpha,
                        a.as_ptr(),
                        &dim(lda),
                        b.as_ptr(),
                        &dim(ldb),
                        &beta,
                        c.as_mut_ptr(),
                        &dim(ldc),
                    )
                }
            });
            let upper = uplo == c"U";
            check_gemmt(
                upper,
                (n, k),
                alpha,
                (&a, lda),
                (&b, ldb),
                beta,
                (&c0, &c, ldc),
            );
        }
        // A complex type (whose GEMM has no device path) through the other name.
        let k = 1024usize;
        let z = |v: Vec<f64>| -> Vec<c64> { v.chunks(2).map(|p| c64::new(p[0], p[1])).collect() };
        let (a, b, c0) = (
            z(random(41, 2 * lda * k)),
            z(random(42, 2 * ldb * k)),
            z(random(43, 2 * ldc * n)),
        );
        let (alpha, beta) = (c64::new(0.5, -0.25), c64::new(-1.0, 0.5));
        let mut c = c0.clone();
        on_devices("zgemmt_", &mut || {
            // SAFETY: as above.
            unsafe {
                crate::routines::zgemmt_(
                    c"U".as_ptr(),
                    c"N".as_ptr(),
                    c"T".as_ptr(),
                    &dim(n),
                    &dim(k),
                    &alpha,
                    a.as_ptr(),
                    &dim(lda),
                    b.as_ptr(),
                    &dim(ldb),
                    &beta,
                    c.as_mut_ptr(),
                    &dim(ldc),
                )
            }
        });
        check_gemmt(
            true,
            (n, k),
            alpha,
            (&a, lda),
            (&b, ldb),
            beta,
            (&c0, &c, ldc),
        );
    }

    /// `dgemmt_` with C in an emulated device's memory is computed where it lives, whatever
    /// its size; the other triangle and the padding rows stay as they were.
    #[test]
    fn dgemmt_computes_device_operands_where_they_live() {
        let rt = runtime().expect("the unit tests' runtime has two emulated devices");
        let (n, k) = (37usize, 23usize);
        let ldc = n + 2;
        let (a, b, c0) = (random(51, n * k), random(52, n * k), random(53, ldc * n));
        let dc = rt.upload(1, MatRef::packed(&c0, ldc, n).unwrap()).unwrap();
        let before = DEVICE_OPERAND_CALLS.with(|c| c.get());
        let dim = |x: usize| x as LpInt;
        let (alpha, beta) = (1.5f64, -0.5f64);
        // SAFETY: A and B are host arrays and C a device array of the shapes passed, alive for
        // the call.
        unsafe {
            crate::routines::dgemmt_(
                c"L".as_ptr(),
                c"N".as_ptr(),
                c"T".as_ptr(),
                &dim(n),
                &dim(k),
                &alpha,
                a.as_ptr(),
                &dim(n),
                b.as_ptr(),
                &dim(n),
                &beta,
                dc.raw().addr as *mut f64,
                &dim(ldc),
            )
        };
        assert_eq!(
            DEVICE_OPERAND_CALLS.with(|c| c.get()),
            before + 1,
            "the call did not take the device-operand path"
        );
        let mut back = vec![f64::NAN; ldc * n];
        rt.download(&dc, MatMut::packed(&mut back, ldc, n).unwrap())
            .unwrap();
        check_gemmt(
            false,
            (n, k),
            alpha,
            (&a, n),
            (&b, n),
            beta,
            (&c0, &back, ldc),
        );
    }

    #[test]
    fn span_counts_the_elements_blas_reads() {
        assert_eq!(span(3, 2, 5), 8);
        assert_eq!(span(0, 2, 5), 0);
        assert_eq!(span(3, 0, 5), 0);
        assert_eq!(span(50_000, 50_000, 50_000), 2_500_000_000);
    }
}
