//! Multi-device execution on host-emulated devices of unequal speed: the balancer's shares, the
//! plan's simulated makespan against the ideal (the wall time in an ignored timing test), exact
//! results, and peer forwarding used exactly when the peer link is faster than the host link.

mod common;

use hetblas_conformance::{run_case, CaseSpec, Target};
use hetblas_core::sim::nominal_profile;
use hetblas_core::{DType, Device, DevicePool, GemmOptions, Link, MatMut, MatRef, Trans};
use hetblas_cpu::{emulated_node, EmulatedConfig};
use std::sync::Arc;
use std::time::Duration;

use common::emulated_pool as pool;

/// Three devices throttled 1x / 2x / 4x, all asked for, on a 512x512x64 DGEMM in 32 tiles.
const RATES: [f64; 3] = [5e7, 1e8, 2e8];
const SHAPE: (usize, usize, usize) = (512, 512, 64);

/// The pool of [`RATES`] (its devices and links), and the report of one call on all three
/// after a warm-up (plan, workspaces).
fn unequal_call() -> (hetblas_core::GemmReport, common::Node) {
    let configs: Vec<EmulatedConfig> = RATES
        .iter()
        .map(|&r| EmulatedConfig {
            flops_per_sec: Some(r),
            ..Default::default()
        })
        .collect();
    let (pool, devices, links) = common::emulated(&configs);
    let (m, n, k) = SHAPE;
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 11) as f64 - 5.0).collect();
    let mut c = vec![0.0f64; m * n];
    let opts = GemmOptions::default().devices([0, 1, 2]).tile(32);
    let run = |c: &mut Vec<f64>| common::gemm_nn(&pool, (m, n, k), 1.0, &a, &b, 0.0, c, &opts);
    run(&mut c);
    let r = run(&mut c);
    (r, (pool, devices, links))
}

/// The seconds the devices' rates allow at best: every device busy until the same moment.
fn ideal() -> f64 {
    let (m, n, k) = SHAPE;
    2.0 * (m * n * k) as f64 / RATES.iter().sum::<f64>()
}

/// The balancer's shares follow the devices' speeds, and the plan, replayed by the simulator
/// on the devices' nominal rates and links, ends within 10% of the ideal makespan; results
/// are exact on the same devices. (What the plan decides, not the wall time of a run on a
/// shared machine: `timing_makespan_is_near_ideal` times it.)
#[test]
fn shares_follow_speeds_and_the_plan_is_near_ideal() {
    let (r, (pool, devices, links)) = unequal_call();
    let total: f64 = RATES.iter().sum();
    for (i, &rate) in RATES.iter().enumerate() {
        let want = rate / total;
        let weight = r.weights[i];
        let share = r.stats.c_tiles[i] as f64 / r.stats.c_tiles.iter().sum::<usize>() as f64;
        assert!(
            (weight - want).abs() / want < 0.10,
            "weights {:?}",
            r.weights
        );
        assert!(
            (share - want).abs() / want < 0.10,
            "tile shares {:?}",
            r.stats.c_tiles
        );
    }
    let profile = nominal_profile(&devices, &links, &[DType::F64], 0.0);
    let sim = pool.simulate_report(&r, Some(&profile)).unwrap();
    let ideal = ideal();
    assert!(
        sim.makespan >= ideal * (1.0 - 1e-9) && sim.makespan < ideal * 1.10,
        "simulated makespan {:.4} s, ideal {ideal:.4} s",
        sim.makespan
    );
    // Exact results against the reference on the same devices.
    let t = Target {
        name: "emulated 1x/2x/4x".into(),
        pool: pool.clone(),
        compute: vec![0, 1, 2],
        homes: vec![0, 1],
        small_tile: 16,
    };
    for (i, (ta, tb)) in [(Trans::N, Trans::T), (Trans::T, Trans::N)]
        .into_iter()
        .enumerate()
    {
        let mut s = CaseSpec::new(ta, tb, 97, 83, 41);
        s.tile = Some(16);
        s.alpha = 0.5;
        s.beta = if i == 0 { 0.0 } else { 1.5 };
        s.seed = 77 + i as u64;
        run_case::<f64>(&t, &s).unwrap();
    }
}

