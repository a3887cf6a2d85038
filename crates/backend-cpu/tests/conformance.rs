//! The shared conformance suite on the CPU backend: the CPU device with the system CBLAS, the
//! CPU device with the pure-Rust fallback, host-emulated devices (1 and 3), and the CPU together
//! with an emulated device.

use hetblas_conformance::{conformance_suite, required, targets_or_skip, Target};
use hetblas_core::{Device, DevicePool, Link};
use hetblas_cpu::{choose_blas, emulated_node, CpuDevice, EmulatedConfig, HostBlas, RustGemm};
use std::sync::Arc;

fn system_blas() -> Result<Arc<dyn HostBlas>, String> {
    let choice = choose_blas(&Default::default()).map_err(|e| e.to_string())?;
    if required("openblas") && choice.blas.kind() != "openblas" {
        return Err(format!(
            "OpenBLAS required but using {} (tried: {:?})",
            choice.blas.describe(),
            choice.tried
        ));
    }
    Ok(choice.blas)
}

fn cpu_target(name: &str, blas: Arc<dyn HostBlas>) -> Result<Target, String> {
    let cpu = CpuDevice::with_blas(blas, vec![]).map_err(|e| e.to_string())?;
    Ok(Target {
        name: name.into(),
        pool: Arc::new(
            DevicePool::new(vec![cpu as Arc<dyn Device>], vec![]).map_err(|e| e.to_string())?,
        ),
        compute: vec![0],
        homes: vec![],
        small_tile: 8,
    })
}

fn emulated_target(
    name: &str,
    n: usize,
    with_cpu: bool,
    blas: Arc<dyn HostBlas>,
) -> Result<Target, String> {
    let configs = vec![
        EmulatedConfig {
            memory_bytes: 64 << 20,
            ..Default::default()
        };
        n
    ];
    let node = emulated_node(&configs, blas.clone()).map_err(|e| e.to_string())?;
    let (emus, links) = (node.devices, node.links);
    let mut devices: Vec<Arc<dyn Device>> = Vec::new();
    if with_cpu {
        devices.push(CpuDevice::with_blas(blas, vec![]).map_err(|e| e.to_string())?);
    }
    let first_emu = devices.len();
    devices.extend(emus.into_iter().map(|e| e as Arc<dyn Device>));
    let links: Vec<Arc<dyn Link>> = links;
    let compute: Vec<usize> = (0..devices.len()).collect();
    let homes: Vec<usize> = (first_emu..devices.len()).collect();
    Ok(Target {
        name: name.into(),
        pool: Arc::new(DevicePool::new(devices, links).map_err(|e| e.to_string())?),
        compute,
        homes,
        small_tile: 8,
    })
}

fn targets() -> Option<Vec<Target>> {
    targets_or_skip("openblas", || {
        let sys = system_blas()?;
        let rust: Arc<dyn HostBlas> = Arc::new(RustGemm::new(1));
        Ok(vec![
            cpu_target("cpu/system-blas", sys.clone())?,
            cpu_target("cpu/rust-fallback", rust.clone())?,
            emulated_target("emulated x1", 1, false, sys.clone())?,
            emulated_target("emulated x3", 3, false, rust)?,
            emulated_target("cpu + emulated x1", 1, true, sys)?,
        ])
    })
}

conformance_suite!(targets);
