//! The fast path of calibration on host-emulated devices: a re-check measures the points it
//! names, and another device set fails it. What the re-check finds of measured figures is a
//! timing claim, checked by the ignored `timing_*` tests on an idle machine
//! (`scripts/gpu/tests.sh`): a previous profile of the same hardware is re-checked in a
//! fraction of a calibration's time and holds; the tiles it chooses are as good as a fresh
//! calibration's (within 2% under the fresh one's model); a link that moved within the rescale
//! limit is rescaled and chooses as well; a link at half its speed makes it fail.

use hetblas_core::autotune::{evaluate, model_tile, FoldRequest};
use hetblas_core::calibrate::{CalibrationOptions, Target, RECHECK_TOLERANCE};
use hetblas_core::problem::GemmProblem;
use hetblas_core::profile::MachineProfile;
use hetblas_core::{DType, Device, DevicePool};
use hetblas_cpu::{emulated_node, EmulatedConfig, HostBlas, RustGemm};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The tests time things: one at a time, so neither disturbs the other's clocks.
static SERIAL: Mutex<()> = Mutex::new(());

fn config(bandwidth: f64) -> EmulatedConfig {
    EmulatedConfig {
        memory_bytes: 512 << 20,
        flops_per_sec: Some(5e8),
        host_link_bytes_per_sec: Some(bandwidth),
        peer_link_bytes_per_sec: None,
        link_latency: Duration::from_micros(100),
        compute_queues: 1,
    }
}

fn pool(configs: &[EmulatedConfig]) -> DevicePool {
    // One host thread computes: the throttle, not a busy machine, sets the product times.
    let blas: Arc<dyn HostBlas> = Arc::new(RustGemm::new(1));
    let node = emulated_node(configs, blas).expect("emulated node");
    let devices: Vec<Arc<dyn Device>> = node
        .devices
        .into_iter()
        .map(|d| d as Arc<dyn Device>)
        .collect();
    DevicePool::new(devices, node.links).expect("pool")
}

fn opts() -> CalibrationOptions {
    CalibrationOptions {
        link_sides: vec![64, 256, 1024, 2048],
        gemm_tiles: vec![128, 256],
        dtypes: vec![DType::F64],
        max_buffer_bytes: 32 << 20,
        strided_sides: vec![256],
        gemm_sample: Duration::ZERO,
        gemm_warmup: Duration::ZERO,
        cross_links: false,
        bidirectional: false,
        ..CalibrationOptions::quick()
    }
}

/// The square f64 problems the choices are compared on (host operands, beta 1).
fn problems() -> Vec<GemmProblem> {
    [(1024, 1024, 1024), (2048, 512, 4096), (3000, 3000, 600)]
        .into_iter()
        .map(|(m, n, k)| GemmProblem::host(m, n, k, DType::F64, false))
        .collect()
}

#[test]
fn a_recheck_measures_both_links_the_gemm_and_the_host_fold() {
    rechecked_quickly_and_chooses_as_well(false);
}

#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_a_previous_profile_is_rechecked_quickly_and_chooses_as_well() {
    rechecked_quickly_and_chooses_as_well(true);
}

/// A calibration, then a re-check of it on the same hardware; with `timing`, the re-check is
/// quicker and holds, and the reused profile chooses as a fresh one does.
fn rechecked_quickly_and_chooses_as_well(timing: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let pool = pool(&[config(2.5e8)]);
    let t = Instant::now();
    let previous = pool.calibrate(&opts(), &mut |_| {}).expect("calibration");
    let full = t.elapsed();
    let mut ticks = 0;
    let t = Instant::now();
    let check = pool
        .recheck(&previous, &mut |_| ticks += 1)
        .expect("re-check");
    let quick = t.elapsed();
    eprintln!(
        "calibration {full:?}, re-check {quick:?}: {:#?}",
        check.points
    );
    // Both links, the device's GEMM and the host fold were measured again, with progress.
    assert_eq!(check.points.len(), 4, "{:?}", check.points);
    assert!(
        check.points.iter().any(|p| p.starts_with("host fold")),
        "{:?}",
        check.points
    );
    assert!(ticks >= 4);
    // It holds exactly when no point moved beyond its tolerance.
    assert!(check.complete, "{check:?}");
    assert_eq!(check.holds, check.moved.is_empty(), "{check:?}");
    if check.holds {
        assert!(check.worst <= RECHECK_TOLERANCE, "{check:?}");
    }
    if !timing {
        return;
    }
    assert!(
        quick < full,
        "re-check {quick:?} against calibration {full:?}"
    );
    // The host fold is the host memory's level, which other load moves by more than the
    // tolerance at times: reused rescaled, which is reuse too.
    assert!(
        check.holds || check.only_fold_moved(),
        "the re-check of an unchanged machine did not hold: {:?}",
        check.points
    );
    let previous = if check.holds {
        previous
    } else {
        check.rescaled(&previous)
    };

    // A fresh calibration of the same hardware: the reused profile's choices lose at most 2%
    // under the fresh profile's model.
    let fresh = pool.calibrate(&opts(), &mut |_| {}).expect("calibration");
    let dev = pool.devices()[0].clone();
    let budget = dev.memory_budget();
    for p in problems() {
        let reused =
            model_tile(&p, &dev, budget, &previous, FoldRequest::default()).expect("model");
        let best = model_tile(&p, &dev, budget, &fresh, FoldRequest::default()).expect("model");
        let as_fresh =
            evaluate(&p, &dev, &fresh, &[reused.tile], FoldRequest::default()).expect("model");
        assert!(
            as_fresh.predicted.seconds <= 1.02 * best.predicted.seconds,
            "{}x{}x{}: reused choice {} ({:.4} s) against fresh {} ({:.4} s)",
            p.m,
            p.n,
            p.k,
            reused.tile,
            as_fresh.predicted.seconds,
            best.tile,
            best.predicted.seconds
        );
    }
}

