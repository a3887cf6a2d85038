//! Faults and out-of-core on real GPUs (skipped without CUDA; failed with HETBLAS_REQUIRE=cuda):
//! a GPU made to fail mid-call (injected in the GPU layer) costs no data, the next call runs on
//! the GPUs left (GEMM; TRSM and TRMM with the CPU as the device left); and a problem 8 times
//! larger than the memory budget runs correctly with tiles evicted and fetched again.

use hetblas_core::device::Device;
use hetblas_core::fault::{FaultInjector, FaultKind, FaultOp, FaultSpec};
use hetblas_core::reference::check_sampled;
use hetblas_core::{DevicePool, Error, GemmOptions, GemmReport, MatMut, MatRef, Trans};
use hetblas_cuda::CudaBackend;
use std::sync::Arc;

/// The CUDA GPUs (devices and links) and their fault injectors.
fn gpus() -> Option<(hetblas_core::Discovery, Vec<Arc<FaultInjector>>)> {
    let d = hetblas_conformance::discovered_or_skip("cuda", CudaBackend.discover_gpus())?;
    let faults = d.devices.iter().map(|g| g.faults().clone()).collect();
    Some((d.into_discovery(), faults))
}

/// The pool of the CUDA GPUs and their fault injectors.
fn pool() -> Option<(DevicePool, Vec<Arc<FaultInjector>>)> {
    let (d, faults) = gpus()?;
    Some((DevicePool::new(d.devices, d.links).unwrap(), faults))
}

fn data(seed: u64, n: usize) -> Vec<f64> {
    hetblas_conformance::data::random_vec(&mut hetblas_conformance::data::rng(seed), n)
}

/// `c = A B + beta c0` (n x n), checked at 2048 sampled entries.
fn gemm_checked(
    pool: &DevicePool,
    n: usize,
    beta: f64,
    opts: &GemmOptions,
) -> (Result<GemmReport, Error>, Vec<f64>, Vec<f64>, Option<f64>) {
    let (a, b, c0) = (data(1, n * n), data(2, n * n), data(3, n * n));
    let mut c = c0.clone();
    let r = pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, n, n).unwrap(),
        MatRef::packed(&b, n, n).unwrap(),
        beta,
        MatMut::packed(&mut c, n, n).unwrap(),
        opts,
    );
    let worst = r.is_ok().then(|| {
        check_sampled(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, n, n).unwrap(),
            MatRef::packed(&b, n, n).unwrap(),
            beta,
            MatRef::packed(&c0, n, n).unwrap(),
            MatRef::packed(&c, n, n).unwrap(),
            2048,
            7,
        )
        .expect("result within the error bound")
        .1
    });
    for x in [&a, &b, &c] {
        let _ = pool.release_host(x);
    }
    (r, c0, c, worst)
}

#[test]
fn a_gpu_failing_mid_call_costs_no_data() {
    let Some((pool, faults)) = pool() else { return };
    let n = 4096;
    let opts = GemmOptions::default().tile(1024);
    if faults.len() >= 2 {
        // GPU 1 is lost at its 5th tile product: the call finishes on GPU 0.
        faults[1].arm([FaultSpec::new(1, FaultOp::Kernel, 5, FaultKind::Lost)]);
        let (r, _, _, worst) = gemm_checked(&pool, n, 0.5, &opts);
        let report = r.expect("recovered");
        assert_eq!(report.recovered.len(), 1, "{:?}", report.recovered);
        assert_eq!(report.recovered[0].index, 1);
        println!(
            "recovered: {} (worst error/bound {worst:?})",
            report.recovered[0]
        );
        // The next call runs on the GPU left, without a new error.
        let (r, _, _, _) = gemm_checked(&pool, n, 1.0, &opts);
        let next = r.expect("next call");
        assert!(next.recovered.is_empty());
        assert!(
            !next.devices.contains(&"cuda:1".to_string()),
            "{:?}",
            next.devices
        );
        faults[1].disarm();
        assert!(pool.reprobe().is_empty());
    }
    // The only GPU asked for fails at its first product: an error, and C as before.
    faults[0].arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Error)]);
    let (r, c0, c, _) = gemm_checked(&pool, 1024, 1.0, &opts.clone().devices([0]));
    assert!(matches!(r, Err(Error::Backend { .. })), "{r:?}");
    assert!(
        c == c0,
        "C changed by a call that failed before any tile was final"
    );
    faults[0].disarm();
    assert!(pool.reprobe().is_empty());
}

#[test]
fn out_of_core_at_an_eighth_of_the_footprint() {
    let Some((pool, _)) = pool() else { return };
    let n = 4096;
    let footprint = 3 * (n * n * 8) as u64;
    let opts = GemmOptions::default()
        .devices([0])
        .memory_limit(footprint / 8);
    let (r, _, _, worst) = gemm_checked(&pool, n, 0.75, &opts);
    let report = r.expect("out-of-core GEMM");
    let (tm, tn, tk) = report.tile.unwrap();
    let distinct = n.div_ceil(tm) * n.div_ceil(tk) + n.div_ceil(tk) * n.div_ceil(tn);
    let fetched = report.stats.fetches[0] + report.stats.fetches[1];
    println!("tile {tm}x{tn}x{tk}: {fetched} A/B fetches of {distinct} tiles, worst {worst:?}");
    assert!(
        fetched > distinct,
        "nothing fetched twice under 1/8 of the footprint"
    );
}

