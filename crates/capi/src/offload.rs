//! The device path: the Runtime's lazy start, real GEMM on the devices (host operands when
//! [`crate::route`] predicts a gain; device operands always, where they live), and the fall
//! back to the host when a device fails.
//!
//! Calls that fail the route's pre-filter and have no device operand never touch the Runtime
//! (no start, no lock, no allocation). The Runtime starts on the first call that needs it,
//! once, thread-safely; a node without an accelerator (only the CPU) turns the device path off
//! for the rest of the process.

use crate::route::{self, trans, Shape};
use hetblas::{DeviceMatrix, GemmOptions, MatIn, MatMut, MatOut, MatRef, Runtime};
use hetblas_core::DeviceKind;
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

/// Discovery: every backend, as the settings say. Unit tests run on two emulated devices and
/// the CPU, whatever the machine has. A profile that cannot be used is one line on stderr and
/// the built-in rules.
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
            b.only(&["cpu"]).emulated(2).without_profile()
        } else {
            b
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

/// The Runtime, started on first use; `None` when it could not start or has no accelerator.
pub fn runtime() -> Option<&'static Runtime> {
    static RT: OnceLock<Option<Runtime>> = OnceLock::new();
    RT.get_or_init(|| match start() {
        Ok(rt) => {
            let kind = |k| rt.devices().iter().any(|d| d.info().kind == k);
            if kind(DeviceKind::Emulated) {
                crate::device_ptr::note_emulated_devices();
            }
            if verbose() {
                let devs: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
                eprintln!(
                    "hetblas: runtime started: devices [{}]; {}; host BLAS: {}",
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
                eprintln!("hetblas: runtime unavailable ({e}): every call stays on the host BLAS");
            }
            None
        }
    })
    .as_ref()
}

/// Calls in the device path now. The Runtime's own host BLAS may be a library whose CBLAS
/// calls the Fortran `dgemm_` by global name, which is ours: such nested calls (on host
/// memory) go straight to the host, never back into the Runtime.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The first device failure is reported even without `HETBLAS_VERBOSE`.
static FAILED_ONCE: AtomicBool = AtomicBool::new(false);
/// Calls computed on device operands (tests check that the device path took them).
#[cfg(test)]
pub static DEVICE_OPERAND_CALLS: AtomicUsize = AtomicUsize::new(0);

/// A call in the device path.
pub(crate) struct Active;
impl Active {
    /// The only call in the device path, or `None` when another is in it.
    pub(crate) fn sole() -> Option<Active> {
        ACTIVE
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Active)
    }
    /// A call that must run on the devices whatever else is there (device operands: the host
    /// cannot take it); the Runtime serialises it with the others.
    fn joined() -> Active {
        ACTIVE.fetch_add(1, Ordering::AcqRel);
        Active
    }
}
impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Elements a column-major `rows x cols` array with leading dimension `ld` spans.
fn span(rows: i64, cols: i64, ld: i64) -> usize {
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

/// Real GEMM on the devices: device operands always, host operands when the route says so.
/// `false` leaves the call to the host path.
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
) -> bool {
    if m <= 0 || n <= 0 {
        return false; // nothing is read or written
    }
    let shape = Shape {
        ta,
        tb,
        m,
        n,
        k,
        dtype: T::DTYPE,
    };
    let name = if T::IDX == 0 { "sgemm" } else { "dgemm" };
    let ops = Operands {
        a,
        lda,
        b,
        ldb,
        c,
        ldc,
    };
    if let Some((rt, owners)) = device_operands([a as u64, b as u64, c as u64]) {
        // SAFETY: forwarded contract; `owners` says where each operand lives.
        unsafe { on_device_operands(rt, name, &shape, owners, alpha, beta, &ops) };
        return true;
    }
    let rule = route::rule();
    if !route::prefilter(rule, &shape) {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS (below the offload rule)");
        }
        return false;
    }
    let Some(_active) = Active::sole() else {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS (the device path is busy)");
        }
        return false;
    };
    let Some(rt) = runtime() else {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS (no accelerator)");
        }
        return false;
    };
    let verdict = route::decide(rule, rt, &shape, beta == T::default());
    if !verdict.offload() {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS ({verdict})");
        }
        return false;
    }
    // SAFETY: forwarded contract, all operands in host memory.
    unsafe { on_host_operands(rt, name, &shape, verdict, alpha, beta, &ops) }
}

