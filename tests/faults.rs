//! Device faults during a call: injected into emulated devices at their n-th kernel, copy or
//! allocation (error, lost, out of memory, panic, async), on 1, 2 and 4 devices, C in host or device memory,
//! beta 0, 1 and other. Every call must end with a correct C, or with an error and C
//! bit-identical to before the call (tiles already final are put back from the undo log); the
//! one exception is C in the memory of the device that was lost. And out-of-core: a budget of
//! 1/8 of the problem's footprint.

use hetblas_core::fault::{FaultKind, FaultOp, FaultSpec};
use hetblas_core::reference::gemm_error_bound;
mod common;

use common::blas;
use hetblas_core::{Device, DevicePool, Error, GemmOptions, MatMut, MatRef, Trans};
use hetblas_cpu::{emulated_node, EmulatedConfig, EmulatedDevice};
use std::sync::Arc;

struct Node {
    pool: DevicePool,
    emus: Vec<Arc<EmulatedDevice>>,
}

/// Injected panics are expected by the hundred: their messages are not printed (others are).
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            if !msg.starts_with("injected panic") {
                default(info)
            }
        }));
    });
}

fn node(ndev: usize, memory_bytes: u64) -> Node {
    quiet_injected_panics();
    // Peer links faster than host links, as NVLink beside PCIe: tiles another device holds
    // are forwarded from it, so a failed device is also a source other devices wait for.
    let config = EmulatedConfig {
        memory_bytes,
        compute_queues: 1,
        host_link_bytes_per_sec: Some(50e9),
        peer_link_bytes_per_sec: Some(300e9),
        ..Default::default()
    };
    let (pool, emus) = common::emulated_handles(&vec![config; ndev]);
    Node { pool, emus }
}

impl Node {
    /// Every fault removed and every device back in use.
    fn heal(&self) {
        for d in &self.emus {
            d.faults().disarm();
        }
        assert!(
            self.pool.reprobe().is_empty(),
            "a healed device stays excluded"
        );
    }
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// The exact-enough result (f64-accumulated dot products) and its elementwise error bound.
fn reference(
    (m, n, k): (usize, usize, usize),
    alpha: f64,
    a: &[f64],
    b: &[f64],
    beta: f64,
    c0: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let mut want = vec![0.0; m * n];
    let mut bound = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            let (mut s, mut abs) = (0.0, 0.0);
            for l in 0..k {
                s += a[i + l * m] * b[l + j * k];
                abs += (a[i + l * m] * b[l + j * k]).abs();
            }
            let c = c0[i + j * m];
            want[i + j * m] = alpha * s + if beta == 0.0 { 0.0 } else { beta * c };
            bound[i + j * m] = gemm_error_bound(
                hetblas_core::DType::F64,
                k,
                alpha.abs() * abs + beta.abs() * c.abs(),
                4.0,
            );
        }
    }
    (want, bound)
}

#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    recovered: usize,
    errors: usize,
    untouched_on_error: usize,
    not_restorable: usize,
    /// Calls that finished with products folded on the host, with the tail asked for.
    folded: usize,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    shape: (usize, usize, usize),
    beta: f64,
    c_on_device: bool,
    fault: (usize, FaultOp, u64, FaultKind),
    /// Host folds forced on, with this many last C tiles unfolded; `None`: the default.
    fold_tail: Option<usize>,
    /// `Some(true)`: K split across the devices.
    k_split: Option<bool>,
    /// GEMMT: only this triangle of C (square) is computed, the other must keep its bits.
    triangle: Option<hetblas_core::Uplo>,
}

impl Case {
    /// Host C, the library's choices of fold and split.
    fn host(
        shape: (usize, usize, usize),
        beta: f64,
        fault: (usize, FaultOp, u64, FaultKind),
    ) -> Case {
        Case {
            shape,
            beta,
            c_on_device: false,
            fault,
            fold_tail: None,
            k_split: None,
            triangle: None,
        }
    }
}

