//! Shared fixtures for the end-to-end tests: pools built once per test binary.

// Each test binary uses only some of these fixtures.
#![allow(dead_code)]

use hetblas_conformance::Target;
use hetblas_core::{Device, DevicePool, GemmOptions, GemmReport, Link, MatMut, MatRef, Trans};
use hetblas_cpu::{
    choose_blas, emulated_node, CpuDevice, EmulatedConfig, EmulatedDevice, HostBlas,
};
use std::sync::{Arc, OnceLock};

pub fn blas() -> Arc<dyn HostBlas> {
    static B: OnceLock<Arc<dyn HostBlas>> = OnceLock::new();
    B.get_or_init(|| choose_blas(&Default::default()).expect("host BLAS").blas)
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
        Arc::new(cpu_and_emulated(&configs).0)
    })
    .clone()
}

/// A pool of the CPU device and one emulated device per configuration, [cpu, emu0, ...], and
/// its devices.
pub fn cpu_and_emulated(configs: &[EmulatedConfig]) -> (DevicePool, Vec<Arc<dyn Device>>) {
    let node = emulated_node(configs, blas()).expect("emulated node");
    let mut devices: Vec<Arc<dyn Device>> =
        vec![CpuDevice::with_blas(blas(), vec![]).expect("cpu")];
    devices.extend(node.devices.into_iter().map(|d| d as Arc<dyn Device>));
    let pool = DevicePool::new(devices.clone(), node.links).expect("pool");
    (pool, devices)
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
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
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

/// `C = A * B - C` on (m, n, k) with small integers (exact in f64), checked entry by entry.
pub fn gemm_exact(
    pool: &DevicePool,
    (m, n, k): (usize, usize, usize),
    opts: &GemmOptions,
) -> GemmReport {
    let case = ExactCase::new(m, n, k);
    let mut c = case.c0.clone();
    let r = gemm_nn(pool, (m, n, k), 1.0, &case.a, &case.b, -1.0, &mut c, opts);
    for j in 0..n {
        for i in 0..m {
            assert_eq!(c[j * m + i], case.want[j * m + i], "({i},{j})");
        }
    }
    r
}

/// Operands of small integers (exact in f64: a wrong entry is wrong by at least 1) and the
/// exact result of `C = A B - C0`, all column-major, A m x k, B k x n.
pub struct ExactCase {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c0: Vec<f64>,
    pub want: Vec<f64>,
}

impl ExactCase {
    pub fn new(m: usize, n: usize, k: usize) -> ExactCase {
        let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
        let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 11) as f64 - 5.0).collect();
        let c0: Vec<f64> = (0..m * n).map(|i| (i % 3) as f64).collect();
        let mut want = vec![0.0; m * n];
        for j in 0..n {
            for i in 0..m {
                let ab: f64 = (0..k).map(|l| a[l * m + i] * b[j * k + l]).sum();
                want[j * m + i] = ab - c0[j * m + i];
            }
        }
        ExactCase { a, b, c0, want }
    }
}

/// A pool of emulated devices, with its devices and links (for a nominal profile).
pub type Node = (Arc<DevicePool>, Vec<Arc<dyn Device>>, Vec<Arc<dyn Link>>);

/// An emulated node's pool, devices and links.
pub fn emulated(configs: &[EmulatedConfig]) -> Node {
    let node = emulated_node(configs, blas()).unwrap();
    let devices: Vec<Arc<dyn Device>> = node
        .devices
        .into_iter()
        .map(|d| d as Arc<dyn Device>)
        .collect();
    let links: Vec<Arc<dyn Link>> = node.links;
    let pool = Arc::new(DevicePool::new(devices.clone(), links.clone()).unwrap());
    (pool, devices, links)
}

/// A pool of emulated devices.
pub fn emulated_pool(configs: &[EmulatedConfig]) -> Arc<DevicePool> {
    emulated(configs).0
}

/// A pool of one emulated device per configuration, with the emulated devices' own handles
/// (to arm their faults or read what they did).
pub fn emulated_handles(configs: &[EmulatedConfig]) -> (DevicePool, Vec<Arc<EmulatedDevice>>) {
    let node = emulated_node(configs, blas()).expect("emulated node");
    let devices: Vec<Arc<dyn Device>> = node
        .devices
        .iter()
        .map(|d| d.clone() as Arc<dyn Device>)
        .collect();
    let pool = DevicePool::new(devices, node.links).expect("pool");
    (pool, node.devices)
}
