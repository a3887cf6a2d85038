//! A call leaves the calling thread's current CUDA context as it found it (skipped without
//! CUDA; failed with HETBLAS_REQUIRE=cuda). hetblas binds its GPUs' primary contexts on the
//! caller's thread during a call; a CUDA program that calls the drop-in BLAS must find the
//! context it had (none, or another GPU's) current afterwards, or its next runtime calls go to
//! the GPU hetblas used last.

use cudarc::driver::sys;
use hetblas_conformance::data::{random_vec, rng};
use hetblas_core::fault::{FaultKind, FaultOp, FaultSpec};
use hetblas_core::reference::check_sampled;
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Result, Trans};
use hetblas_cuda::{Cuda, CudaBackend};
use hetblas_gpu::GpuDiscovery;

/// The CUDA GPUs, typed (for their contexts and fault injectors), and a pool over them.
fn pool() -> Option<(GpuDiscovery<Cuda>, DevicePool)> {
    let gpus = hetblas_conformance::discovered_or_skip("cuda", CudaBackend.discover_gpus())?;
    let typed = GpuDiscovery {
        devices: gpus.devices.clone(),
        links: gpus.links.clone(),
    };
    let d = gpus.into_discovery();
    Some((typed, DevicePool::new(d.devices, d.links).unwrap()))
}

/// The context current on this thread, as the driver says (null: none).
fn current() -> sys::CUcontext {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes one context handle; the driver is loaded and initialised (discovery).
    let r = unsafe { sys::cuCtxGetCurrent(&mut ctx) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "cuCtxGetCurrent");
    ctx
}

/// Makes `ctx` current on this thread (null: none), as the program's own CUDA code would.
fn set_current(ctx: sys::CUcontext) {
    // SAFETY: `ctx` is null or a primary context the discovery in hand retains.
    let r = unsafe { sys::cuCtxSetCurrent(ctx) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "cuCtxSetCurrent");
}

/// `C = A B + 0.5 C` (1024^2 f64, host operands) with `opts`; a successful result is checked.
fn gemm(pool: &DevicePool, opts: &GemmOptions) -> Result<()> {
    let n = 1024;
    let mut r = rng(21);
    let (a, b, c0): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        random_vec(&mut r, n * n),
        random_vec(&mut r, n * n),
        random_vec(&mut r, n * n),
    );
    let mut c = c0.clone();
    let (av, bv) = (
        MatRef::packed(&a, n, n).unwrap(),
        MatRef::packed(&b, n, n).unwrap(),
    );
    let out = pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        av,
        bv,
        0.5,
        MatMut::packed(&mut c, n, n).unwrap(),
        opts,
    );
    if out.is_ok() {
        let (c0v, cv) = (
            MatRef::packed(&c0, n, n).unwrap(),
            MatRef::packed(&c, n, n).unwrap(),
        );
        check_sampled(Trans::N, Trans::N, 1.0, av, bv, 0.5, c0v, cv, 512, 3)
            .expect("result within the error bound");
    }
    for x in [&a, &b, &c] {
        let _ = pool.release_host(x);
    }
    out.map(|_| ())
}

#[test]
fn no_context_stays_current_after_a_call() {
    // The first discovery loads the driver; the second runs with no context current.
    let Some(_) = pool() else { return };
    set_current(std::ptr::null_mut());
    let Some((gpus, pool)) = pool() else { return };
    assert!(current().is_null(), "discovery left a context current");
    // GPU 0 alone (issued on this thread), then every GPU (issued on the pool's threads).
    for opts in [GemmOptions::default().devices([0]), GemmOptions::default()] {
        gemm(&pool, &opts).expect("GEMM");
        assert!(
            current().is_null(),
            "a GEMM ({:?}) left a context current",
            opts.devices
        );
    }
    // A call that fails (GPU 0, the only one asked for, fails at its first product).
    gpus.devices[0]
        .faults()
        .arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Error)]);
    let r = gemm(&pool, &GemmOptions::default().devices([0]));
    gpus.devices[0].faults().disarm();
    assert!(r.is_err(), "{r:?}");
    assert!(current().is_null(), "a failed GEMM left a context current");
    assert!(pool.reprobe().is_empty());
    // Device matrices.
    let host = vec![1.0f64; 256 * 256];
    let m = pool
        .upload(0, MatRef::packed(&host, 256, 256).unwrap())
        .expect("upload");
    let mut back = vec![0.0f64; 256 * 256];
    pool.download(&m, MatMut::packed(&mut back, 256, 256).unwrap())
        .expect("download");
    drop(m);
    assert_eq!(back, host);
    assert!(
        current().is_null(),
        "device matrices left a context current"
    );
}

#[test]
fn another_gpus_context_stays_current_after_a_call_on_gpu_0() {
    let Some((gpus, pool)) = pool() else { return };
    if gpus.devices.len() < 2 {
        eprintln!("SKIPPED (one CUDA GPU; this test needs two)");
        return;
    }
    // GPU 1's primary context, as `cudaSetDevice(1)` makes it current.
    let theirs = gpus.devices[1].context().raw();
    let ours = gpus.devices[0].context().raw();
    assert_ne!(theirs, ours);
    for opts in [GemmOptions::default().devices([0]), GemmOptions::default()] {
        set_current(theirs);
        gemm(&pool, &opts).expect("GEMM");
        assert_eq!(
            current(),
            theirs,
            "after a GEMM ({:?}) GPU 1's context is no longer current",
            opts.devices
        );
    }
    gpus.devices[0]
        .faults()
        .arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Error)]);
    set_current(theirs);
    let r = gemm(&pool, &GemmOptions::default().devices([0]));
    gpus.devices[0].faults().disarm();
    assert!(r.is_err(), "{r:?}");
    assert_eq!(
        current(),
        theirs,
        "after a failed GEMM GPU 1's context is no longer current"
    );
    assert!(pool.reprobe().is_empty());
    set_current(std::ptr::null_mut());
}