/// Runs one case; panics (the test fails) on any wrong entry of C.
fn run_case(node: &Node, case: Case, tile: usize, seed: u64, tally: &mut Tally) {
    let (m, n, k) = case.shape;
    let alpha = 0.75;
    let a = values(m * k, seed);
    let b = values(k * n, seed + 1);
    let c0 = values(m * n, seed + 2);
    let (want, bound) = reference(case.shape, alpha, &a, &b, case.beta, &c0);
    let (dev, op, at, kind) = case.fault;
    let arm = || {
        node.emus[dev]
            .faults()
            .arm([FaultSpec::new(dev, op, at, kind)])
    };
    let opts = match case.fold_tail {
        Some(t) => GemmOptions::default()
            .tile(tile)
            .host_fold(true)
            .fold_tail(t),
        None => GemmOptions::default().tile(tile),
    }
    .k_split(case.k_split)
    .c_region(case.triangle);
    let av = MatRef::packed(&a, m, k).unwrap();
    let bv = MatRef::packed(&b, k, n).unwrap();
    let mut c = c0.clone();
    let result = if case.c_on_device {
        let mut dc = node
            .pool
            .upload(0, MatRef::packed(&c0, m, n).unwrap())
            .unwrap();
        arm();
        let r = node
            .pool
            .gemm_with(Trans::N, Trans::N, alpha, av, bv, case.beta, &mut dc, &opts);
        // Read C back from a working device 0.
        node.heal();
        node.pool
            .download(&dc, MatMut::packed(&mut c, m, n).unwrap())
            .unwrap();
        r
    } else {
        arm();
        let r = node.pool.gemm_with(
            Trans::N,
            Trans::N,
            alpha,
            av,
            bv,
            case.beta,
            MatMut::packed(&mut c, m, n).unwrap(),
            &opts,
        );
        node.heal();
        r
    };
    tally.cases += 1;
    let computed = |x: usize| case.triangle.is_none_or(|u| u.contains(x % m, x / m));
    // Outside GEMMT's triangle, C keeps its bits.
    let correct = |x: usize| {
        if computed(x) {
            (c[x] - want[x]).abs() <= bound[x]
        } else {
            c[x].to_bits() == c0[x].to_bits()
        }
    };
    match result {
        Ok(report) => {
            if report.host_fold && Some(report.fold_tail) == case.fold_tail {
                tally.folded += 1;
            }
            if !report.recovered.is_empty() {
                tally.recovered += 1;
                assert!(
                    // The failed device, or (a panic in a peer copy) the one whose worker
                    // was issuing it, with the failed device in its message.
                    report.recovered.iter().any(|f| f.index == dev
                        || f.error.to_string().contains(&format!("emulated:{dev}"))),
                    "{case:?}: recovered from {:?}, not from device {dev}",
                    report.recovered
                );
            }
            for x in 0..m * n {
                assert!(
                    correct(x),
                    "{case:?}: C({}, {}) = {}, expected {} (report {:?})",
                    x % m,
                    x / m,
                    c[x],
                    want[x],
                    report.recovered
                );
            }
        }
        Err(e) => {
            tally.errors += 1;
            assert!(
                matches!(
                    e,
                    Error::Backend { .. } | Error::DeviceLost { .. } | Error::OutOfMemory { .. }
                ),
                "{case:?}: not a device error: {e}"
            );
            // The only C that cannot be put back: in the memory of the device that was lost.
            if e.to_string().contains("could not be put back") {
                assert!(
                    case.c_on_device && dev == 0 && kind == FaultKind::Lost,
                    "{case:?}: C not put back although its memory is reachable: {e}"
                );
                tally.not_restorable += 1;
                return;
            }
            // Bit-identical to before the call, every entry (NaN-safe: compared as bits).
            for x in 0..m * n {
                assert!(
                    c[x].to_bits() == c0[x].to_bits(),
                    "{case:?} ({e}): C({}, {}) = {} after the failed call, was {}",
                    x % m,
                    x / m,
                    c[x],
                    c0[x]
                );
            }
            tally.untouched_on_error += 1;
        }
    }
}

/// Every kind of fault the emulated devices inject.
const KINDS: [FaultKind; 5] = [
    FaultKind::Error,
    FaultKind::Lost,
    FaultKind::Oom,
    FaultKind::Panic,
    FaultKind::Async,
];

/// When faults strike: the first and a later kernel, the first and a later copy, the first
/// allocation.
const WHENS: [(FaultOp, u64); 5] = [
    (FaultOp::Kernel, 1),
    (FaultOp::Kernel, 3),
    (FaultOp::Copy, 1),
    (FaultOp::Copy, 4),
    (FaultOp::Alloc, 1),
];

/// Calls `f` with a node of each size in `ndevs` and every fault (device, op, count, kind)
/// of `kinds` at `whens` on every device of it.
fn each_fault(
    ndevs: &[usize],
    kinds: &[FaultKind],
    whens: &[(FaultOp, u64)],
    mut f: impl FnMut(&Node, (usize, FaultOp, u64, FaultKind)),
) {
    for &ndev in ndevs {
        let node = node(ndev, 16 << 20);
        for dev in 0..ndev {
            for &kind in kinds {
                for &(op, at) in whens {
                    f(&node, (dev, op, at, kind));
                }
            }
        }
    }
}

/// The reproduction of the issue: 200x180x160, tile 32, device 1 of 2 fails at its 4th tile
/// product. Before fault tolerance every remaining tile was still issued, the failed tile was
/// written back and 1,024 entries of C were wrong.
#[test]
fn kernel_error_at_fourth_tile_recovers_exactly() {
    let node = node(2, 64 << 20);
    for kind in [
        FaultKind::Error,
        FaultKind::Panic,
        FaultKind::Lost,
        FaultKind::Oom,
    ] {
        for beta in [0.0, 1.0, -0.5] {
            let mut tally = Tally::default();
            let case = Case::host((200, 180, 160), beta, (1, FaultOp::Kernel, 4, kind));
            run_case(&node, case, 32, 7, &mut tally);
            assert_eq!(
                tally.recovered, 1,
                "{kind:?} beta {beta}: no recovery reported"
            );
        }
    }
}