/// The CPU (pool index 0) and the CUDA GPUs (1..), with the GPUs' fault injectors.
fn pool_with_cpu() -> Option<(DevicePool, Vec<Arc<FaultInjector>>)> {
    let (d, faults) = gpus()?;
    let blas = hetblas_cpu::choose_blas(&Default::default())
        .expect("host BLAS")
        .blas;
    let mut devices: Vec<Arc<dyn Device>> =
        vec![hetblas_cpu::CpuDevice::with_blas(blas, vec![]).expect("cpu")];
    devices.extend(d.devices);
    Some((DevicePool::new(devices, d.links).unwrap(), faults))
}

/// TRSM and TRMM with GPU 0 lost mid-call: with the CPU in the pool the call ends right on
/// the CPU (asked for or not: the last resort, as for GEMM) and the GPU is left out of the next
/// call; with no CPU and no other device it fails with B bit-identical to before; a GPU whose
/// every allocation fails is left out and the CPU does the work.
#[test]
fn a_gpu_lost_mid_trsm_or_trmm_finishes_on_the_cpu_or_leaves_b_as_it_was() {
    use hetblas_conformance::tri::{check_tri, triangular, TriCase};
    use hetblas_core::problem::triangular::{Diag, TriOptions, TriRoutine};
    use hetblas_core::{Side, TriCallOptions, TriReport, Uplo};
    let Some((with_cpu, faults)) = pool_with_cpu() else {
        return;
    };
    let Some((gpus, gpu_faults)) = pool() else {
        return;
    };
    let (m, n) = (1536, 1024);
    for (seed, routine) in [(11, TriRoutine::Trsm), (12, TriRoutine::Trmm)] {
        let case = TriCase {
            routine,
            opts: TriOptions {
                side: Side::Left,
                uplo: Uplo::Lower,
                transa: Trans::N,
                diag: Diag::NonUnit,
            },
            m,
            n,
            alpha: hetblas_core::scalar::c64::new(0.5, 0.0),
            pad: (0, 0),
            tile: Some(256),
            devices: None,
            b_home: None,
            seed,
        };
        let a: Vec<f64> = triangular(&case.opts, m, m, seed);
        let b0 = data(seed + 1, m * n);
        let run = |pool: &DevicePool, devices: &[usize], b: &mut Vec<f64>| {
            pool.tri_with(
                routine,
                case.opts,
                0.5,
                MatRef::new(&a, m, m, m).unwrap(),
                MatMut::new(b, m, n, m).unwrap(),
                &TriCallOptions::default()
                    .tile(256)
                    .devices(devices.iter().copied()),
            )
        };
        let finished_right = |what: &str, r: Result<TriReport, Error>, b: &[f64]| {
            let report = r.unwrap_or_else(|e| panic!("{routine:?}, {what}: {e}"));
            check_tri(&case, &a, m, &b0, b, m, case.alpha)
                .unwrap_or_else(|e| panic!("{routine:?}, {what}: {e}"));
            println!(
                "{routine:?}, {what}: right on {:?}, recovered {:?}",
                report.devices, report.recovered
            );
            report
        };
        // Lost at its third product, the CPU (index 0) beside it, asked for or not.
        for asked in [&[0, 1][..], &[1]] {
            faults[0].arm([FaultSpec::new(0, FaultOp::Kernel, 3, FaultKind::Lost)]);
            let mut b = b0.clone();
            let r = run(&with_cpu, asked, &mut b);
            let report = finished_right(&format!("lost, devices {asked:?}"), r, &b);
            assert!(
                report.recovered.iter().any(|f| f.index == 1),
                "{routine:?}: {:?}",
                report.recovered
            );
            let mut again = b0.clone();
            let next = run(&with_cpu, &[0, 1], &mut again).expect("the next call");
            assert!(
                !next.devices.contains(&"cuda:0".to_string()),
                "{:?}",
                next.devices
            );
            faults[0].disarm();
            assert!(with_cpu.reprobe().is_empty());
        }
        // Every allocation fails (another process holds the memory): left out, the CPU works.
        // A pool of its own: the other pool's workspaces, kept from its earlier calls, would
        // need no allocation.
        let (fresh, fresh_faults) = pool_with_cpu().expect("the GPUs found above");
        fresh_faults[0]
            .arm((1..=10_000).map(|k| FaultSpec::new(0, FaultOp::Alloc, k, FaultKind::Oom)));
        let mut b = b0.clone();
        let r = run(&fresh, &[0, 1], &mut b);
        finished_right("every allocation failing", r, &b);
        assert!(fresh.failed_devices().contains(&1));
        fresh_faults[0].disarm();
        for x in [&a, &b0] {
            let _ = fresh.release_host(x);
        }
        // No CPU and no other device: the device's error, and B as it was.
        gpu_faults[0].arm([FaultSpec::new(0, FaultOp::Kernel, 3, FaultKind::Lost)]);
        let mut b = b0.clone();
        let e = run(&gpus, &[0], &mut b).expect_err("no device left");
        assert!(matches!(e, Error::DeviceLost { .. }), "{routine:?}: {e}");
        assert!(
            b.iter().zip(&b0).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{routine:?}: B changed by a call that failed ({e})"
        );
        gpu_faults[0].disarm();
        assert!(gpus.reprobe().is_empty());
        for pool in [&with_cpu, &gpus] {
            for x in [&a, &b0] {
                let _ = pool.release_host(x);
            }
        }
    }
}
