//! The host LAPACK of the CPU backend: the library found beside the host BLAS against the
//! pure-Rust fallback on the same data (the pivots bit for bit where the algorithm is the
//! same), what `hetblas devices` says about it, and the calibration's panel measurement on the
//! CPU and on an emulated device.

use hetblas_core::calibrate::{measure_panels, CalibrationOptions};
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{
    DType, Device, Error, FactorOp, GetrfTile, Link, MemorySpace, PotrfTile, RawPivots, RawTile,
    Scalar, Uplo,
};
use hetblas_cpu::{
    choose_blas, choose_lapack, emulated_node, CpuDevice, EmulatedConfig, HostLapack, RustLapack,
};
use std::time::Duration;

/// The host LAPACK the system gives, or `None` (printed) when it is the Rust fallback too.
fn system_lapack() -> Option<std::sync::Arc<dyn HostLapack>> {
    let blas = choose_blas(&Default::default()).expect("a host BLAS").blas;
    let choice = choose_lapack(blas.as_ref());
    if choice.lapack.kind() == "rust" {
        eprintln!("SKIPPED (no host LAPACK: {:?})", choice.tried);
        return None;
    }
    Some(choice.lapack)
}

/// Deterministic values in [-1, 1) with full mantissas (a fixed integer hash).
fn values<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    let v = |i: u64| {
        let mut z = (i ^ (seed << 32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    };
    (0..len as u64)
        .map(|i| T::from_c64(c64::new(v(2 * i), v(2 * i + 1))))
        .collect()
}

fn tile<T: Scalar>(v: &mut [T], rows: usize, cols: usize, ld: usize) -> RawTile {
    RawTile {
        space: MemorySpace::HOST,
        addr: v.as_mut_ptr() as u64,
        rows,
        cols,
        ld,
        dtype: T::DTYPE,
    }
}

/// GETRF of the same panels by the host LAPACK and by faer: the same pivots (random data has
/// no ties within rounding at these sizes, and the seeds are fixed) and `info`, and factors
/// within rounding of each other.
fn same_lu<T: Scalar>(host: &dyn HostLapack) {
    let rust = RustLapack::new(1);
    for (m, n, seed) in [(50, 50, 1u64), (200, 32, 2), (7, 19, 3), (64, 64, 4)] {
        let ld = m + 3;
        let a = values::<T>(ld * n, seed);
        let run = |lapack: &dyn HostLapack| {
            let mut f = a.clone();
            let mut ipiv = vec![0i32; m.min(n)];
            let op = GetrfTile {
                a: tile(&mut f, m, n, ld),
                ipiv: RawPivots {
                    space: MemorySpace::HOST,
                    addr: ipiv.as_mut_ptr() as u64,
                    len: ipiv.len(),
                },
            };
            // SAFETY: the tile and pivots are the vectors above, alive for the call.
            let info = unsafe { lapack.getrf(&op) }.unwrap();
            (f, ipiv, info)
        };
        let (f1, p1, i1) = run(host);
        let (f2, p2, i2) = run(&rust);
        let what = format!(
            "{}getrf {m}x{n} ({} against faer)",
            T::DTYPE.blas_prefix(),
            host.describe()
        );
        assert_eq!((i1, &p1), (i2, &p2), "{what}: info and pivots");
        let eps = if T::DTYPE.real() == DType::F32 {
            1e-4
        } else {
            1e-12
        };
        let worst = f1
            .iter()
            .zip(&f2)
            .map(|(x, y)| (x.to_c64() - y.to_c64()).norm())
            .fold(0.0, f64::max);
        assert!(worst <= eps * m as f64, "{what}: factors differ by {worst}");
    }
}

#[test]
fn host_lapack_and_faer_pivot_alike() {
    let Some(host) = system_lapack() else { return };
    same_lu::<f32>(host.as_ref());
    same_lu::<f64>(host.as_ref());
    same_lu::<c32>(host.as_ref());
    same_lu::<c64>(host.as_ref());
}

#[test]
fn host_lapack_and_faer_stop_cholesky_at_the_same_column() {
    let Some(host) = system_lapack() else { return };
    let rust = RustLapack::new(1);
    let n = 30;
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for bad in [1, 17, 30] {
            // Diagonally dominant, then the pivot `bad` made negative.
            let mut a = values::<c64>(n * n, bad as u64);
            for i in 0..n {
                a[i * (n + 1)] = c64::new(2.0 * n as f64, 0.0);
            }
            a[(bad - 1) * (n + 1)] = c64::new(-1.0, 0.0);
            let run = |lapack: &dyn HostLapack| {
                let mut f = a.clone();
                let op = PotrfTile {
                    uplo,
                    a: tile(&mut f, n, n, n),
                };
                // SAFETY: the tile is the vector above, alive for the call.
                unsafe { lapack.potrf(&op) }.unwrap()
            };
            assert_eq!(run(host.as_ref()), bad as i64, "{uplo:?} host");
            assert_eq!(run(&rust), bad as i64, "{uplo:?} faer");
        }
    }
}