#[test]
fn a_failed_device_is_left_out_until_reprobed() {
    let node = node(2, 64 << 20);
    let (m, n, k) = (96, 96, 64);
    let a = values(m * k, 1);
    let b = values(k * n, 2);
    let mut c = vec![0.0; m * n];
    node.emus[1]
        .faults()
        .arm([FaultSpec::new(1, FaultOp::Copy, 2, FaultKind::Lost)]);
    let opts = GemmOptions::default().tile(32);
    let call = |c: &mut Vec<f64>| {
        node.pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, m, k).unwrap(),
            MatRef::packed(&b, k, n).unwrap(),
            0.0,
            MatMut::packed(c, m, n).unwrap(),
            &opts,
        )
    };
    let first = call(&mut c).unwrap();
    assert_eq!(first.recovered.len(), 1);
    assert!(matches!(first.recovered[0].error, Error::DeviceLost { .. }));
    assert_eq!(node.pool.failed_devices(), vec![1]);
    let second = call(&mut c).unwrap();
    assert!(second.recovered.is_empty());
    assert_eq!(second.devices, vec!["emulated:0".to_string()]);
    // Still lost: the probe fails and it stays out.
    assert_eq!(node.pool.reprobe(), vec![1]);
    node.emus[1].faults().disarm();
    assert!(node.pool.reprobe().is_empty());
    let third = call(&mut c).unwrap();
    assert_eq!(third.devices.len(), 2);
    // Every device asked for has failed: a clear error, not a crash.
    node.emus[0]
        .faults()
        .arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Error)]);
    let mut c1 = vec![0.5; m * n];
    let r = node.pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
        1.0,
        MatMut::packed(&mut c1, m, n).unwrap(),
        &opts.clone().devices([0]),
    );
    assert!(matches!(r, Err(Error::Backend { .. })), "{r:?}");
    assert!(
        c1.iter().all(|&x| x == 0.5),
        "C changed by a call that failed at its first product"
    );
    node.heal();
}

#[test]
fn a_panic_in_a_backend_comes_back_with_its_message() {
    let node = node(1, 64 << 20);
    node.emus[0]
        .faults()
        .arm([FaultSpec::new(0, FaultOp::Kernel, 2, FaultKind::Panic)]);
    let (m, n, k) = (64, 64, 64);
    let a = values(m * k, 3);
    let b = values(k * n, 4);
    let mut c = vec![0.0; m * n];
    let r = node.pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
        0.0,
        MatMut::packed(&mut c, m, n).unwrap(),
        &GemmOptions::default().tile(32),
    );
    match r {
        Err(Error::DeviceLost { device, detail }) => {
            assert_eq!(device, "emulated:0");
            assert!(detail.contains("injected panic at kernel 2"), "{detail}");
        }
        other => panic!("expected the panic's message, got {other:?}"),
    }
    node.heal();
}

/// More than 1,000 fault cases: kinds x devices x when x beta x C location x shapes.
#[test]
fn every_injected_fault_ends_correct_or_with_c_as_before() {
    let shapes = [(40, 36, 30), (33, 47, 50)];
    let mut tally = Tally::default();
    let mut seed = 100;
    each_fault(&[1, 2, 4], &KINDS, &WHENS, |node, fault| {
        for beta in [0.0, 1.0, 0.3] {
            for c_on_device in [false, true] {
                for shape in shapes {
                    seed += 3;
                    let case = Case {
                        c_on_device,
                        ..Case::host(shape, beta, fault)
                    };
                    run_case(node, case, 16, seed, &mut tally);
                }
            }
        }
    });
    eprintln!("{tally:?}");
    assert!(tally.cases >= 1000, "{tally:?}");
    assert!(tally.recovered > 200, "too few recoveries: {tally:?}");
    // Calls that failed on every device after tiles were final: C put back, bit for bit.
    assert!(
        tally.untouched_on_error > 300,
        "too few failed calls: {tally:?}"
    );
}

/// A K-split asked for, with a fault on any of its devices at any point: the call ends with C
/// right, run again as a C split on the devices left (before, a failed device failed the
/// whole call although another was left), or with C as before.
#[test]
fn every_injected_fault_in_a_k_split_ends_correct_or_with_c_as_before() {
    // Each device's first allocation is its K-split partial; the second comes later in the call.
    let whens = [WHENS.as_slice(), &[(FaultOp::Alloc, 2)]].concat();
    let mut tally = Tally::default();
    let mut seed = 7000;
    each_fault(&[2, 4], &KINDS, &whens, |node, fault| {
        for beta in [0.0, 1.0, 0.3] {
            seed += 3;
            let case = Case {
                k_split: Some(true),
                ..Case::host((24, 20, 96), beta, fault)
            };
            run_case(node, case, 16, seed, &mut tally);
        }
    });
    eprintln!("{tally:?}");
    assert_eq!(tally.cases, 6 * 5 * 6 * 3);
    // Another device is always left: every call ends right.
    assert_eq!(tally.errors, 0, "{tally:?}");
    assert!(tally.recovered > 200, "too few recoveries: {tally:?}");
}

/// GEMMT, lower and upper, under the same faults: the call ends with the triangle right and
/// the other triangle bit for bit as it was (an unfinished diagonal tile runs again as a GEMMT
/// of its own, the others as GEMMs), or with an error and C exactly as before.
#[test]
fn every_injected_fault_in_gemmt_ends_correct_or_with_c_as_before() {
    use hetblas_core::Uplo;
    let mut tally = Tally::default();
    let mut seed = 11000;
    each_fault(&[1, 2, 4], &KINDS, &WHENS, |node, fault| {
        for (uplo, shape) in [(Uplo::Lower, (40, 40, 30)), (Uplo::Upper, (47, 47, 50))] {
            for beta in [0.0, 1.0, 0.3] {
                for c_on_device in [false, true] {
                    seed += 3;
                    let case = Case {
                        c_on_device,
                        triangle: Some(uplo),
                        ..Case::host(shape, beta, fault)
                    };
                    run_case(node, case, 16, seed, &mut tally);
                }
            }
        }
    });
    eprintln!("{tally:?}");
    assert_eq!(tally.cases, 7 * 5 * 5 * 12, "{tally:?}");
    assert!(tally.recovered > 200, "too few recoveries: {tally:?}");
    assert!(
        tally.untouched_on_error > 100,
        "too few failed calls: {tally:?}"
    );
}

