//! The call overhead measured through a pool, on an emulated device that carries a GPU's kind
//! (the model charges an overhead to GPUs only): the shared check of
//! [`hetblas_conformance::call_overhead`], which `backend-cuda`'s tests run on real GPUs.

mod common;

use common::Labelled;
use hetblas_core::{Device, DeviceInfo, DeviceKind, DevicePool};
use hetblas_cpu::{emulated_node, CpuDevice, EmulatedConfig, RustGemm};
use std::sync::Arc;

#[test]
fn a_gpus_call_overhead_is_measured_and_the_model_meets_its_calls() {
    let node = emulated_node(&[EmulatedConfig::default()], Arc::new(RustGemm::new(1)))
        .expect("an emulated device");
    let gpu: Arc<dyn Device> = Arc::new(Labelled {
        info: DeviceInfo {
            kind: DeviceKind::Gpu,
            ..node.devices[0].info().clone()
        },
        inner: node.devices[0].clone(),
    });
    // The host's CPU beside it is not a GPU: it is not measured.
    let cpu: Arc<dyn Device> =
        CpuDevice::with_blas(Arc::new(RustGemm::new(1)), Vec::new()).expect("the CPU device");
    let pool = DevicePool::new(vec![gpu, cpu], node.links).expect("pool");
    // Emulated devices run on threads of a host whose cores are shared (on a 2-core machine
    // the medians of one-tile calls moved by 2x between runs of 50): a loose bound.
    hetblas_conformance::call_overhead::check_call_overhead(&pool, 1.0);
}
