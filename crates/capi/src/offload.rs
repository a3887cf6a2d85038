//! The device path: which calls go to the hetblas Runtime, its lazy start, and the fall back
//! to the host when a device fails.
//!
//! Routing rule (real GEMM; the other routines join as hetblas learns to run them on devices):
//! a call goes to the Runtime when it has at least 1 GFLOP of work (`2*m*n*k >= 1e9`) and an
//! arithmetic intensity of at least 32 flop per byte of its operands. Below that intensity a
//! PCIe host link (about 50 GB/s) bounds a GPU below what a multicore CPU BLAS does in place,
//! and below 1 GFLOP the CPU finishes in about a millisecond, which the offload's fixed costs
//! (planning, transfers' latency, synchronisation) would eat. The Runtime itself then chooses
//! the devices, the CPU included, from its calibrated profile or its built-in rule.
//! `HETBLAS_OFFLOAD_FLOPS=x` replaces the rule: every real GEMM of at least `x` flops goes.
//!
//! Calls below the rule never touch the Runtime (no start, no lock, no allocation). The
//! Runtime starts on the first call that passes it, once, thread-safely; a node without an
//! accelerator (only the CPU) turns the device path off for the rest of the process.

use hetblas::{GemmOptions, Runtime};
use hetblas_core::DeviceKind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The gate of the device path.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Built-in: at least `flops` and `intensity` flop per byte.
    Model { flops: f64, intensity: f64 },
    /// `HETBLAS_OFFLOAD_FLOPS=x`.
    Flops(f64),
}

fn rule() -> Rule {
    static RULE: OnceLock<Rule> = OnceLock::new();
    *RULE.get_or_init(|| {
        match std::env::var("HETBLAS_OFFLOAD_FLOPS").map(|v| v.trim().parse::<f64>()) {
            Ok(Ok(x)) if x >= 0.0 => Rule::Flops(x),
            Ok(_) => {
                eprintln!(
                    "hetblas: HETBLAS_OFFLOAD_FLOPS is not a number; using the built-in rule"
                );
                default_rule()
            }
            Err(_) => default_rule(),
        }
    })
}

fn default_rule() -> Rule {
    Rule::Model {
        flops: 1e9,
        intensity: 32.0,
    }
}

/// `HETBLAS_VERBOSE=1`: one stderr line per routing decision.
pub fn verbose() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var("HETBLAS_VERBOSE").is_ok_and(|v| v.trim() == "1"))
}

/// Whether a real GEMM of this shape passes the gate.
pub fn wants_device(m: i64, n: i64, k: i64, elem_bytes: usize) -> bool {
    passes(rule(), m, n, k, elem_bytes)
}

fn passes(rule: Rule, m: i64, n: i64, k: i64, elem_bytes: usize) -> bool {
    let (m, n, k) = (m as f64, n as f64, k as f64);
    let flops = 2.0 * m * n * k;
    match rule {
        Rule::Flops(x) => flops >= x && flops > 0.0,
        Rule::Model {
            flops: min,
            intensity,
        } => {
            let bytes = elem_bytes as f64 * (m * k + k * n + m * n);
            flops >= min && flops >= intensity * bytes
        }
    }
}

