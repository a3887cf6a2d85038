//! The runtime's own API: discovery through the backends (CPU and emulated devices here, GPUs
//! where present), GEMM and device matrices through its methods, calibration from the library.

use hetblas::{
    CalibrationOptions, DType, EmulatedConfig, GemmOptions, MatIn, MatMut, MatOut, MatRef, Runtime,
    Trans, Uplo,
};
use hetblas_core::reference::check_sampled;
use hetblas_core::DeviceKind;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;
use std::time::Duration;

fn random(seed: u64, len: usize) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
}

fn status<'a>(rt: &'a Runtime, backend: &str) -> &'a hetblas::BackendStatus {
    rt.backends()
        .iter()
        .find(|s| s.backend == backend)
        .unwrap_or_else(|| panic!("no status for {backend}: {:?}", rt.backends()))
}

#[test]
fn discovery_asks_every_backend_in_order() {
    let rt = Runtime::builder()
        .emulated(2)
        .without_profile()
        .build()
        .expect("runtime");
    // Every backend answered, GPUs first, then the CPU, then the emulated devices.
    let names: Vec<&str> = rt.backends().iter().map(|s| s.backend.as_str()).collect();
    assert_eq!(names, ["cuda", "hip", "cpu", "emulated"]);
    assert_eq!(status(&rt, "cpu").devices, 1);
    assert_eq!(status(&rt, "emulated").devices, 2);
    let gpus = status(&rt, "cuda").devices + status(&rt, "hip").devices;
    for s in rt.backends() {
        assert_eq!(s.reason.is_none(), s.devices > 0, "{s:?}");
    }
    // The devices, in the same order as the statuses.
    let kinds: Vec<DeviceKind> = rt.devices().iter().map(|d| d.info().kind).collect();
    assert_eq!(kinds.len(), gpus + 3);
    assert_eq!(kinds[gpus], DeviceKind::Cpu);
    assert_eq!(
        kinds[gpus + 1..],
        [DeviceKind::Emulated, DeviceKind::Emulated]
    );
    // Each emulated device has links to and from the host and to its peer.
    let emu: Vec<_> = rt.devices()[gpus + 1..].iter().map(|d| d.space()).collect();
    let host = hetblas_core::MemorySpace::HOST;
    for &s in &emu {
        assert!(rt.link(host, s).is_some() && rt.link(s, host).is_some());
    }
    assert!(rt.link(emu[0], emu[1]).is_some() && rt.link(emu[1], emu[0]).is_some());
    assert!(rt.links().count() >= 6);
}

#[test]
fn deselected_backends_say_so() {
    let rt = Runtime::builder()
        .only(&["cpu"])
        .without_profile()
        .build()
        .expect("runtime");
    assert_eq!(rt.devices().len(), 1);
    assert_eq!(rt.devices()[0].info().kind, DeviceKind::Cpu);
    for gpu in ["cuda", "hip"] {
        let s = status(&rt, gpu);
        assert_eq!(s.devices, 0);
        assert!(s
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("not selected")));
    }
    // Emulated devices are asked for explicitly: the backend filter does not drop them.
    let rt = Runtime::builder()
        .only(&["cuda"])
        .without_cpu()
        .emulated(1)
        .without_profile()
        .build()
        .expect("runtime");
    let kinds: Vec<DeviceKind> = rt.devices().iter().map(|d| d.info().kind).collect();
    assert!(kinds.ends_with(&[DeviceKind::Emulated]));
    assert!(!kinds.contains(&DeviceKind::Cpu));
    assert!(status(&rt, "cpu").reason.is_some());
    // Nothing at all is an error, not an empty runtime.
    let none = Runtime::builder().only(&["none"]).without_profile().build();
    assert!(none.is_err());
}