#[test]
fn another_device_set_fails_the_recheck() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let previous: MachineProfile = pool(&[config(2.5e8)])
        .calibrate(&opts(), &mut |_| {})
        .expect("calibration");
    // Two devices where the profile knows one.
    let two = pool(&[config(2.5e8), config(2.5e8)]);
    let check = two.recheck(&previous, &mut |_| {}).expect("re-check");
    assert!(!check.holds);
    assert!(!check.rescalable());
    assert_eq!(check.points.len(), 1, "{:?}", check.points);
}

#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_a_slower_link_fails_the_recheck() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let previous: MachineProfile = pool(&[config(2.5e8)])
        .calibrate(&opts(), &mut |_| {})
        .expect("calibration");
    // The same names and memory, half the link bandwidth.
    let slower = pool(&[config(1.25e8)]);
    let check = slower.recheck(&previous, &mut |_| {}).expect("re-check");
    assert!(!check.holds, "{:?}", check.points);
    assert!(check.worst > 0.5, "{:?}", check.points);
    assert!(
        !check.rescalable(),
        "half the bandwidth is beyond the rescale limit"
    );
}

#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_a_link_moved_within_the_rescale_limit_is_rescaled_and_chooses_as_well() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let previous: MachineProfile = pool(&[config(2.5e8)])
        .calibrate(&opts(), &mut |_| {})
        .expect("calibration");
    // The same hardware with its links 15% slower: beyond the tolerance, within the limit.
    let slower = pool(&[config(2.5e8 / 1.15)]);
    let check = slower.recheck(&previous, &mut |_| {}).expect("re-check");
    assert!(!check.holds, "{:?}", check.points);
    assert!(check.rescalable(), "{:?}", check.points);
    assert!(
        check
            .moved
            .iter()
            .any(|(t, r)| matches!(t, Target::Link(_)) && *r > 1.08),
        "{:?}",
        check.moved
    );
    let rescaled = check.rescaled(&previous);
    let fresh = slower.calibrate(&opts(), &mut |_| {}).expect("calibration");
    // The rescaled links are within 8% of a fresh calibration's; the GEMM did not move.
    for l in &rescaled.links {
        let f = fresh.links.iter().find(|f| f.name == l.name).expect("link");
        let was = previous
            .links
            .iter()
            .find(|f| f.name == l.name)
            .expect("link");
        if check
            .moved
            .iter()
            .any(|(t, _)| *t == Target::Link(l.name.clone()))
        {
            let rel = l.bytes_per_sec / f.bytes_per_sec - 1.0;
            assert!(rel.abs() <= 0.08, "{}: rescaled off by {rel:+.3}", l.name);
            assert!(l.bytes_per_sec < was.bytes_per_sec);
        } else {
            assert_eq!(l, was, "a link that did not move is kept");
        }
    }
    assert_eq!(rescaled.devices, previous.devices);
    // Its choices lose at most 2% under the fresh profile's model.
    let dev = slower.devices()[0].clone();
    let budget = dev.memory_budget();
    for p in problems() {
        let chosen =
            model_tile(&p, &dev, budget, &rescaled, FoldRequest::default()).expect("model");
        let best = model_tile(&p, &dev, budget, &fresh, FoldRequest::default()).expect("model");
        let as_fresh =
            evaluate(&p, &dev, &fresh, &[chosen.tile], FoldRequest::default()).expect("model");
        assert!(
            as_fresh.predicted.seconds <= 1.02 * best.predicted.seconds,
            "{}x{}x{}: rescaled choice {} ({:.4} s) against fresh {} ({:.4} s)",
            p.m,
            p.n,
            p.k,
            chosen.tile,
            as_fresh.predicted.seconds,
            best.tile,
            best.predicted.seconds
        );
    }
}