/// Host folds, every tile folded or the last two sent whole (fold tail): a fault mid-call ends
/// with C right or, failed, as before, bit for bit (a fold and a sent tile's write-back are
/// both final writes of host C).
#[test]
fn every_injected_fault_under_host_folds_ends_correct_or_with_c_as_before() {
    let kinds = [
        FaultKind::Error,
        FaultKind::Lost,
        FaultKind::Panic,
        FaultKind::Async,
    ];
    let whens = [
        (FaultOp::Kernel, 1),
        (FaultOp::Kernel, 5),
        (FaultOp::Copy, 2),
        (FaultOp::Copy, 7),
    ];
    let mut tally = Tally::default();
    let mut seed = 9000;
    each_fault(&[1, 2], &kinds, &whens, |node, fault| {
        for beta in [1.0, 0.3] {
            for tail in [0, 2] {
                seed += 3;
                let case = Case {
                    fold_tail: Some(tail),
                    ..Case::host((40, 36, 30), beta, fault)
                };
                run_case(node, case, 16, seed, &mut tally);
            }
        }
    });
    eprintln!("{tally:?}");
    assert_eq!(tally.cases, 3 * 4 * 4 * 2 * 2, "{tally:?}");
    assert!(tally.folded > 50, "too few calls folded: {tally:?}");
    assert!(tally.recovered > 50, "too few recoveries: {tally:?}");
    assert!(
        tally.untouched_on_error > 20,
        "too few failed calls: {tally:?}"
    );
}

/// Out-of-core: each device may use 1/8 of the problem's footprint; tiles are evicted and
/// fetched again, and C is right.
#[test]
fn out_of_core_at_an_eighth_of_the_footprint() {
    let (m, n, k) = (256, 224, 288);
    let footprint = ((m * k + k * n + m * n) * 8) as u64;
    for ndev in [1, 2] {
        let node = node(ndev, 64 << 20);
        for beta in [0.0, 0.5] {
            let a = values(m * k, 11);
            let b = values(k * n, 12);
            let c0 = values(m * n, 13);
            let (want, bound) = reference((m, n, k), 1.25, &a, &b, beta, &c0);
            let mut c = c0.clone();
            let report = node
                .pool
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    1.25,
                    MatRef::packed(&a, m, k).unwrap(),
                    MatRef::packed(&b, k, n).unwrap(),
                    beta,
                    MatMut::packed(&mut c, m, n).unwrap(),
                    &GemmOptions::default().tile(32).memory_limit(footprint / 8),
                )
                .unwrap();
            for x in 0..m * n {
                assert!(
                    (c[x] - want[x]).abs() <= bound[x],
                    "C[{x}] {} vs {}",
                    c[x],
                    want[x]
                );
            }
            // Tiles crossed the link more than once: evicted and fetched again.
            let (tm, tn, tk) = report.tile.unwrap();
            let distinct_ab = m.div_ceil(tm) * k.div_ceil(tk) + k.div_ceil(tk) * n.div_ceil(tn);
            let fetched_ab = report.stats.fetches[0] + report.stats.fetches[1];
            assert!(
                fetched_ab > distinct_ab * ndev.min(2) / ndev.max(1),
                "no re-fetch under the budget: {fetched_ab} fetches of {distinct_ab} tiles"
            );
            let slot = (tm * tk.max(tn) * 8) as u64;
            assert!(
                slot * 3 <= footprint / 8 + slot,
                "tile too big for the budget"
            );
        }
    }
}

/// With the CPU in the pool (as the Runtime builds it), the CPU takes the tiles when the only
/// accelerator fails, and the call still returns the right C.
#[test]
fn the_cpu_takes_over_when_every_accelerator_failed() {
    let node = emulated_node(&[EmulatedConfig::default()], blas()).unwrap();
    let emu = node.devices[0].clone();
    let devices: Vec<Arc<dyn Device>> = vec![
        hetblas_cpu::CpuDevice::with_blas(blas(), vec![]).unwrap(),
        emu.clone(),
    ];
    let pool = DevicePool::new(devices, node.links).unwrap();
    let (m, n, k) = (150, 130, 120);
    let (a, b, c0) = (values(m * k, 21), values(k * n, 22), values(m * n, 23));
    let (want, bound) = reference((m, n, k), -1.5, &a, &b, 2.0, &c0);
    let mut c = c0.clone();
    emu.faults()
        .arm([FaultSpec::new(0, FaultOp::Kernel, 5, FaultKind::Lost)]);
    let report = pool
        .gemm_with(
            Trans::N,
            Trans::N,
            -1.5,
            MatRef::packed(&a, m, k).unwrap(),
            MatRef::packed(&b, k, n).unwrap(),
            2.0,
            MatMut::packed(&mut c, m, n).unwrap(),
            &GemmOptions::default().tile(32),
        )
        .unwrap();
    assert_eq!(report.recovered.len(), 1, "{:?}", report.recovered);
    assert_eq!(report.recovered[0].device, "emulated:0");
    assert!(
        report.devices.contains(&"cpu:0".to_string()),
        "{:?}",
        report.devices
    );
    for x in 0..m * n {
        assert!(
            (c[x] - want[x]).abs() <= bound[x],
            "C[{x}] {} vs {}",
            c[x],
            want[x]
        );
    }
    assert_eq!(pool.failed_devices(), vec![1]);
}

