//! Shared fixtures for the end-to-end tests: pools built once per test binary.

#![allow(dead_code)]

use hetblas_conformance::Target;
use hetblas_core::{Device, DevicePool, GemmOptions, GemmReport, Link, MatMut, MatRef, Trans};
use hetblas_cpu::{choose_blas, emulated_node, CpuDevice, EmulatedConfig, HostBlas};
use std::sync::{Arc, OnceLock};

pub fn blas() -> Arc<dyn HostBlas> {
    static B: OnceLock<Arc<dyn HostBlas>> = OnceLock::new();
    B.get_or_init(|| choose_blas().expect("host BLAS").blas)
        .clone()
}

/// A pool: [cpu, emu0, emu1, emu2, emu3].
pub fn pool() -> Arc<DevicePool> {
    static P: OnceLock<Arc<DevicePool>> = OnceLock::new();
    P.get_or_init(|| {
        let configs = vec![
            EmulatedConfig {
                memory_bytes: 256 << 20,
                ..Default::default()
            };
            4
        ];
        let node = emulated_node(&configs, blas()).expect("emulated node");
        let mut devices: Vec<Arc<dyn Device>> =
            vec![CpuDevice::with_blas(blas(), vec![]).expect("cpu")];
        devices.extend(node.devices.into_iter().map(|d| d as Arc<dyn Device>));
        let links: Vec<Arc<dyn Link>> = node.links;
        Arc::new(DevicePool::new(devices, links).expect("pool"))
    })
    .clone()
}

/// `ndev` = 0: the CPU device alone; 1..=4: that many emulated devices.
pub fn target(ndev: usize, tile: usize) -> Target {
    let (compute, homes) = if ndev == 0 {
        (vec![0], vec![])
    } else {
        ((1..=ndev).collect(), (1..=ndev).collect())
    };
    Target {
        name: format!("{ndev} devices"),
        pool: pool(),
        compute,
        homes,
        small_tile: tile,
    }
}

/// `c = alpha * a * b + beta * c` with packed column-major `a` (m x k), `b` (k x n) and
/// `c` (m x n), no transposes.
#[allow(clippy::too_many_arguments)]
pub fn gemm_nn(
    pool: &DevicePool,
    (m, n, k): (usize, usize, usize),
    alpha: f64,
    a: &[f64],
    b: &[f64],
    beta: f64,
    c: &mut [f64],
    opts: &GemmOptions,
) -> GemmReport {
    pool.gemm_with(
        Trans::N,
        Trans::N,
        alpha,
        MatRef::packed(a, m, k).unwrap(),
        MatRef::packed(b, k, n).unwrap(),
        beta,
        MatMut::packed(c, m, n).unwrap(),
        opts,
    )
    .unwrap()
}
