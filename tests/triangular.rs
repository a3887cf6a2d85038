//! TRSM and TRMM end to end on emulated devices of unequal speed with slow links (so that the
//! order in which queues run varies from run to run): diagonal solves on the CPU while the
//! devices update (a tile changed on the host is fetched again after the change), panels shared
//! by speed, the trace's look-ahead structure, and the model's alternatives.

mod common;

use hetblas_conformance::tri::{run_tri, TriCase};
use hetblas_conformance::Target;
use hetblas_core::problem::triangular::{Diag, Side, TriOptions, TriRoutine, Uplo};
use hetblas_core::scalar::c64;
use hetblas_core::{
    Device, DevicePool, Link, MatMut, MatRef, MemorySpace, SolvePlacement, Trans, TriCallOptions,
    TriReport,
};
use hetblas_cpu::{emulated_node, CpuDevice, EmulatedConfig};
use std::sync::Arc;
use std::time::Duration;

/// [cpu, emu0 (fast), emu1 (half as fast)], links of 2 GB/s with 50 us latency.
fn uneven_target() -> Target {
    let configs: Vec<EmulatedConfig> = [4e9, 2e9]
        .iter()
        .map(|&r| EmulatedConfig {
            memory_bytes: 64 << 20,
            flops_per_sec: Some(r),
            host_link_bytes_per_sec: Some(2e9),
            link_latency: Duration::from_micros(50),
            ..Default::default()
        })
        .collect();
    let node = emulated_node(&configs, common::blas()).unwrap();
    let mut devices: Vec<Arc<dyn Device>> =
        vec![CpuDevice::with_blas(common::blas(), vec![]).unwrap()];
    devices.extend(node.devices.into_iter().map(|d| d as Arc<dyn Device>));
    let links: Vec<Arc<dyn Link>> = node.links;
    Target {
        name: "cpu + 2 uneven emulated".into(),
        pool: Arc::new(DevicePool::new(devices, links).unwrap()),
        compute: vec![0, 1, 2],
        homes: vec![1, 2],
        small_tile: 16,
    }
}

fn opts(side: Side, uplo: Uplo, transa: Trans, diag: Diag) -> TriOptions {
    TriOptions {
        side,
        uplo,
        transa,
        diag,
    }
}

/// The CPU solves every diagonal tile in B itself while the emulated devices update: each
/// tile goes back to the host, is solved there, and is fetched again; the result is right for
/// every side/uplo/transa, repeatedly (the queues interleave differently each time).
#[test]
fn solves_on_the_host_while_devices_update() {
    let t = uneven_target();
    let mut seed = 1;
    for side in [Side::Left, Side::Right] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for transa in [Trans::N, Trans::T] {
                for _ in 0..2 {
                    seed += 1;
                    let case = TriCase {
                        routine: TriRoutine::Trsm,
                        opts: opts(side, uplo, transa, Diag::NonUnit),
                        m: 75,
                        n: 66,
                        alpha: c64::new(-0.75, 0.0),
                        pad: (1, 2),
                        tile: Some(16),
                        devices: Some(vec![1, 2]),
                        b_home: None,
                        seed,
                    };
                    run_with_host_solves(&t, &case);
                }
            }
        }
    }
}

/// Runs `case` with the solves forced onto the host CPU (pool device 0) and checks it.
fn run_with_host_solves(t: &Target, case: &TriCase) {
    let (m, n) = (case.m, case.n);
    let k = if case.opts.side == Side::Left { m } else { n };
    let a: Vec<f64> = hetblas_conformance::tri::triangular(&case.opts, k, k, case.seed);
    let b0: Vec<f64> = hetblas_conformance::data::random_vec(
        &mut hetblas_conformance::data::rng(case.seed + 7),
        m * n,
    );
    let mut b = b0.clone();
    let call = TriCallOptions::default()
        .tile(16)
        .devices([1, 2])
        .solve(SolvePlacement::Host);
    let r = t
        .pool
        .tri_with(
            TriRoutine::Trsm,
            case.opts,
            case.alpha.re,
            MatRef::new(&a, k, k, k).unwrap(),
            MatMut::new(&mut b, m, n, m).unwrap(),
            &call,
        )
        .unwrap();
    assert_eq!(r.solve, Some(SolvePlacement::Host));
    // Every B tile but the last solved one comes back to its device after its solve.
    let nt = k.div_ceil(16);
    let panels = if case.opts.side == Side::Left { n } else { m }.div_ceil(16);
    let fetched = r.stats.fetches[1];
    assert_eq!(fetched, panels * (2 * nt - 1), "{:?}", r.stats);
    // The CPU joined only to solve (plan device 2): no update, every diagonal tile.
    assert_eq!(r.stats.products[2], 0);
    assert_eq!(r.stats.tri_tiles[2], panels * nt);
    hetblas_conformance::tri::check_tri(case, &a, k, &b0, &b, m, case.alpha)
        .unwrap_or_else(|e| panic!("{case:?}: {e}"));
}