/// The wall time of that call within 10% of the ideal: a timing claim, for an idle machine
/// (`scripts/gpu/tests.sh` runs the ignored tests; on a 2-core machine beside a build it
/// measured 0.1265 s against 0.0959 s).
#[test]
#[ignore = "timing: run on an idle machine (scripts/gpu/tests.sh)"]
fn timing_makespan_is_near_ideal() {
    let (r, ..) = unequal_call();
    let ideal = ideal();
    assert!(
        r.seconds < ideal * 1.10,
        "makespan {:.4} s, ideal {ideal:.4} s",
        r.seconds
    );
}

fn forwarding_case(host_bw: f64, peer_bw: f64) -> (u64, u64, u64) {
    let cfg = EmulatedConfig {
        host_link_bytes_per_sec: Some(host_bw),
        peer_link_bytes_per_sec: Some(peer_bw),
        link_latency: Duration::from_micros(20),
        ..Default::default()
    };
    let pool = pool(&[cfg.clone(), cfg]);
    let t = Target {
        name: "2 emulated".into(),
        pool: pool.clone(),
        compute: vec![0, 1],
        homes: vec![0, 1],
        small_tile: 32,
    };
    let mut s = CaseSpec::new(Trans::N, Trans::N, 256, 256, 192);
    s.tile = Some(32);
    s.beta = 1.0;
    s.seed = 5;
    let with = run_case::<f64>(&t, &s).unwrap();
    // The same call without forwarding, for the host traffic it would have needed.
    let (m, n, k) = (256, 256, 192);
    let a = vec![1.0f64; m * k];
    let b = vec![1.0f64; k * n];
    let mut c = vec![0.0f64; m * n];
    let without = common::gemm_nn(
        &pool,
        (m, n, k),
        1.0,
        &a,
        &b,
        1.0,
        &mut c,
        &GemmOptions::default()
            .devices([0, 1])
            .tile(32)
            .no_peer_forwarding(true),
    );
    assert!(c.iter().all(|&x| x == 192.0));
    (
        with.stats.bytes_peer.iter().sum(),
        with.stats.bytes_in.iter().sum(),
        without.stats.bytes_in.iter().sum(),
    )
}

#[test]
fn peer_forwarding_when_the_peer_link_is_faster() {
    let (peer, host_with, host_without) = forwarding_case(0.5e9, 4e9);
    assert!(peer > 0, "a faster peer link must be used");
    assert!(
        host_with < host_without,
        "host traffic {host_with} vs {host_without} without forwarding"
    );
    let (peer, host_with, host_without) = forwarding_case(4e9, 0.5e9);
    assert_eq!(peer, 0, "a slower peer link must not be used");
    assert_eq!(host_with, host_without);
}

#[test]
fn devices_without_a_link_between_them_route_through_host_memory() {
    // Two separately created emulated nodes: no peer links between them, as between GPUs of two
    // backends. Operands on one node's device, computed on the other's: two hops through host
    // staging both ways, exact results.
    let a = emulated_node(&[EmulatedConfig::default()], common::blas()).unwrap();
    let b = emulated_node(&[EmulatedConfig::default()], common::blas()).unwrap();
    let mut devices: Vec<Arc<dyn Device>> = vec![a.devices[0].clone(), b.devices[0].clone()];
    let mut links: Vec<Arc<dyn Link>> = a.links;
    links.extend(b.links);
    let pool = Arc::new(DevicePool::new(std::mem::take(&mut devices), links).unwrap());
    assert!(pool
        .link(pool.devices()[0].space(), pool.devices()[1].space())
        .is_none());
    let t = Target {
        name: "two nodes".into(),
        pool: pool.clone(),
        compute: vec![1],
        homes: vec![0],
        small_tile: 16,
    };
    use hetblas_conformance::cases::{Home, Placement};
    for (i, placement) in [
        Placement {
            a: Home::Device(0),
            b: Home::Host,
            c: Home::Host,
        },
        Placement {
            a: Home::Device(0),
            b: Home::Device(0),
            c: Home::Device(0),
        },
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = CaseSpec::new(Trans::N, Trans::T, 53, 47, 38);
        s.tile = Some(16);
        s.beta = if i == 0 { 1.0 } else { 0.5 };
        s.placement = placement;
        s.seed = 31 + i as u64;
        let r = run_case::<f64>(&t, &s).unwrap();
        assert!(r
            .transfers
            .iter()
            .any(|t| t.link.contains("->host") || t.link.contains("host->")));
        if i == 1 {
            // C on the other node: every C tile goes back through host memory, once.
            let wb: Vec<_> = r.transfers.iter().filter(|t| t.writeback).collect();
            assert_eq!(wb.len(), 4 * 3);
            assert!(wb.iter().all(|t| t.link.starts_with("host->")));
        }
    }
}