#[test]
fn devices_name_their_lapack() {
    let blas = choose_blas(&Default::default()).unwrap().blas;
    let cpu = CpuDevice::with_blas(blas.clone(), vec![]).unwrap();
    let detail = &cpu.info().detail;
    assert!(
        detail.contains(&format!("LAPACK: {}", cpu.lapack().describe())),
        "{detail}"
    );
    let rust =
        CpuDevice::with_blas(std::sync::Arc::new(hetblas_cpu::RustGemm::new(1)), vec![]).unwrap();
    assert_eq!(rust.lapack().kind(), "rust");
    assert!(rust.info().detail.contains("LAPACK: pure-Rust faer"));
    let node = emulated_node(&[EmulatedConfig::default()], blas).unwrap();
    assert!(node.devices[0].info().detail.contains("LAPACK: "));
}

fn quick() -> CalibrationOptions {
    CalibrationOptions {
        min_reps: 2,
        max_reps: 3,
        point_time_cap: Duration::from_secs(2),
        ..CalibrationOptions::quick()
    }
}

#[test]
fn panel_times_on_the_cpu_and_an_emulated_device() {
    let blas = choose_blas(&Default::default()).unwrap().blas;
    let cpu = CpuDevice::with_blas(blas.clone(), vec![]).unwrap();
    let node = emulated_node(&[EmulatedConfig::default()], blas).unwrap();
    let emu = node.devices[0].clone();
    let h2d = node
        .links
        .iter()
        .find(|l| l.src().is_host() && l.dst() == emu.space())
        .cloned()
        .expect("a host link");
    let cases: [(&dyn Device, Option<&dyn Link>); 2] =
        [(cpu.as_ref(), None), (emu.as_ref(), Some(h2d.as_ref()))];
    for (device, link) in cases {
        for dtype in [DType::F64, DType::C32] {
            let p = measure_panels(
                device,
                link,
                FactorOp::Potrf,
                dtype,
                &[(0, 0), (24, 24), (41, 41)],
                &quick(),
            )
            .unwrap();
            let g = measure_panels(
                device,
                link,
                FactorOp::Getrf,
                dtype,
                &[(96, 16), (33, 7)],
                &quick(),
            )
            .unwrap();
            assert_eq!(
                p.iter().map(|t| t.n).collect::<Vec<_>>(),
                [24, 41],
                "empty shapes are skipped"
            );
            assert_eq!(
                g.iter().map(|t| (t.m, t.n)).collect::<Vec<_>>(),
                [(96, 16), (33, 7)]
            );
            for t in p.iter().chain(&g) {
                assert!(
                    t.seconds > 0.0 && t.seconds.is_finite() && t.reps >= 2,
                    "{t:?}"
                );
                assert!(t.flops_per_sec() > 0.0);
            }
        }
    }
    // What is not a panel measurement.
    let refuse = |r: hetblas_core::Result<_>| r.err().map(|e: Error| e.to_string());
    assert!(refuse(measure_panels(
        cpu.as_ref(),
        None,
        FactorOp::Laswp,
        DType::F64,
        &[(8, 8)],
        &quick()
    ))
    .is_some());
    assert!(refuse(measure_panels(
        cpu.as_ref(),
        None,
        FactorOp::Potrf,
        DType::F64,
        &[(8, 4)],
        &quick()
    ))
    .is_some());
    assert!(matches!(
        measure_panels(
            emu.as_ref(),
            None,
            FactorOp::Getrf,
            DType::F64,
            &[(8, 4)],
            &quick()
        ),
        Err(Error::Unsupported { .. })
    ));
}