/// A left, lower, non-transposed, non-unit f64 TRSM of seeded random `m x m` A and `m x n`
/// B (seeds `seed` and `seed + 1`) with `call`.
fn lower_trsm(t: &Target, m: usize, n: usize, seed: u64, call: &TriCallOptions) -> TriReport {
    let o = opts(Side::Left, Uplo::Lower, Trans::N, Diag::NonUnit);
    let a: Vec<f64> = hetblas_conformance::tri::triangular(&o, m, m, seed);
    let mut b: Vec<f64> =
        hetblas_conformance::data::random_vec(&mut hetblas_conformance::data::rng(seed + 1), m * n);
    t.pool
        .tri_with(
            TriRoutine::Trsm,
            o,
            1.0,
            MatRef::new(&a, m, m, m).unwrap(),
            MatMut::new(&mut b, m, n, m).unwrap(),
            call,
        )
        .unwrap()
}

/// Panels are shared by speed, and the conformance check passes on the uneven node for both
/// routines and several option combinations.
#[test]
fn panels_follow_speeds_and_results_are_right() {
    let t = uneven_target();
    let r = lower_trsm(
        &t,
        64,
        16 * 12,
        3,
        &TriCallOptions::default()
            .tile(16)
            .devices([1, 2])
            .solve(SolvePlacement::OnDevice),
    );
    // 12 panels, rates 2:1 -> 8 and 4 panels (4 diagonal tiles each).
    assert_eq!(r.stats.tri_tiles, vec![8 * 4, 4 * 4]);
    for routine in [TriRoutine::Trsm, TriRoutine::Trmm] {
        for (i, o) in [
            opts(Side::Right, Uplo::Upper, Trans::T, Diag::Unit),
            opts(Side::Left, Uplo::Upper, Trans::N, Diag::NonUnit),
        ]
        .into_iter()
        .enumerate()
        {
            let case = TriCase {
                routine,
                opts: o,
                m: 70,
                n: 53,
                alpha: c64::new(1.25, 0.0),
                pad: (0, 3),
                tile: Some(16),
                devices: Some(vec![0, 1, 2]),
                b_home: None,
                seed: 40 + i as u64,
            };
            run_tri::<f64>(&t, &case).unwrap();
        }
    }
}

/// The trace of one TRSM: diagonal solves after the first on compute queue 1, updates (GEMMs) on
/// both, fetches and write-backs on the link queues; every interval inside the call.
#[test]
fn trace_shows_the_lookahead_structure() {
    let t = uneven_target();
    let r = lower_trsm(
        &t,
        96,
        96,
        5,
        &TriCallOptions::default()
            .tile(16)
            .devices([1])
            .solve(SolvePlacement::OnDevice)
            .trace(true),
    );
    let tr = r.trace.expect("trace");
    let on = |label: &str, queue: &str| {
        tr.intervals
            .iter()
            .filter(|i| i.label.starts_with(label) && i.queue.ends_with(queue))
            .count()
    };
    let (nt, np) = (6, 6);
    assert_eq!(on("trsm", "compute1"), (nt - 1) * np);
    assert_eq!(on("trsm", "compute0"), np);
    assert_eq!(on("gemm", "compute1"), (nt - 1) * np);
    assert_eq!(on("gemm", "compute0"), np * (nt * (nt - 1) / 2 - (nt - 1)));
    assert_eq!(on("fetch", ""), np * nt + nt * (nt + 1) / 2);
    assert_eq!(on("writeback", ""), np * nt);
    for i in &tr.intervals {
        assert!(i.end >= i.start && i.start >= 0.0, "{i:?}");
    }
    assert!(tr.busy_fraction(|i| i.queue.contains("compute")) > 0.0);
}

/// The model weighs every device set, tile and solve placement, and picks the fastest.
#[test]
fn prediction_lists_alternatives_fastest_first() {
    let t = uneven_target();
    let p = hetblas_core::problem::TriProblem {
        routine: TriRoutine::Trsm,
        opts: opts(Side::Left, Uplo::Lower, Trans::N, Diag::NonUnit),
        m: 1024,
        n: 1024,
        dtype: hetblas_core::DType::F64,
    };
    let d = t
        .pool
        .predict_tri(
            &p,
            [MemorySpace::HOST, MemorySpace::HOST],
            &TriCallOptions::default(),
        )
        .unwrap();
    assert!(d.alternatives.len() >= 4, "{:?}", d.alternatives);
    assert_eq!(d.alternatives[0], d.chosen);
    for w in d.alternatives.windows(2) {
        assert!(w[0].seconds <= w[1].seconds);
    }
    assert!(d
        .alternatives
        .iter()
        .any(|a| a.solve == SolvePlacement::Host));
}