/// The Runtime, started on first use; `None` when it could not start or has no accelerator.
fn runtime() -> Option<&'static Runtime> {
    static RT: OnceLock<Option<Runtime>> = OnceLock::new();
    RT.get_or_init(|| match Runtime::discover() {
        Ok(rt) => {
            let accel = rt
                .devices()
                .iter()
                .any(|d| d.info().kind != DeviceKind::Cpu);
            if verbose() {
                let devs: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
                eprintln!(
                    "hetblas: runtime started: devices [{}]; {}; host BLAS: {}",
                    devs.join(", "),
                    rt.profile_status(),
                    crate::host::describe()
                );
            }
            if accel {
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
/// calls the Fortran `dgemm_` by global name, which is ours: such nested calls go straight to
/// the host, never back into the Runtime.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The first device failure is reported even without `HETBLAS_VERBOSE`.
static FAILED_ONCE: AtomicBool = AtomicBool::new(false);

struct Active;
impl Active {
    fn enter() -> Option<Active> {
        ACTIVE
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Active)
    }
}
impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.store(0, Ordering::Release);
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

/// Real GEMM on the devices when the gate passes; `false` leaves it to the host path.
///
/// # Safety
/// The arguments passed the reference checks; the arrays satisfy the BLAS contract and `c`
/// does not overlap `a` or `b`.
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
    let name = if T::IDX == 0 { "sgemm" } else { "dgemm" };
    if m <= 0 || n <= 0 || k <= 0 || !wants_device(m, n, k, std::mem::size_of::<T>()) {
        if verbose() {
            eprintln!("hetblas: {name} {m}x{n}x{k}: host BLAS (below the offload rule)");
        }
        return false;
    }
    if let Some(which) = crate::device_ptr::first_device_operand(&[
        ("A", a as usize),
        ("B", b as usize),
        ("C", c as usize),
    ]) {
        eprintln!(
            "hetblas: {name} {m}x{n}x{k}: {which} is GPU device memory; hetblas cannot yet \
             compute on device operands it did not allocate, and does not read them on the \
             host: the call was NOT performed"
        );
        return true;
    }
    let Some(_active) = Active::enter() else {
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
    let no_a = ta.eq_ignore_ascii_case(&b'N');
    let no_b = tb.eq_ignore_ascii_case(&b'N');
    let (ar, ac) = if no_a { (m, k) } else { (k, m) };
    let (br, bc) = if no_b { (k, n) } else { (n, k) };
    // SAFETY: the BLAS contract makes these spans readable (A, B) and writable (C).
    let (sa, sb, sc) = unsafe {
        (
            std::slice::from_raw_parts(a, span(ar, ac, lda)),
            std::slice::from_raw_parts(b, span(br, bc, ldb)),
            std::slice::from_raw_parts_mut(c, span(m, n, ldc)),
        )
    };
    // A device failure may leave some tiles of C written; with beta != 0 the host must redo
    // the call from the original C, so keep it (beta == 0 never reads C).
    let saved = (beta != T::default()).then(|| sc.to_vec());
    let started = std::time::Instant::now();
    let r = rt.gemm_blas(
        ta,
        tb,
        m,
        n,
        k,
        alpha,
        sa,
        lda,
        sb,
        ldb,
        beta,
        sc,
        ldc,
        &GemmOptions::default(),
    );
    match r {
        Ok(report) => {
            if verbose() {
                eprintln!(
                    "hetblas: {name} {m}x{n}x{k}: devices [{}], {:.3} s",
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

#[cfg(test)]
mod tests {
    use super::{default_rule, passes, span, Rule};

    #[test]
    fn built_in_rule_needs_work_and_intensity() {
        let wants_device = |m, n, k, b| passes(default_rule(), m, n, k, b);
        assert!(!wants_device(64, 64, 64, 8), "0.5 MFLOP stays on the host");
        assert!(
            wants_device(4096, 4096, 4096, 8),
            "137 GFLOP, 341 flop/B goes"
        );
        // Plenty of work, too little reuse: A alone is 20 GB for 40 GFLOP (2 flop/B).
        assert!(!wants_device(50_000, 8, 50_000, 8));
        // A skinny product with a dimension above 2^31: 0.5 flop/B.
        assert!(!wants_device((1 << 31) + 7, 2, 2, 4));
    }

    #[test]
    fn flop_threshold_replaces_the_rule() {
        assert!(passes(Rule::Flops(0.0), 1, 1, 1, 8));
        assert!(!passes(Rule::Flops(0.0), 1, 1, 0, 8), "no work, no offload");
        assert!(passes(Rule::Flops(1e6), 50_000, 8, 50_000, 8));
        assert!(!passes(Rule::Flops(1e6), 10, 10, 10, 8));
    }

    #[test]
    fn span_counts_the_elements_blas_reads() {
        assert_eq!(span(3, 2, 5), 8);
        assert_eq!(span(0, 2, 5), 0);
        assert_eq!(span(3, 0, 5), 0);
        assert_eq!(span(50_000, 50_000, 50_000), 2_500_000_000);
    }
}