/// ZGEMM and CGEMM through the BLAS-style entry (what the drop-in library calls), on the CPU
/// and two emulated devices, with a conjugated A, complex scalars and ld > rows.
#[test]
fn complex_gemm_blas_through_the_runtime() {
    use hetblas::{c32, c64};
    let rt = Runtime::builder()
        .only(&["cpu"])
        .emulated(2)
        .without_profile()
        .build()
        .expect("runtime");
    let (m, n, k, lda, ldb, ldc) = (45usize, 31usize, 27usize, 30usize, 29usize, 50usize);
    let mut r = StdRng::seed_from_u64(9);
    let mut z = |len: usize| -> Vec<c64> {
        (0..len)
            .map(|_| c64::new(r.random_range(-1.0..1.0), r.random_range(-1.0..1.0)))
            .collect()
    };
    // A stored k x m (op C), B stored k x n (op N).
    let (a, b, c0) = (z(lda * m), z(ldb * n), z(ldc * n));
    let (alpha, beta) = (c64::new(0.5, -2.0), c64::new(-1.0, 0.75));
    let opts = GemmOptions::default().tile(16);
    let mut c = c0.clone();
    rt.gemm_blas(
        b'C', b'N', m as i64, n as i64, k as i64, alpha, &a, lda as i64, &b, ldb as i64, beta,
        &mut c, ldc as i64, &opts,
    )
    .expect("zgemm");
    check_sampled(
        Trans::C,
        Trans::N,
        alpha,
        MatRef::new(&a, k, m, lda).unwrap(),
        MatRef::new(&b, k, n, ldb).unwrap(),
        beta,
        MatRef::new(&c0, m, n, ldc).unwrap(),
        MatRef::new(&c, m, n, ldc).unwrap(),
        usize::MAX,
        1,
    )
    .expect("zgemm within the bound");
    // Rows m..ldc of C are the caller's.
    for j in 0..n {
        assert_eq!(
            c[j * ldc + m..(j + 1) * ldc],
            c0[j * ldc + m..(j + 1) * ldc]
        );
    }
    // The same in single precision.
    let to32 = |v: &[c64]| -> Vec<c32> {
        v.iter()
            .map(|x| c32::new(x.re as f32, x.im as f32))
            .collect()
    };
    let (a32, b32, c032) = (to32(&a), to32(&b), to32(&c0));
    let mut c32v = c032.clone();
    let (alpha32, beta32) = (c32::new(0.5, -2.0), c32::new(-1.0, 0.75));
    rt.gemm_blas(
        b'c', b'n', m as i64, n as i64, k as i64, alpha32, &a32, lda as i64, &b32, ldb as i64,
        beta32, &mut c32v, ldc as i64, &opts,
    )
    .expect("cgemm");
    check_sampled(
        Trans::C,
        Trans::N,
        alpha,
        MatRef::new(&a32, k, m, lda).unwrap(),
        MatRef::new(&b32, k, n, ldb).unwrap(),
        beta,
        MatRef::new(&c032, m, n, ldc).unwrap(),
        MatRef::new(&c32v, m, n, ldc).unwrap(),
        usize::MAX,
        1,
    )
    .expect("cgemm within the bound");
    // Bad arguments carry their BLAS parameter numbers in complex types too.
    let err = rt
        .gemm_blas(
            b'C',
            b'N',
            m as i64,
            n as i64,
            k as i64,
            alpha,
            &a,
            (k - 1) as i64,
            &b,
            ldb as i64,
            beta,
            &mut c,
            ldc as i64,
            &opts,
        )
        .unwrap_err();
    assert_eq!(err.blas_param(), Some(8));
}

#[test]
fn gemm_and_device_matrices_through_the_runtime() {
    let rt = Runtime::builder()
        .only(&["cpu"])
        .emulated(2)
        .without_profile()
        .build()
        .expect("runtime");
    let (emu0, emu1) = (1, 2);
    let (m, n, k) = (70, 50, 90);
    let a = random(1, k * m); // stored k x m: op(A) = A^T
    let b = random(2, k * n);
    let c0 = random(3, m * n);
    let (alpha, beta) = (-1.5, 0.25);

    // Host operands on both emulated devices, transposed A.
    let mut c = c0.clone();
    let opts = GemmOptions::default().devices([emu0, emu1]).tile(32);
    let report = rt
        .gemm_with(
            Trans::T,
            Trans::N,
            alpha,
            MatRef::packed(&a, k, m).unwrap(),
            MatRef::packed(&b, k, n).unwrap(),
            beta,
            MatMut::packed(&mut c, m, n).unwrap(),
            &opts,
        )
        .expect("gemm_with");
    assert_eq!(report.devices.len(), 2);
    let check_beta = |beta: f64, c: &[f64]| {
        check_sampled(
            Trans::T,
            Trans::N,
            alpha,
            MatRef::packed(&a, k, m).unwrap(),
            MatRef::packed(&b, k, n).unwrap(),
            beta,
            MatRef::packed(&c0, m, n).unwrap(),
            MatRef::packed(c, m, n).unwrap(),
            m * n,
            5,
        )
        .expect("result within the bound")
    };
    let check = |c: &[f64]| check_beta(beta, c);
    check(&c);
    assert!(rt.cached_plans() >= 1);

    // Device-resident operands: upload, compute in place, download.
    let da = rt.upload(emu0, MatRef::packed(&a, k, m).unwrap()).unwrap();
    let db = rt.upload(emu1, MatRef::packed(&b, k, n).unwrap()).unwrap();
    // beta = 0 never reads C: an uninitialised matrix is a valid output.
    let mut dz = rt.alloc_matrix::<f64>(emu0, m, n).unwrap();
    assert_eq!((dz.rows(), dz.cols()), (m, n));
    rt.gemm(
        Trans::T,
        Trans::N,
        alpha,
        MatIn::Device(&da),
        MatIn::Device(&db),
        0.0,
        MatOut::Device(&mut dz),
    )
    .expect("device gemm, beta = 0");
    let mut back = vec![f64::NAN; m * n];
    rt.download(&dz, MatMut::packed(&mut back, m, n).unwrap())
        .unwrap();
    check_beta(0.0, &back);
    let mut dc = rt.upload(emu0, MatRef::packed(&c0, m, n).unwrap()).unwrap();
    rt.gemm(
        Trans::T,
        Trans::N,
        alpha,
        MatIn::Device(&da),
        MatIn::Device(&db),
        beta,
        MatOut::Device(&mut dc),
    )
    .expect("device gemm");
    rt.download(&dc, MatMut::packed(&mut back, m, n).unwrap())
        .unwrap();
    check(&back);

    // BLAS-style arguments: a bad one carries its parameter number.
    let mut c = c0.clone();
    let err = rt
        .gemm_blas(
            b'T',
            b'N',
            m as i64,
            n as i64,
            k as i64,
            alpha,
            &a,
            (k - 1) as i64,
            &b,
            k as i64,
            beta,
            &mut c,
            m as i64,
            &GemmOptions::default(),
        )
        .expect_err("lda < k");
    assert_eq!(err.blas_param(), Some(8), "{err}");
    rt.gemm_blas(
        b'T',
        b'N',
        m as i64,
        n as i64,
        k as i64,
        alpha,
        &a,
        k as i64,
        &b,
        k as i64,
        beta,
        &mut c,
        m as i64,
        &GemmOptions::default(),
    )
    .expect("gemm_blas");
    check(&c);
    for buf in [&a, &b, &c] {
        rt.release_host(buf).expect("release");
    }
}