/// A CPU whose share is too small for whole tiles takes a strip of C's last rows (instead of
/// nothing), sized from the balancer's share; the result is exact.
#[test]
fn a_slow_cpu_takes_a_strip_of_rows() {
    use hetblas_core::profile::{DeviceProfile, GemmTimes, MachineProfile};
    use hetblas_core::DType;
    let fast = EmulatedConfig {
        flops_per_sec: Some(2e8),
        ..Default::default()
    };
    let (pool, devices) = common::cpu_and_emulated(&[fast.clone(), fast]);
    let cpu = devices[0].clone();
    // The CPU as calibrated: 8e7 flop/s, about 9% of the three devices together (in situ).
    let mut profile = MachineProfile::new();
    profile.devices.push(DeviceProfile {
        label: cpu.info().label(),
        name: cpu.info().name.clone(),
        backend: cpu.info().backend.clone(),
        memory_bytes: cpu.info().memory_bytes,
        gemm: vec![GemmTimes {
            dtype: DType::F64,
            times: [64usize, 128, 256, 512]
                .iter()
                .map(|&t| (t, 2.0 * (t as f64).powi(3) / 8e7))
                .collect(),
        }],
        gemm_under_dma: Vec::new(),
        copy_under_gemm: Vec::new(),
    });
    pool.set_profile(Some(Arc::new(profile)));
    let (m, n, k) = (1024usize, 128usize, 64usize);
    // Exact (small integers), checked entry by entry.
    let r = common::gemm_exact(
        &pool,
        (m, n, k),
        &GemmOptions::default().devices([0, 1, 2]).tile(256),
    );
    let bal = r.balancer_weights[0];
    assert!(bal > 0.05 && bal < 0.15, "balancer CPU share {bal}");
    // 32 rows of 1024 (half the share, in multiples of 32): the last tile row.
    let (tm, _, _) = r.tile.unwrap();
    assert_eq!(m - 4 * tm, 32, "tile rows {tm}");
    assert_eq!(r.stats.c_tiles[0], 1);
    assert!((r.stats.c_share[0] - 32.0 / 1024.0).abs() < 1e-12);
    assert!((r.stats.c_share.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

/// A device whose memory cannot hold one tile product fails with an out-of-memory error that
/// names it, whichever of several devices it is.
#[test]
fn out_of_memory_names_the_device() {
    let pool = pool(&[EmulatedConfig::default(), EmulatedConfig::default()]);
    let n = 64;
    let a = vec![0.5f64; n * n];
    let b = vec![0.25f64; n * n];
    for dev in [0usize, 1] {
        let mut c = vec![1.0f64; n * n];
        let opts = GemmOptions::default()
            .devices([dev])
            .tile(32)
            .memory_limit(1024);
        let r = pool.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
            1.0,
            MatMut::packed(&mut c, n, n).unwrap(),
            &opts,
        );
        match r {
            Err(hetblas_core::Error::OutOfMemory { device, .. }) => {
                assert_eq!(device, pool.devices()[dev].info().label())
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
    }
}
