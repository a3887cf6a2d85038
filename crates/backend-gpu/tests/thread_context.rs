//! A call leaves the calling thread's current context as it found it. The GPU layer binds its
//! devices on the caller's thread (registration checks, uploads and downloads, the issue of a
//! one-device plan); the fake runtime models the thread's current context (a device, or none)
//! so that these tests fail if a call leaves its own bound: a drop-in BLAS would then send a
//! CUDA program's next allocations and launches to the wrong device.

mod fake;

use fake::{Fake, FakeBackend};
use hetblas_conformance::data::{random_vec, rng};
use hetblas_core::fault::{FaultKind, FaultOp, FaultSpec};
use hetblas_core::reference::check_sampled;
use hetblas_core::{DevicePool, GemmOptions, GemmReport, MatMut, MatRef, Result, Trans};
use hetblas_gpu::GpuDiscovery;

/// What a caller may have current: nothing (a thread that never used the GPU), the device a
/// one-device call binds, and another device.
const CALLER_CONTEXTS: [Option<i32>; 3] = [None, Some(0), Some(1)];

/// The fake GPUs, typed (for their fault injectors), and a pool over them.
fn pool() -> (GpuDiscovery<Fake>, DevicePool) {
    let gpus = FakeBackend::new()
        .discover_gpus()
        .expect("the fake runtime is always there");
    let typed = GpuDiscovery {
        devices: gpus.devices.clone(),
        links: gpus.links.clone(),
    };
    let d = gpus.into_discovery();
    (typed, DevicePool::new(d.devices, d.links).unwrap())
}

/// `C = 0.5 A B + 2 C` (120 x 90 x 70) on host operands with `opts`; checks a successful
/// result against the reference, and that a failed call left C as it was.
fn gemm(pool: &DevicePool, opts: &GemmOptions) -> Result<GemmReport> {
    let (m, n, k) = (120, 90, 70);
    let mut r = rng(11);
    let (a, b, c0): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        random_vec(&mut r, m * k),
        random_vec(&mut r, k * n),
        random_vec(&mut r, m * n),
    );
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
    );
    let out = pool.gemm_with(
        Trans::N,
        Trans::N,
        0.5,
        av,
        bv,
        2.0,
        MatMut::packed(&mut c, m, n).unwrap(),
        opts,
    );
    match &out {
        Ok(_) => {
            let (c0v, cv) = (
                MatRef::packed(&c0, m, n).unwrap(),
                MatRef::packed(&c, m, n).unwrap(),
            );
            check_sampled(Trans::N, Trans::N, 0.5, av, bv, 2.0, c0v, cv, m * n, 1).unwrap();
        }
        Err(_) => assert!(c == c0, "a failed call changed C"),
    }
    out
}

#[test]
fn a_gemm_leaves_the_callers_context_current() {
    let (_, pool) = pool();
    // One device: its plan is issued on the calling thread. Both: issued on the pool's own
    // threads, while the calling thread checks the registrations.
    for opts in [GemmOptions::default().devices([0]), GemmOptions::default()] {
        for before in CALLER_CONTEXTS {
            fake::set_current(before);
            let report = gemm(&pool, &opts).expect("GEMM on the fake GPUs");
            assert!(report.devices.iter().all(|d| d.starts_with("fake")));
            assert_eq!(
                fake::current(),
                before,
                "context after a GEMM on {:?}",
                report.devices
            );
        }
    }
}

#[test]
fn a_failed_gemm_leaves_the_callers_context_current() {
    let (gpus, pool) = pool();
    let faults = gpus.devices[0].faults();
    for kind in [FaultKind::Error, FaultKind::Lost, FaultKind::Panic] {
        for before in CALLER_CONTEXTS {
            // The only device asked for fails at its first product: with no device left,
            // the call returns the error (a panic caught at the issuing worker, too).
            faults.arm([FaultSpec::new(0, FaultOp::Kernel, 1, kind)]);
            fake::set_current(before);
            let r = gemm(&pool, &GemmOptions::default().devices([0]));
            assert!(r.is_err(), "{kind:?}: {r:?}");
            assert_eq!(
                fake::current(),
                before,
                "context after a failed GEMM ({kind:?})"
            );
            faults.disarm();
            assert!(pool.reprobe().is_empty());
        }
    }
    // A new pool's first call fails to allocate its workspace: an error before anything is
    // issued.
    let (gpus, pool) = self::pool();
    gpus.devices[0]
        .faults()
        .arm([FaultSpec::new(0, FaultOp::Alloc, 1, FaultKind::Error)]);
    fake::set_current(Some(1));
    let r = gemm(&pool, &GemmOptions::default().devices([0]));
    assert!(r.is_err(), "{r:?}");
    assert_eq!(
        fake::current(),
        Some(1),
        "context after a failed allocation"
    );
}

#[test]
fn device_matrices_and_discovery_leave_the_callers_context_current() {
    for before in CALLER_CONTEXTS {
        fake::set_current(before);
        let (_, pool) = pool();
        assert_eq!(fake::current(), before, "context after discovery");
        let host: Vec<f64> = (0..60).map(f64::from).collect();
        let on1 = pool
            .upload(1, MatRef::packed(&host, 6, 10).unwrap())
            .unwrap();
        assert_eq!(fake::current(), before, "context after an upload");
        let mut back = vec![0.0; 60];
        pool.download(&on1, MatMut::packed(&mut back, 6, 10).unwrap())
            .unwrap();
        assert_eq!(back, host);
        assert_eq!(fake::current(), before, "context after a download");
        let fresh = pool.alloc_matrix::<f64>(0, 8, 8).unwrap();
        assert_eq!(fake::current(), before, "context after an allocation");
        drop((on1, fresh));
        assert_eq!(
            fake::current(),
            before,
            "context after freeing device matrices"
        );
        pool.release_workspaces().unwrap();
        drop(pool);
        assert_eq!(fake::current(), before, "context after dropping the pool");
    }
}

#[test]
fn an_unchanged_context_is_not_set_again() {
    let (_, pool) = pool();
    // A first call allocates the workspaces; the next one finds them.
    fake::set_current(Some(0));
    gemm(&pool, &GemmOptions::default().devices([0])).unwrap();
    let restores = fake::restores();
    gemm(&pool, &GemmOptions::default().devices([0])).unwrap();
    assert_eq!(fake::current(), Some(0));
    assert_eq!(
        fake::restores(),
        restores,
        "the call bound only the context that was current: nothing to put back"
    );
    fake::set_current(Some(1));
    gemm(&pool, &GemmOptions::default().devices([0])).unwrap();
    assert_eq!(fake::current(), Some(1));
    assert!(
        fake::restores() > restores,
        "the caller's context was put back"
    );
}