#[test]
fn calibration_from_the_library() {
    let rt = Runtime::builder()
        .only(&["cpu"])
        .emulated_with(vec![EmulatedConfig {
            memory_bytes: 64 << 20,
            flops_per_sec: Some(2e9),
            host_link_bytes_per_sec: Some(1e9),
            compute_queues: 1,
            ..Default::default()
        }])
        .without_profile()
        .build()
        .expect("runtime");
    assert!(rt.profile().is_none());
    let opts = CalibrationOptions {
        link_sides: vec![16, 64, 128, 256],
        gemm_tiles: vec![64, 128, 192],
        dtypes: vec![DType::F64],
        rel_ci: 0.1,
        min_reps: 3,
        max_reps: 30,
        point_time_cap: Duration::from_millis(100),
        bidirectional: false,
        cross_links: false,
        max_buffer_bytes: 4 << 20,
        strided_sides: vec![64],
        gemm_sample: Duration::ZERO,
        gemm_warmup: Duration::ZERO,
    };
    let mut progress = Vec::new();
    let profile = rt
        .calibrate(&opts, &mut |p| progress.push((p.done, p.total)))
        .expect("calibration");
    let last = progress.last().copied().expect("progress was reported");
    assert_eq!(last.0, last.1);

    // Every device and both host links of the emulated device were measured.
    let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
    for l in &labels {
        let d = profile
            .device(l)
            .unwrap_or_else(|| panic!("{l} not profiled"));
        assert!(d.exec_table(DType::F64).is_some(), "{l}: no f64 table");
    }
    assert_eq!(profile.links.len(), 2);
    for l in &profile.links {
        // Throttled to 1 GB/s, where memcpy runs at many GB/s: the link itself was measured
        // (loosely: tests/calibrate_emulated.rs checks the accuracy).
        assert!(
            (0.5e9..2e9).contains(&l.bytes_per_sec),
            "{}: {:e} B/s",
            l.name,
            l.bytes_per_sec
        );
    }
    assert!(profile.check_matches(rt.devices()).is_ok());

    // A re-check measures the host fold again: a profile whose fold rate is ten times what
    // this host does is found moved, and rescaled to about what it does.
    let fold = profile.host_fold_bytes_per_sec.expect("a fold rate");
    let optimistic = hetblas_core::profile::MachineProfile {
        host_fold_bytes_per_sec: Some(10.0 * fold),
        ..profile.clone()
    };
    let check = rt.recheck(&optimistic, &mut |_| {}).expect("re-check");
    let r = check
        .moved
        .iter()
        .find(|(t, _)| *t == hetblas_core::calibrate::Target::HostFold)
        .map(|&(_, r)| r)
        .unwrap_or_else(|| panic!("the fold did not move: {:?}", check.points));
    assert!(r > 3.0, "fold measured {r}x slower than the profile's");
    // Whatever else moved on this machine (rescalable or not), the fold is rescaled to about
    // what it measured.
    let got = check.rescaled(&optimistic).host_fold_bytes_per_sec.unwrap();
    assert!(
        (fold / 3.0..fold * 3.0).contains(&got),
        "{got:e} against {fold:e}"
    );

    // Put in use, it drives the calls, which stay correct.
    rt.set_profile(Some(Arc::new(profile)));
    assert!(rt.profile().is_some());
    assert!(rt.profile_status().contains("set by the caller"));
    let (m, n, k) = (96, 80, 64);
    let (a, b, c0) = (random(7, m * k), random(8, k * n), random(9, m * n));
    let mut c = c0.clone();
    rt.gemm(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
        1.0,
        MatMut::packed(&mut c, m, n).unwrap(),
    )
    .expect("gemm with the profile");
    check_sampled(
        Trans::N,
        Trans::N,
        1.0,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
        1.0,
        MatRef::packed(&c0, m, n).unwrap(),
        MatRef::packed(&c, m, n).unwrap(),
        m * n,
        3,
    )
    .expect("result within the bound");
    // A symmetric call weighs its candidate tiles (256 and 512 for order 600) on plans of
    // their own: the pool's cache gains only the plan that ran.
    let before = rt.cached_plans();
    let (n, k) = (600, 48);
    let (a, mut c) = (random(10, n * k), random(11, n * n));
    rt.syrk(
        Uplo::Lower,
        Trans::N,
        1.0,
        MatRef::packed(&a, n, k).unwrap(),
        0.5,
        MatMut::packed(&mut c, n, n).unwrap(),
    )
    .expect("syrk with the profile");
    assert_eq!(rt.cached_plans(), before + 1);
    rt.set_profile(None);
    assert!(rt.profile().is_none());
}

