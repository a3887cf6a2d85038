//! Faults and out-of-core on real GPUs (skipped without CUDA; failed with HETBLAS_REQUIRE=cuda):
//! a GPU made to fail mid-call (injected in the GPU layer) costs no data, the next call runs on
//! the GPUs left; and a problem 8 times larger than the memory budget runs correctly with tiles
//! evicted and fetched again.

use hetblas_core::fault::{FaultInjector, FaultKind, FaultOp, FaultSpec};
use hetblas_core::reference::check_sampled;
use hetblas_core::{DevicePool, Error, GemmOptions, GemmReport, MatMut, MatRef, Trans};
use hetblas_cuda::CudaBackend;
use std::sync::Arc;

/// The pool of the CUDA GPUs and their fault injectors.
fn pool() -> Option<(DevicePool, Vec<Arc<FaultInjector>>)> {
    let d = hetblas_conformance::discovered_or_skip("cuda", CudaBackend.discover_gpus())?;
    let faults = d.devices.iter().map(|g| g.faults().clone()).collect();
    let d = d.into_discovery();
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
