//! GPUs of the GPU layer (the fake runtime) and devices of another backend (host-emulated) in
//! one call: dependencies between their queues cross backends, so the executor must resolve
//! them on the host (a GPU stream refuses the other backend's events) and the result must be
//! right.

mod fake;

use fake::FakeBackend;
use hetblas_conformance::data::{random_vec, rng};
use hetblas_core::reference::check_sampled;
use hetblas_core::{Backend, DevicePool, MatMut, MatRef, Trans};
use hetblas_cpu::{emulated_node, EmulatedConfig, RustGemm};
use std::sync::Arc;

#[test]
fn fake_gpus_and_emulated_devices_compute_one_gemm() {
    let gpus = FakeBackend::new().discover().unwrap();
    let emu = emulated_node(&[EmulatedConfig::default()], Arc::new(RustGemm::new(1))).unwrap();
    let mut devices = gpus.devices;
    devices.extend(
        emu.devices
            .iter()
            .map(|d| d.clone() as Arc<dyn hetblas_core::Device>),
    );
    let mut links = gpus.links;
    links.extend(emu.links);
    let pool = DevicePool::new(devices, links).unwrap();
    let (m, n, k) = (300, 260, 220);
    let mut r = rng(5);
    let (a, b, c0): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        random_vec(&mut r, k * m),
        random_vec(&mut r, k * n),
        random_vec(&mut r, m * n),
    );
    let mut c = c0.clone();
    // A lives on the emulated device: its tiles reach the fake GPUs through host memory, after
    // the emulated device's copy-out, an event no fake stream can wait for.
    let a_emu = pool.upload(2, MatRef::packed(&a, k, m).unwrap()).unwrap();
    let report = pool
        .gemm(
            Trans::T,
            Trans::N,
            -0.75,
            &a_emu,
            MatRef::packed(&b, k, n).unwrap(),
            1.25,
            MatMut::packed(&mut c, m, n).unwrap(),
        )
        .unwrap();
    assert!(
        report.devices.iter().any(|d| d.starts_with("fake"))
            && report.devices.iter().any(|d| d.starts_with("emulated")),
        "one backend only: {:?}",
        report.devices
    );
    check_sampled(
        Trans::T,
        Trans::N,
        -0.75,
        MatRef::packed(&a, k, m).unwrap(),
        MatRef::packed(&b, k, n).unwrap(),
        1.25,
        MatRef::packed(&c0, m, n).unwrap(),
        MatRef::packed(&c, m, n).unwrap(),
        m * n,
        5,
    )
    .unwrap();
}