#[test]
fn borrowed_device_memory_is_computed_where_it_lives() {
    let rt = Runtime::builder()
        .only(&[])
        .emulated(2)
        .without_profile()
        .build()
        .expect("runtime");
    let (m, n, k) = (45, 38, 61);
    let ldc = m + 3;
    let a = random(11, m * k);
    let b = random(12, n * k); // stored n x k: op(B) = B^T
    let c0 = random(13, ldc * n);
    let (alpha, beta) = (0.75, -1.25);

    // "The caller's" device memory: B on device 1, C (ld > rows) on device 0.
    let owned_b = rt.upload(1, MatRef::packed(&b, n, k).unwrap()).unwrap();
    let owned_c = rt.upload(0, MatRef::packed(&c0, ldc, n).unwrap()).unwrap();
    let (addr_b, addr_c) = (owned_b.raw().addr, owned_c.raw().addr);
    assert_eq!(rt.device_owning(addr_b), Some(1));
    assert_eq!(rt.device_owning(addr_c + 8 * (ldc * n - 1) as u64), Some(0));
    assert_eq!(
        rt.device_owning(addr_c + 8 * (ldc * n) as u64),
        None,
        "one past the end"
    );
    assert_eq!(rt.device_owning(a.as_ptr() as u64), None, "host memory");

    {
        // SAFETY: both regions are allocations of the named devices, of the sizes given,
        // initialised, and alive (the owned matrices outlive this block).
        let (lent_b, mut lent_c) = unsafe {
            (
                rt.borrow_matrix::<f64>(1, addr_b, n, k, n).unwrap(),
                rt.borrow_matrix::<f64>(0, addr_c, m, n, ldc).unwrap(),
            )
        };
        let report = rt
            .gemm(
                Trans::N,
                Trans::T,
                alpha,
                MatRef::packed(&a, m, k).unwrap(),
                &lent_b,
                beta,
                &mut lent_c,
            )
            .expect("gemm on borrowed operands");
        assert!(!report.devices.is_empty());
        // A bad leading dimension is refused, never used.
        // SAFETY: not used (the call fails before any access).
        let bad = unsafe { rt.borrow_matrix::<f64>(0, addr_c, m, n, m - 1) };
        assert!(bad.is_err());
    } // the borrowed matrices drop here: the caller's memory must stay allocated

    let mut back = vec![f64::NAN; ldc * n];
    rt.download(&owned_c, MatMut::packed(&mut back, ldc, n).unwrap())
        .expect("the owner's matrix is intact after the borrows dropped");
    check_sampled(
        Trans::N,
        Trans::T,
        alpha,
        MatRef::packed(&a, m, k).unwrap(),
        MatRef::packed(&b, n, k).unwrap(),
        beta,
        MatRef::new(&c0, m, n, ldc).unwrap(),
        MatRef::new(&back, m, n, ldc).unwrap(),
        m * n,
        7,
    )
    .expect("result within the bound");
    for j in 0..n {
        for i in m..ldc {
            assert_eq!(
                back[i + j * ldc],
                c0[i + j * ldc],
                "row {i} beyond m was written"
            );
        }
    }
    drop(owned_c);
    assert_eq!(
        rt.device_owning(addr_c),
        None,
        "freed memory is no device's"
    );
}
