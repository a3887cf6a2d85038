//! A call leaves the calling thread's current HIP device as it found it (skipped without HIP
//! unless HETBLAS_REQUIRE=hip; needs two GPUs). HIP binds a device with `hipSetDevice` on the
//! caller's thread; a program whose thread had GPU 1 current must still have it after a call
//! that ran on GPU 0, or its next HIP calls go to GPU 0.

use hetblas_core::fault::{FaultKind, FaultOp, FaultSpec};
use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, Trans};
use hetblas_hip::result::{current_device, set_device};
use hetblas_hip::HipBackend;

#[test]
fn another_gpus_device_stays_current_after_a_call_on_gpu_0() {
    let Some(gpus) = hetblas_conformance::discovered_or_skip("hip", HipBackend.discover_gpus())
    else {
        return;
    };
    if gpus.devices.len() < 2 {
        eprintln!("SKIPPED (one HIP GPU; this test needs two)");
        return;
    }
    let theirs = gpus.devices[1].context().ordinal;
    let faults = gpus.devices[0].faults().clone();
    let d = gpus.into_discovery();
    let pool = DevicePool::new(d.devices, d.links).unwrap();
    let gemm = |opts: &GemmOptions| ones_by_twos(&pool, 512, opts);
    for opts in [GemmOptions::default().devices([0]), GemmOptions::default()] {
        set_device(theirs).unwrap();
        gemm(&opts).expect("GEMM");
        assert_eq!(
            current_device().unwrap(),
            theirs,
            "after a GEMM ({:?})",
            opts.devices
        );
    }
    faults.arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Error)]);
    set_device(theirs).unwrap();
    let r = gemm(&GemmOptions::default().devices([0]));
    faults.disarm();
    assert!(r.is_err(), "{r:?}");
    assert_eq!(current_device().unwrap(), theirs, "after a failed GEMM");
}

/// On any number of GPUs (one included): the device current before a call is current after
/// it, read back through `hipGetDevice`, which the guard reads on every call. With one GPU this
/// is the shim's and the runtime's `hipGetDevice`/`hipSetDevice` round trip (an error from
/// either fails it); with more, the call runs on GPU 0 while the caller has the last one.
#[test]
fn the_callers_device_reads_back_after_a_call() {
    let Some(gpus) = hetblas_conformance::discovered_or_skip("hip", HipBackend.discover_gpus())
    else {
        return;
    };
    let theirs = gpus
        .devices
        .last()
        .expect("discovery gave no device")
        .context()
        .ordinal;
    let d = gpus.into_discovery();
    let pool = DevicePool::new(d.devices, d.links).unwrap();
    set_device(theirs).unwrap();
    assert_eq!(current_device().unwrap(), theirs, "set then read");
    ones_by_twos(&pool, 64, &GemmOptions::default().devices([0])).expect("GEMM");
    assert_eq!(current_device().unwrap(), theirs, "after the GEMM");
}

/// C = A B with A all ones and B all twos (n x n, beta = 0 over NaN): every entry of C must
/// come out 2n.
fn ones_by_twos(pool: &DevicePool, n: usize, opts: &GemmOptions) -> hetblas_core::Result<()> {
    let (a, b) = (vec![1.0f64; n * n], vec![2.0f64; n * n]);
    let mut c = vec![f64::NAN; n * n];
    pool.gemm_with(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, n, n).unwrap(),
        MatRef::packed(&b, n, n).unwrap(),
        0.0,
        MatMut::packed(&mut c, n, n).unwrap(),
        opts,
    )
    .map(|_| assert!(c.iter().all(|&x| x == 2.0 * n as f64)))
}