/// GEMM's arrays and leading dimensions as the caller passed them.
struct Operands<T> {
    a: *const T,
    lda: i64,
    b: *const T,
    ldb: i64,
    c: *mut T,
    ldc: i64,
}

/// Host operands on the devices; on a device failure C is restored and `false` returned, so
/// that the host BLAS completes the call.
///
/// # Safety
/// As [`gemm`], every operand in host memory.
unsafe fn on_host_operands<T: hetblas::Scalar + crate::elem::Elem>(
    rt: &Runtime,
    name: &str,
    s: &Shape,
    verdict: route::Verdict,
    alpha: T,
    beta: T,
    o: &Operands<T>,
) -> bool {
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
    // A device failure may leave some tiles of C written; with beta != 0 the host must redo
    // the call from the original C, so keep it (beta == 0 never reads C).
    let saved = (beta != T::default()).then(|| sc.to_vec());
    let started = std::time::Instant::now();
    let r = rt.gemm_blas(
        s.ta,
        s.tb,
        m,
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
        &GemmOptions::default().trace(trace_dir().is_some()),
    );
    match r {
        Ok(report) => {
            write_trace(name, report.trace.as_ref(), started.elapsed().as_secs_f64());
            if verbose() {
                eprintln!(
                    "hetblas: {name} {m}x{n}x{k}: devices [{}] ({verdict}), {:.3} s",
                    report.devices.join(", "),
                    started.elapsed().as_secs_f64()
                );
            }
            true
        }
        Err(e) => {
            if let Some(saved) = saved {
                sc.copy_from_slice(&saved);
            }
            if verbose() || !FAILED_ONCE.swap(true, Ordering::Relaxed) {
                eprintln!("hetblas: {name} {m}x{n}x{k}: device path failed ({e}); completed on the host BLAS");
            }
            false
        }
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
    let _active = Active::joined();
    #[cfg(test)]
    DEVICE_OPERAND_CALLS.fetch_add(1, Ordering::Relaxed);
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
                // SAFETY: host memory under the BLAS contract, readable for this span.
                let slice = unsafe { std::slice::from_raw_parts(p, span(rows, cols, ld)) };
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
                MatOut::Host(MatMut::new(slice, dims(m), dims(n), dims(o.ldc))?)
            }
        };
        rt.gemm(
            trans(s.ta),
            trans(s.tb),
            alpha,
            a.input(),
            b.input(),
            beta,
            c_out,
        )
    })();
    let place = |w: Option<usize>| w.map_or("host".to_string(), |d| rt.devices()[d].info().label());
    match result {
        Ok(report) => {
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

    use super::{runtime, span, trace_summary, DEVICE_OPERAND_CALLS};
    use crate::abi::LpInt;
    use hetblas::{MatMut, MatRef, Trans};
    use hetblas_core::reference::check_sampled;
    use hetblas_core::DeviceKind;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use std::sync::atomic::Ordering;

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
        let before = DEVICE_OPERAND_CALLS.load(Ordering::Relaxed);
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
            DEVICE_OPERAND_CALLS.load(Ordering::Relaxed),
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
        assert_eq!(DEVICE_OPERAND_CALLS.load(Ordering::Relaxed), before + 1);
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

    #[test]
    fn span_counts_the_elements_blas_reads() {
        assert_eq!(span(3, 2, 5), 8);
        assert_eq!(span(0, 2, 5), 0);
        assert_eq!(span(3, 0, 5), 0);
        assert_eq!(span(50_000, 50_000, 50_000), 2_500_000_000);
    }
}