/// The symmetric routines under the same faults: SYRK, SYR2K (two plans) and SYMM on either
/// side, lower and upper, on 1, 2 and 4 devices. Every call ends with a correct C (its other
/// triangle untouched, bit for bit) or with an error and C exactly as before.
#[test]
fn every_injected_fault_in_a_symmetric_routine_ends_correct_or_with_c_as_before() {
    use hetblas_core::sym_reference::check_sym;
    use hetblas_core::{scalar::c64, Side, SymOp, SymProblem, Uplo};
    let ops = [
        SymOp::Rank {
            uplo: Uplo::Lower,
            trans: Trans::N,
            two: false,
            herm: false,
        },
        SymOp::Rank {
            uplo: Uplo::Upper,
            trans: Trans::T,
            two: true,
            herm: false,
        },
        SymOp::Multiply {
            side: Side::Left,
            uplo: Uplo::Upper,
            herm: false,
        },
        SymOp::Multiply {
            side: Side::Right,
            uplo: Uplo::Lower,
            herm: false,
        },
    ];
    let kinds = [FaultKind::Error, FaultKind::Lost, FaultKind::Panic];
    // Kernel 50 falls in SYR2K's second plan on one device (45 products in the first).
    let whens = [
        (FaultOp::Kernel, 2),
        (FaultOp::Kernel, 5),
        (FaultOp::Copy, 3),
        (FaultOp::Kernel, 50),
    ];
    let (mut cases, mut recovered, mut failed) = (0, 0, 0);
    let mut seed = 900;
    for ndev in [1, 2, 4] {
        let node = node(ndev, 16 << 20);
        for dev in 0..ndev {
            for op in ops {
                for kind in kinds {
                    for (fop, at) in whens {
                        for beta in [0.0, 0.5] {
                            seed += 5;
                            let p = match op {
                                SymOp::Rank {
                                    uplo,
                                    trans,
                                    two,
                                    herm,
                                } => SymProblem::rank(
                                    uplo,
                                    trans,
                                    two,
                                    herm,
                                    37,
                                    21,
                                    hetblas_core::DType::F64,
                                ),
                                SymOp::Multiply { side, uplo, herm } => SymProblem::multiply(
                                    side,
                                    uplo,
                                    herm,
                                    37,
                                    29,
                                    hetblas_core::DType::F64,
                                ),
                            };
                            let (ar, ac) = match op {
                                SymOp::Rank { trans, .. } => trans.stored_shape(p.n, p.k),
                                SymOp::Multiply { .. } => (p.k, p.k),
                            };
                            let (br, bc) = match op {
                                SymOp::Rank { .. } => (ar, ac),
                                SymOp::Multiply { .. } => (p.m, p.n),
                            };
                            let a = values(ar * ac, seed);
                            let b = values(br * bc, seed + 1);
                            let c0 = values(p.m * p.n, seed + 2);
                            let mut c = c0.clone();
                            node.emus[dev]
                                .faults()
                                .arm([FaultSpec::new(dev, fop, at, kind)]);
                            let uses_b = !matches!(op, SymOp::Rank { two: false, .. });
                            let r = node.pool.sym_with(
                                op,
                                0.75,
                                MatRef::packed(&a, ar, ac).unwrap(),
                                uses_b.then(|| MatRef::packed(&b, br, bc).unwrap().into()),
                                beta,
                                MatMut::packed(&mut c, p.m, p.n).unwrap(),
                                &GemmOptions::default().tile(8),
                            );
                            node.heal();
                            cases += 1;
                            let case = format!("{op:?} {ndev} devices, device {dev} {kind:?} at {fop:?} {at}, beta {beta}");
                            match r {
                                Ok(report) => {
                                    recovered += usize::from(!report.recovered.is_empty());
                                    check_sym(
                                        &p,
                                        c64::new(0.75, 0.0),
                                        MatRef::packed(&a, ar, ac).unwrap(),
                                        uses_b.then(|| MatRef::packed(&b, br, bc).unwrap()),
                                        c64::new(beta, 0.0),
                                        MatRef::packed(&c0, p.m, p.n).unwrap(),
                                        MatRef::packed(&c, p.m, p.n).unwrap(),
                                        4.0,
                                    )
                                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                                }
                                Err(e) => {
                                    failed += 1;
                                    assert!(
                                        c.iter().zip(&c0).all(|(x, y)| x.to_bits() == y.to_bits()),
                                        "{case}: C changed by a call that failed: {e}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("{cases} cases, {recovered} recovered, {failed} failed with C as before");
    assert!(
        cases >= 500 && recovered > 100,
        "{cases} cases, {recovered} recovered"
    );
}

/// A node of the CPU device and `ndev` emulated devices, [cpu, emu0, ...], with the emulated
/// devices' handles.
fn node_with_cpu(ndev: usize) -> (DevicePool, Vec<Arc<EmulatedDevice>>) {
    quiet_injected_panics();
    let config = EmulatedConfig {
        memory_bytes: 64 << 20,
        compute_queues: 2,
        host_link_bytes_per_sec: Some(50e9),
        ..Default::default()
    };
    let node = emulated_node(&vec![config; ndev], common::blas()).expect("emulated node");
    let mut devices: Vec<Arc<dyn Device>> =
        vec![hetblas_cpu::CpuDevice::with_blas(common::blas(), vec![]).expect("cpu")];
    devices.extend(node.devices.iter().map(|d| d.clone() as Arc<dyn Device>));
    let pool = DevicePool::new(devices, node.links).expect("pool");
    (pool, node.devices)
}

/// What a triangular call with a fault ended as.
#[derive(Debug, Default)]
struct TriTally {
    cases: usize,
    recovered: usize,
    untouched_on_error: usize,
}

/// A triangular case's operands: A (`k x k`, its side's order) and B as it was.
fn tri_operands(case: &hetblas_conformance::tri::TriCase) -> (Vec<f64>, usize, Vec<f64>) {
    let k = if case.opts.side == hetblas_core::Side::Left {
        case.m
    } else {
        case.n
    };
    let a = hetblas_conformance::tri::triangular(&case.opts, k, k, case.seed);
    (a, k, values(case.m * case.n, case.seed + 1))
}

/// Runs TRSM or TRMM `case` on `pool` with `fault` armed on `emus[fault.0]` (pool index
/// `offset + fault.0`): B must be right, with the failed device named in the report when the
/// fault struck, or the call must fail with a device's error and B bit-identical. The failed
/// device is then left out of the next call.
fn run_tri_case(
    pool: &DevicePool,
    emus: &[Arc<EmulatedDevice>],
    offset: usize,
    case: &hetblas_conformance::tri::TriCase,
    fault: (usize, FaultOp, u64, FaultKind),
    devices: &[usize],
    tally: &mut TriTally,
) {
    use hetblas_core::TriCallOptions;
    let (m, n) = (case.m, case.n);
    let (a, k, b0) = tri_operands(case);
    let mut b = b0.clone();
    let (dev, op, at, kind) = fault;
    emus[dev].faults().arm([FaultSpec::new(dev, op, at, kind)]);
    let call = TriCallOptions::default()
        .tile(case.tile.unwrap_or(16))
        .devices(devices.iter().copied());
    let r = pool.tri_with(
        case.routine,
        case.opts,
        case.alpha.re,
        MatRef::new(&a, k, k, k).unwrap(),
        MatMut::new(&mut b, m, n, m).unwrap(),
        &call,
    );
    let struck =
        emus[dev].faults().counts() != (0, 0) && pool.failed_devices().contains(&(offset + dev));
    tally.cases += 1;
    match r {
        Ok(report) => {
            hetblas_conformance::tri::check_tri(case, &a, k, &b0, &b, m, case.alpha)
                .unwrap_or_else(|e| panic!("{case:?} {fault:?}: {e}"));
            if struck {
                tally.recovered += 1;
                assert!(
                    report.recovered.iter().any(|f| f.index == offset + dev),
                    "{case:?} {fault:?}: recovered from {:?}",
                    report.recovered
                );
                // Left out of the next call.
                let mut again = b0.clone();
                let next = pool
                    .tri_with(
                        case.routine,
                        case.opts,
                        case.alpha.re,
                        MatRef::new(&a, k, k, k).unwrap(),
                        MatMut::new(&mut again, m, n, m).unwrap(),
                        &call,
                    )
                    .unwrap();
                let label = format!("emulated:{dev}");
                assert!(
                    !next.devices.contains(&label),
                    "{fault:?}: the failed device took part again: {:?}",
                    next.devices
                );
            }
        }
        Err(e) => {
            assert!(
                matches!(
                    e,
                    Error::Backend { .. } | Error::DeviceLost { .. } | Error::OutOfMemory { .. }
                ),
                "{case:?} {fault:?}: not a device error: {e}"
            );
            for x in 0..m * n {
                assert_eq!(
                    b[x].to_bits(),
                    b0[x].to_bits(),
                    "{case:?} {fault:?} ({e}): B({}, {}) changed by the failed call",
                    x % m,
                    x / m
                );
            }
            tally.untouched_on_error += 1;
        }
    }
    for d in emus {
        d.faults().disarm();
    }
    assert!(pool.reprobe().is_empty(), "a healed device stays excluded");
}

/// Every side, uplo and transpose of TRSM and TRMM, for one case each.
fn tri_cases() -> Vec<hetblas_conformance::tri::TriCase> {
    use hetblas_core::problem::triangular::{Diag, TriOptions, TriRoutine};
    use hetblas_core::{Side, Uplo};
    let mut cases = Vec::new();
    let mut seed = 40;
    for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
        for side in [Side::Left, Side::Right] {
            for (uplo, transa) in [(Uplo::Lower, Trans::N), (Uplo::Upper, Trans::T)] {
                seed += 1;
                cases.push(hetblas_conformance::tri::TriCase {
                    routine,
                    opts: TriOptions {
                        side,
                        uplo,
                        transa,
                        diag: Diag::NonUnit,
                    },
                    m: 83,
                    n: 70,
                    alpha: hetblas_core::scalar::c64::new(-0.75, 0.0),
                    pad: (0, 0),
                    tile: Some(16),
                    devices: None,
                    b_home: None,
                    seed,
                });
            }
        }
    }
    cases
}

/// A device lost mid-TRSM or mid-TRMM: with three emulated devices (no CPU to finish, so B is
/// kept in the undo log) and with the CPU beside two (the panels go on from their final
/// tiles; what the CPU wrote in B itself is put back), every kernel and copy fault kind at an
/// early and a late point ends with B right on the devices left, the failed device named and
/// left out of the next call.
#[test]
fn a_device_lost_mid_trsm_or_trmm_finishes_on_the_devices_left() {
    let (emu3, emus3) = common::emulated_handles(&vec![
        EmulatedConfig {
            memory_bytes: 64 << 20,
            compute_queues: 2,
            ..Default::default()
        };
        3
    ]);
    let (cpu2, emus2) = node_with_cpu(2);
    let (mut without_cpu, mut with_cpu) = (TriTally::default(), TriTally::default());
    for case in tri_cases() {
        for kind in [
            FaultKind::Error,
            FaultKind::Lost,
            FaultKind::Panic,
            FaultKind::Async,
        ] {
            for (op, at) in [
                (FaultOp::Kernel, 2),
                (FaultOp::Kernel, 15),
                (FaultOp::Copy, 7),
            ] {
                let fault = (1, op, at, kind);
                run_tri_case(&emu3, &emus3, 0, &case, fault, &[0, 1, 2], &mut without_cpu);
                let fault = (0, op, at, kind);
                run_tri_case(&cpu2, &emus2, 1, &case, fault, &[0, 1, 2], &mut with_cpu);
            }
        }
    }
    // Not vacuous: the faults struck and every call finished right (a device is always left).
    for tally in [without_cpu, with_cpu] {
        assert_eq!(tally.untouched_on_error, 0, "{tally:?}");
        assert!(tally.recovered > tally.cases / 2, "{tally:?}");
    }
}

/// The only device asked for lost mid-TRSM or mid-TRMM, with the CPU in the pool but not asked
/// for: the CPU finishes the call, as it does for GEMM (it was an error with B partly solved).
#[test]
fn a_trsm_whose_devices_asked_for_are_lost_finishes_on_the_cpu() {
    use hetblas_core::TriCallOptions;
    let (pool, emus) = node_with_cpu(1);
    for case in tri_cases() {
        let (m, n) = (case.m, case.n);
        let (a, k, b0) = tri_operands(&case);
        let mut b = b0.clone();
        emus[0]
            .faults()
            .arm([FaultSpec::new(0, FaultOp::Kernel, 2, FaultKind::Lost)]);
        let report = pool
            .tri_with(
                case.routine,
                case.opts,
                case.alpha.re,
                MatRef::new(&a, k, k, k).unwrap(),
                MatMut::new(&mut b, m, n, m).unwrap(),
                &TriCallOptions::default().tile(16).devices([1]),
            )
            .unwrap_or_else(|e| panic!("{case:?}: {e}"));
        hetblas_conformance::tri::check_tri(&case, &a, k, &b0, &b, m, case.alpha)
            .unwrap_or_else(|e| panic!("{case:?}: {e}"));
        assert!(
            report.recovered.iter().any(|f| f.index == 1),
            "{case:?}: {:?}",
            report.recovered
        );
        emus[0].faults().disarm();
        assert!(pool.reprobe().is_empty());
    }
}

/// With no device left (one emulated device, lost mid-call), the call fails with its error and
/// B bit-identical to before.
#[test]
fn a_trsm_with_no_device_left_leaves_b_as_it_was() {
    let (pool, emus) = common::emulated_handles(&[EmulatedConfig {
        memory_bytes: 64 << 20,
        ..Default::default()
    }]);
    let mut tally = TriTally::default();
    for case in tri_cases() {
        for (op, at) in [(FaultOp::Kernel, 3), (FaultOp::Copy, 12)] {
            let fault = (0, op, at, FaultKind::Lost);
            run_tri_case(&pool, &emus, 0, &case, fault, &[0], &mut tally);
        }
    }
    assert_eq!(tally.untouched_on_error, tally.cases, "{tally:?}");
}

/// A device that fails every allocation (another process holding its memory) is left out as
/// a failed device and the call finishes on the others: GEMM and TRSM, call after call.
#[test]
fn a_device_that_cannot_allocate_is_left_out() {
    use hetblas_core::TriCallOptions;
    let (pool, emus) = common::emulated_handles(&vec![
        EmulatedConfig {
            memory_bytes: 64 << 20,
            ..Default::default()
        };
        3
    ]);
    let every = (1..=10_000).map(|n| FaultSpec::new(1, FaultOp::Alloc, n, FaultKind::Oom));
    emus[1].faults().arm(every);
    let (m, n, k) = (150, 130, 90);
    let a = values(m * k, 1);
    let b = values(k * n, 2);
    let c0 = values(m * n, 3);
    let (want, bound) = reference((m, n, k), 0.5, &a, &b, 1.0, &c0);
    for call in 0..3 {
        let mut c = c0.clone();
        let r = pool
            .gemm_with(
                Trans::N,
                Trans::N,
                0.5,
                MatRef::packed(&a, m, k).unwrap(),
                MatRef::packed(&b, k, n).unwrap(),
                1.0,
                MatMut::packed(&mut c, m, n).unwrap(),
                &GemmOptions::default().tile(32),
            )
            .unwrap_or_else(|e| panic!("call {call}: {e}"));
        for x in 0..m * n {
            assert!((c[x] - want[x]).abs() <= bound[x], "call {call}, entry {x}");
        }
        assert!(
            !r.devices.contains(&"emulated:1".to_string()),
            "{:?}",
            r.devices
        );
        if call == 0 {
            assert!(
                r.recovered.iter().any(|f| f.index == 1),
                "the device that cannot allocate is not named: {:?}",
                r.recovered
            );
        }
    }
    // TRSM on the same pool, after a re-probe that finds the device still failing.
    assert_eq!(pool.reprobe(), vec![1]);
    let case = &tri_cases()[0];
    let (m, n) = (case.m, case.n);
    let a: Vec<f64> = hetblas_conformance::tri::triangular(&case.opts, m, m, case.seed);
    let b0 = values(m * n, 9);
    let mut bb = b0.clone();
    let r = pool
        .tri_with(
            case.routine,
            case.opts,
            case.alpha.re,
            MatRef::new(&a, m, m, m).unwrap(),
            MatMut::new(&mut bb, m, n, m).unwrap(),
            &TriCallOptions::default().tile(16),
        )
        .unwrap();
    assert!(!r.devices.contains(&"emulated:1".to_string()));
    hetblas_conformance::tri::check_tri(case, &a, m, &b0, &bb, m, case.alpha).unwrap();
    emus[1].faults().disarm();
    assert!(pool.reprobe().is_empty());
}

/// Two emulated devices, device 1 a hundred times faster: the model gives it a
/// factorization whenever it can take part.
fn slow_and_fast() -> (DevicePool, Vec<Arc<EmulatedDevice>>) {
    quiet_injected_panics();
    let slow = EmulatedConfig {
        memory_bytes: 64 << 20,
        flops_per_sec: Some(2e9),
        host_link_bytes_per_sec: Some(50e9),
        ..Default::default()
    };
    let fast = EmulatedConfig {
        flops_per_sec: Some(2e11),
        ..slow.clone()
    };
    common::emulated_handles(&[slow, fast])
}

#[test]
fn a_reprobed_device_takes_factorizations_again() {
    // Device 1 is the fast one: the model gives it the factorization. Lost, it is left out
    // and the next call is decided (and cached) without it; re-probed, the next call must be
    // decided again with it (the factorizations' decisions once outlived the re-probe).
    let (pool, emus) = slow_and_fast();
    let n = 192;
    let spd: Vec<f64> = (0..n * n)
        .map(|x| {
            let (i, j) = (x % n, x / n);
            if i == j {
                n as f64 + 1.0
            } else {
                1.0 / (1 + i + j) as f64
            }
        })
        .collect();
    let opts = hetblas_core::FactorOptions::default();
    let potrf = || {
        let mut a = spd.clone();
        let r = pool
            .potrf(
                hetblas_core::Uplo::Lower,
                MatMut::packed(&mut a, n, n).unwrap(),
                &opts,
            )
            .expect("potrf");
        assert_eq!(r.info, 0);
        r
    };
    assert_eq!(potrf().devices, vec!["emulated:1".to_string()]);
    emus[1]
        .faults()
        .arm([FaultSpec::new(1, FaultOp::Kernel, 1, FaultKind::Lost)]);
    let lost = potrf();
    assert_eq!(lost.recovered.len(), 1, "{lost:?}");
    assert_eq!(pool.failed_devices(), vec![1]);
    assert_eq!(potrf().devices, vec!["emulated:0".to_string()]);
    emus[1].faults().disarm();
    assert!(pool.reprobe().is_empty());
    assert_eq!(potrf().devices, vec!["emulated:1".to_string()]);
}

#[test]
fn a_factorization_leaves_out_a_device_that_cannot_allocate() {
    // The fast device fails every allocation (as when another process holds its memory): it
    // is left out and the slow one factors, correctly, instead of the call failing.
    let (pool, emus) = slow_and_fast();
    let every = (1..=10_000).map(|n| FaultSpec::new(1, FaultOp::Alloc, n, FaultKind::Oom));
    emus[1].faults().arm(every);
    let n = 160;
    let a0: Vec<f64> = (0..n * n)
        .map(|x| {
            let (i, j) = (x % n, x / n);
            if i == j {
                n as f64
            } else {
                0.5 / (1 + i + j) as f64
            }
        })
        .collect();
    let mut a = a0.clone();
    let r = pool
        .potrf(
            hetblas_core::Uplo::Lower,
            MatMut::packed(&mut a, n, n).unwrap(),
            &hetblas_core::FactorOptions::default(),
        )
        .expect("potrf");
    assert_eq!(r.info, 0);
    assert_eq!(r.devices, vec!["emulated:0".to_string()]);
    assert!(
        r.recovered.iter().any(|f| f.index == 1),
        "the device that cannot allocate is not named: {:?}",
        r.recovered
    );
    // A = L L^T, L in the lower triangle.
    let l = |i: usize, j: usize| if i >= j { a[j * n + i] } else { 0.0 };
    for (i, j) in [(0, 0), (5, 3), (n - 1, 0), (n - 1, n - 1), (97, 96)] {
        let got: f64 = (0..=j).map(|k| l(i, k) * l(j, k)).sum();
        let want = a0[j * n + i];
        assert!(
            (got - want).abs() <= 1e-12 * n as f64,
            "({i}, {j}): {got} vs {want}"
        );
    }
}
