//! Where the diagonal tiles of the symmetric routines run: they are tiles of the routine's
//! GEMM plan, so they go where the GEMM decision puts a GEMM of the same shape (the
//! accelerator over the host CPU when neither states a rate). Once they ran apart from the
//! plan, and a diagonal tile of host C went to the CPU whenever the call allowed it.

mod common;

use hetblas_core::{DevicePool, GemmOptions, MatMut, MatRef, SymOp, Trans, Uplo};
use hetblas_cpu::EmulatedConfig;

/// [cpu, one emulated device], no profile, and the devices' labels.
fn pool(accel: EmulatedConfig) -> (DevicePool, Vec<String>) {
    let (pool, devices) = common::cpu_and_emulated(&[accel]);
    (pool, devices.iter().map(|d| d.info().label()).collect())
}

/// A lower DSYRK small enough to be one diagonal tile, checked entry by entry (the upper
/// triangle untouched); returns the devices the report names.
fn syrk_devices(pool: &DevicePool) -> Vec<String> {
    let (n, k) = (96, 40);
    let a: Vec<f64> = (0..n * k)
        .map(|i| ((i * 7919 % 1000) as f64) / 500.0 - 1.0)
        .collect();
    let c0: Vec<f64> = (0..n * n)
        .map(|i| ((i * 104_729 % 997) as f64) / 498.5 - 1.0)
        .collect();
    let mut c = c0.clone();
    let op = SymOp::Rank {
        uplo: Uplo::Lower,
        trans: Trans::N,
        two: false,
        herm: false,
    };
    let report = pool
        .sym_with(
            op,
            1.5,
            MatRef::packed(&a, n, k).unwrap(),
            None,
            0.5,
            MatMut::packed(&mut c, n, n).unwrap(),
            &GemmOptions::default(),
        )
        .unwrap();
    for j in 0..n {
        for i in 0..n {
            let got = c[i + j * n];
            if i < j {
                assert_eq!(got.to_bits(), c0[i + j * n].to_bits(), "C({i},{j}) written");
                continue;
            }
            let dot: f64 = (0..k).map(|l| a[i + l * n] * a[j + l * n]).sum();
            let want = 1.5 * dot + 0.5 * c0[i + j * n];
            assert!(
                (got - want).abs() <= 1e-12 * (1.0 + want.abs()) * k as f64,
                "C({i},{j}) = {got}, expected {want}"
            );
        }
    }
    report.devices
}

#[test]
fn a_diagonal_tile_goes_to_the_accelerator_rather_than_the_host_cpu() {
    // Neither device states its rate: the accelerator is guessed faster than the CPU.
    let (pool, labels) = pool(EmulatedConfig::default());
    assert_eq!(syrk_devices(&pool), vec![labels[1].clone()]);
}

#[test]
fn a_diagonal_tile_goes_where_a_gemm_of_its_shape_goes() {
    // An accelerator that says it runs at 0.1 GFLOP/s.
    let (pool, _) = pool(EmulatedConfig {
        flops_per_sec: Some(1e8),
        ..Default::default()
    });
    let (n, k) = (96, 40);
    let a = vec![0.5f64; n * k];
    let mut c = vec![0.0f64; n * n];
    let gemm = pool
        .gemm_with(
            Trans::N,
            Trans::T,
            1.0,
            MatRef::packed(&a, n, k).unwrap(),
            MatRef::packed(&a, n, k).unwrap(),
            0.0,
            MatMut::packed(&mut c, n, n).unwrap(),
            &GemmOptions::default(),
        )
        .unwrap();
    assert_eq!(syrk_devices(&pool), gemm.devices);
}
